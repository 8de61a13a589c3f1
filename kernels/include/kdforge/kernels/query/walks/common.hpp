#pragma once
// What the walks of level-order trees share: bucket levels, the bucket scan,
// split-plane offsets, and the lower bounds that prune by where the points
// are (the tree's box, node boxes) besides the split planes.
//
// A walk hands each point it reaches to a visitor:
//   T bound() const            squared radius beyond which nothing matters
//   void visit(Index i, T d2)  the point of caller's index i at squared
//                              distance d2 (may be > bound)
//   bool done() const          stop early (radius count with a cap)
//   static constexpr bool fixed_bound = true   when bound() never changes
//                              (radius visitors); kNN visitors leave it out
//
// Bucket levels (every walk): the bottom `bucket_levels` levels are scanned,
// not walked. A node on level L - bucket_levels (L levels in all) is a
// bucket: reaching it visits its whole sub-tree (at most 2^bucket_levels - 1
// nodes) in level order without plane tests. Pruning down there saves few
// distance evaluations but costs most of a walk's steps: 7/8 of a tree's
// nodes are on its bottom 3 levels, and every step is a dependent load and a
// dozen branches. Exactness is untouched: a bucket is skipped only when the
// test at its parent says nothing in it can matter.
//
// Lower bounds. A walk prunes a sub-tree when a lower bound of the squared
// distance from the query to any of its points exceeds the visitor's bound:
//  - the cell bound: q's distance to the sub-tree's cell, the tree's box cut
//    by the split planes above it, summed over dimensions from per-dimension
//    offsets (Arya & Mount, "Algorithms for fast vector quantization", 1993).
//    Every walk starts from q's offsets to the tree's box (root_offsets), so
//    points on a plane z = c are pruned by their z distance from the start,
//    however the planes above split them;
//  - node boxes (node_boxes.hpp), where the tree has them: the box of a
//    sub-tree's points, tighter than its cell where the points are thin,
//    and in 2-D and 3-D the box along the points' principal axes, thin
//    where they lie on a surface or a line of any orientation
//    (oriented_boxes.hpp; node_box_bound).
// Both are summed with the rounding of the distances themselves, so a bound
// never exceeds the computed distance of a point it covers: results are
// exactly those of brute force, whatever prunes.
//
// Ties. A kNN list orders (distance, index) pairs, and with many points at
// one distance (duplicates: a million copies of one point) the distances
// alone prune nothing. A node box also records the smallest input index
// below it, and a kNN visitor skips a sub-tree when (box distance, smallest
// index) cannot beat its k-th pair (beyond()). The walks go to the left
// child first when the query lies on the split plane: the builders order
// equal coordinates by input index, so the left side holds the smaller
// indices, which fill the list first and let the rest be skipped.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/trees/concept.hpp>
#include <kdforge/kernels/trees/level_order.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>
#include <kdforge/kernels/trees/packed_node.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace kdforge::kernels {

/// The most bucket levels a query may ask for (buckets of up to 63 nodes).
inline constexpr int max_bucket_levels = 6;

/// The bottom levels scanned as buckets: how many, and the nodes of a full
/// bucket, (1 << levels) - 1, made once on the host: computed from the level
/// count inside a GPU loop, nvcc recomputed it in every iteration.
struct Buckets {
  int levels = 0;
  int size = 0;
  KOKKOS_FUNCTION constexpr Buckets(int bucket_levels) // NOLINT: implicit, a level count is a Buckets
      : levels(bucket_levels), size((1 << bucket_levels) - 1) {}
};

/// Level whose nodes are buckets: L - bucket_levels (L: levels of a tree of
/// n node slots), at least 0. bucket_levels = 0 gives L: no node is a bucket.
KOKKOS_FORCEINLINE_FUNCTION int bucket_level(std::int64_t n, int bucket_levels) {
  int const L = lb::num_levels(n);
  return L > bucket_levels ? L - bucket_levels : 0;
}

