#pragma once
// knn_brute_force: exact k nearest neighbours without a tree, every query
// against every point, for points and queries of any dimension (N x D and
// M x D Views). The kernel (kernels/query/brute_force.hpp) tiles the pairs
// like a matrix product and keeps no more memory than the results; its
// distances are rounded like the trees' walks, so its answers equal a bucket
// tree's over the same points, ties included. knn() on a bucket tree picks
// it by itself where the tree would not prune (QueryOptions::strategy).
//
//   auto nn = kdforge::knn_brute_force(exec, points, queries, 4);   // nn.indices: M x 4
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/kernels/query/brute_force.hpp>
#include <kdforge/kernels/query/brute_force_gemm.hpp>
#include <kdforge/kernels/query/bucket.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge {

/// Options of knn_brute_force.
struct BruteForceOptions {
  /// Only neighbours with distance <= cutoff_radius are reported (not squared).
  double cutoff_radius = std::numeric_limits<double>::infinity();
  /// Self-queries: queries are the points (same rows); row i leaves point i out.
  bool exclude_self = false;
  /// How the distances are computed (the answer is the same either way).
  BruteForceMethod method = BruteForceMethod::automatic;
};

namespace detail {
template <class Index = std::int32_t, class Exec, class Points, class Queries>
KnnResult<typename Exec::memory_space, typename Points::non_const_value_type, Index>
knn_brute_force_impl(Exec const& exec, Points const& points, Queries const& queries, int k,
                BruteForceOptions const& options = {}) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::knn_brute_force: the first argument must be a Kokkos execution space instance");
  static_assert(Kokkos::is_view<Points>::value && Points::rank == 2 && Kokkos::is_view<Queries>::value &&
                    Queries::rank == 2,
                "kdforge::knn_brute_force: points and queries must be rank-2 Kokkos::Views (N x D, M x D)");
  using T = typename Points::non_const_value_type;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::knn_brute_force: coordinates must be float or double");
  static_assert(std::is_same<T, typename Queries::non_const_value_type>::value,
                "kdforge::knn_brute_force: points and queries must have the same coordinate type");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename Points::memory_space>::accessible &&
                    Kokkos::SpaceAccessibility<Exec, typename Queries::memory_space>::accessible,
                "kdforge::knn_brute_force: points and queries must be in memory the execution space can read");
  using MS = typename Exec::memory_space;
  using Result = KnnResult<MS, T, Index>;
  KDFORGE_REQUIRE(k >= 1, "knn_brute_force", "k must be >= 1 (got ", k, ")");
  std::int64_t const n = std::int64_t(points.extent(0));
  std::int64_t const m = std::int64_t(queries.extent(0));
  KDFORGE_REQUIRE(points.extent(1) == queries.extent(1) || n == 0 || m == 0, "knn_brute_force", "points have ",
                  points.extent(1), " coordinates, queries ", queries.extent(1));
  KDFORGE_REQUIRE(points.extent(1) >= 1 || n == 0, "knn_brute_force", "the points have no coordinates (D = 0)");
  KDFORGE_REQUIRE(n <= std::int64_t(std::numeric_limits<Index>::max()), "knn_brute_force", n,
                  " points do not fit the index type; use std::int64_t");
  KDFORGE_REQUIRE(!options.exclude_self || n == m, "knn_brute_force",
                  "exclude_self: the queries must be the points (", n, " rows), got ", m, " rows");
  T const sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, "knn_brute_force", "BruteForceOptions::cutoff_radius");
  std::int64_t const dim = std::int64_t(points.extent(1));
  auto first_bad = [&](auto const& v) {
    std::int64_t bad = std::numeric_limits<std::int64_t>::max();
    if (v.extent(0) > 0)
      Kokkos::parallel_reduce("kdforge::knn_brute_force::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, v.extent(0)),
                              detail::FirstUnusableRow<std::decay_t<decltype(v)>>{v, int(dim)},
                              Kokkos::Min<std::int64_t>(bad));
    return bad;
  };
  std::int64_t const bad_point = first_bad(points);
  if (bad_point != std::numeric_limits<std::int64_t>::max())
    detail::refuse_row(exec, points, bad_point, "point", "knn_brute_force", "remove it or replace it by a finite one");
  std::int64_t const bad_query = first_bad(queries);
  if (bad_query != std::numeric_limits<std::int64_t>::max())
    detail::refuse_row(exec, queries, bad_query, "query", "knn_brute_force", "a query must be a finite point");
  Result res{backend::allocate<decltype(Result::indices)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::indices"), m, k),
             backend::allocate<decltype(Result::sq_distances)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::sq_distances"), m, k)};
  detail::Region region("kdforge::knn_brute_force");
  detail::run_brute_knn_by(exec, points, Kokkos::View<Index*, MS>(), queries, k, res, sq_cutoff, options.exclude_self,
                           options.method, "knn_brute_force");
  return res;
}
} // namespace detail

/// The k nearest of `points` (N x D, any layout, float or double) to each
/// row of `queries` (M x D, the same coordinate type), sorted by (squared
/// distance, index); slots beyond N, or beyond the cutoff, are (-1, +inf).
/// Both Views must be readable by `exec`. Errors (kdforge::Error): k < 1,
/// different dimensions, NaN or infinite coordinates or ones whose squares
/// overflow (base/types.hpp, max_sq_coordinate; the first named), more
/// points than Index holds. Asynchronous like knn().
template <class Index = std::int32_t, class Exec, class Points, class Queries>
KnnResult<typename Exec::memory_space, typename Points::non_const_value_type, Index>
knn_brute_force(Exec const& exec, Points const& points, Queries const& queries, int k,
                BruteForceOptions const& options = {}) {
  return detail::api_call<typename Exec::memory_space>("knn_brute_force", [&]() -> decltype(auto) {
    return detail::knn_brute_force_impl<Index>(exec, points, queries, k, options);
  });
}

} // namespace kdforge
