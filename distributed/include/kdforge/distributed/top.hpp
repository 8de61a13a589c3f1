#pragma once
// The top of the distributed tree (after ArborX's DistributedTree, whose top
// tree holds one box per rank): what every rank knows of every other rank,
// all-gathered once at build time.
//
// Per rank, its bounding box, and a few boxes from the top levels of its
// local tree: for level-order trees (left-balanced, median) the 2^L
// sub-trees below level L, each with the points of the levels above
// attached to their leftmost descendant on level L, so that every point lies
// in exactly one box. Where the points of a rank leave parts of its box
// empty (two clusters, a curved surface, a slab of a sphere shell), a query
// near that emptiness is not sent there. Linked trees give their bounding
// box alone.
//
// Differs from ArborX: the top is a two-level structure scanned per query
// (rank box, then that rank's sub-boxes) rather than a BVH over the boxes:
// with up to a few hundred ranks x 4 boxes the scan is a few hundred box
// tests per query, less than one local walk, and it needs no tree build.
// Distances to boxes are rounded as the walks round them
// (kernels::box_distance): never above the computed distance of a point in
// the box, so no rank holding an answer is skipped, ties at the bound included.
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/trees/concept.hpp>
#include <kdforge/kernels/trees/level_order.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

namespace kdforge::distributed {

/// A box of the top: kernels::NodeBox, so kernels::box_distance measures it.
template <class T, int D>
using TopBox = kernels::NodeBox<T, D, std::int32_t>;

template <class T, int D>
TopBox<T, D> top_box(Box<T, D> const& b) {
  TopBox<T, D> t{};
  for (int d = 0; d < D; ++d) {
    t.lo[d] = b.lo[d];
    t.hi[d] = b.hi[d];
  }
  t.min_index = 0;
  t.framed = 0;
  return t;
}

/// Kokkos reducer of Box<T, D>: the union.
template <class T, int D>
struct BoxUnion {
  using reducer = BoxUnion;
  using value_type = Box<T, D>;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  result_view_type value;
  KOKKOS_INLINE_FUNCTION explicit BoxUnion(value_type& v) : value(&v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& dst, value_type const& src) const { dst.extend(src); }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dst, volatile value_type const& src) const {
    for (int d = 0; d < D; ++d) {
      dst.lo[d] = src.lo[d] < dst.lo[d] ? src.lo[d] : dst.lo[d];
      dst.hi[d] = src.hi[d] > dst.hi[d] ? src.hi[d] : dst.hi[d];
    }
  }
#endif
  KOKKOS_INLINE_FUNCTION void init(value_type& x) const { x = value_type::empty(); }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return value; }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

/// Node slots of one top sub-tree, as ranges [start, start + len) of slot
/// numbers: the sub-tree's part of each level, and its attached ancestors.
struct SlotRanges {
  static constexpr int capacity = 2 * 64;
  std::int64_t start[capacity];
  std::int64_t prefix[capacity + 1]; // slots before range r
  int count = 0;
};

template <class Tree>
struct SubtreeBox {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  static constexpr int D = Tree::dimension;
  Tree tree;
  SlotRanges ranges;
  KOKKOS_FUNCTION void operator()(std::int64_t j, Box<T, D>& box) const {
    int r = 0;
    while (r + 1 < ranges.count && ranges.prefix[r + 1] <= j) ++r;
    Index const s = Index(ranges.start[r] + (j - ranges.prefix[r]));
    if (!tree.has_node(s)) return;
    auto const node = tree.load(s);
    Point<T, D> p;
    for (int d = 0; d < D; ++d) p[d] = node[d];
    box.extend(p);
  }
};

/// The boxes this rank contributes to the top: 2^levels of them (unused ones
/// empty), from the top levels of `tree` where it is a level-order tree,
/// else its bounding box and empty ones.
template <class Exec, class Tree>
std::vector<Box<typename Tree::coordinate_type, Tree::dimension>> local_top_boxes(Exec const& exec, Tree const& tree,
                                                                                  int levels) {
  using T = typename Tree::coordinate_type;
  constexpr int D = Tree::dimension;
  std::vector<Box<T, D>> boxes(std::size_t(1) << levels, Box<T, D>::empty());
  if (tree.size() == 0) return boxes;
  if constexpr (kernels::is_level_order_tree<Tree>) {
    std::int64_t const n = std::int64_t(tree.node_count());
    // level L must be full: the last level of these trees may not be
    int const L = levels < lb::num_levels(n) - 2 ? levels : (lb::num_levels(n) - 2 > 0 ? lb::num_levels(n) - 2 : 0);
    for (std::int64_t b = 0; b < (std::int64_t(1) << L); ++b) {
      std::int64_t const root = lb::full(L) + b;
      SlotRanges ranges;
      std::int64_t total = 0;
      auto add = [&](std::int64_t start, std::int64_t len) {
        ranges.start[ranges.count] = start;
        ranges.prefix[ranges.count] = total;
        ++ranges.count;
        total += len;
      };
      // ancestors whose leftmost descendant on level L is `root`
      for (int t = 1; t <= L && ((root + 1) & ((std::int64_t(1) << t) - 1)) == 0; ++t) add(((root + 1) >> t) - 1, 1);
      for (int t = 0;; ++t) {
        std::int64_t const first = ((root + 1) << t) - 1;
        if (first >= n) break;
        std::int64_t const last = ((root + 2) << t) - 1; // exclusive
        add(first, (last < n ? last : n) - first);
      }
      ranges.prefix[ranges.count] = total;
      Box<T, D> box = Box<T, D>::empty();
      Kokkos::parallel_reduce("kdforge::distributed::top_boxes", Kokkos::RangePolicy<Exec>(exec, 0, total),
                              SubtreeBox<Tree>{tree, ranges}, BoxUnion<T, D>(box));
      boxes[std::size_t(b)] = box;
    }
  } else {
    boxes[0] = tree.bounds();
  }
  return boxes;
}

/// Squared distance from q to rank p's points as the top sees them: the
/// smallest over its sub-boxes; any value above `limit` may be returned as
/// soon as the rank's box is farther than `limit` (the caller only asks
/// whether it is within).
template <class Boxes, class P, class T>
KOKKOS_INLINE_FUNCTION T rank_distance(Boxes const& rank_boxes, Boxes const& sub_boxes, int per_rank, int p,
                                       P const& q, T limit) {
  T const outer = kernels::box_distance(q, rank_boxes(p));
  if (per_rank == 1 || outer > limit) return outer;
  T best = detail::infinity<T>();
  for (int b = 0; b < per_rank; ++b) {
    T const d = kernels::box_distance(q, sub_boxes(p * per_rank + b));
    best = d < best ? d : best;
  }
  return best;
}

} // namespace kdforge::distributed
