#pragma once
// The tree concept: what the walks of kernels/query/walks need from a tree,
// written down once and checked with static_asserts that say in plain words
// what a tree type lacks.
//
// Every tree (TreeConcept):
//   memory_space, coordinate_type (float or double), index_type
//   (std::int32_t or std::int64_t), point_type = Point<T, D>,
//   static constexpr int dimension = D
//   KOKKOS_FUNCTION index_type size() const     points in the tree
//   KOKKOS_FUNCTION Box<T, D> bounds() const    tight box of all its points
//
// Level-order trees (LevelOrderTree), walked by index arithmetic, no links:
// node s has children 2s + 1 and 2s + 2 and holds one point, which lies on
// its split plane (LeftBalancedTree, MedianTree):
//   KOKKOS_FUNCTION index_type node_count() const     node slots
//   KOKKOS_FUNCTION bool has_node(index_type s) const slot s holds a point
//                                                     (only leaves may not)
//   KOKKOS_FUNCTION node_type load(index_type s) const
//       the point and caller's index of node s in one record (PackedNode)
//   KOKKOS_FUNCTION int split_dim(index_type s, int level) const
//   optional: KOKKOS_FUNCTION NodeBoxes<...> node_boxes() const
//       tight boxes of the sub-trees of the inner nodes, used by the walks to
//       prune whole sub-trees whose points lie farther than the bound (see
//       node_boxes.hpp); absent or empty: the walks prune by split planes and
//       the root box only.
//
// Linked trees (bucket, SAH and photon trees) have their own concept in their
// files and walks of their own; the operations (knn, radius, rays) dispatch on
// the concept a tree satisfies. The visitors an operation hands to a walk
// (candidate lists, counters, CSR writers: kernels/query/) are shared by all.
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

namespace kdforge::kernels {

namespace concept_detail {
template <class...>
using void_t = void;

template <class Tree, class = void>
struct has_types : std::false_type {};
template <class Tree>
struct has_types<Tree, void_t<typename Tree::memory_space, typename Tree::coordinate_type, typename Tree::index_type,
                              typename Tree::point_type, decltype(Tree::dimension)>> : std::true_type {};

template <class Tree, class = void>
struct has_size : std::false_type {};
template <class Tree>
struct has_size<Tree, void_t<decltype(std::declval<Tree const&>().size())>> : std::true_type {};

template <class Tree, class = void>
struct has_bounds : std::false_type {};
template <class Tree>
struct has_bounds<Tree, void_t<decltype(std::declval<Tree const&>().bounds())>> : std::true_type {};

template <class Tree, class = void>
struct has_level_order : std::false_type {};
template <class Tree>
struct has_level_order<
    Tree, void_t<decltype(std::declval<Tree const&>().node_count()),
                 decltype(std::declval<Tree const&>().has_node(std::declval<typename Tree::index_type>())),
                 decltype(std::declval<Tree const&>().load(std::declval<typename Tree::index_type>())),
                 decltype(std::declval<Tree const&>().split_dim(std::declval<typename Tree::index_type>(), 0))>>
    : std::true_type {};

template <class Tree, class = void>
struct has_node_boxes : std::false_type {};
template <class Tree>
struct has_node_boxes<Tree, void_t<decltype(std::declval<Tree const&>().node_boxes())>> : std::true_type {};
} // namespace concept_detail

/// Whether Tree satisfies the level-order tree concept (see the top of this file).
template <class Tree>
inline constexpr bool is_level_order_tree =
    concept_detail::has_types<Tree>::value && concept_detail::has_size<Tree>::value &&
    concept_detail::has_bounds<Tree>::value && concept_detail::has_level_order<Tree>::value;

/// Whether a level-order tree offers node boxes (it may still hold none).
template <class Tree>
inline constexpr bool has_node_boxes = concept_detail::has_node_boxes<Tree>::value;

/// Compile-time check with plain-English messages; true when Tree is a
/// level-order tree.
template <class Tree>
KOKKOS_INLINE_FUNCTION constexpr bool check_level_order_tree() {
  static_assert(concept_detail::has_types<Tree>::value,
                "kdforge: a tree type must name memory_space, coordinate_type, index_type, point_type and "
                "`static constexpr int dimension` (see kdforge/kernels/trees/concept.hpp)");
  static_assert(concept_detail::has_size<Tree>::value,
                "kdforge: a tree must have `KOKKOS_FUNCTION index_type size() const` (the number of points)");
  static_assert(concept_detail::has_bounds<Tree>::value,
                "kdforge: a tree must have `KOKKOS_FUNCTION Box<T, D> bounds() const` (the tight box of its points)");
  static_assert(concept_detail::has_level_order<Tree>::value,
                "kdforge: this walk needs a level-order tree: `node_count()`, `has_node(s)`, `load(s)` (point and "
                "caller's index of node s) and `split_dim(s, level)`, with node s's children at 2s + 1 and 2s + 2");
  if constexpr (concept_detail::has_types<Tree>::value) {
    using T = typename Tree::coordinate_type;
    using I = typename Tree::index_type;
    static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                  "kdforge: a tree's coordinate_type must be float or double");
    static_assert(std::is_same<I, std::int32_t>::value || std::is_same<I, std::int64_t>::value,
                  "kdforge: a tree's index_type must be std::int32_t or std::int64_t");
  }
  return true;
}

} // namespace kdforge::kernels
