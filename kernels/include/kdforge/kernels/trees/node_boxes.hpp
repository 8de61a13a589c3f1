#pragma once
// Node boxes of level-order trees: for every inner node, the tight box of the
// points of its sub-tree. A k-d tree's cells partition space, so where the
// points fill only a thin or clustered part of it (surfaces, planes, lines,
// blobs) a query's ball meets many cells that hold nothing near it; a walk
// that knows where the points really are prunes those sub-trees by the
// distance to their box instead (the BVH's advantage on such data, kept in
// a k-d tree).
//
// Built bottom-up, one level per launch: box(s) = point(s) + box(2s + 1) +
// box(2s + 2). Leaves have no box (a leaf's box is its point). Whether a
// tree keeps its boxes is the build option BuildOptions::node_boxes; its
// automatic choice (see box_fill) keeps them where the points leave most of
// the cells empty and drops them where they fill the cells (uniform data),
// whose walks would spend loads and arithmetic on boxes that prune nothing
// the split planes do not.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/trees/level_order.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace kdforge::kernels {

/// A sub-tree's box, and the smallest input index of its points (for the
/// kNN walks' tie-aware pruning: walks/common.hpp), aligned for
/// whole-vector loads on GPUs (two 16-byte loads for float, D = 3, the index
/// in what would be padding).
template <class T, int D, class Index>
struct alignas(16) NodeBox {
  T lo[D];
  T hi[D];
  Index min_index;
};

/// The node boxes of a tree: box(s) for the inner nodes s < count.
template <class MemorySpace, class T, int D, class Index>
struct NodeBoxes {
  Kokkos::View<NodeBox<T, D, Index> const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> boxes;
  Index count = 0;
  KOKKOS_FORCEINLINE_FUNCTION bool empty() const { return count == 0; }
  KOKKOS_FORCEINLINE_FUNCTION bool has(Index s) const { return s < count; }
  KOKKOS_FORCEINLINE_FUNCTION NodeBox<T, D, Index> box(Index s) const { return boxes(s); }
};

/// Squared distance from q to box b (0 inside), summed in dimension order
/// with the rounding of sq_distance: each term is at most the computed term
/// of any point in the box (rounding is monotonic), so pruning by it is exact.
template <class P, class T, int D, class Index>
KOKKOS_FORCEINLINE_FUNCTION T box_distance(P const& q, NodeBox<T, D, Index> const& b) {
  T s = T(0);
  for (int d = 0; d < D; ++d) {
    T const x = q[d];
    T const t = x < b.lo[d] ? x - b.lo[d] : x > b.hi[d] ? x - b.hi[d] : T(0);
    s = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(s, backend::mul_rn(t, t));
  }
  return s;
}

namespace detail {

template <class Tree, class Boxes>
struct NodeBoxLevel {
  Tree tree;
  Boxes boxes; // writable
  std::int64_t count;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    using Index = typename Tree::index_type;
    constexpr int D = Tree::dimension;
    NodeBox<typename Tree::coordinate_type, D, Index> b;
    auto const p = tree.load(Index(s));
    for (int d = 0; d < D; ++d) b.lo[d] = b.hi[d] = p.c[d];
    b.min_index = p.index;
    std::int64_t const n = std::int64_t(tree.node_count());
    for (std::int64_t c = 2 * s + 1; c <= 2 * s + 2; ++c) {
      if (c >= n || !tree.has_node(Index(c))) continue;
      if (c < count) {
        auto const cb = boxes(c);
        for (int d = 0; d < D; ++d) {
          b.lo[d] = cb.lo[d] < b.lo[d] ? cb.lo[d] : b.lo[d];
          b.hi[d] = cb.hi[d] > b.hi[d] ? cb.hi[d] : b.hi[d];
        }
        b.min_index = cb.min_index < b.min_index ? cb.min_index : b.min_index;
      } else {
        auto const cp = tree.load(Index(c));
        for (int d = 0; d < D; ++d) {
          b.lo[d] = cp.c[d] < b.lo[d] ? cp.c[d] : b.lo[d];
          b.hi[d] = cp.c[d] > b.hi[d] ? cp.c[d] : b.hi[d];
        }
        b.min_index = cp.index < b.min_index ? cp.index : b.min_index;
      }
    }
    boxes(s) = b;
  }
};