template <class Tree>
KOKKOS_FORCEINLINE_FUNCTION bool node_exists(Tree const& tree, typename Tree::index_type s) {
  return s < tree.node_count() && tree.has_node(s);
}

template <class Tree, class = void>
struct is_without_boxes : std::false_type {};
template <class Tree>
struct is_without_boxes<Tree, std::enable_if_t<Tree::without_boxes>> : std::true_type {};

/// The node boxes of a tree, or NoNodeBoxes for trees that have none or are
/// seen WithoutBoxes.
template <class Tree>
KOKKOS_FORCEINLINE_FUNCTION decltype(auto) node_boxes_of(Tree const& tree) {
  if constexpr (has_node_boxes<Tree> && !is_without_boxes<Tree>::value) {
    return tree.node_boxes();
  } else {
    (void)tree;
    return NoNodeBoxes<typename Tree::coordinate_type, Tree::dimension, typename Tree::index_type>{};
  }
}

/// q's offset from the tree's box in each dimension (0 inside its slab):
/// the per-dimension distances of the root's cell. Each is at most the
/// computed offset of any point of the tree (rounding is monotonic).
template <class T, int D>
KOKKOS_FORCEINLINE_FUNCTION void root_offsets(Point<T, D> const& q, Box<T, D> const& box, T (&off)[D]) {
  for (int d = 0; d < D; ++d)
    off[d] = q[d] < box.lo[d] ? q[d] - box.lo[d] : q[d] > box.hi[d] ? q[d] - box.hi[d] : T(0);
}

/// Squared distance from q to a cell given q's offset from the cell's slab
/// in each dimension (off), with dimension dim's replaced by diff: the far
/// child's cell when off is its parent's. Summed afresh in dimension order
/// with the rounding of sq_distance (never updated by subtraction), so it
/// never exceeds the computed distance of a point in the cell. With off all
/// zero (a query inside the tree's box, at the top) it is diff * diff, the
/// plane test, to the bit.
template <int D, class T>
KOKKOS_FORCEINLINE_FUNCTION T cell_distance(T const (&off)[D], int dim, T diff) {
  T const o0 = dim == 0 ? diff : off[0];
  T rd = backend::mul_rn(o0, o0); // = 0 + o0 * o0: squares are >= +0 (see sq_norm)
  KDFORGE_UNROLL
  for (int d = 1; d < D; ++d) {
    T const o = d == dim ? diff : off[d];
    rd = backend::add_rn(rd, backend::mul_rn(o, o));
  }
  return rd;
}

/// Visits the sub-tree of bucket s (its top `levels` levels: all of it),
/// level by level, left to right. Returns true when the visitor is done.
/// The top 3 levels (7 nodes) are unrolled with the depth a uniform
/// predicate, so their loads are independent and issue together; deeper
/// levels are a plain loop, so the visitor's code (a kNN insertion is dozens
/// of instructions) is not copied 2^levels times.
template <class Tree, class Visitor>
KOKKOS_FORCEINLINE_FUNCTION bool scan_bucket(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                             typename Tree::index_type s, int levels) {
  using Index = typename Tree::index_type;
  constexpr int unrolled = 3;
  KDFORGE_UNROLL
  for (int j = 0; j < unrolled; ++j) {
    if (j >= levels) return false;
    Index const first = ((s + 1) << j) - 1; // leftmost descendant j levels down
    KDFORGE_UNROLL
    for (int t = 0; t < (1 << j); ++t) {
      Index const u = first + t;
      if (node_exists(tree, u)) {
        auto const p = tree.load(u);
        visitor.visit(p.index, sq_distance(q, p));
        if (visitor.done()) return true;
      }
    }
  }
  Index const n = tree.node_count();
  for (int j = unrolled; j < levels; ++j) {
    Index const first = ((s + 1) << j) - 1;
    if (first >= n) break;
    Index const last = first + (Index(1) << j) < n ? first + (Index(1) << j) : n;
    for (Index u = first; u < last; ++u) {
      if (!tree.has_node(u)) continue;
      auto const p = tree.load(u);
      visitor.visit(p.index, sq_distance(q, p));
      if (visitor.done()) return true;
    }
  }
  return false;
}

