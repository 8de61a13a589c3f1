#pragma once
// build_left_balanced: argument checks and dispatch; the builders are in
// kernels/builders/left_balanced/.
#include <kdforge/base/access.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/kernels/builders/left_balanced/build.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/trees/left_balanced_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace kdforge {

namespace detail {
/// Every builder's size limits: the index type, and 2^32 - 1 points.
template <class Index>
void check_point_count(std::size_t n, char const* where) {
  KDFORGE_REQUIRE(n <= std::size_t(std::numeric_limits<Index>::max()) - 1, where, n,
                  " points do not fit the index type (", sizeof(Index) * 8, "-bit); build with kdforge::", where,
                  "<std::int64_t>(...)");
  KDFORGE_REQUIRE(n < (std::size_t(1) << 32), where, n, " points: the builders support at most 2^32 - 1 points");
}

} // namespace detail

/// Builds a left-balanced k-d tree over `points` (any container the points
/// adaptor reads; see points.hpp) on the execution space instance `exec`.
/// The caller's points are copied, never modified. Index is std::int32_t
/// (default) or std::int64_t; more points than it can count is an error.
template <class Index = std::int32_t, class Exec, class Points>
auto build_left_balanced(Exec const& exec, Points const& points, BuildOptions const& options = {}) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::build_left_balanced: the first argument must be a Kokkos execution space instance");
  static_assert(detail::check_points_container<Points, Exec>());
  using A = AccessTraits<Points>;
  static_assert(A::dimension <= 255, "kdforge: split dimensions are stored in one byte");
  detail::check_point_count<Index>(A::size(points), "build_left_balanced");
  return detail::build_left_balanced_impl<Index, Exec, typename A::coordinate_type, A::dimension>(
      exec, to_points(exec, points, "kdforge::tree::points_input"), options);
}

} // namespace kdforge
