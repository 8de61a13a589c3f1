#pragma once
// The balanced median k-d tree of the adaptive split-and-sort builder (Wehr &
// Radkowski 2018): the points in the order the builder's per-level chunk
// sorts leave them, each node's point at the position the chunk arithmetic of
// split_sort_math.hpp gives. Nodes are addressed like a complete binary tree
// (node s has children 2s+1 and 2s+2, level floor(log2(s+1))), so the same
// queries and traversals serve this tree and the left-balanced one. Levels
// 0 .. Lm-1 are full; level Lm holds the leaves, where a slot may be empty
// (has_node() says so); no memory is spent on empty slots, positions are
// computed, not stored.
#include <kdforge/kernels/builders/split_sort/math.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>
#include <kdforge/kernels/trees/packed_node.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge {

template <class MemorySpace, class T, int D, class Index = std::int32_t>
class MedianTree {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::MedianTree: coordinates must be float or double");
  static_assert(std::is_same<Index, std::int32_t>::value || std::is_same<Index, std::int64_t>::value,
                "kdforge::MedianTree: the index type must be std::int32_t or std::int64_t");

public:
  using memory_space = MemorySpace;
  using coordinate_type = T;
  using index_type = Index;
  using point_type = Point<T, D>;
  using node_type = kernels::PackedNode<T, D, Index>;
  static constexpr int dimension = D;

  MedianTree() = default;
  MedianTree(Kokkos::View<point_type*, MemorySpace> points, Kokkos::View<Index*, MemorySpace> indices, Box<T, D> bounds,
             std::int64_t dropped)
      : m_points(points), m_indices(indices), m_bounds(bounds), m_size(Index(points.extent(0))),
        m_levels(split_sort::internal_levels(std::int64_t(points.extent(0)))), m_dropped(dropped) {
    m_nodes = m_size == 0 ? 0 : Index((std::int64_t(1) << (m_levels + 1)) - 1);
  }

  /// Number of points in the tree.
  KOKKOS_FUNCTION Index size() const { return m_size; }
  KOKKOS_FUNCTION bool empty() const { return m_size == 0; }
  /// Node slots 0 .. node_count()-1 of the complete binary tree; those of the
  /// last level may be empty.
  KOKKOS_FUNCTION Index node_count() const { return m_nodes; }
  /// Levels with internal nodes (Lm = floor(log2 N)); the leaves are on level Lm.
  KOKKOS_FUNCTION int internal_levels() const { return m_levels; }

  /// Where node s's point lies in points() (s must exist).
  KOKKOS_FORCEINLINE_FUNCTION Index position(Index s) const {
    int const l = lb::level(s);
    std::int64_t const c = std::int64_t(s) - lb::full(l);
    return Index(l < m_levels ? split_sort::median(m_size, l, c) : split_sort::chunk_begin(m_size, l, c));
  }
  /// Whether slot s < node_count() holds a point (always, above the last level).
  KOKKOS_FORCEINLINE_FUNCTION bool has_node(Index s) const {
    int const l = lb::level(s);
    if (l < m_levels) return true;
    std::int64_t const c = std::int64_t(s) - lb::full(l);
    return split_sort::chunk_begin(m_size, l, c) < split_sort::chunk_end(m_size, l, c);
  }
  KOKKOS_FORCEINLINE_FUNCTION point_type const& point(Index s) const { return m_points(position(s)); }
  KOKKOS_FORCEINLINE_FUNCTION Index original_index(Index s) const { return m_indices(position(s)); }
  /// Point and caller's index of node s (the traversals' common interface).
  KOKKOS_FORCEINLINE_FUNCTION node_type load(Index s) const {
    Index const i = position(s);
    return kernels::pack_node(m_points(i), m_indices(i));
  }
  /// Round robin, as in the paper (x, y, z, x, ... from the root).
  KOKKOS_FORCEINLINE_FUNCTION int split_dim(Index, int level) const { return level % D; }
  static constexpr bool round_robin_splits = true; // see kernels::split_offset

  /// The points in the builder's final order (not level order; see position()).
  Kokkos::View<point_type*, MemorySpace> points() const { return m_points; }
  /// original_indices()(i): the caller's index of points()(i).
  Kokkos::View<Index*, MemorySpace> original_indices() const { return m_indices; }
  KOKKOS_FUNCTION Box<T, D> const& bounds() const { return m_bounds; }
  /// Boxes of the inner nodes' sub-trees (see LeftBalancedTree::node_boxes).
  KOKKOS_FUNCTION kernels::NodeBoxes<MemorySpace, T, D, Index> const& node_boxes() const { return m_boxes; }
  double box_fill() const { return m_box_fill; }
  void set_node_boxes(kernels::NodeBoxes<MemorySpace, T, D, Index> const& boxes, double fill) {
    m_boxes = boxes;
    m_box_fill = fill;
  }
  SplitPolicy split_policy() const { return SplitPolicy::round_robin; }
  std::int64_t dropped_count() const { return m_dropped; }

private:
  Kokkos::View<point_type*, MemorySpace> m_points;
  Kokkos::View<Index*, MemorySpace> m_indices;
  Box<T, D> m_bounds = Box<T, D>::empty();
  kernels::NodeBoxes<MemorySpace, T, D, Index> m_boxes;
  double m_box_fill = 1;
  Index m_size = 0;
  Index m_nodes = 0;
  int m_levels = 0;
  std::int64_t m_dropped = 0;
};

} // namespace kdforge
