#pragma once
// The operations on bucket trees (kernels/trees/bucket_tree.hpp), whose
// dimension is a run-time value: kNN (and closest point, its k = 1 case
// written into columns), radius count and radius search. One thread per
// query walks the tree with walks/box_stack.hpp, or for kNN and closest
// point (k <= 32) a team of vector lanes per query with walks/box_team.hpp
// (Traversal::team; on GPUs from team_walk_min_dim dimensions on); the
// visitors and result writers are those of the level-order trees'
// operations. Queries are a rank-2 View (M x D, any layout) in the
// execution space's memory.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/radius.hpp>
#include <kdforge/kernels/query/rows.hpp>
#include <kdforge/kernels/common/finite.hpp>
#include <kdforge/kernels/query/brute_force.hpp>
#include <kdforge/kernels/query/brute_force_gemm.hpp>
#include <kdforge/kernels/query/walks/box_best_first.hpp>
#include <kdforge/kernels/query/walks/box_stack.hpp>
#include <kdforge/kernels/query/walks/box_team.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge::kernels {

/// Whether Tree is a bucket tree (BucketTree or a view of one).
template <class Tree, class = void>
struct is_bucket_tree : std::false_type {};
template <class Tree>
struct is_bucket_tree<Tree, std::enable_if_t<Tree::bucket_tree>> : std::true_type {};

} // namespace kdforge::kernels

namespace kdforge::detail {

/// The first row with a NaN, infinite or out-of-range coordinate (see
/// max_sq_coordinate in base/types.hpp).
template <class QV>
struct FirstUnusableRow {
  QV q;
  int dim;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    using T = typename QV::non_const_value_type;
    T const max_sq = max_sq_coordinate<T>(dim);
    bool ok = true;
    for (int d = 0; d < dim; ++d) ok = ok && is_usable(q(i, d), max_sq);
    if (!ok && i < m) m = i;
  }
};

/// Checks the queries of an operation on a bucket tree: rank 2, the tree's
/// dimension, finite (kdforge::Error naming the first query that is not).
template <class Exec, class Tree, class QV>
void check_bucket_queries(Exec const& exec, Tree const& tree, QV const& q, char const* where) {
  static_assert(QV::rank == 2, "kdforge: queries on a bucket tree are a rank-2 View (M x D)");
  static_assert(std::is_same<typename QV::non_const_value_type, typename Tree::coordinate_type>::value,
                "kdforge: queries and tree must have the same coordinate type (float or double)");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename QV::memory_space>::accessible,
                "kdforge: the queries must be in memory the execution space can read");
  KDFORGE_REQUIRE(std::int64_t(q.extent(1)) == tree.dim() || q.extent(0) == 0, where, "queries have ", q.extent(1),
                  " coordinates, the tree's points ", tree.dim());
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  std::int64_t bad = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce("kdforge::query::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, m),
                          FirstUnusableRow<QV>{q, int(q.extent(1))}, Kokkos::Min<std::int64_t>(bad));
  if (bad != std::numeric_limits<std::int64_t>::max())
    refuse_row(exec, q, bad, "query", where, "a query must be a finite point (remove it, or replace it by a finite one)");
}

/// A visitor that hides one index from the visitor it wraps: query i of a
/// self-query (the queries are the tree's points) leaving point i out.
template <class V, class Index>
struct SkipIndex {
  V& v;
  Index skip;
  KOKKOS_FORCEINLINE_FUNCTION auto bound() const { return v.bound(); }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return v.done(); }
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index i, T d2) {
    if (i != skip) v.visit(i, d2);
  }
};

/// Runs walk(visitor) with the candidates, or with them behind SkipIndex
/// when query qi must not find point qi.
template <class Cand, class Walk>
KOKKOS_FORCEINLINE_FUNCTION void walk_maybe_skipping(Cand& cand, bool skip_self, std::int64_t qi, Walk const& walk) {
  if (skip_self) {
    SkipIndex<Cand, typename Cand::index_type> v{cand, typename Cand::index_type(qi)};
    walk(v);
  } else {
    walk(cand);
  }
}

template <class Tree, class QV, class Result, int CAP, class Order>
struct BucketKnnFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  bool skip_self;
  Order order; // empty: as given (bucket_query_order)
  KOKKOS_FUNCTION void operator()(std::int64_t slot) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(slot)) : slot;
    kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
    kernels::with_query_row(tree, queries, qi, [&](auto const& q) {
      walk_maybe_skipping(cand, skip_self, qi, [&](auto& v) { kernels::traverse_box_stack(tree, q, qi, v); });
    });
    write_sorted_row(res, qi, cand, k);
  }
};

