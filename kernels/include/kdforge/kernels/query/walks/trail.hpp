#pragma once
// The trail walk of level-order trees (the GPU default): depth first like
// the others, with the pending far children kept as one bit per level in a
// register instead of on a stack, and no climbing back up. Bit l set: the far
// side of the current path's level-l node may still matter. When a path ends
// (a bucket scanned, or no close child), the deepest pending bit names the
// next node: the path's level-l node is the ancestor
// ((curr + 1) >> (level - l)) - 1 of the current one. A level with nothing
// pending costs nothing, where the stack-free walk spends an iteration per
// level on the way back up. (A related bit-trail restart scheme for BVHs:
// Laine, "Restart trail for stackless BVH traversal", HPG 2010.)
//
// Bounds: a far side is pending when its cell bound is within the visitor's
// bound: the plane's offset in the split dimension and, for trees with node
// boxes, q's offsets from the tree's box in the others (trail_far_bound).
// Where the tree has node boxes,
// a far child just entered is tested by its box before anything below it is
// visited (its node and box loads issue together), and skipped whole when
// the box is out of reach.
//
// With a bound that shrinks (kNN; trail_shrinking_run), the ancestor's plane
// is tested again before its far child is entered: a "pop" iteration reloads
// the ancestor (usually an L1 hit: a warp's queries share their upper
// ancestors), tests it, and either enters its far child or leaves the next
// pop to the next iteration. Pops are iterations of the one loop, like steps
// and bucket nodes, so the lanes of a GPU warp that pop share the load and
// the test with those that step. With a fixed bound (radius) the test would
// pass again, so a path's end goes straight to the far child (one more bit
// per level says which side it is on) without loading anything.
//
// With a fixed bound the walk tests the same planes at the same moments as
// the stack-free walk and visits the same nodes in the same order, so
// unsorted radius rows are the same whichever of the two runs.
#include <kdforge/kernels/query/walks/common.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge::kernels {

/// The bound of the far side of node v's plane: for trees with node boxes
/// its cell bound from q's offsets to the tree's box (far_cell_bound); for
/// trees without (uniform data, whose points fill their box: the offsets
/// are zero for queries among them, and degenerate boxes get node boxes,
/// see attach_node_boxes) the plane's squared distance alone, which keeps
/// the GPU loop as short as it was before boxes existed (the offsets cost
/// 4 registers and 10-15% of kNN time on an H100).
template <bool WithOffsets, class Tree, class Mask, class T>
KOKKOS_FORCEINLINE_FUNCTION T trail_far_bound(Tree const& tree, T const (&off0)[Tree::dimension],
                                              typename Tree::index_type v, int vl, Mask vbit, T diff) {
  if constexpr (WithOffsets) {
    return far_cell_bound(tree, off0, v, vl, vbit, diff);
  } else {
    (void)tree;
    (void)off0;
    (void)v;
    (void)vl;
    (void)vbit;
    return diff * diff;
  }
}

/// Where a kNN trail walk stands between two iterations (see
/// trail_shrinking_run): enough to stop it and resume it later, in another
/// thread, with the visitor's candidates.
template <class Index>
struct TrailState {
  TrailMask<Index> pending = 0;
  Index curr = 0;       // the tree node we are at; in a bucket, the bucket's root
  Index u = 0;          // the node a visiting iteration visits: curr, or in a bucket its node
  int level = 0;        // curr's level
  bool popping = false; // the next iteration re-tests the deepest pending plane instead
  bool fresh = false;   // u is a far child just entered: test its box first
  BucketCursor<Index> bucket;
};

