#pragma once
// The stack walk of level-order trees (the CPU default): depth first, close
// child first, far children waiting on a small fixed stack with the lower
// bound of their sub-tree; a popped one whose bound now exceeds the
// visitor's is skipped.
//
// A far child's bound is its cell's distance (Arya & Mount's incremental
// distance: each stack entry keeps its cell's per-dimension offsets, the
// root's being q's offsets from the tree's box) and, where the tree has node
// boxes, its box's distance, the larger of the two. With boxes the close
// child is tested too before the walk goes down into it.
//
// kNN (a bound that shrinks, on CPUs): a node with a far child is shown to
// the visitor when that child is popped, not on the way down, and not at
// all when even its cell bound exceeds the visitor's bound by then: the
// node's point lies on the far cell's boundary, so its distance is at least
// that cell's distance (same rounding). Most of a path's points are far from
// the query, and offered early, while the list is still filling, they were
// inserted only to be evicted again. Radius visitors (fixed bound) see the
// nodes on the way down, in the order every walk shares, and so do GPU kNN
// kernels (their registers are better spent elsewhere).
#include <kdforge/kernels/query/walks/common.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge::kernels {

/// The walk, compiled with node boxes (Boxed) and without: the box tests
/// and the tie-aware pops are compiled out where a tree has no boxes, and
/// cost nothing then.
template <bool Boxed, class Tree, class Visitor, class Boxes>
KOKKOS_FUNCTION void stack_walk(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                Buckets buckets, Boxes const& boxes) {
  int const bucket_levels = buckets.levels;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int D = Tree::dimension;
  // GPUs walk with traverse_trail unless asked otherwise, and a kNN kernel
  // holds every walk (the walk is picked at run time): longer entries would
  // take registers from all of them.
  constexpr bool defer = !backend::device_code && !has_fixed_bound<Visitor>::value;
  constexpr bool box_order = Boxed && !has_fixed_bound<Visitor>::value;
  Index const n = tree.node_count();
  int const lb = bucket_level(n, bucket_levels);
  struct Entry {
    Index node;
    int level;
    T rd;     // lower bound of the far child's sub-tree
    T off[D]; // per dimension, q's offset from the far child's cell
    Index parent_index; // kNN: the caller's index of the far child's parent
    T parent_d2;        // and its squared distance, shown to the visitor at the pop
    Index min_index;    // Boxed: the far child's smallest input index (0: unknown)
    T parent_rd;        // Boxed kNN: the far cell's distance, a bound of the parent's point
  } stack[sizeof(Index) * 8 + 1]; // levels of a tree of < 2^31 (2^63) node slots
  int top = 0;
  Index node = 0;
  int level = 0;
  T off[D];
  root_offsets(q, tree.bounds(), off);
  while (true) {
    while (true) { // down the close side, pushing the far children
      if (level == lb) {
        if (scan_bucket(tree, q, visitor, node, bucket_levels)) return;
        break;
      }
      auto const p = tree.load(node);
      auto const o = offsets(q, p);
      T const d2 = sq_norm(o);
      if constexpr (!defer) {
        visitor.visit(p.index, d2);
        if (visitor.done()) return;
      }
      int const dim = tree.split_dim(node, level);
      T const diff = component<Tree::dimension>(o, dim);
      Index const right = diff <= 0 ? 0 : 1; // arithmetic, not a branch, on CPUs
      Index close = 2 * node + 1 + right;
      Index far = 2 * node + 2 - right;
      ++level;
      T const cell_rd = cell_distance(off, dim, diff); // the far side's cell
      // With boxes, a kNN walk goes first into the child whose box is
      // nearer (the BVH order): off a surface, the query's side of a plane
      // often holds only far points, and a bound learnt from them prunes
      // little. (Radius walks keep the plane order: their bound is fixed,
      // the order changes no work, and unsorted rows stay in the one order
      // every walk and backend shares.)
      T close_lb = T(0);
      Index close_min = 0;
      bool swapped = false;
      if constexpr (Boxed) {
        if (boxes.has(close)) {
          auto const b = node_box_bound(visitor, boxes, q, close);
          close_lb = b.lb;
          close_min = b.min_index;
        }
      }
      if (node_exists(tree, far)) {
        Entry& e = stack[top];
        e.rd = cell_rd;
        bool reach;
        if constexpr (Boxed) {
          Index min_index = 0;
          if (boxes.has(far)) {
            auto const b = node_box_bound(visitor, boxes, q, far);
            e.rd = b.lb > cell_rd ? b.lb : cell_rd;
            min_index = b.min_index;
          }
          if constexpr (box_order) {
            swapped = e.rd < close_lb || (e.rd == close_lb && min_index < close_min);
          }
          e.min_index = swapped ? close_min : min_index;
          T const pushed_rd = swapped ? close_lb : e.rd;
          close_lb = swapped ? e.rd : close_lb;
          close_min = swapped ? min_index : close_min;
          e.rd = pushed_rd;
          reach = !beyond_reach(visitor, e.rd, e.min_index);
        } else {
          reach = cell_rd <= visitor.bound();
        }
        // the pushed child's cell offsets, and the one descended into
        if (swapped) {
          for (int d = 0; d < D; ++d) e.off[d] = off[d];
          off[dim] = diff;
          Index const t = close;
          close = far;
          far = t;
        } else {
          for (int d = 0; d < D; ++d) e.off[d] = d == dim ? diff : off[d];
        }
        e.node = far;
        e.level = level;
        if constexpr (defer) {
          e.parent_index = p.index;
          e.parent_d2 = d2;
          if constexpr (Boxed) {
            e.parent_rd = cell_rd; // the node's point lies on the far cell's boundary
            // the pushed side is out of reach already, the node's point may not be
            if (!reach && cell_rd <= visitor.bound()) visitor.visit(p.index, d2);
          }
        }
        top += reach ? 1 : 0;
      } else if constexpr (defer) {
        visitor.visit(p.index, d2); // no far child to wait for
      }
      if (!node_exists(tree, close)) break;
      if constexpr (Boxed) {
        if (boxes.has(close) && beyond_reach(visitor, close_lb, close_min)) break;
      }
      node = close;
    }
    while (true) { // pop the next far child still within reach
      if (top == 0) return;
      Entry const& e = stack[--top];
      if constexpr (Boxed) {
        if constexpr (defer) {
          if (e.parent_rd <= visitor.bound()) visitor.visit(e.parent_index, e.parent_d2);
        }
        if (!beyond_reach(visitor, e.rd, e.min_index)) break;
      } else if (e.rd <= visitor.bound()) {
        if constexpr (defer) visitor.visit(e.parent_index, e.parent_d2);
        break;
      }
    }
    node = stack[top].node;
    level = stack[top].level;
    for (int d = 0; d < D; ++d) off[d] = stack[top].off[d];
  }
}

template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_stack(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                    Buckets buckets) {
  if (tree.node_count() == 0) return;
  auto const& boxes = node_boxes_of(tree);
  if constexpr (std::decay_t<decltype(boxes)>::always_empty) {
    stack_walk<false>(tree, q, visitor, buckets, boxes);
  } else {
    if (boxes.empty()) stack_walk<false>(tree, q, visitor, buckets, boxes);
    else stack_walk<true>(tree, q, visitor, buckets, boxes);
  }
}

} // namespace kdforge::kernels