template <class Tree, class QV, class Result, class Order>
struct BucketKnnHeapFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  bool skip_self;
  Order order; // empty: as given (bucket_query_order)
  KOKKOS_FUNCTION void operator()(std::int64_t slot) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(slot)) : slot;
    using IR = Row<decltype(res.indices)>;
    using DR = Row<decltype(res.sq_distances)>;
    kernels::RowHeapCandidates<Tree, IR, DR> cand(tree, IR{res.indices, qi}, DR{res.sq_distances, qi}, k, sq_cutoff);
    kernels::with_query_row(tree, queries, qi, [&](auto const& q) {
      walk_maybe_skipping(cand, skip_self, qi, [&](auto& v) { kernels::traverse_box_stack(tree, q, qi, v); });
    });
    finish_heap_row(res, qi, cand, k);
  }
};

/// The team walk (walks/box_team.hpp): a team thread of vector lanes per
/// query, k <= CAP <= 32 (the candidates are each lane's own copy).
template <class Exec, class Tree, class QV, class Result, int CAP>
struct BucketKnnTeamFunctor {
  using T = typename Tree::coordinate_type;
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  bool skip_self;
  std::int64_t first, last; // this launch's slots
  Kokkos::View<std::uint32_t*, typename Exec::memory_space> order; // empty: as given
  KOKKOS_FUNCTION void operator()(member_type const& member) const {
    std::int64_t const slot = first + std::int64_t(member.league_rank()) * member.team_size() + member.team_rank();
    if (slot >= last) return;
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(slot)) : slot;
    kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
    walk_maybe_skipping(cand, skip_self, qi, [&](auto& v) { kernels::traverse_box_team(member, tree, queries, qi, v); });
    Kokkos::single(Kokkos::PerThread(member), [&] { write_sorted_row(res, qi, cand, k); });
  }
};

/// GPUs: Traversal::automatic walks bucket trees of at least this many
/// dimensions with a warp per query (walks/box_team.hpp), fewer with a
/// thread per query (docs/performance.md, "Descriptors").
inline constexpr int team_walk_min_dim = 16;

/// The walk of a kNN or closest-point call on a bucket tree: Traversal::team
/// (a team of vector lanes per query, k <= 32) where asked for or chosen,
/// Traversal::stack (a thread per query) otherwise: larger k, and the
/// level-order trees' walks (stack_free, trail), which bucket trees have
/// never had. The answer is the same either way.
template <class Exec>
Traversal bucket_traversal(Traversal t, int dim, int k) {
  if (k > 32) return Traversal::stack;
  if (t == Traversal::automatic) return runs_on_gpu<Exec>() && dim >= team_walk_min_dim ? Traversal::team : Traversal::stack;
  return t == Traversal::team ? Traversal::team : Traversal::stack;
}

/// GPUs: the dimensions whose thread-per-query walks are compiled with the
/// dimension fixed (FixedDimBucketTree): 3-D points, the most common by
/// far. Loops over a run-time dimension keep a GPU thread's loads in a
/// dependent chain; with D fixed they unroll and the query sits in
/// registers. On an H200 the kNN walk (k = 4, uniform 3-D points, buckets
/// of 8, queries = points) took 95 instead of 152 us at 3,200 points and
/// 210 instead of 308 at 102,400 (docs/performance.md, "Descriptors").
/// Each further dimension compiles the walk's kernels once more; CPUs
/// gained 5% and keep one walk.
inline constexpr int fixed_walk_dim = 3;

/// f(tree), or on GPUs f(FixedDimBucketTree<Tree, fixed_walk_dim>(tree))
/// where the tree has that dimension.
template <class Exec, class Tree, class F>
void with_fixed_bucket_dim(Tree const& tree, F const& f) {
  if constexpr (runs_on_gpu<Exec>()) {
    if (tree.dim() == fixed_walk_dim) return f(kernels::FixedDimBucketTree<Tree, fixed_walk_dim>(tree));
  }
  f(tree);
}

/// Each query's leaf by the split planes alone (the tree position of the
/// leaf's first point), for the order of the team walk.
template <class Tree, class QV, class MS>
struct BucketLeafKey {
  Tree tree;
  QV queries;
  Kokkos::View<std::uint32_t*, MS> keys, order;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    using Index = typename Tree::index_type;
    Index s = 0;
    auto node = tree.node(s);
    while (!node.is_leaf()) {
      s = queries(i, node.split_dim) <= node.split_value ? node.left : node.right;
      node = tree.node(s);
    }
    keys(i) = std::uint32_t(node.begin);
    order(i) = std::uint32_t(i);
  }
};

