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

#include <algorithm>
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

/// Per node of level `level` (one team each): its sub-tree's box, reduced
/// over the sub-tree's nodes (node t of the sub-tree in level order is
/// (s << highest_bit(t + 1)) + t), and the log of the product over
/// dimensions of the box's extent over its cell's (the tree's box clipped by
/// the ancestors' planes), in the dimensions where the cell has width; and
/// whether the sub-tree is copies of one point.
template <class Tree, class Out>
struct SampleFill {
  Tree tree;
  Out out; // nodes x 2: log fill, 1 if one repeated point
  int level;
  template <class Team>
  KOKKOS_FUNCTION void operator()(Team const& team) const {
    using Index = typename Tree::index_type;
    using T = typename Tree::coordinate_type;
    constexpr int D = Tree::dimension;
    std::int64_t const i = team.league_rank();
    std::int64_t const s = (std::int64_t(1) << level) - 1 + i;
    std::int64_t const n = std::int64_t(tree.node_count());
    std::int64_t span = 0; // level-order positions of s's sub-tree below n
    for (int j = 0; (((s + 1) << j) - 1) < n; ++j) span = (std::int64_t(2) << j) - 1;
    T lo[D], hi[D];
    for (int d = 0; d < D; ++d) {
      T l = kdforge::detail::infinity<T>(), h = -kdforge::detail::infinity<T>();
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, span),
          [&](std::int64_t t, T& v) {
            std::int64_t const u = (s << lb::highest_bit(std::uint64_t(t + 1))) + t;
            if (u < n && tree.has_node(Index(u))) {
              T const x = tree.load(Index(u)).c[d];
              v = x < v ? x : v;
            }
          },
          Kokkos::Min<T>(l));
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, span),
          [&](std::int64_t t, T& v) {
            std::int64_t const u = (s << lb::highest_bit(std::uint64_t(t + 1))) + t;
            if (u < n && tree.has_node(Index(u))) {
              T const x = tree.load(Index(u)).c[d];
              v = x > v ? x : v;
            }
          },
          Kokkos::Max<T>(h));
      lo[d] = l;
      hi[d] = h;
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      T clo[D], chi[D];
      auto const root = tree.bounds();
      for (int d = 0; d < D; ++d) {
        clo[d] = root.lo[d];
        chi[d] = root.hi[d];
      }
      std::int64_t c = s;
      for (int l = level; l > 0; --l) { // clip by the ancestors' planes, walking up
        std::int64_t const a = (c - 1) / 2;
        int const dim = tree.split_dim(Index(a), l - 1);
        T const v = tree.load(Index(a)).c[dim];
        if (c == 2 * a + 1) chi[dim] = v < chi[dim] ? v : chi[dim];
        else clo[dim] = v > clo[dim] ? v : clo[dim];
        c = a;
      }
      double log_fill = 0;
      bool point = true;
      for (int d = 0; d < D; ++d) {
        point = point && lo[d] == hi[d];
        double const cell = double(chi[d]) - double(clo[d]);
        if (!(cell > 0)) continue;
        double r = (double(hi[d]) - double(lo[d])) / cell;
        r = r < 1e-3 ? 1e-3 : r > 1 ? 1 : r;
        log_fill += ::log(r); // ::log: the device pass has it, std::log is host-only there
      }
      out(i, 0) = log_fill / D;
      out(i, 1) = point ? 1 : 0;
    });
  }
};

} // namespace detail

/// The node boxes of a level-order tree (every inner node's), computed on
/// `exec` bottom-up, one level per launch.
template <class Exec, class Tree>
NodeBoxes<typename Exec::memory_space, typename Tree::coordinate_type, Tree::dimension, typename Tree::index_type>
build_node_boxes(Exec const& exec, Tree const& tree) {
  using MS = typename Exec::memory_space;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int D = Tree::dimension;
  std::int64_t const n = std::int64_t(tree.node_count());
  std::int64_t const count = n / 2; // node s has a child slot iff 2s + 1 < n
  NodeBoxes<MS, T, D, Index> r;
  if (count == 0) return r;
  Kokkos::View<NodeBox<T, D, Index>*, MS> boxes(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::node_boxes"),
                                                count);
  int const top = lb::level(count - 1); // the deepest level with inner nodes
  for (int l = top; l >= 0; --l) {
    std::int64_t const b = lb::full(l), e = lb::min64(lb::full(l + 1), count);
    Kokkos::parallel_for("kdforge::build::node_boxes", Kokkos::RangePolicy<Exec>(exec, b, e),
                         detail::NodeBoxLevel<Tree, decltype(boxes)>{tree, boxes, count});
  }
  r.boxes = boxes;
  r.count = Index(count);
  return r;
}

/// How much of their cells the points of a level-order tree fill, without
/// building its boxes: at two levels, the geometric mean over the level's
/// nodes and the dimensions of a sub-tree box's extent over its cell's (one
/// level of <= 1024 nodes whose sub-trees hold >= ~256 points, where the
/// extent of a few points would under-fill even a uniform cell, and one
/// halfway up, where the space between clusters shows), the smaller of the
/// two. About 1 where the points fill their cells (uniform data), far below
/// where they leave most of them empty; 0 when a sub-tree of the deeper
/// level is copies of one point (ties that only boxes prune).
template <class Exec, class Tree>
double box_fill(Exec const& exec, Tree const& tree) {
  using MS = typename Exec::memory_space;
  std::int64_t const n = std::int64_t(tree.node_count());
  std::int64_t const count = n / 2;
  if (count == 0) return 1;
  int const top = lb::level(count - 1);
  int const deep = top - 6 < 10 ? (top - 6 > 0 ? top - 6 : 0) : 10;
  double fill = 1;
  for (int level : {deep, deep / 2}) {
    std::int64_t const nodes = lb::min64(lb::full(level + 1), count) - lb::full(level);
    Kokkos::View<double**, Kokkos::LayoutRight, MS> out("kdforge::build::box_fill", nodes, 2);
    Kokkos::parallel_for("kdforge::build::box_fill", Kokkos::TeamPolicy<Exec>(exec, nodes, Kokkos::AUTO),
                         detail::SampleFill<Tree, decltype(out)>{tree, out, level});
    auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
    double sum = 0;
    bool copies = false;
    for (std::int64_t i = 0; i < nodes; ++i) {
      sum += h(i, 0);
      copies = copies || (level == deep && h(i, 1) > 0);
    }
    if (copies) return 0;
    fill = std::min(fill, std::exp(sum / double(nodes)));
    if (level == 0) break;
  }
  return fill;
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
  double const fill = box_fill(exec, tree);
  bool const keep = policy == NodeBoxPolicy::always || fill < automatic_box_fill;
  tree.set_node_boxes(keep ? build_node_boxes(exec, tree) : decltype(build_node_boxes(exec, tree)){}, fill);
}

} // namespace kdforge::kernels