/// The first descent of a kNN trail walk, from the root to the query's
/// bucket, testing planes only; returns the state trail_shrinking_run
/// starts from. In the kNN trail walk a node on a path (not in a bucket) is
/// shown to the visitor when its level is popped, not on the way down: a
/// node's point lies on its own plane and in the tree's box, so its squared
/// distance is at least its far side's cell bound (same rounding), and a
/// level whose bound failed drops nothing that could matter. Its pending bit
/// therefore stands for its point as well as its far child. The final
/// candidates are those of an eager walk: the k smallest (distance, index)
/// pairs do not depend on the order they are offered in; offered late, most
/// of a path's far points are never inserted at all.
///
/// A loop of its own because every query takes exactly its first lb steps
/// down (the tree is complete): a warp's lanes run it in lockstep, ~20
/// instructions per level instead of a full iteration of the main loop.
template <class Tree>
KOKKOS_FUNCTION TrailState<typename Tree::index_type> trail_descend(Tree const& tree,
                                                                   typename Tree::point_type const& q,
                                                                   typename Tree::coordinate_type bound,
                                                                   Buckets buckets) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Mask = TrailMask<Index>;
  TrailState<Index> s;
  Index const n = tree.node_count();
  if (n == 0) return s;
  if constexpr (!std::decay_t<decltype(node_boxes_of(tree))>::always_empty) {
    // with boxes the main loop's steps go down in box order from the root
    if (!node_boxes_of(tree).empty()) return s;
  }
  constexpr bool with_offsets = !std::decay_t<decltype(node_boxes_of(tree))>::always_empty;
  T off0[Tree::dimension] = {};
  if constexpr (with_offsets) root_offsets(q, tree.bounds(), off0);
  int const lb = bucket_level(n, buckets.levels);
  while (s.level < lb) {
    auto const p = tree.load(s.curr);
    auto const o = offsets(q, p);
    Mask const bit = Mask(1) << s.level;
    T const diff = split_offset(tree, o, s.curr, s.level, bit);
    // pending: its point or its far side may matter (with no cutoff the
    // bound is +inf and every level is)
    if (trail_far_bound<with_offsets>(tree, off0, s.curr, s.level, bit, diff) <= bound) s.pending |= bit;
    Index const close = diff <= 0 ? 2 * s.curr + 1 : 2 * s.curr + 2;
    if (!node_exists(tree, close)) { // the path ends above the buckets: pop this node first
      s.popping = true;
      break;
    }
    s.curr = close;
    ++s.level;
  }
  s.u = s.curr;
  return s;
}