/// GPUs: the order in which the team walk takes the queries, by the leaf
/// each one's descent reaches, so that the warps running together walk
/// neighbouring leaves and find their rows and boxes in the cache (empty:
/// as given, where QueryOptions::order asks for that, on CPUs, beyond 2^32
/// points or 2^31 queries, and below 2^20
/// coordinates of queries, where the sort cost more than it saved: on an
/// H200, 102,400 queries took 18% less time in 512 dimensions and 11% in
/// 128, and 12,800 queries in 16 dimensions 20% more).
template <class Exec, class Tree, class QV>
Kokkos::View<std::uint32_t*, typename Exec::memory_space>
bucket_leaf_order(Exec const& exec, Tree const& tree, QV const& q, QueryOrder order_option = QueryOrder::automatic) {
  using MS = typename Exec::memory_space;
  std::int64_t const m = std::int64_t(q.extent(0));
  std::int64_t const n = std::int64_t(tree.size());
  // (below 2^31: the item count of every CUB sort)
  if (order_option == QueryOrder::as_given || !runs_on_gpu<Exec>() ||
      m * std::int64_t(tree.dim()) < (std::int64_t(1) << 20) || n == 0 ||
      m >= (std::int64_t(1) << 31) || n >= (std::int64_t(1) << 32))
    return {};
  using V = Kokkos::View<std::uint32_t*, MS>;
  auto keys = backend::allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::leaf_keys"), m);
  auto order = backend::allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::leaf_order"), m);
  Kokkos::parallel_for("kdforge::knn::bucket_leaf_keys", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       BucketLeafKey<Tree, QV, MS>{tree, q, keys, order});
  int bits = 1;
  while (bits < 32 && (std::int64_t(1) << bits) <= n) ++bits;
  backend::sort_by_key(exec, keys, order, 0, bits);
  return order;
}

/// The Morton code of a row (kernels/query/morton.hpp's, with the dimension
/// a run-time value): the first `dims` coordinates, `bits` bits each (at
/// most 24: a cell index below 2^bits, exact in float), cells of the root's
/// box (NaN and coordinates outside it clamped to its faces).
template <class Tree, class QV, class Codes, class Order>
struct BucketMortonCode {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Codes codes;
  Order order;
  int dims, bits;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::uint32_t cell[32];
    T const top = T((std::uint32_t(1) << bits) - 1);
    for (int d = 0; d < dims; ++d) {
      T const lo = tree.lo(0, d), extent = tree.hi(0, d) - lo;
      T t = extent > T(0) ? (T(queries(i, d)) - lo) / extent : T(0);
      t = t >= T(0) ? (t <= T(1) ? t : T(1)) : T(0);
      cell[d] = std::uint32_t(t * top);
    }
    std::uint32_t code = 0;
    for (int b = bits - 1; b >= 0; --b)
      for (int d = 0; d < dims; ++d) code = (code << 1) | ((cell[d] >> b) & 1u);
    codes(i) = code;
    order(i) = std::uint32_t(i);
  }
};

/// CPUs: the order in which the thread-per-query walks take the queries, by
/// their Morton codes in the root's box (the top bits, morton_sort_bits'
/// rule: ~32 queries a cell), so that a thread's consecutive queries walk
/// the leaves and boxes the previous ones left in its caches; the level-order
/// trees' queries take the same order (kernels/query/order.hpp). Uniform
/// 3-D points, k = 4, buckets of 8, queries = points in random order: 1.22x
/// faster at 102,400 queries and 1.53x at 1M on 16 Xeon cores, 1.39x at
/// 102,400 on one EPYC thread; in 128 and 512 dimensions, where the walk
/// sums rather than waits, unchanged (docs/performance.md, "Descriptors").
/// The codes and the order live in `ws` (grown as needed), as the
/// level-order trees' do. Empty (as given): where QueryOptions::order asks
/// for that, on GPUs (the thread walk there is unmeasured with an order;
/// the team walk sorts by leaf, bucket_leaf_order), below 4,096 queries,
/// from 2^32 on, or an empty tree. QueryOrder::morton is the automatic
/// choice: bucket trees take the order each walk was measured fastest with.
template <class Exec, class Tree, class QV>
Kokkos::View<std::uint32_t*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
bucket_query_order(Exec const& exec, Tree const& tree, QV const& q, QueryOrder order_option,
                   QueryWorkspace<typename Exec::memory_space>& ws) {
  using MS = typename Exec::memory_space;
  using Order = Kokkos::View<std::uint32_t*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  std::int64_t const m = std::int64_t(q.extent(0));
  if constexpr (runs_on_gpu<Exec>()) {
    (void)exec, (void)tree, (void)order_option, (void)ws;
    return Order();
  } else {
    if (order_option == QueryOrder::as_given || m < 4096 || m >= (std::int64_t(1) << 32) || tree.size() == 0)
      return Order();
    if (std::int64_t(ws.codes.extent(0)) < m)
      ws.codes = backend::allocate<Kokkos::View<std::uint32_t*, MS>>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::query::morton"), m);
    if (std::int64_t(ws.order_bytes.extent(0)) < m * std::int64_t(sizeof(std::uint32_t)))
      ws.order_bytes = backend::allocate<Kokkos::View<char*, MS>>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::query::order"), m * std::int64_t(sizeof(std::uint32_t)));
    Order const order(reinterpret_cast<std::uint32_t*>(ws.order_bytes.data()), m);
    auto const codes = Kokkos::subview(ws.codes, Kokkos::make_pair(std::int64_t(0), m));
    int const dims = tree.dim() < 32 ? int(tree.dim()) : 32;
    int const bits = dims == 1 ? 24 : 32 / dims;
    int const key_bits = bits * dims;
    Kokkos::parallel_for("kdforge::knn::bucket_morton", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         BucketMortonCode<Tree, QV, decltype(codes), Order>{tree, q, codes, order, dims, bits});
    int sort_bits = 8;
    while (sort_bits < key_bits && m > (std::int64_t(32) << sort_bits)) sort_bits += 8;
    if (sort_bits > key_bits) sort_bits = key_bits;
    backend::sort_by_key_async(exec, codes, order, ws.scratch, key_bits - sort_bits, key_bits);
    return order;
  }
}

