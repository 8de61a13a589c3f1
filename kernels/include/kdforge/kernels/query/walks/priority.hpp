#pragma once
// Priority search of level-order trees (Arya et al. 1998, as Wehr &
// Radkowski 2018 use it in section III-E): one thread per query descends to
// a leaf, putting each branch not taken into a bounded min-max queue keyed
// by a lower bound of its distance, then continues from the nearest pending
// branch. A branch's bound is the largest of its path's plane distances
// (Friedman et al.'s bounds-overlap-ball test), its cell bound with q's
// offsets from the tree's box, and its node box where the tree has one.
// When the queue is full, a closer branch replaces the farthest pending one,
// which is dropped for good: that is where the answer becomes approximate.
#include <kdforge/kernels/query/minmax_heap.hpp>
#include <kdforge/kernels/query/walks/common.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels {

template <class T, class Index>
struct PendingBranch {
  T lb;       ///< lower bound of the squared distance to anything below node
  Index node;
  KOKKOS_FORCEINLINE_FUNCTION bool operator<(PendingBranch const& o) const {
    return lb < o.lb || (lb == o.lb && node < o.node);
  }
};

/// Row q of a View of pending branches, as min-max heap storage.
template <class View2D>
struct QueueRow {
  View2D v;
  std::int64_t row;
  KOKKOS_FORCEINLINE_FUNCTION typename View2D::reference_type operator()(int j) const { return v(row, j); }
};

template <class Tree, class Cand, class Heap>
KOKKOS_FUNCTION void priority_search(Tree const& tree, typename Tree::point_type const& q, Cand& cand, Heap& heap,
                                     std::int64_t max_leaves, typename Tree::coordinate_type scale = 1) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using B = PendingBranch<T, Index>;
  constexpr int D = Tree::dimension;
  Index const n = tree.node_count();
  if (n == 0) return;
  auto const& boxes = node_boxes_of(tree);
  T off0[D];
  root_offsets(q, tree.bounds(), off0);
  Index node = 0;
  // scale = (1 + eps)^2: every bound is scaled before it meets the k-th
  // distance, which skips branches farther than that distance / (1 + eps)
  T lb = scale * cell_distance(off0, 0, off0[0]); // q's distance to the tree's box
  std::int64_t leaves = 0;
  while (true) {
    // descend, closer child first, queueing the farther one
    while (lb <= cand.bound()) {
      auto const p = tree.load(node);
      cand.visit(p.index, sq_distance(q, p));
      int const level = lb::level(node);
      int const dim = tree.split_dim(node, level);
      T const diff = component<D>(q, dim) - component<D>(p, dim);
      Index const close = diff <= 0 ? 2 * node + 1 : 2 * node + 2;
      Index const far = diff <= 0 ? 2 * node + 2 : 2 * node + 1;
      // the far side's bound: the largest of the path's bound, its cell's
      // and, where the tree has one, its box's
      T far_lb = scale * cell_distance(off0, dim, diff);
      far_lb = far_lb > lb ? far_lb : lb;
      if (boxes.has(far)) {
        T const bd = scale * node_box_bound(cand, boxes, q, far).lb;
        far_lb = bd > far_lb ? bd : far_lb;
      }
      if (far < n && tree.has_node(far) && far_lb <= cand.bound()) heap.push_bounded(B{far_lb, far});
      if (!(close < n && tree.has_node(close))) break;
      if (boxes.has(close)) {
        T const bd = scale * node_box_bound(cand, boxes, q, close).lb;
        lb = bd > lb ? bd : lb;
      }
      node = close;
    }
    ++leaves;
    if (max_leaves > 0 && leaves >= max_leaves) return;
    if (heap.empty()) return;
    B const b = heap.pop_min();
    if (b.lb > cand.bound()) return; // everything pending is farther still
    node = b.node;
    lb = b.lb;
  }
}
} // namespace kdforge::kernels
