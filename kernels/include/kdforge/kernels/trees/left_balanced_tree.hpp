#pragma once
// The left-balanced k-d tree (Wald 2022): the points themselves, permuted
// into level order, no pointers. Node s has children 2s+1 and 2s+2; its split
// plane passes through its own point.
#include <kdforge/kernels/trees/node_boxes.hpp>
#include <kdforge/kernels/trees/packed_node.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge {

template <class MemorySpace, class T, int D, class Index = std::int32_t>
class LeftBalancedTree {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::LeftBalancedTree: coordinates must be float or double");
  static_assert(std::is_same<Index, std::int32_t>::value || std::is_same<Index, std::int64_t>::value,
                "kdforge::LeftBalancedTree: the index type must be std::int32_t or std::int64_t");

public:
  using memory_space = MemorySpace;
  using coordinate_type = T;
  using index_type = Index;
  using point_type = Point<T, D>;
  using node_type = kernels::PackedNode<T, D, Index>;
  static constexpr int dimension = D;

  LeftBalancedTree() = default;
  /// Made by build_left_balanced: `nodes` holds points and indices again,
  /// packed for the queries (see kernels/query/node.hpp).
  LeftBalancedTree(Kokkos::View<point_type*, MemorySpace> points, Kokkos::View<Index*, MemorySpace> indices,
                   Kokkos::View<node_type*, MemorySpace> nodes, Kokkos::View<std::uint8_t*, MemorySpace> split_dims,
                   Box<T, D> bounds, SplitPolicy split, std::int64_t dropped)
      : m_points(points), m_indices(indices), m_nodes(nodes), m_split_dims(split_dims),
        m_bounds(bounds), m_split(split), m_size(Index(points.extent(0))), m_dropped(dropped) {}

  /// Number of points in the tree.
  KOKKOS_FUNCTION Index size() const { return m_size; }
  KOKKOS_FUNCTION bool empty() const { return m_size == 0; }
  /// Node slots of the tree: one per point (the traversals' common interface
  /// with MedianTree, whose last level may have empty slots).
  KOKKOS_FUNCTION Index node_count() const { return m_size; }
  KOKKOS_FORCEINLINE_FUNCTION constexpr bool has_node(Index) const { return true; }
  /// Point of node s (tree order).
  KOKKOS_FORCEINLINE_FUNCTION point_type const& point(Index s) const { return m_points(s); }
  /// Point and caller's index of node s in one aligned load (what queries read).
  KOKKOS_FORCEINLINE_FUNCTION node_type load(Index s) const { return m_nodes(s); }
  /// Index of node s's point in the caller's input.
  KOKKOS_FORCEINLINE_FUNCTION Index original_index(Index s) const { return m_indices(s); }
  /// Split dimension of node s on tree level `level` (level = floor(log2(s+1))).
  KOKKOS_FORCEINLINE_FUNCTION int split_dim(Index s, int level) const {
    return m_split == SplitPolicy::round_robin ? split_dim_as<SplitPolicy::round_robin>(s, level)
                                               : split_dim_as<SplitPolicy::widest_dimension>(s, level);
  }
  /// split_dim for a tree known to have split policy P (see
  /// detail::FixedSplitTree).
  template <SplitPolicy P>
  KOKKOS_FORCEINLINE_FUNCTION int split_dim_as(Index s, int level) const {
    if constexpr (P == SplitPolicy::round_robin) return level % D;
    else return int(m_split_dims(s));
  }

  /// Points in tree (level) order.
  Kokkos::View<point_type*, MemorySpace> points() const { return m_points; }
  /// original_indices()(s): the caller's index of the point at node s.
  Kokkos::View<Index*, MemorySpace> original_indices() const { return m_indices; }
  /// One byte per node with its split dimension; empty for round_robin.
  Kokkos::View<std::uint8_t*, MemorySpace> split_dims() const { return m_split_dims; }
  /// Bounding box of the points (empty box for an empty tree).
  KOKKOS_FUNCTION Box<T, D> const& bounds() const { return m_bounds; }
  /// Boxes of the inner nodes' sub-trees (empty when the build left them
  /// out: BuildOptions::node_boxes).
  KOKKOS_FUNCTION kernels::NodeBoxes<MemorySpace, T, D, Index> const& node_boxes() const { return m_boxes; }
  /// The build's measure of how much of their cells the points fill (see
  /// kernels::build_node_boxes); 1 when not measured.
  double box_fill() const { return m_box_fill; }
  /// Sets the node boxes (the builders do; an empty set turns them off).
  void set_node_boxes(kernels::NodeBoxes<MemorySpace, T, D, Index> const& boxes, double fill) {
    m_boxes = boxes;
    m_box_fill = fill;
  }
  SplitPolicy split_policy() const { return m_split; }
  /// Points left out of the tree by NonFinitePolicy::drop.
  std::int64_t dropped_count() const { return m_dropped; }

private:
  Kokkos::View<point_type*, MemorySpace> m_points;
  Kokkos::View<Index*, MemorySpace> m_indices;
  // Read-only path for the queries (on CUDA: ld.global.nc, one 16-byte load).
  Kokkos::View<node_type const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> m_nodes;
  Kokkos::View<std::uint8_t*, MemorySpace> m_split_dims;
  Box<T, D> m_bounds = Box<T, D>::empty();
  kernels::NodeBoxes<MemorySpace, T, D, Index> m_boxes;
  double m_box_fill = 1;
  SplitPolicy m_split = SplitPolicy::round_robin;
  Index m_size = 0;
  std::int64_t m_dropped = 0;
};

namespace detail {
/// A LeftBalancedTree whose split policy is fixed at compile time, for the
/// GPU query kernels (see with_fixed_split in kernels/query/launch.hpp). With the policy a
/// run-time value, nvcc predicates both ways of split_dim into every
/// iteration of a traversal loop: the round-robin modulo and the widest
/// policy's byte load with its address (four instructions issued even when
/// predicated off), ~9 of the ~95 instructions of the closest-point loop.
template <class Tree, SplitPolicy P>
struct FixedSplitTree : Tree {
  static constexpr bool round_robin_splits = P == SplitPolicy::round_robin; // see kernels::split_offset
  explicit FixedSplitTree(Tree const& t) : Tree(t) {}
  KOKKOS_FORCEINLINE_FUNCTION int split_dim(typename Tree::index_type s, int level) const {
    return this->template split_dim_as<P>(s, level);
  }
};
} // namespace detail

} // namespace kdforge