/// GPUs: the team walk's blocks (four warps) for k <= 8 are compiled for
/// 12 blocks a multiprocessor, which caps their registers at 40: the walk
/// waits on its loads, and more warps hide more of that wait. On an H200
/// (102,400 points, k = 4, the 8-dimensional manifold) it took 240.9
/// instead of 272.8 ms in 512 dimensions, 64.0 instead of 69.3 in 128,
/// 40.7 instead of 42.9 in 64 and 18.9 instead of 19.7 in 16; 16 blocks
/// (32 registers) were slower in 512 dimensions (256.9), 10 slower in 16
/// (20.7). Larger k (32 candidates a lane) keeps the compiler's choice.
template <int CAP>
using BucketTeamBounds = std::conditional_t<(CAP <= 8), Kokkos::LaunchBounds<128, 12>, Kokkos::LaunchBounds<>>;

template <int CAP, class Exec, class Tree, class QV, class Result>
void run_bucket_knn_team(char const* name, Exec const& exec, Tree const& tree, QV const& q, int k, Result const& res,
                         typename Tree::coordinate_type sq_cutoff, bool skip_self, QueryOrder order_option) {
  std::int64_t const m = std::int64_t(q.extent(0));
  // GPUs: a warp per query, four queries per block (128 threads:
  // BucketTeamBounds); CPUs: one lane, a team per query
  constexpr bool gpu = runs_on_gpu<Exec>();
  int const per_team = gpu ? 4 : 1;
  auto const order = bucket_leaf_order(exec, tree, q, order_option);
  // leagues of at most 2^30 teams (an int), each launch from `first` on
  std::int64_t const per_launch = (std::int64_t(1) << 30) * per_team;
  for (std::int64_t first = 0; first < m; first += per_launch) {
    std::int64_t const count = std::min(per_launch, m - first);
    Kokkos::TeamPolicy<Exec, BucketTeamBounds<CAP>> policy(exec, int((count + per_team - 1) / per_team), per_team,
                                                           gpu ? 32 : 1);
    Kokkos::parallel_for(name, policy,
                         BucketKnnTeamFunctor<Exec, Tree, QV, Result, CAP>{tree, q, res, k, sq_cutoff, skip_self,
                                                                           first, first + count, order});
  }
}

/// kNN (or closest point: Result a ColumnResult, k = 1) on a bucket tree,
/// walking it (`walk`: resolved by bucket_traversal).
template <class Exec, class Tree, class QV, class Result>
void run_bucket_knn(Exec const& exec, Tree const& tree, QV const& q, int k, Result const& res,
                    typename Tree::coordinate_type sq_cutoff, bool skip_self = false,
                    Traversal walk = Traversal::stack, QueryOrder order_option = QueryOrder::automatic,
                    QueryWorkspace<typename Exec::memory_space>* workspace = nullptr) {
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  Region region("kdforge::knn");
  QueryPolicy<Exec> policy(exec, 0, m);
  constexpr bool column = is_column_result<Result>::value;
  if (walk == Traversal::team && k <= 32) {
    if (k == 1) run_bucket_knn_team<1>("kdforge::knn::bucket_team_k1", exec, tree, q, k, res, sq_cutoff, skip_self, order_option);
    else if constexpr (!column) {
      if (k <= 8) run_bucket_knn_team<8>("kdforge::knn::bucket_team_k8", exec, tree, q, k, res, sq_cutoff, skip_self, order_option);
      else run_bucket_knn_team<32>("kdforge::knn::bucket_team_k32", exec, tree, q, k, res, sq_cutoff, skip_self, order_option);
    }
    return;
  }
  QueryWorkspace<typename Exec::memory_space> own; // without a caller's: this call's, freed at its end
  auto const order = bucket_query_order(exec, tree, q, order_option, workspace ? *workspace : own);
  using O = std::decay_t<decltype(order)>;
  with_fixed_bucket_dim<Exec>(tree, [&](auto const& t) {
    using TT = std::decay_t<decltype(t)>;
    if (k == 1) {
      Kokkos::parallel_for("kdforge::knn::bucket_k1", policy, BucketKnnFunctor<TT, QV, Result, 1, O>{t, q, res, k, sq_cutoff, skip_self, order});
    } else if constexpr (!column) {
      if (k <= 8) Kokkos::parallel_for("kdforge::knn::bucket_k8", policy, BucketKnnFunctor<TT, QV, Result, 8, O>{t, q, res, k, sq_cutoff, skip_self, order});
      else if (k <= 32) Kokkos::parallel_for("kdforge::knn::bucket_k32", policy, BucketKnnFunctor<TT, QV, Result, 32, O>{t, q, res, k, sq_cutoff, skip_self, order});
      else Kokkos::parallel_for("kdforge::knn::bucket_heap", policy, BucketKnnHeapFunctor<TT, QV, Result, O>{t, q, res, k, sq_cutoff, skip_self, order});
    }
  });
}

