#pragma once
// VVH photon k-d trees (Zhou, Hou, Wang & Guo 2008, section 5.1): trees over
// 3-D points built for k-nearest and radius gathers, with a bounding box per
// node. The algorithm is in kernels/builders/vvh/build.hpp; the tree answers
// knn, closest_point, radius_count, radius_search and knn_approximate like
// the bucket trees, with queries as an M x 3 View.
//
//   auto tree = kdforge::build_vvh_tree(exec, photons);            // View<Point<float, 3>*>, View<float*[3]>, ...
//   auto nn = kdforge::knn(exec, tree, gather_points, 50);         // gather_points: M x 3
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/access.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/build_left_balanced.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/kernels/builders/vvh/build.hpp>
#include <kdforge/kernels/common/finite.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/trees/vvh_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge {

/// Build options of VVH photon trees (the paper's values by default).
struct VvhOptions {
  /// R: the query radius the VVH cost grows every cell by (Appendix A: the
  /// gather radius expected of the queries). 0: estimated from the points,
  /// the radius that holds expected_k points at their mean density.
  double query_radius = 0.0;
  /// k of the queries the tree is built for, for the estimate of R.
  int expected_k = 50;
  /// C_ts: the cost of stepping through a node, in units of point_cost.
  double traversal_cost = 1.0;
  /// C_i: the cost of looking at one point.
  double point_cost = 1.0;
  /// Ce: a large node's side of empty space wider than this fraction of its
  /// cell is cut off before the spatial median split.
  double empty_space_ratio = 0.1;
  /// T: nodes of at most this many points are split by exact VVH (1 to 1024).
  int small_node_size = 32;
};

namespace detail {
template <class PV, class Out>
struct PointsToRows {
  PV in;
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    for (int d = 0; d < 3; ++d) out(i, d) = in(i)[d];
  }
};
} // namespace detail

namespace detail {
/// An N x D View with both extents at run time (not View<T*[3]>, which the
/// points adaptor reads).
template <class Points, class = void>
struct is_rows_view : std::false_type {};
template <class Points>
struct is_rows_view<Points, std::enable_if_t<Kokkos::is_view<Points>::value>>
    : std::integral_constant<bool, Points::rank == 2 && Points::rank_dynamic == 2> {};
} // namespace detail

