#pragma once
// Depth-first traversals of a k-d tree stored as a complete binary tree
// (LeftBalancedTree, MedianTree), close child first. A tree provides
// node_count() slots, has_node(s) for slots that may be empty (only leaves
// may be), load(s) (point and caller's index of node s, one record: see
// node.hpp) and split_dim(s, level).
//
// stack:      far children wait on a small fixed stack with their plane
//             distance; popped ones farther than the current bound are skipped.
// stack_free: Wald's stack-free traversal (cudaKDTree, "stack-free kd-tree
//             traversal"): the previous node alone tells whether we came down
//             from the parent or up from the close/far child; parent/child
//             arithmetic replaces the stack (no local memory on GPUs).
// Both visit nodes in the same order, so unsorted radius results are the same
// whichever is used. A visitor provides
//   T bound() const            squared radius beyond which nothing matters
//   void visit(Index i, T d2)  the point of caller's index i at squared
//                              distance d2 (may be > bound)
//   bool done() const          stop early (radius count with a cap)
#include <kdforge/kernels/left_balanced_math.hpp>
#include <kdforge/kernels/query/node.hpp>
#include <kdforge/types.hpp>

#include <Kokkos_Core.hpp>

namespace kdforge::kernels {

template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_stack(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Index const n = tree.node_count();
  if (n == 0) return;
  struct Entry {
    Index node;
    int level;
    T plane_d2;
  } stack[33];
  int top = 0;
  Index node = 0;
  int level = 0;
  while (true) {
    while (node < n && tree.has_node(node)) {
      auto const p = tree.load(node);
      visitor.visit(p.index, sq_distance(q, p));
      if (visitor.done()) return;
      int const dim = tree.split_dim(node, level);
      T const diff = component<Tree::dimension>(q, dim) - component<Tree::dimension>(p, dim);
      Index const close = diff < 0 ? 2 * node + 1 : 2 * node + 2;
      Index const far = diff < 0 ? 2 * node + 2 : 2 * node + 1;
      ++level;
      if (far < n && tree.has_node(far)) stack[top++] = Entry{far, level, diff * diff};
      node = close;
    }
    do {
      if (top == 0) return;
      --top;
    } while (stack[top].plane_d2 > visitor.bound());
    node = stack[top].node;
    level = stack[top].level;
  }
}

template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_stack_free(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Index const n = tree.node_count();
  if (n == 0) return;
  Index prev = -1;
  Index curr = 0;
  int level = 0;
  while (true) {
    Index const parent = (curr + 1) / 2 - 1;
    if (curr >= n || !tree.has_node(curr)) { // a child that does not exist: back up
      prev = curr;
      curr = parent;
      --level;
      continue;
    }
    auto const p = tree.load(curr);
    bool const from_parent = prev < curr;
    if (from_parent) {
      visitor.visit(p.index, sq_distance(q, p));
      if (visitor.done()) return;
    }
    int const dim = tree.split_dim(curr, level);
    T const diff = component<Tree::dimension>(q, dim) - component<Tree::dimension>(p, dim);
    Index const close = diff < 0 ? 2 * curr + 1 : 2 * curr + 2;
    Index const far = diff < 0 ? 2 * curr + 2 : 2 * curr + 1;
    Index next;
    if (from_parent) next = close;
    else if (prev == close) next = diff * diff <= visitor.bound() ? far : parent;
    else next = parent;
    if (next < 0) return;
    level += next == parent ? -1 : 1;
    prev = curr;
    curr = next;
  }
}

} // namespace kdforge::kernels