/// Counts the points a visitor is shown, for the strategy's cost model, and
/// ends the walk once they exceed `cap`.
template <class V>
struct CountingVisitor {
  V& v;
  std::int64_t cap;
  std::int64_t count = 0;
  static constexpr bool counts_every_point = true; // the sample counts points reached, not kept
  KOKKOS_FORCEINLINE_FUNCTION auto bound() const { return v.bound(); }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return count > cap || v.done(); }
  template <class Index, class T>
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index i, T d2) {
    ++count;
    v.visit(i, d2);
  }
};

template <class Tree, class QV>
struct BucketVisitSample {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  int k;
  std::int64_t stride, cap;
  KOKKOS_FUNCTION void operator()(std::int64_t s, std::int64_t& visited) const {
    std::int64_t const qi = s * stride;
    // k <= 32 here (larger k: the caller caps it; the count is a sample)
    kernels::SortedCandidates<Tree, 32> cand(tree, k, infinity<T>());
    CountingVisitor<decltype(cand)> v{cand, cap};
    kernels::traverse_box_stack(tree, queries, qi, v);
    visited += v.count > cap ? std::int64_t(tree.size()) : v.count; // stopped: counted as all
  }
};

/// Counts the points of the leaves a team walk reaches (filtered or not),
/// and ends the walk once they exceed `cap`.
template <class V>
struct LeafCountingVisitor {
  V& v;
  std::int64_t cap;
  std::int64_t count = 0;
  KOKKOS_FORCEINLINE_FUNCTION auto bound() const { return v.bound(); }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return count > cap; }
  template <class Index, class T>
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index i, T d2) {
    v.visit(i, d2);
  }
  KOKKOS_FORCEINLINE_FUNCTION void leaf(std::int64_t points) { count += points; }
};

template <class Exec, class Tree, class QV>
struct BucketTeamVisitSample {
  using T = typename Tree::coordinate_type;
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  Tree tree;
  QV queries;
  int k;
  std::int64_t stride, samples, cap;
  KOKKOS_FUNCTION void operator()(member_type const& member, std::int64_t& visited) const {
    std::int64_t const s = std::int64_t(member.league_rank()) * member.team_size() + member.team_rank();
    if (s >= samples) return;
    kernels::SortedCandidates<Tree, 32> cand(tree, k, infinity<T>());
    LeafCountingVisitor<decltype(cand)> v{cand, cap};
    kernels::traverse_box_team(member, tree, queries, s * stride, v);
    // stopped at the cap: counted as all, so that a few walks that look at
    // everything are not hidden among many cheap ones
    std::int64_t const c = v.count > cap ? std::int64_t(tree.size()) : v.count;
    Kokkos::single(Kokkos::PerThread(member), [&] { visited += c; });
  }
};

/// The share of the tree's points an exact kNN walk looks at, measured on
/// up to 256 of the queries spread over the batch (a short kernel: 256
/// walks; on GPUs a warp each, with the team walk). `cap`: a share above
/// which a query's walk stops and counts as looking at every point (1:
/// none), so that sampling data no tree prunes costs no more than that
/// share of a brute-force pass. The
/// strategy's cost model compares it with what brute force costs per point
/// (see choose_brute_force).
template <class Exec, class Tree, class QV>
double sampled_visit_share(Exec const& exec, Tree const& tree, QV const& q, int k, double cap = 1.0) {
  std::int64_t const m = std::int64_t(q.extent(0));
  std::int64_t const n = std::int64_t(tree.size());
  if (m == 0 || n == 0) return 0.0;
  std::int64_t const samples = std::min<std::int64_t>(m, 256);
  std::int64_t visited = 0;
  int const kk = std::min(k, 32);
  if constexpr (runs_on_gpu<Exec>()) {
    int const per_team = 4;
    Kokkos::parallel_reduce("kdforge::knn::strategy_sample",
                            Kokkos::TeamPolicy<Exec>(exec, int((samples + per_team - 1) / per_team), per_team, 32),
                            BucketTeamVisitSample<Exec, Tree, QV>{tree, q, kk, m / samples, samples,
                                                                  std::int64_t(cap * double(n))},
                            visited);
  } else {
    Kokkos::parallel_reduce("kdforge::knn::strategy_sample", Kokkos::RangePolicy<Exec>(exec, 0, samples),
                            BucketVisitSample<Tree, QV>{tree, q, kk, m / samples, std::int64_t(cap * double(n))},
                            visited);
  }
  return double(visited) / double(samples) / double(n);
}

