#pragma once
// Exact k nearest neighbours (and closest point, its k = 1 case written into
// columns) on level-order trees: one thread per query walks the tree with a
// candidate list as its visitor.
//
// k <= 32: SortedCandidates in registers, compiled for capacities 1, 4, 8,
// 16 and 32; larger k: a max-heap kept in the caller's output row. On GPUs,
// with the trail walk, closest point and k = 1 can set walks still running
// after about the mean number of iterations aside and finish them in a
// second, densely packed pass (QueryOptions::regroup_iterations): the lanes
// of a warp then stop waiting for the warp's slowest query.
//
// A per-query squared bound (`bounds`, empty for none) lowers each query's
// cutoff to min(sq_cutoff, bounds(q)): the walk then prunes by it from the
// root. The distributed kNN's second phase asks another rank only for the
// neighbours within the first phase's k-th distance; without the bound, a
// query outside that rank's points would walk until it had found k.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/order.hpp>
#include <kdforge/kernels/query/rows.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kdforge::detail {

/// Query qi's squared cutoff: the call's, or its own bound where lower.
template <class Bounds, class T>
KOKKOS_INLINE_FUNCTION T query_cutoff(Bounds const& bounds, std::int64_t qi, T sq_cutoff) {
  if (!bounds.extent(0)) return sq_cutoff;
  T const b = bounds(qi);
  return b < sq_cutoff ? b : sq_cutoff;
}

/// A kNN walk set aside by KnnSortedFunctor (see automatic_regroup).
template <class Tree, int CAP>
struct RegroupRecord {
  typename kernels::SortedCandidates<Tree, CAP>::Key c[CAP];
  kernels::TrailState<typename Tree::index_type> state;
  std::int64_t qi;
};

template <class Tree, class QV, class OV, class Result, int CAP>
struct KnnSortedFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Record = RegroupRecord<Tree, CAP>;
  using MS = typename Tree::memory_space;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  int k;
  T sq_cutoff;
  Walk walk;
  int regroup = 0; // > 0: set the walk aside after this many iterations (trail walk)
  Kokkos::View<Record*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> saved = {};
  Kokkos::View<unsigned long long*, MS> saved_count = {}; // two; this call's is saved_count(turn)
  int turn = 0;
  Kokkos::View<T const*, MS> bounds = {}; // per query; empty: none
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    kernels::SortedCandidates<Tree, CAP> cand(tree, k, query_cutoff(bounds, qi, sq_cutoff));
    typename Tree::point_type const q(queries(qi));
    if (regroup > 0) {
      auto st = kernels::trail_descend(tree, q, cand.bound(), walk.buckets);
      if (!kernels::trail_shrinking_run(tree, q, cand, walk.buckets, st, regroup)) {
        // one slot per query at most: `saved` (M records) never overflows
        Record& r = saved(backend::claim_slot(&saved_count(turn)));
        for (int j = 0; j < CAP; ++j) r.c[j] = cand.c[j];
        r.state = st;
        r.qi = qi;
        return;
      }
    } else {
      traverse(walk, tree, q, cand);
    }
    write_sorted_row(res, qi, cand, k);
  }
};

/// The second pass: finishes the walks KnnSortedFunctor set aside, packed
/// densely (in the order they were set aside) into warps.
template <class Tree, class QV, class Result, int CAP>
struct KnnResumeFunctor {
  using T = typename Tree::coordinate_type;
  using Record = RegroupRecord<Tree, CAP>;
  using MS = typename Tree::memory_space;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  Walk walk;
  Kokkos::View<Record*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> saved;
  Kokkos::View<unsigned long long*, MS> saved_count;
  int turn;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if (i == 0) saved_count(1 - turn) = 0; // the next call's counter (see QueryWorkspace::regroup_count)
    if (std::uint64_t(i) >= saved_count(turn)) return;
    Record const& r = saved(i);
    kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
    for (int j = 0; j < CAP; ++j) cand.c[j] = r.c[j];
    auto st = r.state;
    kernels::trail_shrinking_run(tree, typename Tree::point_type(queries(r.qi)), cand, walk.buckets, st, -1);
    write_sorted_row(res, r.qi, cand, k);
  }
};

