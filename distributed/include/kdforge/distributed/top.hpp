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
//
// With many ranks that scan is most of the routing (16 ranks of one core,
// spread queries: a fifth of a kNN call), so from 4 ranks on a uniform grid
// over the ranks' boxes lists, per cell, the ranks whose box meets it
// (grown by a margin): a query whose answer the cell's ranks settle asks
// only those (RankGrid::settles); the others scan as before. The rules'
// answers are the same either way, rank for rank.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/trees/concept.hpp>
#include <kdforge/kernels/trees/level_order.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
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

/// The ranks' boxes on a uniform grid (see the top): cell c lists the ranks
/// with points whose box, grown by a thousandth of a cell, meets it, in
/// rank order (ranks(offsets(c)) .. ranks(offsets(c + 1) - 1)). Empty
/// (cells == 0) where the top has no grid.
template <class MS, int D>
struct RankGrid {
  double lo[D] = {}, hi[D] = {}, width[D] = {};
  std::int32_t n[D] = {};
  std::int64_t cells = 0;
  Kokkos::View<std::int64_t*, MS> offsets;
  Kokkos::View<std::int32_t*, MS> ranks;

  /// The cell of q, and q's distance to the nearest side of it beyond
  /// which a rank's box may lie (not the grid's outer sides: no box
  /// reaches past them); -1 where q is outside the grid or not finite.
  template <class P>
  KOKKOS_INLINE_FUNCTION std::int64_t cell(P const& q, double& gap) const {
    if (cells == 0) return -1;
    std::int64_t c = 0;
    gap = detail::infinity<double>();
    for (int d = 0; d < D; ++d) {
      double const x = double(q[d]);
      if (!(x >= lo[d] && x <= hi[d])) return -1; // NaN too
      std::int32_t i = n[d] > 1 ? std::int32_t((x - lo[d]) / width[d]) : 0;
      i = i < 0 ? 0 : i >= n[d] ? n[d] - 1 : i;
      double const below = i > 0 ? x - (lo[d] + double(i) * width[d]) : gap;
      double const above = i + 1 < n[d] ? (lo[d] + double(i + 1) * width[d]) - x : gap;
      gap = below < gap ? below : gap;
      gap = above < gap ? above : gap;
      c = c * n[d] + i;
    }
    return c;
  }

  /// Whether the ranks listed in q's cell are all the ranks within squared
  /// distance `limit` of q: every other rank's box lies beyond the cell's
  /// sides, at least `gap` away, and the box distances round down by far
  /// less than the slack of 1e-3.
  KOKKOS_INLINE_FUNCTION static bool settles(double gap, double limit) {
    return gap > 0.0 && gap * gap > limit * (1.0 + 1e-3);
  }
};