/// The kNN loop (visitors whose bound shrinks): the same steps, pops and
/// bucket scans at the same moments as traverse_trail's, written so that
/// every iteration runs one straight sequence. The lanes of a GPU warp are in
/// different kinds of iteration at once (a step, a bucket node, a pop); with
/// a branch per kind the warp ran every kind's code one after the other in
/// almost every iteration. Here the node loaded, its test, the bucket's next
/// node and the next state are computed by all lanes and chosen by selects;
/// only the visit (a candidate insertion) stays a branch.
///
/// Runs at most max_iterations iterations (all, when negative) from `state`
/// (trail_descend's, or one this function left). Returns true when the walk
/// is finished; otherwise `state` says where to resume. Steps only test
/// planes; a pop shows its node to the visitor (same iteration, same load)
/// and enters its far child if the far side is within the bound and exists.
template <class Tree, class Visitor>
KOKKOS_FUNCTION bool trail_shrinking_run(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                         Buckets buckets, TrailState<typename Tree::index_type>& state,
                                         int max_iterations) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Mask = TrailMask<Index>;
  Index const n = tree.node_count();
  if (n == 0) return true;
  auto const& boxes = node_boxes_of(tree);
  constexpr bool box_order = !std::decay_t<decltype(boxes)>::always_empty;
  T off0[Tree::dimension] = {};
  if constexpr (box_order) root_offsets(q, tree.bounds(), off0);
  T root_rd = T(0); // q's distance to the tree's box: a bound of every cell
  if constexpr (box_order) root_rd = cell_distance(off0, 0, off0[0]);
  int const lb = bucket_level(n, buckets.levels);
  Mask pending = state.pending;
  Index curr = state.curr;
  int level = state.level;
  Index u = state.u;
  bool popping = state.popping;
  bool fresh = state.fresh;
  BucketCursor<Index> bucket = state.bucket;
  int const bucket_size = buckets.size;
  int left = max_iterations;
  while (true) {
    // Every exit writes the state back: returning without it (a finished
    // walk's state is never read) made nvcc keep a zeroed copy of the state
    // for that exit and re-zero it in every iteration.
    if (left-- == 0) { // never when negative
      state = {pending, curr, u, level, popping, fresh, bucket};
      return false;
    }
    int const top = lb::highest_bit(pending); // -1 when nothing is pending
    if (popping && top < 0) {
      state = {pending, curr, u, level, popping, fresh, bucket};
      return true;
    }
    int const vl = popping ? top : level; // the loaded node's level
    Mask const vbit = Mask(1) << vl;
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : u;
    bool const scanning = !popping && level == lb;
    bool const exists = !scanning || tree.has_node(v);
    typename Tree::node_type p{};
    if (exists) p = tree.load(v);
    // a far child just entered: out of reach by its box, nothing below it matters
    bool skip = false;
    if (fresh && boxes.has(v)) {
      auto const b = node_box_bound(visitor, boxes, q, v);
      skip = beyond_reach(visitor, b.lb, b.min_index);
    }
    auto const o = offsets(q, p);
    if (exists && !skip && (popping || scanning)) { // a step's node waits for its pop
      visitor.visit(p.index, sq_norm(o));
      if (visitor.done()) {
        state = {popping ? pending & ~vbit : pending, curr, u, level, popping, false, bucket};
        return true;
      }
    }
    // v's far side (used by steps and pops)
    T const diff = split_offset(tree, o, v, vl, vbit);
    T const far_rd = trail_far_bound<box_order>(tree, off0, v, vl, vbit, diff);
    bool within = far_rd <= visitor.bound();
    Index close = diff <= 0 ? 2 * v + 1 : 2 * v + 2;
    Index far = diff <= 0 ? 2 * v + 2 : 2 * v + 1;
    bool const step = !popping && !scanning && !skip;
    // With boxes, a step goes first into the child whose box is nearer
    // (see traverse_stack), and a pop enters the child its path did not
    // take: the sibling of the path's child on the next level, or, when the
    // path ends at v, the plane's far side (a step that goes nowhere either
    // found both children out of reach, or only one of them exists and is
    // the plane's close side). A far side across the plane keeps its cell
    // bound; the close side is bounded by the tree's box until its own box
    // is tested on entry.
    bool swapped = false, go_out = false;
    if constexpr (box_order) {
      if (step && boxes.has(close)) {
        auto const bc = node_box_bound(visitor, boxes, q, close);
        bool const far_exists = node_exists(tree, far);
        BoxBound<T, Index> bf{far_rd, 0};
        if (far_exists && boxes.has(far)) {
          bf = node_box_bound(visitor, boxes, q, far);
          bf.lb = bf.lb > far_rd ? bf.lb : far_rd;
        }
        swapped = far_exists && (bf.lb < bc.lb || (bf.lb == bc.lb && bf.min_index < bc.min_index));
        go_out = swapped ? beyond_reach(visitor, bf.lb, bf.min_index) : beyond_reach(visitor, bc.lb, bc.min_index);
      }
      if (popping && vl < level) {
        Index const taken = ((curr + 1) >> (level - vl - 1)) - 1;
        Index const sibling = 4 * v + 3 - taken;
        within = sibling == far ? within : root_rd <= visitor.bound();
        far = sibling;
      }
      if (swapped) {
        Index const t = close;
        close = far;
        far = t;
      }
    }
    // the bucket's next node in level order (used by scanning iterations;
    // the cursor resets itself after the bucket's last node)
    BucketCursor<Index> next_bucket = bucket;
    Index next_u = 0;
    bool const scan_on = next_bucket.next(curr, bucket_size, n, next_u) && scanning && !skip;
    bool const descend = step && !go_out && node_exists(tree, close);
    bool const enter = popping && within && node_exists(tree, far); // a pop into its far child
    // A pop clears its level's bit (the highest one set); a step within the
    // bound sets its own level's bit, which is clear: no bit at or deeper
    // than a step's level is ever set (trail_descend hands over a bucket scan
    // or a pop, a pop leaves none deeper than its level, whose bit it clears,
    // steps go down one level at a time, and a saved state is one taken at
    // the top of an iteration). One flip instead of a clear and a set (the
    // kNN loop is bound by the GPU's integer pipe).
    pending ^= popping || (step && (within || swapped)) ? vbit : Mask(0);
    bucket = scan_on ? next_bucket : BucketCursor<Index>{};
    Index const next = scan_on ? next_u : descend ? close : far;
    bool const moves = scan_on || descend || enter;
    u = moves ? next : u;
    curr = descend || enter ? next : curr;
    level = descend ? level + 1 : enter ? vl + 1 : level;
    fresh = enter;
    // a path ends (bucket done, no close child, or a box out of reach): pop;
    // a failed pop: pop again
    popping = !moves;
  }
}