/// GPUs: from this dimension on, the automatic strategy measures the share
/// of points a walk looks at (below it, the tree walks).
inline constexpr int brute_force_min_dim_gpu = 9;

/// GPUs: the largest share of the points a walk may look at for the tree to
/// answer instead of brute force, in `dim` dimensions: 4% up to 128
/// dimensions, falling as (128 / dim)^1.25 above (brute force by GEMM gains
/// with the dimension; 0.7% in 512). Measured on an H200 with buckets of 8,
/// k = 4, queries = points (docs/performance.md, "Descriptors"): the team
/// walk took 0.25-0.85 of the time of the faster brute force on manifold
/// data and descriptors in 16 to 128 dimensions, looking at 0.4-3.1% of the
/// points; in 512 dimensions 0.77 at 0.5% (in leaf order), 1.26 at 0.9% and
/// 1.7-1.9 at 1.7-5.5%.
inline double gpu_tree_share_limit(int dim) {
  double const r = dim <= 128 ? 1.0 : 128.0 / double(dim);
  return 0.04 * r * std::pow(r, 0.25);
}

/// The cost model of KnnStrategy::automatic: 1 to 3 dimensions walk the
/// tree; on GPUs the tree below brute_force_min_dim_gpu dimensions, and from
/// there on, where the call walks with Traversal::team (`walk`, resolved by
/// bucket_traversal), where a sample of team walks looks at less than
/// gpu_tree_share_limit of the points (brute force for a thread per query;
/// the sample waits for its result); on CPUs both
/// are timed on the same sample of up to 64 queries spread over the batch
/// (exact walks, and brute force by `method`), and the faster one answers.
/// A share of points looked at does not settle it on CPUs: a walk pays a
/// bounding-box test per node on its way and a distance summed in one
/// dependent chain per point, where brute force (a GEMM, or the tiles)
/// streams many queries per point; measured on 2 cores at D = 512, a walk
/// that looked at 5.5% of the points took 11 times as long as the GEMM
/// brute force. Either choice gives the same answer, so only the time
/// depends on the measurement.
template <class Exec, class Tree, class QV>
bool choose_brute_force(Exec const& exec, Tree const& tree, QV const& q, int k,
                        BruteForceMethod method = BruteForceMethod::automatic, Traversal walk = Traversal::team) {
  if (tree.dim() <= 3) return false; // low dimension: trees prune nearly everything
  if constexpr (runs_on_gpu<Exec>()) {
    (void)method;
    if (tree.dim() < brute_force_min_dim_gpu) return false;
    // a thread per query (below team_walk_min_dim, k > 32, or asked for)
    // keeps the rule it had: brute force. The limit below is the team
    // walk's; a thread per query was slower than brute force at 12,800
    // points from 16 dimensions on and at 102,400 from 128 on (faster at
    // 102,400 in 16 and 32 dimensions: docs/performance.md)
    if (walk != Traversal::team) return true;
    double const limit = gpu_tree_share_limit(tree.dim());
    return sampled_visit_share(exec, tree, q, k, 2 * limit) >= limit;
  } else {
    using T = typename Tree::coordinate_type;
    using Index = typename Tree::index_type;
    using MS = typename Exec::memory_space;
    std::int64_t const m = std::int64_t(q.extent(0));
    std::int64_t const n = std::int64_t(tree.size());
    if (m == 0 || n == 0) return false;
    std::int64_t const samples = std::min<std::int64_t>(m, 64);
    std::int64_t const stride = m / samples;
    int const dim = tree.dim();
    Kokkos::View<T**, Kokkos::LayoutRight, MS> sq(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::strategy_queries"),
                                                 samples, dim);
    Kokkos::parallel_for("kdforge::knn::strategy_gather", Kokkos::RangePolicy<Exec>(exec, 0, samples),
                         KOKKOS_LAMBDA(std::int64_t s) {
                           for (int d = 0; d < dim; ++d) sq(s, d) = q(s * stride, d);
                         });
    exec.fence();
    int const kk = std::min(k, 32);
    Kokkos::Timer timer;
    std::int64_t visited = 0;
    Kokkos::parallel_reduce("kdforge::knn::strategy_sample", Kokkos::RangePolicy<Exec>(exec, 0, samples),
                            BucketVisitSample<Tree, decltype(sq)>{tree, sq, kk, 1, n}, visited);
    exec.fence();
    double const t_walk = timer.seconds();
    KnnResult<MS, T, Index> r{
        Kokkos::View<Index**, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::strategy_indices"), samples, kk),
        Kokkos::View<T**, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::strategy_d2"), samples, kk)};
    timer.reset();
    run_brute_knn_by(exec, tree.points(), tree.original_indices(), sq, kk, r, infinity<T>(), false, method,
                     "knn");
    exec.fence();
    double const t_brute = timer.seconds();
    return t_brute < t_walk;
  }
}

/// Exact kNN on a bucket tree by brute force over its points: the same
/// answers as the walk (same distances, same ties).
template <class Exec, class Tree, class QV, class Result>
void run_bucket_brute_knn(Exec const& exec, Tree const& tree, QV const& q, int k, Result const& res,
                          typename Tree::coordinate_type sq_cutoff, bool skip_self, BruteForceMethod method,
                          char const* where) {
  Region region("kdforge::knn");
  run_brute_knn_by(exec, tree.points(), tree.original_indices(), q, k, res, sq_cutoff, skip_self, method, where);
}

template <class Tree, class QV, class Result, int CAP, int QCAP, class QueueView>
struct BucketApproxFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using B = kernels::PendingBranch<T, Index>;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  int queue_capacity;
  std::int64_t max_leaves;
  T scale;
  bool skip_self;
  QueueView queue; ///< used when QCAP == 0
  std::int64_t first; ///< batch offset

  template <class Cand>
  KOKKOS_FORCEINLINE_FUNCTION void search(std::int64_t qi, Cand& cand) const {
    walk_maybe_skipping(cand, skip_self, qi, [&](auto& v) {
      if constexpr (QCAP > 0) {
        kernels::MinMaxHeap<B, kernels::LocalStorage<B, QCAP>> heap(kernels::LocalStorage<B, QCAP>{}, queue_capacity);
        kernels::traverse_box_best_first(tree, queries, qi, v, heap, max_leaves, scale);
      } else {
        kernels::MinMaxHeap<B, kernels::QueueRow<QueueView>> heap(kernels::QueueRow<QueueView>{queue, qi - first},
                                                                  queue_capacity);
        kernels::traverse_box_best_first(tree, queries, qi, v, heap, max_leaves, scale);
      }
    });
  }

  KOKKOS_FUNCTION void operator()(std::int64_t qi) const {
    if constexpr (CAP > 0) {
      kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
      search(qi, cand);
      write_sorted_row(res, qi, cand, k);
    } else {
      using IR = Row<decltype(res.indices)>;
      using DR = Row<decltype(res.sq_distances)>;
      kernels::RowHeapCandidates<Tree, IR, DR> cand(tree, IR{res.indices, qi}, DR{res.sq_distances, qi}, k, sq_cutoff);
      search(qi, cand);
      finish_heap_row(res, qi, cand, k);
    }
  }
};