/// Where a one-node-per-iteration walk is inside a bucket: the visited
/// node's position j in the bucket's level order (0 is the bucket's root).
/// Position j lies highest_bit(j + 1) levels below the root, and its node is
/// (root << depth) + j: one counter instead of a (depth, place) pair, fewer
/// instructions in every iteration of the GPU loops (all lanes compute the
/// next bucket node, scanning or not).
template <class Index>
struct BucketCursor {
  int j = 0;
  /// Moves u to the bucket's next node in level order and returns true, or
  /// returns false (and resets) when the node just visited was its last. A
  /// node past the tree's end ends the bucket: every later node in level
  /// order is past it too. `size`: nodes of a full bucket (Buckets::size).
  KOKKOS_FORCEINLINE_FUNCTION bool next(Index root, int size, Index n, Index& u) {
    int const k = j + 1;
    u = (root << lb::highest_bit(std::uint32_t(k + 1))) + k;
    if (k < size && u < n) {
      j = k;
      return true;
    }
    j = 0;
    return false;
  }
};

template <class Visitor, class = void>
struct has_beyond : std::false_type {};
template <class Visitor>
struct has_beyond<Visitor, std::void_t<decltype(std::declval<Visitor const&>().beyond(
                               std::declval<typename Visitor::coordinate_type>(), std::declval<typename Visitor::index_type>()))>>
    : std::true_type {};

/// Whether nothing below a node box, whose points lie at squared distance
/// >= lb and have input indices >= min_index, can matter to the visitor:
/// kNN visitors compare (lb, min_index) with their k-th pair (see Ties at
/// the top), the others lb with their bound.
template <class Visitor, class T, class Index>
KOKKOS_FORCEINLINE_FUNCTION bool beyond_reach(Visitor const& v, T lb, Index min_index) {
  if constexpr (has_beyond<Visitor>::value) return v.beyond(lb, min_index);
  else return lb > v.bound();
}

/// A node box's lower bound of the squared distance from q to the points
/// below inner node s, and their smallest input index.
template <class T, class Index>
struct BoxBound {
  T lb;
  Index min_index;
};

/// The bound by node s's axis-aligned box, raised to its principal-axes
/// box's where the node has one worth testing (NodeBox::framed) and the
/// axis-aligned box alone does not already put the sub-tree out of the
/// visitor's reach (the second box's load and arithmetic are then saved).
template <class Visitor, class Boxes, class P>
KOKKOS_FORCEINLINE_FUNCTION BoxBound<typename Boxes::coordinate_type, typename Boxes::index_type>
node_box_bound(Visitor const& v, Boxes const& boxes, P const& q, typename Boxes::index_type s) {
  using T = typename Boxes::coordinate_type;
  using Index = typename Boxes::index_type;
  auto const b = boxes.box(s);
  BoxBound<T, Index> r{box_distance(q, b), b.min_index};
  if constexpr (orientable<Boxes::dimension> && !Boxes::always_empty) {
    if (b.framed && !beyond_reach(v, r.lb, r.min_index)) {
      T const ob = oriented_distance(q, boxes.frame(s));
      r.lb = ob > r.lb ? ob : r.lb;
    }
  }
  return r;
}

/// Whether a visitor's bound() never changes during a walk (see the top).
template <class Visitor, class = void>
struct has_fixed_bound : std::false_type {};
template <class Visitor>
struct has_fixed_bound<Visitor, std::enable_if_t<Visitor::fixed_bound>> : std::true_type {};

/// Whether a tree's split dimension is its level mod D at compile time
/// (`static constexpr bool round_robin_splits = true`: MedianTree, and a
/// LeftBalancedTree seen through FixedSplitTree on GPUs).
template <class Tree, class = void>
struct is_round_robin : std::false_type {};
template <class Tree>
struct is_round_robin<Tree, std::enable_if_t<Tree::round_robin_splits>> : std::true_type {};

