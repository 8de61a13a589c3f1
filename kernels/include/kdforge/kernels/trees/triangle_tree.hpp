#pragma once
// The SAH k-d tree over triangles of Zhou, Hou, Wang & Guo 2008, in the
// paper's output layout (section 3.3): the nodes in preorder, so an inner
// node's left child is the next node and only the right child's position is
// stored, and a walk that goes left first reads the array front to back.
//
// Triangle trees (is_triangle_tree) answer, besides the types:
//   memory_space, coordinate_type (float or double), index_type (std::int32_t)
//   static constexpr bool triangle_tree = true
//   KOKKOS_FUNCTION index_type size() const           triangles in the mesh
//   KOKKOS_FUNCTION index_type node_count() const     nodes; 0 is the root
//   KOKKOS_FUNCTION node_type node(index_type s) const
//       inner: split dimension and value, the right child's position;
//       leaf: a range [begin, begin + count) of leaf_triangle()
//   KOKKOS_FUNCTION index_type leaf_triangle(index_type i) const
//       the caller's index of the triangle at position i of the leaf lists
//   KOKKOS_FUNCTION T corner(index_type triangle, int c, int d) const
//       coordinate d of corner c of a triangle, as the mesh gave it
//   KOKKOS_FUNCTION Box<T, 3> bounds() const          the scene box: the cell of the root
//   KOKKOS_FUNCTION int height() const                the deepest level (the root: 0)
// A node's cell is not stored: it is the root's box cut by the split planes
// on the way down (a walk carries it as a ray interval). A triangle is
// listed in every leaf whose cell it overlaps (a triangle that straddles a
// plane of the large-node stage is in both children), so a ray meets each
// of its hits in a leaf it visits.
//
// Linked trees have walks of their own (kernels/trees/concept.hpp): this
// one is walked by kernels/query/walks/ray_stack.hpp.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge {

namespace kernels {
/// The deepest level a triangle tree may have (the root: 0): its builders
/// stop there, and the ray walks' fixed stacks hold that many entries.
inline constexpr int triangle_tree_max_height = 60;

/// One node of a triangle tree. `kind` 0, 1, 2: an inner node split at
/// `split` across that dimension (triangles below the plane went left, above
/// it right, across it or lying in it both), its left child the next node,
/// its right child node `a`. `kind` 3: a leaf of the `b` triangles at
/// positions [a, a + b) of the leaf lists.
template <class T>
struct TriangleNode {
  std::int32_t kind;
  std::int32_t a;
  std::int32_t b;
  T split;
  static constexpr std::int32_t leaf_kind = 3;
  KOKKOS_FORCEINLINE_FUNCTION bool is_leaf() const { return kind == leaf_kind; }
  KOKKOS_FORCEINLINE_FUNCTION int dim() const { return kind; }
  KOKKOS_FORCEINLINE_FUNCTION std::int32_t right() const { return a; }
  KOKKOS_FORCEINLINE_FUNCTION std::int32_t begin() const { return a; }
  KOKKOS_FORCEINLINE_FUNCTION std::int32_t count() const { return b; }
};

template <class T>
KOKKOS_FORCEINLINE_FUNCTION bool operator==(TriangleNode<T> const& x, TriangleNode<T> const& y) {
  return x.kind == y.kind && x.a == y.a && x.b == y.b && x.split == y.split;
}
} // namespace kernels

/// The surface-area-heuristic costs a tree was built with; its SAH cost is
/// computed with them (kdforge::sah_cost).
struct SahCosts {
  double traversal = 1.0;
  double intersection = 1.5;
};

template <class MemorySpace, class T>
class TriangleTree {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::TriangleTree: coordinates must be float or double");

public:
  using memory_space = MemorySpace;
  using coordinate_type = T;
  using index_type = std::int32_t;
  using node_type = kernels::TriangleNode<T>;
  /// Marks the tree kind for the operations' dispatch (concept.hpp).
  static constexpr bool triangle_tree = true;
  static constexpr int dimension = 3;
  /// The corners of the triangles, (i, c, d): coordinate d of corner c of
  /// triangle i. Row-major on every backend, so that one triangle's nine
  /// values share a cache line (a GPU's default, column-major, put them 4 *
  /// size() bytes apart) and a tree file holds them in one order wherever
  /// it was written.
  using corner_view = Kokkos::View<T* [3][3], Kokkos::LayoutRight, MemorySpace>;

