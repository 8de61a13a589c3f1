#pragma once
// build_left_balanced: argument checks and dispatch; the builders are in
// kernels/builders/left_balanced/.
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/access.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/kernels/builders/left_balanced/build.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/trees/left_balanced_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace kdforge {

namespace detail {
/// The size limits of the builders that copy and sort the points (all but
/// build_median_in_place), checked before anything is allocated: the
/// index type; 2^32 - 1 points (their per-level bookkeeping packs counts
/// and positions in 32 bits: see docs/architecture.md, "Indices"); and
/// what the target's vendor sort takes (backend::max_sort_items).
template <class Index, class Exec>
void check_point_count(std::size_t n, char const* where) {
  KDFORGE_REQUIRE(n <= std::size_t(std::numeric_limits<Index>::max()) - 1, where, n,
                  " points do not fit the index type (", sizeof(Index) * 8, "-bit); build with kdforge::", where,
                  "<std::int64_t>(...)");
  KDFORGE_REQUIRE(n < (std::size_t(1) << 32), where, n,
                  " points: this builder takes at most 2^32 - 1 points; build_median_in_place<std::int64_t> builds "
                  "trees of more, in place");
  KDFORGE_REQUIRE(n <= backend::max_sort_items<Exec>(), where, n, " points: ", Exec::name(), "'s sorts take at most ",
                  backend::max_sort_items<Exec>(), " elements in this build (CUDA 13 takes more); "
                  "build_median_in_place<std::int64_t> builds trees of more");
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
  detail::check_point_count<Index, Exec>(A::size(points), "build_left_balanced");
  return detail::api_call<typename Exec::memory_space>("build_left_balanced", [&] {
    return detail::build_left_balanced_impl<Index, Exec, typename A::coordinate_type, A::dimension>(
        exec, to_points(exec, points, "kdforge::tree::points_input"), options);
  });
}

} // namespace kdforge
