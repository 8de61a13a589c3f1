#pragma once
// Best-first search of bucket trees, Hu, Nooshabadi & Ahmadi 2015, section
// III, Algorithm 3: the nodes waiting to be searched sit in a priority queue
// keyed by the squared distance from the query to their bounding box; the
// nearest one is taken next, descending to its nearer child and queueing
// the farther one, and a node whose box lies beyond the k-th distance found
// so far is dropped. The approximate searches of this walk:
//   max_leaves: stop after that many buckets (FLANN's "checks" budget); the
//     buckets searched are the nearest by box distance, which is where a
//     best-first order beats a depth-first one at equal work;
//   eps: a node counts as beyond the k-th distance r once its box distance
//     exceeds r / (1 + eps), so every neighbour reported is within
//     (1 + eps) of the true one of its rank (Arya et al. 1998);
//   the queue: bounded (a min-max heap of the caller's capacity); when it is
//     full the farthest waiting node is dropped for good.
// With no budget, eps = 0 and a queue that never fills, the result is the
// exact one, equal to walks/box_stack.hpp's.
#include <kdforge/kernels/query/minmax_heap.hpp>
#include <kdforge/kernels/query/walks/box_stack.hpp>
#include <kdforge/kernels/query/walks/priority.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels {

/// Walks `tree` best first for row q of `queries`. `scale` = (1 + eps)^2:
/// box distances are compared with the visitor's bound after multiplying
/// by it. `heap`: a MinMaxHeap of PendingBranch (walks/priority.hpp).
template <class Tree, class QV, class Visitor, class Heap>
KOKKOS_FUNCTION void traverse_box_best_first(Tree const& tree, QV const& queries, std::int64_t q, Visitor& visitor,
                                             Heap& heap, std::int64_t max_leaves,
                                             typename Tree::coordinate_type scale) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using B = PendingBranch<T, Index>;
  if (tree.node_count() == 0) return;
  std::int64_t leaves = 0;
  Index node = 0;
  T lb = scale * bucket_box_distance(tree, queries, q, Index(0));
  while (true) {
    if (lb <= visitor.bound()) {
      while (true) { // down to a bucket, nearer child first
        auto const nd = tree.node(node);
        if (nd.is_leaf()) {
          visit_bucket(tree, queries, q, nd.begin, nd.end, visitor);
          ++leaves;
          break;
        }
        T ll, lr;
        bucket_box_distances<false>(tree, queries, q, nd.left, nd.right, ll, lr, visitor.bound());
        ll *= scale;
        lr *= scale;
        bool const left_first = ll <= lr;
        T const far_lb = left_first ? lr : ll;
        if (far_lb <= visitor.bound()) heap.push_bounded(B{far_lb, left_first ? nd.right : nd.left});
        lb = left_first ? ll : lr;
        if (lb > visitor.bound()) break;
        node = left_first ? nd.left : nd.right;
      }
      if (max_leaves > 0 && leaves >= max_leaves) return;
    }
    if (heap.empty()) return;
    B const b = heap.pop_min();
    if (b.lb > visitor.bound()) return; // everything waiting is farther still
    node = b.node;
    lb = b.lb;
  }
}

} // namespace kdforge::kernels