template <int CAP, int QCAP, class Exec, class Tree, class QV, class Result>
void run_bucket_approx_knn_with(Exec const& exec, Tree const& tree, QV const& q, Result const& res, int k,
                                typename Tree::coordinate_type sq_cutoff, int queue_capacity, std::int64_t max_leaves,
                                typename Tree::coordinate_type scale, bool skip_self) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using QueueView = Kokkos::View<kernels::PendingBranch<T, Index>**, Kokkos::LayoutLeft, typename Exec::memory_space>;
  using F = BucketApproxFunctor<Tree, QV, Result, CAP, QCAP, QueueView>;
  std::int64_t const m = std::int64_t(q.extent(0));
  if constexpr (QCAP > 0) {
    Kokkos::parallel_for("kdforge::knn_approximate::bucket", QueryPolicy<Exec>(exec, 0, m),
                         F{tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self, {}, 0});
  } else {
    // at most ~256 MiB of queues at a time, as for level-order trees
    std::int64_t const per_query = std::int64_t(queue_capacity) * std::int64_t(sizeof(kernels::PendingBranch<T, Index>));
    std::int64_t const batch = std::max<std::int64_t>(1, std::min<std::int64_t>(m, (std::int64_t(256) << 20) / per_query));
    auto queue = backend::allocate<QueueView>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn_approximate::queues"), batch, queue_capacity);
    for (std::int64_t b = 0; b < m; b += batch) {
      std::int64_t const e = std::min(m, b + batch);
      Kokkos::parallel_for("kdforge::knn_approximate::bucket", QueryPolicy<Exec>(exec, b, e),
                           F{tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self, queue, b});
    }
  }
}

