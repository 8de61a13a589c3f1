#pragma once
// Wald's stack-free walk of level-order trees (cudaKDTree, "stack-free
// kd-tree traversal"): the previous node alone tells whether the walk came
// down from the parent or up from the close or far child; parent/child
// arithmetic replaces the stack (no local memory on GPUs).
//
// One loop, one node per iteration. An iteration loads a node, computes its
// distance, shows it to the visitor, and moves on: in the tree part, into a
// child or back to the parent; in a bucket (reached from its parent), to the
// bucket's next node in level order, and after its last node back to the
// bucket's parent. Scanning and stepping lanes of a GPU warp thus share the
// load, the distance and the visitor's code in every iteration instead of
// taking turns (with a whole bucket scanned per iteration, ~11 of a warp's
// 32 lanes were active).
//
// A far child is entered when its cell bound (the plane's offset, with q's
// offsets from the tree's box in the other dimensions) is within the bound.
#include <kdforge/kernels/query/walks/common.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels {

template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_stack_free(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                         Buckets buckets) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int D = Tree::dimension;
  Index const n = tree.node_count();
  if (n == 0) return;
  int const lb = bucket_level(n, buckets.levels);
  T off0[D];
  root_offsets(q, tree.bounds(), off0);
  Index prev = -1;
  Index curr = 0; // the tree node we are at; in a bucket, the bucket's root
  int level = 0;  // curr's level
  Index u = 0;    // the node this iteration visits: curr, or in a bucket its node
  BucketCursor<Index> bucket;
  int const bucket_size = buckets.size;
  while (true) {
    bool const scanning = level == lb;
    bool const exists = !scanning || tree.has_node(u);
    typename Tree::node_type p{};
    if (exists) p = tree.load(u);
    bool const from_parent = prev < curr; // always true while scanning
    auto const o = offsets(q, p);
    if (exists && from_parent) {
      visitor.visit(p.index, sq_norm(o));
      if (visitor.done()) return;
    }
    Index const parent = (curr + 1) / 2 - 1;
    Index next = parent;
    if (scanning) {
      if (bucket.next(curr, bucket_size, n, u)) continue; // the bucket's next node
    } else {
      int const dim = tree.split_dim(curr, level);
      T const diff = component<Tree::dimension>(o, dim);
      Index const close = diff <= 0 ? 2 * curr + 1 : 2 * curr + 2;
      Index const far = diff <= 0 ? 2 * curr + 2 : 2 * curr + 1;
      // the far side is entered after the close one (or right away when
      // there is no close child), if its cell is within the bound
      bool const close_exists = node_exists(tree, close);
      bool const enter_far = (prev == close || (from_parent && !close_exists)) &&
                             cell_distance(off0, dim, diff) <= visitor.bound() && node_exists(tree, far);
      if (from_parent && close_exists) next = close;
      else if (enter_far) next = far;
    }
    if (next < 0) return;
    level += next == parent ? -1 : 1;
    prev = curr;
    curr = next;
    u = next;
  }
}

} // namespace kdforge::kernels