  TriangleTree() : m_bounds(Box<T, 3>::empty()) {}
  TriangleTree(Kokkos::View<node_type*, MemorySpace> nodes, Kokkos::View<std::int32_t*, MemorySpace> leaf_triangles,
               corner_view corners, Box<T, 3> const& bounds, int height, SahCosts costs)
      : m_nodes(nodes), m_leaf_triangles(leaf_triangles), m_corners(corners), m_bounds(bounds),
        m_size(std::int32_t(corners.extent(0))), m_node_count(std::int32_t(nodes.extent(0))), m_height(height),
        m_costs(costs), m_corner_data(corners.data()), m_leaf_data(leaf_triangles.data()) {}

  /// Triangles in the mesh (zero-area ones included).
  KOKKOS_FUNCTION std::int32_t size() const { return m_size; }
  KOKKOS_FUNCTION bool empty() const { return m_node_count == 0; }
  /// Number of nodes; node 0 is the root (none for an empty mesh).
  KOKKOS_FUNCTION std::int32_t node_count() const { return m_node_count; }
  KOKKOS_FORCEINLINE_FUNCTION node_type node(std::int32_t s) const { return m_nodes(s); }
  /// The caller's index of the triangle at position i of the leaf lists.
  KOKKOS_FORCEINLINE_FUNCTION std::int32_t leaf_triangle(std::int32_t i) const {
    return backend::load_ro(m_leaf_data + i);
  }
  /// Coordinate d of corner c (0, 1, 2) of triangle `triangle`.
  KOKKOS_FORCEINLINE_FUNCTION T corner(std::int32_t triangle, int c, int d) const {
    return backend::load_ro(m_corner_data + (std::ptrdiff_t(triangle) * 9 + 3 * c + d));
  }
  /// The scene box (the box of all corners): the root's cell.
  KOKKOS_FUNCTION Box<T, 3> bounds() const { return m_bounds; }
  /// The deepest level of a node (a lone root: 0); the walks' stacks hold it.
  KOKKOS_FUNCTION int height() const { return m_height; }
  /// The SAH costs the builder used.
  SahCosts costs() const { return m_costs; }

  /// The nodes in preorder.
  Kokkos::View<node_type const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> nodes() const {
    return m_nodes;
  }
  /// The leaves' triangle lists, leaf after leaf in preorder.
  Kokkos::View<std::int32_t const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> leaf_triangles() const {
    return m_leaf_triangles;
  }
  /// corners()(i, c, d): coordinate d of corner c of triangle i.
  Kokkos::View<T const* [3][3], Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>>
  corners() const {
    return m_corners;
  }

private:
  Kokkos::View<node_type const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> m_nodes;
  Kokkos::View<std::int32_t const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> m_leaf_triangles;
  Kokkos::View<T const* [3][3], Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>>
      m_corners;
  Box<T, 3> m_bounds;
  std::int32_t m_size = 0;
  std::int32_t m_node_count = 0;
  int m_height = 0;
  SahCosts m_costs;
  // The walks' reads, as raw pointers into the views above: see load_ro.
  T const* m_corner_data = nullptr;
  std::int32_t const* m_leaf_data = nullptr;
};

namespace kernels {
namespace concept_detail_triangle {
template <class...>
using void_t = void;
template <class Tree, class = void>
struct is_triangle : std::false_type {};
template <class Tree>
struct is_triangle<Tree, void_t<decltype(Tree::triangle_tree)>> : std::integral_constant<bool, Tree::triangle_tree> {};
} // namespace concept_detail_triangle

/// Whether Tree is a triangle tree (see the top of this file).
template <class Tree>
inline constexpr bool is_triangle_tree = concept_detail_triangle::is_triangle<Tree>::value;
} // namespace kernels

} // namespace kdforge
