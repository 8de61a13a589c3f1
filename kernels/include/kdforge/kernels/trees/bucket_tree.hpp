#pragma once
// The bucket k-d tree of Hu, Nooshabadi & Ahmadi 2015: nodes with explicit
// child links and an axis-aligned bounding box each, leaves ("buckets") of
// at most B points, the points permuted so that every node's points are one
// contiguous range. The dimension is a run-time value (1 to thousands:
// descriptors of 128 to 1024 dimensions are its users), so points, queries
// and boxes are rank-2 Views, one row per point or node.
//
// A linked tree: the walks of level-order trees (kernels/query/walks/*)
// rely on index arithmetic it does not have, so its queries walk it with
// walks/box_stack.hpp, and the operations dispatch on the tree's kind (see
// kernels/trees/concept.hpp). The visitors (candidate lists, counters, CSR
// writers) are the ones every tree shares.
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge {

namespace kernels {
/// One node of a bucket tree. Inner nodes: children `left` and `right`
/// (> 0), split plane (`split_dim`, `split_value`; points with coordinate
/// <= split_value went left, unless the build fell back to a median split:
/// then the first half in coordinate order did). Leaves: `left` == -1. Every
/// node: its points are positions [begin, end) of the tree's points().
template <class T, class Index>
struct BucketNode {
  Index left;
  Index right;
  Index begin;
  Index end;
  std::int32_t split_dim;
  T split_value;
  KOKKOS_FORCEINLINE_FUNCTION bool is_leaf() const { return left < 0; }
};
} // namespace kernels

template <class MemorySpace, class T, class Index = std::int32_t>
class BucketTree {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::BucketTree: coordinates must be float or double");
  static_assert(std::is_same<Index, std::int32_t>::value || std::is_same<Index, std::int64_t>::value,
                "kdforge::BucketTree: the index type must be std::int32_t or std::int64_t");

public:
  using memory_space = MemorySpace;
  using coordinate_type = T;
  using index_type = Index;
  using node_type = kernels::BucketNode<T, Index>;
  /// Marks the tree kind for the operations' dispatch (concept.hpp).
  static constexpr bool bucket_tree = true;
  /// The dimension is known at run time only: dim().
  static constexpr int dimension = 0;

  BucketTree() = default;
  BucketTree(Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> points, Kokkos::View<Index*, MemorySpace> indices,
             Kokkos::View<node_type*, MemorySpace> nodes, Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> boxes,
             int height, std::int64_t bucket_size, std::int64_t peak_bytes)
      : m_points(points), m_indices(indices), m_nodes(nodes), m_boxes(boxes), m_size(Index(points.extent(0))),
        m_dim(int(points.extent(1))), m_node_count(Index(nodes.extent(0))), m_height(height),
        m_bucket_size(bucket_size), m_peak_bytes(peak_bytes) {}

  /// Number of points.
  KOKKOS_FUNCTION Index size() const { return m_size; }
  KOKKOS_FUNCTION bool empty() const { return m_size == 0; }
  /// Dimension of the points.
  KOKKOS_FUNCTION int dim() const { return m_dim; }
  /// Number of nodes; node 0 is the root (none for an empty tree).
  KOKKOS_FUNCTION Index node_count() const { return m_node_count; }
  KOKKOS_FORCEINLINE_FUNCTION node_type node(Index s) const { return m_nodes(s); }
  /// Node s's bounding box in dimension d.
  KOKKOS_FORCEINLINE_FUNCTION T lo(Index s, int d) const { return m_boxes(s, d); }
  KOKKOS_FORCEINLINE_FUNCTION T hi(Index s, int d) const { return m_boxes(s, m_dim + d); }
  /// Coordinate d of the point at position i (tree order).
  KOKKOS_FORCEINLINE_FUNCTION T coord(Index i, int d) const { return m_points(i, d); }
  /// The caller's index of the point at position i.
  KOKKOS_FORCEINLINE_FUNCTION Index original_index(Index i) const { return m_indices(i); }
  /// Levels below the root (a lone root: 0); the walks' stacks hold them.
  KOKKOS_FUNCTION int height() const { return m_height; }
  /// The most points a leaf holds (BucketOptions::bucket_size).
  std::int64_t bucket_size() const { return m_bucket_size; }
  /// The most device memory the build held at once, in bytes.
  std::int64_t build_peak_bytes() const { return m_peak_bytes; }

  /// Points in tree order: node s's are rows [node(s).begin, node(s).end).
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> points() const { return m_points; }
  /// original_indices()(i): the caller's index of row i of points().
  Kokkos::View<Index*, MemorySpace> original_indices() const { return m_indices; }
  Kokkos::View<node_type const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> nodes() const { return m_nodes; }
  /// Row s: node s's box, lo in columns [0, dim), hi in [dim, 2 dim).
  Kokkos::View<T const**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> boxes() const {
    return m_boxes;
  }

private:
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> m_points;
  Kokkos::View<Index*, MemorySpace> m_indices;
  Kokkos::View<node_type const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> m_nodes;
  Kokkos::View<T const**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> m_boxes;
  Index m_size = 0;
  int m_dim = 0;
  Index m_node_count = 0;
  int m_height = 0;
  std::int64_t m_bucket_size = 0;
  std::int64_t m_peak_bytes = 0;
};

} // namespace kdforge
