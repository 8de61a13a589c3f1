#pragma once
// Building left-balanced k-d trees: validation at the API boundary, then one
// of the builders in kernels/build.
#include <kdforge/error.hpp>
#include <kdforge/kernels/build/left_balanced_partition.hpp>
#include <kdforge/kernels/build/left_balanced_tags.hpp>
#include <kdforge/options.hpp>
#include <kdforge/points.hpp>
#include <kdforge/tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>

namespace kdforge {

namespace detail {
template <class Exec, class T, int D>
std::int64_t first_non_finite(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce(
      "kdforge::build::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, pts.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t & m) {
        bool ok = true;
        for (int d = 0; d < D; ++d) ok = ok && detail::is_finite(pts(i)[d]);
        if (!ok && i < m) m = i;
      },
      Kokkos::Min<std::int64_t>(first));
  return first;
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
  using T = typename A::coordinate_type;
  constexpr int D = A::dimension;
  using MS = typename Exec::memory_space;
  using Tree = LeftBalancedTree<MS, T, D, Index>;

  std::size_t const n_in = A::size(points);
  KDFORGE_REQUIRE(n_in <= std::size_t(std::numeric_limits<Index>::max()) - 1, "build_left_balanced", n_in,
                  " points do not fit the index type (", sizeof(Index) * 8,
                  "-bit); build with kdforge::build_left_balanced<std::int64_t>(...)");
  KDFORGE_REQUIRE(n_in < (std::size_t(1) << 32), "build_left_balanced", n_in,
                  " points: the builders support at most 2^32 - 1 points");
  static_assert(D <= 255, "kdforge: split dimensions are stored in one byte");

  auto pts = to_points(exec, points, "kdforge::tree::points_input");
  Kokkos::View<Index*, MS> input_index; // only when points were dropped
  std::int64_t dropped = 0;
  std::int64_t const bad = detail::first_non_finite(exec, pts);
  if (bad != std::numeric_limits<std::int64_t>::max()) {
    if (options.non_finite == NonFinitePolicy::reject) {
      detail::fail("build_left_balanced", "point ", bad,
                   " has a NaN or infinite coordinate; fix the input or set "
                   "BuildOptions::non_finite = NonFinitePolicy::drop to leave such points out");
    }
    // Drop: compact the finite points, remembering their input indices.
    std::int64_t const n = std::int64_t(pts.extent(0));
    Kokkos::View<std::int64_t*, MS> pos("kdforge::build::drop_pos", n);
    Kokkos::parallel_for(
        "kdforge::build::drop_flags", Kokkos::RangePolicy<Exec>(exec, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
          bool ok = true;
          for (int d = 0; d < D; ++d) ok = ok && detail::is_finite(pts(i)[d]);
          pos(i) = ok ? 1 : 0;
        });
    std::int64_t const kept = backend::exclusive_scan(exec, pos, pos);
    dropped = n - kept;
    Kokkos::View<Point<T, D>*, MS> compact(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points_input"), kept);
    input_index = Kokkos::View<Index*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::input_index"), kept);
    auto in = pts;
    Kokkos::parallel_for(
        "kdforge::build::drop_scatter", Kokkos::RangePolicy<Exec>(exec, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
          bool ok = true;
          for (int d = 0; d < D; ++d) ok = ok && detail::is_finite(in(i)[d]);
          if (ok) {
            compact(pos(i)) = in(i);
            input_index(pos(i)) = Index(i);
          }
        });
    pts = compact;
  }

  std::int64_t const n = std::int64_t(pts.extent(0));
  Box<T, D> const bounds = backend::bounding_box(exec, pts);
  Kokkos::View<std::uint8_t*, MS> dims(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::split_dims"), n);
  Kokkos::View<Index*, MS> node_point;
  switch (options.builder) {
  case Builder::wald_tags:
    node_point = kernels::build_left_balanced_tags<Exec, T, D, Index>(exec, pts, options.split, bounds, dims);
    break;
  case Builder::automatic:
  case Builder::presorted_partition:
    node_point = kernels::build_left_balanced_partition<Exec, T, D, Index>(exec, pts, options.split, bounds, dims);
    break;
  default: detail::fail("build_left_balanced", "unknown BuildOptions::builder value ", int(options.builder));
  }

  // Gather points and input indices into tree order.
  Kokkos::View<Point<T, D>*, MS> tree_points(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points"), n);
  Kokkos::View<Index*, MS> tree_index(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::indices"), n);
  bool const remap = input_index.extent(0) > 0 || dropped > 0;
  Kokkos::parallel_for(
      "kdforge::build::gather", Kokkos::RangePolicy<Exec>(exec, 0, n), KOKKOS_LAMBDA(std::int64_t s) {
        Index const p = node_point(s);
        tree_points(s) = pts(p);
        tree_index(s) = remap ? input_index(p) : p;
      });
  if (options.split == SplitPolicy::round_robin) dims = {};
  exec.fence();
  return Tree(tree_points, tree_index, dims, bounds, options.split, dropped);
}

} // namespace kdforge