template <class Tree, class QV, class OV, class Result>
struct KnnHeapFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  int k;
  T sq_cutoff;
  Walk walk;
  Kokkos::View<T const*, typename Tree::memory_space> bounds; // per query; empty: none
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    using IR = Row<decltype(res.indices)>;
    using DR = Row<decltype(res.sq_distances)>;
    kernels::RowHeapCandidates<Tree, IR, DR> cand(tree, IR{res.indices, qi}, DR{res.sq_distances, qi}, k,
                                                  query_cutoff(bounds, qi, sq_cutoff));
    traverse(walk, tree, typename Tree::point_type(queries(qi)), cand);
    finish_heap_row(res, qi, cand, k);
  }
};

template <int CAP, class Exec, class Tree, class QV, class OV, class Result>
void run_sorted(char const* name, char const* resume_name, Exec const& exec, Tree const& tree, QV const& q,
                OV const& order, Result const& res, int k, typename Tree::coordinate_type sq_cutoff, Walk const& walk,
                int regroup, QueryWorkspace<typename Exec::memory_space>& ws,
                Kokkos::View<typename Tree::coordinate_type const*, typename Exec::memory_space> const& bounds) {
  using MS = typename Exec::memory_space;
  std::int64_t const m = std::int64_t(q.extent(0));
  QueryPolicy<Exec> policy(exec, 0, m);
  KnnSortedFunctor<Tree, QV, OV, Result, CAP> f{tree, q, order, res, k, sq_cutoff, walk};
  f.bounds = bounds;
  if (regroup <= 0) {
    Kokkos::parallel_for(name, policy, f);
    return;
  }
  using Record = RegroupRecord<Tree, CAP>;
  std::size_t const bytes = std::size_t(m) * sizeof(Record);
  if (ws.regroup_bytes.extent(0) < bytes)
    ws.regroup_bytes = backend::allocate<Kokkos::View<char*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::regroup"), bytes);
  if (!ws.regroup_count.data()) { // zeroed once, here; the second passes keep them so
    ws.regroup_count = backend::allocate<Kokkos::View<unsigned long long*, MS>>("kdforge::knn::regroup_count", 2);
    ws.regroup_turn = 0;
  }
  f.regroup = regroup;
  f.saved = decltype(f.saved)(reinterpret_cast<Record*>(ws.regroup_bytes.data()), m);
  f.saved_count = ws.regroup_count;
  f.turn = ws.regroup_turn;
  Kokkos::parallel_for(name, policy, f);
  Kokkos::parallel_for(resume_name, policy,
                       KnnResumeFunctor<Tree, QV, Result, CAP>{tree, q, res, k, sq_cutoff, walk, f.saved, f.saved_count, f.turn});
  ws.regroup_turn = 1 - ws.regroup_turn;
}

template <class Exec, class Tree, class QV, class Result>
void run_knn(Exec const& exec, Tree const& tree, QV const& q, int k, Result const& res,
             typename Tree::coordinate_type sq_cutoff, Walk const& walk, QueryOrder order_option, int regroup,
             QueryWorkspace<typename Exec::memory_space>& ws, bool check, char const* where,
             Kokkos::View<typename Tree::coordinate_type const*, typename Exec::memory_space> const& bounds = {}) {
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  Region region("kdforge::knn");
  auto order = prepare_queries(exec, tree, q, order_option, ws, check);
  QueryPolicy<Exec> policy(exec, 0, m);
  using OV = decltype(order);
  constexpr bool column = is_column_result<Result>::value; // closest point: k = 1 only
  if (column || k <= 1) run_sorted<1>("kdforge::knn::k1", "kdforge::knn::k1::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws, bounds);
  else if constexpr (!column) {
    if (k <= 4) run_sorted<4>("kdforge::knn::k4", "kdforge::knn::k4::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws, bounds);
    else if (k <= 8) run_sorted<8>("kdforge::knn::k8", "kdforge::knn::k8::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws, bounds);
    else if (k <= 16) run_sorted<16>("kdforge::knn::k16", "kdforge::knn::k16::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws, bounds);
    else if (k <= 32) run_sorted<32>("kdforge::knn::k32", "kdforge::knn::k32::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws, bounds);
    else Kokkos::parallel_for("kdforge::knn::heap", policy, KnnHeapFunctor<Tree, QV, OV, Result>{tree, q, order, res, k, sq_cutoff, walk, bounds});
  }
  throw_if_bad_query(exec, ws, q, check, where);
}

} // namespace kdforge::detail