/// Builds the grid of ranks' boxes for `P` ranks (host): about 8 cells per
/// rank, cells as close to cubes as the boxes' union allows, and none for
/// fewer than 4 ranks (the scan is then as fast) or where the lists would
/// hold more than 2^24 entries (ranks whose boxes all overlap).
template <class MS, class T, int D>
RankGrid<MS, D> make_rank_grid(std::vector<Box<T, D>> const& boxes, std::vector<std::int64_t> const& sizes) {
  RankGrid<MS, D> g;
  int const P = int(boxes.size());
  if (P < 4) return g;
  bool any = false;
  for (int p = 0; p < P; ++p) {
    if (sizes[std::size_t(p)] == 0) continue;
    for (int d = 0; d < D; ++d) {
      double const a = double(boxes[std::size_t(p)].lo[d]), b = double(boxes[std::size_t(p)].hi[d]);
      if (!std::isfinite(a) || !std::isfinite(b) || a > b) return g;
      g.lo[d] = any ? std::min(g.lo[d], a) : a;
      g.hi[d] = any ? std::max(g.hi[d], b) : b;
    }
    any = true;
  }
  if (!any) return g;
  // cells of side h, doubled until there are at most 8 P of them
  double const target = std::min(8.0 * P, double(1 << 20));
  double widest = 0.0;
  for (int d = 0; d < D; ++d) widest = std::max(widest, g.hi[d] - g.lo[d]);
  if (!(widest > 0.0) || !std::isfinite(widest)) return g;
  double h = widest / std::pow(target, 1.0 / D);
  for (;;) {
    double cells = 1.0;
    for (int d = 0; d < D; ++d) cells *= std::max(1.0, std::ceil((g.hi[d] - g.lo[d]) / h));
    if (cells <= target) break;
    h *= 2.0;
  }
  std::int64_t cells = 1;
  for (int d = 0; d < D; ++d) {
    double const e = g.hi[d] - g.lo[d];
    g.n[d] = std::int32_t(std::max(1.0, std::ceil(e / h)));
    g.width[d] = g.n[d] > 1 ? e / g.n[d] : 1.0;
    cells *= g.n[d];
  }
  // a rank meets the cells its box reaches, grown by a thousandth of a
  // cell (and more than the distance whose square rounds to zero), so a
  // cell found by rounded arithmetic, or a box distance rounded to zero,
  // never misses one
  std::vector<std::int64_t> count(std::size_t(cells) + 1, 0);
  std::vector<std::int32_t> first(std::size_t(P) * D), last(std::size_t(P) * D);
  std::int64_t total = 0;
  for (int p = 0; p < P; ++p) {
    if (sizes[std::size_t(p)] == 0) continue;
    std::int64_t covered = 1;
    for (int d = 0; d < D; ++d) {
      double const m = std::max(g.width[d] * 1e-3, 1e-20);
      auto index = [&](double x) {
        double const i = g.n[d] > 1 ? std::floor((x - g.lo[d]) / g.width[d]) : 0.0;
        return std::int32_t(std::min(double(g.n[d] - 1), std::max(0.0, i)));
      };
      first[std::size_t(p) * D + d] = index(double(boxes[std::size_t(p)].lo[d]) - m);
      last[std::size_t(p) * D + d] = index(double(boxes[std::size_t(p)].hi[d]) + m);
      covered *= last[std::size_t(p) * D + d] - first[std::size_t(p) * D + d] + 1;
    }
    total += covered;
    if (total > (std::int64_t(1) << 24)) return g;
  }
  std::vector<std::int32_t> list(static_cast<std::size_t>(total));
  // two passes over each rank's block of cells: count, then fill
  auto for_cells = [&](int p, auto const& f) {
    std::int32_t i[D];
    for (int d = 0; d < D; ++d) i[d] = first[std::size_t(p) * D + d];
    for (;;) {
      std::int64_t c = 0;
      for (int d = 0; d < D; ++d) c = c * g.n[d] + i[d];
      f(c);
      int d = D - 1;
      while (d >= 0 && i[d] == last[std::size_t(p) * D + d]) {
        i[d] = first[std::size_t(p) * D + d];
        --d;
      }
      if (d < 0) return;
      ++i[d];
    }
  };
  for (int p = 0; p < P; ++p)
    if (sizes[std::size_t(p)] > 0) for_cells(p, [&](std::int64_t c) { ++count[std::size_t(c) + 1]; });
  for (std::int64_t c = 0; c < cells; ++c) count[std::size_t(c) + 1] += count[std::size_t(c)];
  std::vector<std::int64_t> at(count.begin(), count.end() - 1);
  for (int p = 0; p < P; ++p) // rank order within each cell
    if (sizes[std::size_t(p)] > 0) for_cells(p, [&](std::int64_t c) { list[std::size_t(at[std::size_t(c)]++)] = p; });
  g.offsets = backend::allocate<Kokkos::View<std::int64_t*, MS>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::distributed::grid_offsets"), count.size());
  g.ranks = backend::allocate<Kokkos::View<std::int32_t*, MS>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::distributed::grid_ranks"), list.size());
  Kokkos::deep_copy(g.offsets, Kokkos::View<std::int64_t const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                   count.data(), count.size()));
  Kokkos::deep_copy(g.ranks, Kokkos::View<std::int32_t const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                 list.data(), list.size()));
  g.cells = cells;
  return g;
}

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
