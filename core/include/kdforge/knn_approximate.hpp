#pragma once
// Approximate k nearest neighbours with a bounded double-ended priority queue
// (Wehr & Radkowski 2018, section III-E; priority search after Arya et al.
// 1998, min-max heap after Atkinson et al. 1986).
//
// One thread per query descends the tree to a leaf, putting each branch not
// taken into a min-max heap of capacity Q keyed by a lower bound of its
// distance (the largest squared plane distance on the way down: Friedman et
// al.'s "bounds-overlap-ball" test). At a leaf the nearest pending branch is
// popped and the descent continues from there; a branch whose bound exceeds
// the current k-th distance is skipped, and the search ends when none is
// left. When the heap is full, a closer branch replaces the farthest pending
// one, which is dropped for good: that is where the answer becomes
// approximate. With Q at least the number of branches ever pending (Q >= N
// always suffices) the result is exact; max_leaves, when set, stops each
// query after that many leaves. A very small queue (or leaf limit) may reach
// fewer than k points; the rest of such a row is (-1, +inf).
//
// Works on any level-order tree (MedianTree, LeftBalancedTree), and on
// bucket trees (build_bucket_tree) by the best-first search of Hu,
// Nooshabadi & Ahmadi 2015 (walks/box_best_first.hpp: max_leaves buckets
// nearest box first, (1 + eps) bounds, the same bounded queue). Results have
// the shape of knn(): rows of k (index, squared distance), ascending, ties by
// index, missing slots (-1, +inf). The walk: kernels/query/walks/priority.hpp.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/kernels/query/approximate.hpp>
#include <kdforge/kernels/query/bucket.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace kdforge {

namespace detail {
template <class Result, class Exec, class Tree, class Queries>
Result knn_approximate_level_order(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                                   typename Tree::coordinate_type sq_cutoff, ApproximateOptions const& options) {
  using MS = typename Exec::memory_space;
  auto q = detail::query_points<Exec, Tree>(exec, queries);
  std::int64_t const m = std::int64_t(q.extent(0));
  Result res{backend::allocate<decltype(Result::indices)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::indices"), m, k),
             backend::allocate<decltype(Result::sq_distances)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::sq_distances"), m, k)};
  QueryWorkspace<MS> workspace; // the processing order, kept until the kernels are queued
  auto order = detail::prepare_queries(exec, tree, q, options.order, workspace, options.check_queries);
  bool const local = options.queue_capacity <= 32;
  if (k <= 8) {
    if (local) detail::run_approx_knn<8, 32>(exec, tree, q, order, res, k, sq_cutoff, options);
    else detail::run_approx_knn<8, 0>(exec, tree, q, order, res, k, sq_cutoff, options);
  } else if (k <= 32) {
    if (local) detail::run_approx_knn<32, 32>(exec, tree, q, order, res, k, sq_cutoff, options);
    else detail::run_approx_knn<32, 0>(exec, tree, q, order, res, k, sq_cutoff, options);
  } else {
    if (local) detail::run_approx_knn<0, 32>(exec, tree, q, order, res, k, sq_cutoff, options);
    else detail::run_approx_knn<0, 0>(exec, tree, q, order, res, k, sq_cutoff, options);
  }
  detail::throw_if_bad_query(exec, workspace, q, options.check_queries, "knn_approximate");
  return res;
}
} // namespace detail

namespace detail {
template <class Exec, class Tree, class Queries>
auto knn_approximate_impl(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                     ApproximateOptions const& options = {}) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using MS = typename Exec::memory_space;
  static_assert(std::is_same<MS, typename Tree::memory_space>::value,
                "kdforge::knn_approximate: the tree lives in another memory space than the execution space's");
  KDFORGE_REQUIRE(k >= 1, "knn_approximate", "k must be >= 1 (got ", k, ")");
  KDFORGE_REQUIRE(options.queue_capacity >= 1, "knn_approximate", "ApproximateOptions::queue_capacity must be >= 1 (got ",
                  options.queue_capacity, ")");
  KDFORGE_REQUIRE(options.max_leaves >= 0, "knn_approximate", "ApproximateOptions::max_leaves must be >= 0 (got ",
                  options.max_leaves, ")");
  KDFORGE_REQUIRE(options.eps >= 0.0 && std::isfinite(options.eps), "knn_approximate",
                  "ApproximateOptions::eps must be finite and >= 0 (got ", options.eps, ")");
  T const sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, "knn_approximate", "ApproximateOptions::cutoff_radius");
  using Result = KnnResult<MS, T, Index>;
  if constexpr (kernels::is_bucket_tree<Tree>::value) { // run-time dimension: queries M x D
    detail::check_bucket_queries(exec, tree, queries, "knn_approximate");
    detail::check_self_queries(tree, queries, options.exclude_self, "knn_approximate");
    std::int64_t const m = std::int64_t(queries.extent(0));
    Result res{backend::allocate<decltype(Result::indices)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::indices"), m, k),
               backend::allocate<decltype(Result::sq_distances)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::sq_distances"), m, k)};
    detail::run_bucket_approx_knn(exec, tree, queries, res, k, sq_cutoff, options.queue_capacity, options.max_leaves,
                                  options.eps, options.exclude_self);
    return res;
  } else {
    KDFORGE_REQUIRE(!options.exclude_self, "knn_approximate",
                    "exclude_self is offered on bucket trees (build_bucket_tree) only");
    return detail::knn_approximate_level_order<Result>(exec, tree, queries, k, sq_cutoff, options);
  }
}
} // namespace detail

/// Approximate k nearest neighbours of each query (see the top of this
/// file): M x k rows like knn's, in newly allocated Views.
template <class Exec, class Tree, class Queries>
auto knn_approximate(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                     ApproximateOptions const& options = {}) {
  return detail::api_call<typename Exec::memory_space>("knn_approximate", [&]() -> decltype(auto) {
    return detail::knn_approximate_impl(exec, tree, queries, k, options);
  });
}

} // namespace kdforge
