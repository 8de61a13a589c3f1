#pragma once
// Building left-balanced k-d trees: validation at the API boundary, then one
// of the builders in kernels/build.
#include <kdforge/error.hpp>
#include <kdforge/kernels/build/left_balanced_partition.hpp>
#include <kdforge/kernels/build/left_balanced_recursive.hpp>
#include <kdforge/kernels/build/left_balanced_tags.hpp>
#include <kdforge/memory.hpp>
#include <kdforge/options.hpp>
#include <kdforge/points.hpp>
#include <kdforge/profiling.hpp>
#include <kdforge/tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>

namespace kdforge {

namespace detail {
// Kernels are named functors (points.hpp says why: no extended lambdas).
template <class PV>
KOKKOS_FORCEINLINE_FUNCTION bool point_is_finite(PV const& pts, std::int64_t i) {
  using P = typename PV::value_type;
  bool ok = true;
  for (int d = 0; d < int(sizeof(P::coords) / sizeof(P::coords[0])); ++d) ok = ok && is_finite(pts(i)[d]);
  return ok;
}
template <class PV>
struct FirstNonFinite {
  PV pts;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    if (!point_is_finite(pts, i) && i < m) m = i;
  }
};
template <class PV, class Pos>
struct FiniteFlags {
  PV pts;
  Pos pos;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { pos(i) = point_is_finite(pts, i) ? 1 : 0; }
};
template <class PV, class Pos, class IV>
struct CompactFinite {
  PV in;
  Pos pos;
  PV out;
  IV input_index;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if (point_is_finite(in, i)) {
      out(pos(i)) = in(i);
      input_index(pos(i)) = typename IV::value_type(i);
    }
  }
};
template <class PV, class IV, class NV>
struct GatherTree {
  PV pts;
  IV node_point, input_index;
  PV tree_points;
  IV tree_index;
  NV tree_nodes;
  bool remap;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    auto const p = node_point(s);
    auto const pt = pts(p);
    auto const i = remap ? input_index(p) : p;
    tree_points(s) = pt;
    tree_index(s) = i;
    if (tree_nodes.extent(0)) tree_nodes(s) = kernels::pack_node(pt, i);
  }
};

template <class Exec, class T, int D>
std::int64_t first_non_finite(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce("kdforge::build::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, pts.extent(0)),
                          FirstNonFinite<Kokkos::View<Point<T, D>*, typename Exec::memory_space>>{pts},
                          Kokkos::Min<std::int64_t>(first));
  return first;
}

/// The points a builder works on: the caller's, or only the finite ones
/// (with their input indices) under NonFinitePolicy::drop.
template <class Index, class Exec, class T, int D>
struct FiniteInput {
  Kokkos::View<Point<T, D>*, typename Exec::memory_space> pts;
  Kokkos::View<Index*, typename Exec::memory_space> input_index; ///< empty unless points were dropped
  std::int64_t dropped = 0;
};

template <class Index, class Exec, class T, int D>
FiniteInput<Index, Exec, T, D> finite_input(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> pts,
                                            NonFinitePolicy policy, char const* where) {
  using MS = typename Exec::memory_space;
  FiniteInput<Index, Exec, T, D> r{pts, {}, 0};
  std::int64_t const bad = first_non_finite(exec, pts);
  if (bad == std::numeric_limits<std::int64_t>::max()) return r;
  if (policy == NonFinitePolicy::reject) {
    fail(where, "point ", bad,
         " has a NaN or infinite coordinate; fix the input or set "
         "non_finite = NonFinitePolicy::drop in the build options to leave such points out");
  }
  // Drop: compact the finite points, remembering their input indices.
  std::int64_t const n = std::int64_t(pts.extent(0));
  Kokkos::View<std::int64_t*, MS> pos("kdforge::build::drop_pos", n);
  Kokkos::parallel_for("kdforge::build::drop_flags", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       FiniteFlags<decltype(pts), decltype(pos)>{pts, pos});
  std::int64_t const kept = backend::exclusive_scan(exec, pos, pos);
  r.dropped = n - kept;
  r.pts = Kokkos::View<Point<T, D>*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points_input"), kept);
  r.input_index = Kokkos::View<Index*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::input_index"), kept);
  Kokkos::parallel_for("kdforge::build::drop_scatter", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       CompactFinite<decltype(pts), decltype(pos), decltype(r.input_index)>{pts, pos, r.pts, r.input_index});
  return r;
}

template <class Index, class Exec, class T, int D>
LeftBalancedTree<typename Exec::memory_space, T, D, Index>
build_left_balanced_impl(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> pts,
                         BuildOptions const& options) {
  using MS = typename Exec::memory_space;
  using Tree = LeftBalancedTree<MS, T, D, Index>;
  Region region("kdforge::build_left_balanced");

  auto const input = finite_input<Index>(exec, pts, options.non_finite, "build_left_balanced");
  pts = input.pts;
  auto const& input_index = input.input_index;
  std::int64_t const dropped = input.dropped;

  std::int64_t const n = std::int64_t(pts.extent(0));
  Box<T, D> const bounds = backend::bounding_box(exec, pts);
  Kokkos::View<std::uint8_t*, MS> dims(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::split_dims"), n);
  Kokkos::View<Index*, MS> node_point;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  Builder builder = options.builder;
  if (builder == Builder::automatic) builder = host ? Builder::recursive_select : Builder::presorted_partition;
  switch (builder) {
  case Builder::wald_tags:
    node_point = kernels::build_left_balanced_tags<Exec, T, D, Index>(exec, pts, options.split, bounds, dims);
    break;
  case Builder::presorted_partition:
    node_point = kernels::build_left_balanced_partition<Exec, T, D, Index>(exec, pts, options.split, bounds, dims);
    break;
  case Builder::recursive_select:
    if constexpr (host) {
      node_point = kernels::build_left_balanced_recursive<Exec, T, D, Index>(exec, pts, options.split, bounds, dims);
    } else {
      fail("build_left_balanced", "Builder::recursive_select runs on host execution spaces only; use "
                                  "Builder::automatic or presorted_partition on GPUs");
    }
    break;
  default: fail("build_left_balanced", "unknown BuildOptions::builder value ", int(options.builder));
  }

  // Gather points and input indices into tree order.
  Kokkos::View<Point<T, D>*, MS> tree_points(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points"), n);
  Kokkos::View<Index*, MS> tree_index(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::indices"), n);
  Kokkos::View<typename Tree::node_type*, MS> tree_nodes(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::nodes"), n);
  advise_huge_pages(tree_nodes); // what the queries read (see memory.hpp)
  bool const remap = input_index.extent(0) > 0 || dropped > 0;
  Kokkos::parallel_for("kdforge::build::gather", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       GatherTree<decltype(pts), decltype(node_point), decltype(tree_nodes)>{
                           pts, node_point, input_index, tree_points, tree_index, tree_nodes, remap});
  if (options.split == SplitPolicy::round_robin) dims = {};
  exec.fence();
  return Tree(tree_points, tree_index, tree_nodes, dims, bounds, options.split, dropped);
}

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