/// Approximate kNN on a bucket tree: best-first search (Algorithm 3) with a
/// leaf budget, a (1 + eps) bound and a bounded queue.
template <class Exec, class Tree, class QV, class Result>
void run_bucket_approx_knn(Exec const& exec, Tree const& tree, QV const& q, Result const& res, int k,
                           typename Tree::coordinate_type sq_cutoff, int queue_capacity, std::int64_t max_leaves,
                           double eps, bool skip_self) {
  using T = typename Tree::coordinate_type;
  if (q.extent(0) == 0) return;
  Region region("kdforge::knn_approximate");
  T const scale = T((1.0 + eps) * (1.0 + eps));
  bool const local = queue_capacity <= 32;
  if (k <= 8) {
    if (local) run_bucket_approx_knn_with<8, 32>(exec, tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self);
    else run_bucket_approx_knn_with<8, 0>(exec, tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self);
  } else if (k <= 32) {
    if (local) run_bucket_approx_knn_with<32, 32>(exec, tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self);
    else run_bucket_approx_knn_with<32, 0>(exec, tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self);
  } else {
    if (local) run_bucket_approx_knn_with<0, 32>(exec, tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self);
    else run_bucket_approx_knn_with<0, 0>(exec, tree, q, res, k, sq_cutoff, queue_capacity, max_leaves, scale, skip_self);
  }
}

template <class Tree, class QV, class Counts>
struct BucketCountFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Counts counts;
  SqRadiiFor<Tree> sq_r;
  std::int64_t cap;
  KOKKOS_FUNCTION void operator()(std::int64_t qi) const {
    CountVisitor<Tree> v{sq_r(qi), cap};
    kernels::traverse_box_stack(tree, queries, qi, v);
    counts(qi) = v.result();
  }
};

template <class Tree, class QV, class Result>
struct BucketFillFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Result res;
  SqRadiiFor<Tree> sq_r;
  bool capped;
  bool sort;
  KOKKOS_FUNCTION void operator()(std::int64_t qi) const {
    std::int64_t const b = res.offsets(qi);
    std::int64_t const len = res.offsets(qi + 1) - b;
    using IS = Segment<decltype(res.indices)>;
    using DS = Segment<decltype(res.sq_distances)>;
    if (capped) { // the nearest `len` (<= max_neighbors <= 2^30) within the radius: a max-heap in the output row
      kernels::RowHeapCandidates<Tree, IS, DS> cand(tree, IS{res.indices, b}, DS{res.sq_distances, b}, int(len), sq_r(qi));
      kernels::traverse_box_stack(tree, queries, qi, cand);
      cand.heap.sort_heap();
    } else {
      FillVisitor<Tree, decltype(res.indices), decltype(res.sq_distances)> v{res.indices, res.sq_distances, sq_r(qi), b};
      kernels::traverse_box_stack(tree, queries, qi, v);
      if (sort) sort_csr_row(res, b, int(len)); // sorted rows are < 2^31 long (checked before the fill)
    }
  }
};

template <class Exec, class Tree, class QV, class Counts>
void run_bucket_radius_count(Exec const& exec, Tree const& tree, QV const& q, SqRadiiFor<Tree> const& sq_r,
                             Counts const& counts, std::int64_t cap) {
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  Region region("kdforge::radius_count");
  Kokkos::parallel_for("kdforge::radius::bucket_count", QueryPolicy<Exec>(exec, 0, m),
                       BucketCountFunctor<Tree, QV, Counts>{tree, q, counts, sq_r, cap});
}

/// Radius search on a bucket tree: count, scan, fill (sorted on request;
/// capped rows hold the nearest max_neighbors, sorted). As on the other
/// trees, the counts go to scratch and nothing is written into `out` until
/// every allocation has succeeded.
template <class Exec, class Tree, class QV, class Result>
void run_bucket_radius_search(Exec const& exec, Tree const& tree, QV const& q, SqRadiiFor<Tree> const& sq_r,
                              Result& out, RadiusOptions const& options) {
  Region region("kdforge::radius_search");
  std::int64_t const m = std::int64_t(q.extent(0));
  auto offsets = backend::allocate<Kokkos::View<std::int64_t*, typename Exec::memory_space>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::counts"), m + 1);
  auto counts = Kokkos::subview(offsets, Kokkos::make_pair(std::int64_t(0), m));
  Kokkos::deep_copy(exec, Kokkos::subview(offsets, m), std::int64_t(0));
  run_bucket_radius_count(exec, tree, q, sq_r, counts, options.max_neighbors);
  if (options.sort) require_sortable_rows(exec, counts, m);
  std::int64_t const total = backend::exclusive_scan(exec, offsets, offsets);
  Result res = staged_rows(out, m, total);
  Kokkos::deep_copy(exec, res.offsets, offsets);
  if (m > 0)
    Kokkos::parallel_for("kdforge::radius::bucket_fill", QueryPolicy<Exec>(exec, 0, m),
                         BucketFillFunctor<Tree, QV, Result>{tree, q, res, sq_r, options.max_neighbors >= 0, options.sort});
  exec.fence();
  out = res;
}

} // namespace kdforge::detail
