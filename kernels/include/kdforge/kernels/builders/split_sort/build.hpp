#pragma once
// The balanced median k-d tree of Wehr & Radkowski 2018 from validated
// points: NaN/Inf checked, the adaptive split-and-sort permutation
// (split_sort.hpp), then points and input indices gathered into its order.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/kernels/builders/left_balanced/build.hpp>
#include <kdforge/kernels/builders/split_sort/split_sort.hpp>
#include <kdforge/kernels/common/finite.hpp>
#include <kdforge/kernels/trees/median_tree.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdint>

namespace kdforge {

/// Where the time of a split-and-sort build went (the paper reports
/// 96.5 / 0.86 / 2.64 % for parallel radix / sequential radix / insertion).
struct SplitSortStats : split_sort::Stats {
  int threads_per_block = 0; ///< the TPB the build used
  double total_ms = 0;
};

namespace detail {

template <class Index, class Exec, class T, int D>
MedianTree<typename Exec::memory_space, T, D, Index>
build_split_sort_impl(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> pts,
                      split_sort::Params const& prm, NonFinitePolicy non_finite, NodeBoxPolicy node_boxes,
                      SplitSortStats* stats_out) {
  using MS = typename Exec::memory_space;
  auto const t0 = std::chrono::steady_clock::now();
  auto const input = finite_input<Index>(exec, pts, non_finite, "build_split_sort");
  pts = input.pts;
  std::int64_t const n = std::int64_t(pts.extent(0));
  Box<T, D> const bounds = backend::bounding_box(exec, pts);
  split_sort::Stats stats;
  auto order = split_sort::build<Exec, T, D, Index>(exec, pts, bounds, prm, stats_out ? &stats : nullptr);

  auto tree_points = backend::allocate<Kokkos::View<Point<T, D>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points"), n);
  auto tree_index = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::indices"), n);
  Kokkos::parallel_for("kdforge::split_sort::gather", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       GatherTree<decltype(pts), decltype(order), Kokkos::View<kernels::PackedNode<T, D, Index>*, MS>>{
                           pts, order, input.input_index, tree_points, tree_index, {}, input.dropped > 0});
  MedianTree<MS, T, D, Index> tree(tree_points, tree_index, bounds, input.dropped);
  kernels::attach_node_boxes(exec, tree, node_boxes);
  exec.fence();
  if (stats_out) {
    static_cast<split_sort::Stats&>(*stats_out) = stats;
    stats_out->threads_per_block = prm.threads_per_block;
    stats_out->total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  return tree;
}

} // namespace detail
} // namespace kdforge