/// The trail walk: kNN visitors run trail_descend and trail_shrinking_run;
/// fixed-bound (radius) visitors the loop below, whose path ends jump
/// straight to the deepest pending far child.
template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_trail(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                    Buckets buckets) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Mask = TrailMask<Index>;
  constexpr bool fixed = has_fixed_bound<Visitor>::value;
  Index const n = tree.node_count();
  if (n == 0) return;
  if constexpr (!fixed) {
    auto state = trail_descend(tree, q, visitor.bound(), buckets);
    trail_shrinking_run(tree, q, visitor, buckets, state, -1);
  } else {
    auto const& boxes = node_boxes_of(tree);
    constexpr bool with_offsets = !std::decay_t<decltype(boxes)>::always_empty;
    T off0[Tree::dimension] = {};
    if constexpr (with_offsets) root_offsets(q, tree.bounds(), off0);
    int const lb = bucket_level(n, buckets.levels);
    Mask pending = 0;
    Mask far_right = 0; // bit l set when level l's pending far child is a right child
    Index curr = 0;     // the tree node we are at; in a bucket, the bucket's root
    int level = 0;      // curr's level
    Index u = 0;        // the node this iteration visits: curr, or in a bucket its node
    bool fresh = false; // u is a far child just jumped to: test its box first
    BucketCursor<Index> bucket;
    int const bucket_size = buckets.size;
    while (true) {
      bool const scanning = level == lb;
      bool skip = false;
      if (fresh && boxes.has(u)) {
        auto const b = node_box_bound(visitor, boxes, q, u);
        skip = beyond_reach(visitor, b.lb, b.min_index);
      }
      fresh = false;
      if (!skip) {
        bool const exists = !scanning || tree.has_node(u);
        typename Tree::node_type p{};
        if (exists) p = tree.load(u);
        auto const o = offsets(q, p);
        if (exists) {
          visitor.visit(p.index, sq_norm(o));
          if (visitor.done()) return;
        }
        if (scanning) {
          if (bucket.next(curr, bucket_size, n, u)) continue; // the bucket's next node
        } else {
          Mask const lbit = Mask(1) << level;
          T const diff = split_offset(tree, o, u, level, lbit);
          Index const close = diff <= 0 ? 2 * u + 1 : 2 * u + 2;
          Index const far = diff <= 0 ? 2 * u + 2 : 2 * u + 1;
          if (trail_far_bound<with_offsets>(tree, off0, u, level, lbit, diff) <= visitor.bound() && node_exists(tree, far)) {
            pending |= lbit;
            if (diff <= 0) far_right |= lbit;
          }
          if (node_exists(tree, close)) {
            curr = close;
            u = close;
            ++level;
            fresh = true; // with boxes, test its box before its point
            continue;
          }
        }
      }
      // the path ends: the deepest pending far child is next, untested
      if (pending == 0) return;
      int const l = lb::highest_bit(pending);
      Mask const bit = Mask(1) << l;
      Index const a = ((curr + 1) >> (level - l)) - 1; // the path's level-l node
      curr = 2 * a + ((far_right & bit) ? 2 : 1);
      pending &= ~bit;
      far_right &= ~bit;
      u = curr;
      level = l + 1;
      fresh = true;
    }
  }
}

} // namespace kdforge::kernels