namespace detail {
template <class Index = std::int32_t, class Exec, class Points>
auto build_vvh_tree_impl(Exec const& exec, Points const& points, VvhOptions const& options = {}) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::build_vvh_tree: the first argument must be a Kokkos execution space instance");
  using MS = typename Exec::memory_space;
  char const* where = "build_vvh_tree";
  KDFORGE_REQUIRE(std::isfinite(options.query_radius) && options.query_radius >= 0.0, where,
                  "VvhOptions::query_radius must be finite and >= 0 (0: estimated; got ", options.query_radius, ")");
  KDFORGE_REQUIRE(options.expected_k >= 1, where, "VvhOptions::expected_k must be >= 1 (got ", options.expected_k, ")");
  KDFORGE_REQUIRE(std::isfinite(options.traversal_cost) && options.traversal_cost > 0.0 &&
                      std::isfinite(options.point_cost) && options.point_cost > 0.0,
                  where, "VvhOptions::traversal_cost and point_cost must be finite and > 0 (got ",
                  options.traversal_cost, " and ", options.point_cost, ")");
  KDFORGE_REQUIRE(options.empty_space_ratio >= 0.0 && options.empty_space_ratio < 1.0, where,
                  "VvhOptions::empty_space_ratio must be in [0, 1) (got ", options.empty_space_ratio, ")");
  KDFORGE_REQUIRE(options.small_node_size >= 1 && options.small_node_size <= 1024, where,
                  "VvhOptions::small_node_size must be in [1, 1024] (got ", options.small_node_size, ")");
  kernels::vvh::Params const params{options.traversal_cost, options.point_cost, options.empty_space_ratio,
                                    options.query_radius, std::int64_t(options.small_node_size)};
  if constexpr (detail::is_rows_view<Points>::value) {
    // N x 3, its dimension a run-time value
    using T = typename Points::non_const_value_type;
    static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                  "kdforge::build_vvh_tree: coordinates must be float or double");
    static_assert(Kokkos::SpaceAccessibility<Exec, typename Points::memory_space>::accessible,
                  "kdforge::build_vvh_tree: the points must be in memory the execution space can read");
    std::int64_t const n = std::int64_t(points.extent(0));
    KDFORGE_REQUIRE(points.extent(1) == 3 || n == 0, where, "VVH trees hold 3-D points; these have ", points.extent(1),
                    " coordinates (use build_bucket_tree for other dimensions)");
    detail::check_point_count<Index, Exec>(std::size_t(n), where);
    KDFORGE_REQUIRE(3 * n < std::int64_t(std::numeric_limits<Index>::max()), where, n,
                    " points: the three sorted lists need 3 N below the index type's limit; build with "
                    "kdforge::build_vvh_tree<std::int64_t>(...)");
    KDFORGE_REQUIRE(std::size_t(3 * n) <= backend::max_segmented_sort_items<Exec>(), where, n, " points: ",
                    Exec::name(), "'s segmented sort takes at most ", backend::max_segmented_sort_items<Exec>(),
                    " elements, the three sorted lists 3 N");
    using Right = Kokkos::View<T**, Kokkos::LayoutRight, MS>;
    auto input = backend::allocate<Right>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::input"), n, 3);
    if (n > 0) {
      std::int64_t bad = std::numeric_limits<std::int64_t>::max();
      Kokkos::parallel_reduce("kdforge::build_vvh_tree::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, n),
                              detail::FirstUnusableRow<Points>{points, 3}, Kokkos::Min<std::int64_t>(bad));
      if (bad != std::numeric_limits<std::int64_t>::max())
        detail::refuse_row(exec, points, bad, "point", where, "remove it or replace it by a finite one");
      Kokkos::deep_copy(exec, input, points);
    }
    return kernels::vvh::build<Index>(exec, input, params, options.expected_k);
  } else {
    static_assert(detail::check_points_container<Points, Exec>());
    using A = AccessTraits<Points>;
    static_assert(A::dimension == 3, "kdforge::build_vvh_tree: VVH trees hold 3-D points (use build_bucket_tree for other dimensions)");
    using T = typename A::coordinate_type;
    std::int64_t const n = std::int64_t(A::size(points));
    detail::check_point_count<Index, Exec>(std::size_t(n), where);
    KDFORGE_REQUIRE(3 * n < std::int64_t(std::numeric_limits<Index>::max()), where, n,
                    " points: the three sorted lists need 3 N below the index type's limit; build with "
                    "kdforge::build_vvh_tree<std::int64_t>(...)");
    KDFORGE_REQUIRE(std::size_t(3 * n) <= backend::max_segmented_sort_items<Exec>(), where, n, " points: ",
                    Exec::name(), "'s segmented sort takes at most ", backend::max_segmented_sort_items<Exec>(),
                    " elements, the three sorted lists 3 N");
    auto pts = to_points(exec, points, "kdforge::vvh_tree::points_input");
    std::int64_t const bad = detail::first_unusable(exec, pts);
    if (bad != std::numeric_limits<std::int64_t>::max())
      detail::refuse_point(exec, pts, bad, where, "remove it or replace it by a finite one");
    auto input = backend::allocate<Kokkos::View<T**, Kokkos::LayoutRight, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::input"),
                                                     n, 3);
    if (n > 0)
      Kokkos::parallel_for("kdforge::build_vvh_tree::rows", Kokkos::RangePolicy<Exec>(exec, 0, n),
                           detail::PointsToRows<decltype(pts), decltype(input)>{pts, input});
    return kernels::vvh::build<Index>(exec, input, params, options.expected_k);
  }
}
} // namespace detail

/// Builds a VVH photon tree over `points`: any container of 3-D points the
/// points adaptor reads (View<Point<T, 3>*>, View<T*[3]>, a View of your
/// own struct with PointTraits, ...), or a rank-2 View N x 3 (any layout),
/// in memory `exec` can read; T float or double. The caller's points are
/// copied, never modified. The tree is the same on every backend. Errors
/// (kdforge::Error): NaN or infinite coordinates, or ones whose squares
/// overflow (base/types.hpp, max_sq_coordinate; the first offending point
/// named), options out of range, more points than Index holds (3 N < 2^31
/// with 32-bit indices: the three sorted lists are indexed by it).
template <class Index = std::int32_t, class Exec, class Points>
auto build_vvh_tree(Exec const& exec, Points const& points, VvhOptions const& options = {}) {
  return detail::api_call<typename Exec::memory_space>("build_vvh_tree", [&]() -> decltype(auto) {
    return detail::build_vvh_tree_impl<Index>(exec, points, options);
  });
}

} // namespace kdforge
