#pragma once
// The left-balanced k-d tree (Wald 2022) from validated points: the points
// checked for NaN/Inf, the bounding box, one of the three builders for the
// level-order permutation, then the points gathered into tree order.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/host/huge_pages.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/kernels/builders/left_balanced/partition.hpp>
#include <kdforge/kernels/builders/left_balanced/recursive.hpp>
#include <kdforge/kernels/builders/left_balanced/tags.hpp>
#include <kdforge/kernels/common/finite.hpp>
#include <kdforge/kernels/trees/left_balanced_tree.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::detail {

/// SplitPolicy::automatic for points whose box is `bounds`: round robin
/// (cheapest to walk: the split dimension is the level's, no byte per node)
/// where the box is at most 2.5 times as wide in one dimension as in
/// another, the widest side otherwise. Round-robin planes across a
/// dimension of zero width (points on a plane) split nothing geometrically,
/// and across a narrow one cut cells ever thinner while the wide dimension
/// stays unsplit; measured on 16 and 2 CPU cores, the widest side answers kNN
/// on a plane 3.6x and on a 1000 x 1 x 1 box 6x faster, and equals round
/// robin on uniform points (docs/performance.md). The limit is not 2: a
/// cube halved (the cell of one of 2 ranks, or of 4 in a grid) measures
/// just over 2:1, and a limit there would pick either side by a hair; on
/// GPUs round robin answers kNN on such cells 7-11% faster, and as fast
/// up to 4:1.
template <class T, int D>
SplitPolicy resolve_split(SplitPolicy split, Box<T, D> const& bounds) {
  if (split != SplitPolicy::automatic) return split;
  double lo = 0, hi = 0;
  for (int d = 0; d < D; ++d) {
    double const w = double(bounds.hi[d]) - double(bounds.lo[d]);
    if (d == 0 || w < lo) lo = w;
    if (d == 0 || w > hi) hi = w;
  }
  return hi <= 2.5 * lo ? SplitPolicy::round_robin : SplitPolicy::widest_dimension;
}

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
  auto dims = backend::allocate<Kokkos::View<std::uint8_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::split_dims"), n);
  Kokkos::View<Index*, MS> node_point;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  SplitPolicy const split = resolve_split(options.split, bounds);
  Builder builder = options.builder;
  if (builder == Builder::automatic) builder = host ? Builder::recursive_select : Builder::presorted_partition;
  switch (builder) {
  case Builder::wald_tags:
    node_point = kernels::build_left_balanced_tags<Exec, T, D, Index>(exec, pts, split, bounds, dims);
    break;
  case Builder::presorted_partition:
    node_point = kernels::build_left_balanced_partition<Exec, T, D, Index>(exec, pts, split, bounds, dims);
    break;
  case Builder::recursive_select:
    if constexpr (host) {
      node_point = kernels::build_left_balanced_recursive<Exec, T, D, Index>(exec, pts, split, bounds, dims);
    } else {
      fail("build_left_balanced", "Builder::recursive_select runs on host execution spaces only; use "
                                  "Builder::automatic or presorted_partition on GPUs");
    }
    break;
  default: fail("build_left_balanced", "unknown BuildOptions::builder value ", int(options.builder));
  }

  // Gather points and input indices into tree order.
  auto tree_points = backend::allocate<Kokkos::View<Point<T, D>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points"), n);
  auto tree_index = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::indices"), n);
  auto tree_nodes = backend::allocate<Kokkos::View<typename Tree::node_type*, MS>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::nodes"), n);
  advise_huge_pages(tree_nodes); // what the queries read (see memory.hpp)
  bool const remap = input_index.extent(0) > 0 || dropped > 0;
  Kokkos::parallel_for("kdforge::build::gather", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       GatherTree<decltype(pts), decltype(node_point), decltype(tree_nodes)>{
                           pts, node_point, input_index, tree_points, tree_index, tree_nodes, remap});
  if (split == SplitPolicy::round_robin) dims = {};
  Tree tree(tree_points, tree_index, tree_nodes, dims, bounds, split, dropped);
  kernels::attach_node_boxes(exec, tree, options.node_boxes);
  exec.fence();
  return tree;
}

} // namespace kdforge::detail