/// Per node of level `level`: the product over dimensions of its box's
/// extent over its cell's (the root box clipped by its ancestors' planes),
/// taken in the dimensions where the cell has width; 1 where none has.
template <class Tree, class Boxes>
struct BoxFill {
  Tree tree;
  Boxes boxes;
  int level;
  KOKKOS_FUNCTION void operator()(std::int64_t i, double& sum) const {
    using Index = typename Tree::index_type;
    using T = typename Tree::coordinate_type;
    constexpr int D = Tree::dimension;
    std::int64_t const s = (std::int64_t(1) << level) - 1 + i;
    T lo[D], hi[D];
    auto const root = tree.bounds();
    for (int d = 0; d < D; ++d) {
      lo[d] = root.lo[d];
      hi[d] = root.hi[d];
    }
    // clip by the ancestors' planes, walking up
    std::int64_t c = s;
    for (int l = level; l > 0; --l) {
      std::int64_t const a = (c - 1) / 2;
      int const dim = tree.split_dim(Index(a), l - 1);
      T const v = tree.load(Index(a)).c[dim];
      if (c == 2 * a + 1) hi[dim] = v < hi[dim] ? v : hi[dim];
      else lo[dim] = v > lo[dim] ? v : lo[dim];
      c = a;
    }
    auto const b = boxes(s);
    double log_fill = 0;
    for (int d = 0; d < D; ++d) {
      double const cell = double(hi[d]) - double(lo[d]);
      if (!(cell > 0)) continue;
      double r = (double(b.hi[d]) - double(b.lo[d])) / cell;
      r = r < 1e-3 ? 1e-3 : r > 1 ? 1 : r;
      log_fill += ::log(r); // ::log: the device pass has it, std::log is host-only there
    }
    sum += log_fill;
  }
};

} // namespace detail

/// Counts the nodes of level `level` whose sub-trees hold copies of one point.
template <class Boxes>
struct PointBoxes {
  Boxes boxes;
  int level;
  int dim;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& count) const {
    auto const b = boxes((std::int64_t(1) << level) - 1 + i);
    bool point = true;
    for (int d = 0; d < dim; ++d) point = point && b.lo[d] == b.hi[d];
    count += point ? 1 : 0;
  }
};

/// The node boxes of a level-order tree (every inner node's), computed on
/// `exec`, and their fill: the geometric mean, over the nodes of one level
/// near 1024 nodes and over dimensions, of a box's extent over its cell's.
/// About 1 where the points fill their cells (uniform data), far below
/// where they leave most of them empty; 0 when a sub-tree of 256 points or
/// more holds copies of one point only (ties that only boxes prune).
template <class Exec, class Tree>
NodeBoxes<typename Exec::memory_space, typename Tree::coordinate_type, Tree::dimension, typename Tree::index_type>
build_node_boxes(Exec const& exec, Tree const& tree, double* fill) {
  using MS = typename Exec::memory_space;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int D = Tree::dimension;
  std::int64_t const n = std::int64_t(tree.node_count());
  std::int64_t const count = n / 2; // node s has a child slot iff 2s + 1 < n
  NodeBoxes<MS, T, D, Index> r;
  if (fill) *fill = 1;
  if (count == 0) return r;
  Kokkos::View<NodeBox<T, D, Index>*, MS> boxes(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::node_boxes"),
                                         count);
  int const top = lb::level(count - 1); // the deepest level with inner nodes
  for (int l = top; l >= 0; --l) {
    std::int64_t const b = lb::full(l), e = lb::min64(lb::full(l + 1), count);
    Kokkos::parallel_for("kdforge::build::node_boxes", Kokkos::RangePolicy<Exec>(exec, b, e),
                         detail::NodeBoxLevel<Tree, decltype(boxes)>{tree, boxes, count});
  }
  if (fill) {
    // a level of <= 1024 nodes whose sub-trees hold >= ~256 points: with
    // fewer, the extent of a few points under-fills even a uniform cell
    int const level = top - 6 < 10 ? (top - 6 > 0 ? top - 6 : 0) : 10;
    std::int64_t const nodes = lb::min64(lb::full(level + 1), count) - lb::full(level);
    double sum = 0;
    Kokkos::parallel_reduce("kdforge::build::box_fill", Kokkos::RangePolicy<Exec>(exec, 0, nodes),
                            detail::BoxFill<Tree, decltype(boxes)>{tree, boxes, level}, sum);
    *fill = std::exp(sum / double(nodes * D));
    int const dup_level = top - 6 > 0 ? top - 6 : 0; // sub-trees of >= ~256 points
    std::int64_t const dup_nodes = lb::min64(lb::full(dup_level + 1), count) - lb::full(dup_level);
    std::int64_t copies = 0;
    Kokkos::parallel_reduce("kdforge::build::box_copies", Kokkos::RangePolicy<Exec>(exec, 0, dup_nodes),
                            PointBoxes<decltype(boxes)>{boxes, dup_level, D}, copies);
    if (copies > 0) *fill = 0;
  }
  r.boxes = boxes;
  r.count = Index(count);
  return r;
}

/// NodeBoxPolicy::automatic keeps a tree's boxes when their fill is below
/// this: where the points fill their cells (uniform data: ~0.99), the boxes
/// prune little beyond the split planes and cost memory and loads.
inline constexpr double automatic_box_fill = 0.8;

/// Computes the node boxes of `tree` and keeps them as `policy` says.
template <class Exec, class Tree>
void attach_node_boxes(Exec const& exec, Tree& tree, NodeBoxPolicy policy) {
  if (policy == NodeBoxPolicy::never) return;
  kdforge::detail::Region region("kdforge::build::node_boxes");
  double fill = 1;
  auto const boxes = build_node_boxes(exec, tree, &fill);
  bool const keep = policy == NodeBoxPolicy::always || fill < automatic_box_fill;
  tree.set_node_boxes(keep ? boxes : decltype(boxes){}, fill);
}

} // namespace kdforge::kernels
