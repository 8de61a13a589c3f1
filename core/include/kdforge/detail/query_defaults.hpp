#pragma once
// What the query entry points share: argument checks and the defaults they
// pick (the walk, bucket levels, regrouping), the queries in the internal
// form.
#include <kdforge/base/access.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/trees/level_order.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace kdforge::detail {

/// Bucket levels when the options leave them to kdforge (-1): the fastest
/// measured with 1M uniform points and queries, 2 on an H100 (1 and 3 are
/// within a few percent, 4 is slower) and 3 on 16 Xeon cores (7-25% faster
/// than 2); docs/performance.md.
template <class Exec>
constexpr int default_bucket_levels() {
  return runs_on_gpu<Exec>() ? 2 : 3;
}

template <class Exec, class Options>
Walk make_walk(Options const& o, char const* where) {
  KDFORGE_REQUIRE(o.bucket_levels >= -1 && o.bucket_levels <= kernels::max_bucket_levels, where,
                  "bucket_levels must be -1 (automatic) or in [0, ", kernels::max_bucket_levels, "] (got ",
                  o.bucket_levels, ")");
  // The fastest walk measured per target (1M x 1M, docs/performance.md):
  // trail on GPUs (4-11% ahead of stack-free on kNN, 27-39% on radius
  // search), stack on CPUs (kNN k = 8 on 16 cores: stack 119 ms,
  // stack-free 165, trail 180).
  KDFORGE_REQUIRE(o.traversal != Traversal::team, where,
                  "Traversal::team walks bucket trees (build_bucket_tree) only; this tree walks with automatic, "
                  "stack, stack_free or trail");
  Traversal const t = o.traversal != Traversal::automatic ? o.traversal
                      : runs_on_gpu<Exec>()                 ? Traversal::trail
                                                            : Traversal::stack;
  return {t, kernels::Buckets(o.bucket_levels < 0 ? default_bucket_levels<Exec>() : o.bucket_levels)};
}

// Queries as a View<Point<T, D>*> in the execution space; copied only when
// they come in another form.
template <class Exec, class Tree, class Queries>
auto query_points(Exec const& exec, Queries const& queries) {
  static_assert(check_points_container<Queries, Exec>());
  using A = AccessTraits<Queries>;
  static_assert(std::is_same<typename A::coordinate_type, typename Tree::coordinate_type>::value,
                "kdforge: queries and tree must have the same coordinate type (float or double)");
  static_assert(A::dimension == Tree::dimension, "kdforge: queries and tree must have the same dimension");
  using PV = Kokkos::View<typename Tree::point_type*, typename Exec::memory_space>;
  // the query kernels' ranges are 32-bit on GPUs (Kokkos' default index type there)
  KDFORGE_REQUIRE(std::uint64_t(A::size(queries)) < (std::uint64_t(1) << 32), "query", A::size(queries),
                  " queries in one call: at most 2^32 - 1; split them into several calls");
  if constexpr (std::is_convertible<Queries, PV>::value) return PV(queries);
  else return to_points(exec, queries, "kdforge::query::points");
}

template <class T>
T checked_sq_radius(double r, char const* where, char const* what) {
  KDFORGE_REQUIRE(r >= 0, where, what, " must be >= 0 (got ", r, ")");
  if (std::isinf(r)) return detail::infinity<T>();
  return T(r) * T(r);
}

/// QueryOptions::regroup_iterations checked and resolved for one call (0: off).
template <class Exec>
int regroup_iterations(QueryOptions const& o, Walk const& walk, std::int64_t n, std::int64_t m, int k,
                       char const* where) {
  KDFORGE_REQUIRE(o.regroup_iterations >= -1, where,
                  "QueryOptions::regroup_iterations must be -1 (automatic), 0 (off) or > 0 (got ",
                  o.regroup_iterations, ")");
  if (o.regroup_iterations > 0) {
    KDFORGE_REQUIRE(walk.traversal == Traversal::trail, where,
                    "QueryOptions::regroup_iterations > 0 needs Traversal::trail, the walk it sets aside");
    return k <= 32 ? o.regroup_iterations : 0;
  }
  if (o.regroup_iterations == 0 || !runs_on_gpu<Exec>() || walk.traversal != Traversal::trail || k != 1 ||
      m < 65536 || n == 0)
    return 0;
  // A cap near the mean iterations of a query cuts a warp's iterations
  // the most; 3 x the tree's levels is near that mean for uniform data
  // (measured on an H100: closest point 8% faster). For k = 8 and 16 every
  // cap tried was slower (saving 8 candidates and the second launch cost
  // more than the warps gain), so they are not regrouped.
  return 3 * lb::num_levels(n);
}

template <class Exec, class Tree>
void check_tree_space(char const*) {
  static_assert(std::is_same<typename Exec::memory_space, typename Tree::memory_space>::value,
                "kdforge: the tree lives in another memory space than the execution space's");
}

/// Options only bucket trees have, refused on the others with a clear error.
template <class Options>
void refuse_bucket_only_options(Options const& o, char const* where) {
  if constexpr (std::is_same<Options, QueryOptions>::value)
    KDFORGE_REQUIRE(o.strategy != KnnStrategy::brute_force, where,
                    "KnnStrategy::brute_force answers queries on bucket trees (build_bucket_tree); for any points, "
                    "call knn_brute_force");
  KDFORGE_REQUIRE(!o.exclude_self, where, "exclude_self is offered on bucket trees (build_bucket_tree) only");
}

/// exclude_self: the queries must be the tree's points, one row each.
template <class Tree, class QV>
void check_self_queries(Tree const& tree, QV const& q, bool exclude_self, char const* where) {
  if (!exclude_self) return;
  KDFORGE_REQUIRE(std::int64_t(q.extent(0)) == std::int64_t(tree.size()), where,
                  "exclude_self: the queries must be the tree's points in the caller's order (one row per point: ",
                  tree.size(), " rows), got ", q.extent(0), " rows");
}

/// Whether a kNN or closest-point call on a bucket tree answers by brute
/// force (KnnStrategy; the automatic choice times a sample of both on CPUs,
/// and on GPUs measures a sample of `walk`s).
template <class Exec, class Tree, class QV>
bool use_brute_force(Exec const& exec, Tree const& tree, QV const& q, int k, QueryOptions const& options,
                     Traversal walk) {
  if (options.strategy == KnnStrategy::brute_force) return true;
  if (options.strategy == KnnStrategy::tree) return false;
  return choose_brute_force(exec, tree, q, k, options.brute_force_method, walk);
}

} // namespace kdforge::detail
