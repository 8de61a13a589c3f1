#pragma once
// The operations on bucket trees (kernels/trees/bucket_tree.hpp), whose
// dimension is a run-time value: kNN (and closest point, its k = 1 case
// written into columns), radius count and radius search. One thread per
// query walks the tree with walks/box_stack.hpp; the visitors and result
// writers are those of the level-order trees' operations. Queries are a
// rank-2 View (M x D, any layout) in the execution space's memory.
#include <kdforge/base/error.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/radius.hpp>
#include <kdforge/kernels/query/rows.hpp>
#include <kdforge/kernels/query/walks/box_stack.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

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

template <class QV>
struct FirstNonFiniteRow {
  QV q;
  int dim;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    bool ok = true;
    for (int d = 0; d < dim; ++d) ok = ok && is_finite(q(i, d));
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
                          FirstNonFiniteRow<QV>{q, int(q.extent(1))}, Kokkos::Min<std::int64_t>(bad));
  if (bad != std::numeric_limits<std::int64_t>::max())
    fail(where, "query ", bad, " has a NaN or infinite coordinate; a query must be a finite point (remove it, "
                "or replace it by a finite one)");
}

template <class Tree, class QV, class Result, int CAP>
struct BucketKnnFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  KOKKOS_FUNCTION void operator()(std::int64_t qi) const {
    kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
    kernels::traverse_box_stack(tree, queries, qi, cand);
    write_sorted_row(res, qi, cand, k);
  }
};

template <class Tree, class QV, class Result>
struct BucketKnnHeapFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  KOKKOS_FUNCTION void operator()(std::int64_t qi) const {
    using IR = Row<decltype(res.indices)>;
    using DR = Row<decltype(res.sq_distances)>;
    kernels::RowHeapCandidates<Tree, IR, DR> cand(tree, IR{res.indices, qi}, DR{res.sq_distances, qi}, k, sq_cutoff);
    kernels::traverse_box_stack(tree, queries, qi, cand);
    finish_heap_row(res, qi, cand, k);
  }
};

/// kNN (or closest point: Result a ColumnResult, k = 1) on a bucket tree.
template <class Exec, class Tree, class QV, class Result>
void run_bucket_knn(Exec const& exec, Tree const& tree, QV const& q, int k, Result const& res,
                    typename Tree::coordinate_type sq_cutoff) {
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  Region region("kdforge::knn");
  QueryPolicy<Exec> policy(exec, 0, m);
  constexpr bool column = is_column_result<Result>::value;
  if (k == 1) {
    Kokkos::parallel_for("kdforge::knn::bucket_k1", policy, BucketKnnFunctor<Tree, QV, Result, 1>{tree, q, res, k, sq_cutoff});
  } else if constexpr (!column) {
    if (k <= 8) Kokkos::parallel_for("kdforge::knn::bucket_k8", policy, BucketKnnFunctor<Tree, QV, Result, 8>{tree, q, res, k, sq_cutoff});
    else if (k <= 32) Kokkos::parallel_for("kdforge::knn::bucket_k32", policy, BucketKnnFunctor<Tree, QV, Result, 32>{tree, q, res, k, sq_cutoff});
    else Kokkos::parallel_for("kdforge::knn::bucket_heap", policy, BucketKnnHeapFunctor<Tree, QV, Result>{tree, q, res, k, sq_cutoff});
  }
}

template <class Tree, class QV, class Counts>
struct BucketCountFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Counts counts;
  T sq_r;
  std::int64_t cap;
  KOKKOS_FUNCTION void operator()(std::int64_t qi) const {
    CountVisitor<Tree> v{sq_r, cap};
    kernels::traverse_box_stack(tree, queries, qi, v);
    counts(qi) = v.count;
  }
};

template <class Tree, class QV, class Result>
struct BucketFillFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  Result res;
  T sq_r;
  bool capped;
  bool sort;
  KOKKOS_FUNCTION void operator()(std::int64_t qi) const {
    std::int64_t const b = res.offsets(qi);
    int const len = int(res.offsets(qi + 1) - b);
    using IS = Segment<decltype(res.indices)>;
    using DS = Segment<decltype(res.sq_distances)>;
    if (capped) { // the nearest `len` within the radius: a max-heap in the output row
      kernels::RowHeapCandidates<Tree, IS, DS> cand(tree, IS{res.indices, b}, DS{res.sq_distances, b}, len, sq_r);
      kernels::traverse_box_stack(tree, queries, qi, cand);
      cand.heap.sort_heap();
    } else {
      FillVisitor<Tree, decltype(res.indices), decltype(res.sq_distances)> v{res.indices, res.sq_distances, sq_r, b};
      kernels::traverse_box_stack(tree, queries, qi, v);
      if (sort) sort_csr_row(res, b, len);
    }
  }
};

template <class Exec, class Tree, class QV, class Counts>
void run_bucket_radius_count(Exec const& exec, Tree const& tree, QV const& q, typename Tree::coordinate_type sq_r,
                             Counts const& counts, std::int64_t cap) {
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  Region region("kdforge::radius_count");
  Kokkos::parallel_for("kdforge::radius::bucket_count", QueryPolicy<Exec>(exec, 0, m),
                       BucketCountFunctor<Tree, QV, Counts>{tree, q, counts, sq_r, cap});
}

/// Radius search on a bucket tree: count, scan, fill (sorted on request;
/// capped rows hold the nearest max_neighbors, sorted).
template <class Exec, class Tree, class QV, class Result>
void run_bucket_radius_search(Exec const& exec, Tree const& tree, QV const& q, typename Tree::coordinate_type sq_r,
                              Result& res, RadiusOptions const& options) {
  Region region("kdforge::radius_search");
  std::int64_t const m = std::int64_t(q.extent(0));
  ensure_extents(res.offsets, "kdforge::radius::offsets", m + 1);
  auto counts = Kokkos::subview(res.offsets, Kokkos::make_pair(std::int64_t(0), m));
  Kokkos::deep_copy(exec, Kokkos::subview(res.offsets, m), std::int64_t(0));
  run_bucket_radius_count(exec, tree, q, sq_r, counts, options.max_neighbors);
  std::int64_t const total = backend::exclusive_scan(exec, res.offsets, res.offsets);
  reserve_rows(res, total);
  if (m > 0)
    Kokkos::parallel_for("kdforge::radius::bucket_fill", QueryPolicy<Exec>(exec, 0, m),
                         BucketFillFunctor<Tree, QV, Result>{tree, q, res, sq_r, options.max_neighbors >= 0, options.sort});
}

} // namespace kdforge::detail