/// Bit l set for the levels l whose round-robin split dimension is e.
template <class Mask, int D>
KOKKOS_FORCEINLINE_FUNCTION constexpr Mask level_mask(int e) {
  Mask m = 0;
  for (int l = e; l < int(sizeof(Mask) * 8); l += D) m |= Mask(1) << l;
  return m;
}

/// x replaced by o[e] for the e in [E, D) whose levels include vbit's. Each
/// mask is a constexpr variable, evaluated by the compiler (with e a loop
/// counter, even unrolled, nvcc built the masks in every iteration).
template <class Mask, int D, int E = 1, class O, class X>
KOKKOS_FORCEINLINE_FUNCTION X pick_by_level(O const& o, Mask vbit, X x) {
  if constexpr (E >= D) {
    return x;
  } else {
    constexpr Mask m = level_mask<Mask, D>(E);
    return pick_by_level<Mask, D, E + 1>(o, vbit, (vbit & m) != 0 ? o[E] : x);
  }
}

/// o's component in the split dimension of node v on level vl (vbit = 1 << vl).
/// For round-robin trees the dimension is never computed: vbit tested against
/// constant masks picks the component (for D = 3 on GPUs, two LOP3 against a
/// modulo by 3 and two compares).
template <class Tree, class O, class Mask>
KOKKOS_FORCEINLINE_FUNCTION auto split_offset(Tree const& tree, O const& o, typename Tree::index_type v, int vl,
                                              Mask vbit) {
  constexpr int D = Tree::dimension;
  if constexpr (is_round_robin<Tree>::value) {
    return pick_by_level<Mask, D>(o, vbit, o[0]);
  } else {
    return component<D>(o, tree.split_dim(v, vl));
  }
}

/// Sum in dimension order of the squares of off0 with dimension E's term
/// replaced by diff where vbit's level splits E. Each mask is a constexpr
/// variable (evaluated by the compiler; a mask computed from a loop
/// counter, even an unrolled one, was rebuilt in every iteration of the
/// GPU loops: see pick_by_level).
template <class Mask, int D, int E = 0, class T>
KOKKOS_FORCEINLINE_FUNCTION T round_robin_cell_sum(T const (&off0)[D], Mask vbit, T diff, T acc) {
  constexpr Mask m = level_mask<Mask, D>(E);
  T const o = (vbit & m) != 0 ? diff : off0[E];
  T const sq = backend::mul_rn(o, o);
  T const sum = E == 0 ? sq : backend::add_rn(acc, sq);
  if constexpr (E + 1 < D) return round_robin_cell_sum<Mask, D, E + 1>(off0, vbit, diff, sum);
  else return sum;
}

/// The cell bound of the far side of node v's plane (level vl, vbit =
/// 1 << vl), q's offset from it diff, given q's offsets from the tree's box:
/// cell_distance with the split dimension's term replaced. For round-robin
/// trees the replaced term is chosen by level masks, like split_offset.
template <class Tree, class Mask, class T>
KOKKOS_FORCEINLINE_FUNCTION T far_cell_bound(Tree const& tree, T const (&off0)[Tree::dimension],
                                             typename Tree::index_type v, int vl, Mask vbit, T diff) {
  constexpr int D = Tree::dimension;
  if constexpr (is_round_robin<Tree>::value) {
    (void)tree;
    (void)v;
    (void)vl;
    return round_robin_cell_sum<Mask, D>(off0, vbit, diff, T(0));
  } else {
    return cell_distance<D>(off0, tree.split_dim(v, vl), diff);
  }
}

/// Pending-plane mask of the trail walks: < 2^31 node slots have at most 31
/// levels; 64-bit indices, 63.
template <class Index>
using TrailMask = std::conditional_t<sizeof(Index) <= 4, std::uint32_t, std::uint64_t>;

} // namespace kdforge::kernels
