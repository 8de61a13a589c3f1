#pragma once
// SAH k-d tree builder over triangles: Zhou, Hou, Wang & Guo 2008,
// "Real-time KD-tree construction on graphics hardware", section 3
// (Algorithms 1 to 5).
//
// As the paper: the tree grows breadth first, every node of a level at once.
//  - Large-node stage (section 3.1, Algorithm 2): the triangle references of
//    the active nodes are grouped into chunks of N = 256; a node's tight box
//    is the reduction of its chunks' boxes (each chunk reduced in parallel,
//    then the chunks of a node); a side of empty space wider than Ce = 25%
//    of the node is cut off (repeatedly, one cut per side, before one
//    spatial median split of the longest axis of what is left); triangles
//    straddling the median plane go to both children, their boxes clipped
//    to each child (clip.hpp); the references are redistributed by flags,
//    scans and a scatter; children with at most T = 64 triangles go to the
//    small-node stage.
//  - Small-node stage (section 3.2, Algorithm 4): each small root's split
//    candidates are the six faces of its triangles' (clipped) boxes, each
//    with the 64-bit masks of the triangles on its two sides, computed once
//    (PREPROCESSSMALLNODES, parallel over candidates). A small node is a
//    mask over its small root's triangles; its exact SAH per candidate
//    inside its cell is two population counts; it splits at the cheapest
//    candidate, or becomes a leaf where SAH says a leaf is cheaper:
//    SAH(split) = C_ts + C_i (|L| A_L + |R| A_R) / A >= SAH(leaf) = C_i |S|.
//    Triangles are not clipped in this stage (as the paper).
//  - Output (section 3.3, Algorithm 5): the nodes sorted by level, the size
//    of every sub-tree summed bottom-up, preorder addresses handed out
//    top-down; the leaves' triangle lists follow the same preorder.
//
// What differs, and why:
//  - The large-node split is checked by the same SAH, with the children's
//    triangle counts by box (one more counting pass, reduced per chunk like
//    the boxes): where the longest axis's median costs more than a leaf
//    (most triangles cross it: a tube of long triangles along that axis),
//    the cheapest median of another axis is taken, and where none is
//    cheaper than a leaf, the node stays a leaf (checked once more with the
//    counts after clipping). The paper splits every large node at the
//    longest axis; where most triangles straddle every plane (many large
//    overlapping triangles, or copies of one triangle) that doubles the
//    references at each level and never gets below T.
//  - A depth limit (SahOptions::max_depth, by default 8 + 1.3 log2 F as in
//    pbrt, at most 60) stops both stages, so degenerate input terminates and
//    the walks' stacks have a fixed size.
//  - Triangles that lie in a split plane go to both children (not to one
//    side), so a ray that runs in the plane finds them whichever side it
//    walks.
//  - Every reduction is a min/max or an integer sum and every SAH value is
//    computed with each operation rounded on its own (no fused
//    multiply-add), in double; ties between candidates go to the first one.
//    So the tree is the same on every backend.
//  - The paper's segmented reduction (Algorithm 3) becomes a fold of each
//    node's chunks by a team per node (a warp on GPUs), and its doubling
//    lists Kokkos::resize. The chunk kernels run over a bound of the
//    level's chunk count, so a level waits for the device once (for the
//    sizes of the next level's lists), not twice.
//  - Leaves are stored as ranges of a separate triangle-index list rather
//    than inline in the node array.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/builders/sah/clip.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace kdforge::kernels::sah {

/// The deepest level SahOptions::max_depth may ask for; the ray walks'
/// stacks hold one more entry.
inline constexpr int max_depth_cap = triangle_tree_max_height;
/// N of section 3.1: references per chunk of the large-node reductions.
inline constexpr int chunk_size = 256;
/// The widest triangle set of a small node: one bit each in a 64-bit mask.
inline constexpr int small_capacity = 64;
/// Split candidates of a small root: the six faces of each triangle's box.
inline constexpr int candidates_per_root = 6 * small_capacity;

/// The depth limit SahOptions asks for (0: automatic).
inline int resolve_max_depth(int requested, std::int64_t triangles) {
  if (requested > 0) return std::min(requested, max_depth_cap);
  double const l = triangles > 1 ? std::log2(double(triangles)) : 0.0;
  return std::min(max_depth_cap, int(8.0 + 1.3 * l));
}

/// A node of the large-node stage: its cell, its references [begin, end)
/// in the level's lists, its slot among the built nodes and its depth.
template <class T>
struct LargeNode {
  Box<T, 3> cell;
  std::int32_t begin;
  std::int32_t end;
  std::int32_t id;
  std::int32_t depth;
};

/// A small root: its cell, its slot, depth, and its triangles: `count`
/// (<= 64) references at positions [64 r, 64 r + count) of the small lists,
/// copied from [source, source + count) of the staging lists of the level
/// that made it.
template <class T>
struct SmallRoot {
  Box<T, 3> cell;
  std::int32_t id;
  std::int32_t depth;
  std::int32_t count;
  std::int32_t source;
};

/// A node of the small-node stage: a set of its small root's triangles.
template <class T>
struct SmallNode {
  Box<T, 3> cell;
  std::uint64_t mask;
  std::int32_t root;
  std::int32_t id;
  std::int32_t depth;
};

/// A split candidate of a small root (section 3.2): the plane and the
/// triangles on either side (a triangle across it or in it is on both).
template <class T>
struct Candidate {
  std::uint64_t left;
  std::uint64_t right;
  T value;
  std::int32_t dim; // -1: no candidate in this slot
};

/// A node as the stages leave it, before the preorder output.
/// kind 0..2: inner, split across that dimension at `split`, children
/// `left`, `right`; pool_leaf: the `b` triangles at [a, a + b) of the pool;
/// mask_leaf: the triangles of small root `a` in `mask`.
template <class T>
struct BuildNode {
  std::int32_t kind;
  std::int32_t left;
  std::int32_t right;
  std::int32_t depth;
  T split;
  std::int32_t a;
  std::int32_t b;
  std::uint64_t mask;
  static constexpr std::int32_t pool_leaf = 3;
  static constexpr std::int32_t mask_leaf = 4;
};

/// What the large-node stage does with a node: `cuts` empty-space cuts
/// (dimension, side 0 = low / 1 = high, plane), then a median split of
/// `cell` (the node's cell after the cuts) across `dim` at `split`; or,
/// with `leaf`, nothing.
template <class T>
struct LargePlan {
  Box<T, 3> cell;
  T cut_value[6];
  std::int32_t cut_dim[6];
  std::int32_t cut_side[6];
  std::int32_t cuts;
  std::int32_t dim;
  T split;
  std::int32_t leaf;
};

struct Costs {
  double traversal;
  double intersection;
};

template <class T>
KOKKOS_FUNCTION Box<T, 3> child_cell(Box<T, 3> const& cell, int dim, T split, bool right) {
  Box<T, 3> c = cell;
  if (right) c.lo[dim] = split;
  else c.hi[dim] = split;
  return c;
}

/// C_ts + C_i (nl A_l + nr A_r) / A: the SAH of splitting a node of area A.
KOKKOS_INLINE_FUNCTION double split_cost(Costs const& c, double a, double al, double ar, std::int64_t nl,
                                         std::int64_t nr) {
  using backend::add_rn;
  using backend::mul_rn;
  double const s = add_rn(mul_rn(double(nl), al), mul_rn(double(nr), ar));
  return add_rn(c.traversal, mul_rn(c.intersection, s / a));
}

/// Which side(s) of the plane `s` across dimension `d` a box is on: below
/// goes left, above right, across or in the plane both.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void sides(Box<T, 3> const& b, int d, T s, bool& left, bool& right) {
  bool const in_plane = b.lo[d] == s && b.hi[d] == s;
  left = b.lo[d] < s || in_plane;
  right = b.hi[d] > s || in_plane;
}

/// The spatial median of a cell across dimension d.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T cell_median(Box<T, 3> const& c, int d) {
  return backend::add_rn(backend::mul_rn(T(0.5), c.lo[d]), backend::mul_rn(T(0.5), c.hi[d]));
}

// ---- initialisation ------------------------------------------------------
// Kernels are named functors, not extended lambdas (see common/points.hpp).

template <class T, class Vertices, class Triangles, class Corners, class Boxes, class Tris, class Points>
struct InitTriangles {
  Vertices vertices;
  Triangles triangles;
  Corners corners;
  Boxes boxes;
  Tris tris;
  Points points;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    Box<T, 3> b = Box<T, 3>::empty();
    for (int c = 0; c < 3; ++c) {
      std::int64_t const v = std::int64_t(triangles(i, c));
      Point<T, 3> p;
      for (int d = 0; d < 3; ++d) {
        p[d] = T(vertices(v, d));
        corners(i, c, d) = p[d];
      }
      points(3 * i + c) = p;
      b.extend(p);
    }
    boxes(i) = b;
    tris(i) = std::int32_t(i);
  }
};

// ---- large-node stage ----------------------------------------------------

template <class Nodes, class ChunkOffsets>
struct CountChunks {
  Nodes nodes;
  ChunkOffsets chunks; // per node, then scanned
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    chunks(i) = (nodes(i).end - nodes(i).begin + chunk_size - 1) / chunk_size;
  }
};

template <class ChunkOffsets, class ChunkNode>
struct FillChunkOwners {
  ChunkOffsets chunks;
  ChunkNode owner;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    for (std::int32_t k = chunks(i); k < chunks(i + 1); ++k) owner(k) = std::int32_t(i);
  }
};

// Team sizes of the per-chunk and per-node reductions: the paper's chunk of
// 256 references, or a small node's candidates, spread over a GPU team;
// one thread a team on host backends, which loop over the chunk as before.
template <class Exec>
constexpr int reduction_team_size() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible ? 1 : 128;
}

// Team size of the per-node folds of chunk results (PlanLarge,
// ChooseLargeAxis): a warp per node on GPUs, where one thread looping over
// a large node's chunks (986 at the root of 252K triangles) took about as
// long on every level however few nodes it held; one thread on host backends.
template <class Exec>
constexpr int node_team_size() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible ? 1 : 32;
}

// Folds the team's values part[0 .. team size) into part[0] with f(a, b)
// (a = a op b; any team size), read by thread 0 after.
template <class Member, class V, class F>
KOKKOS_FORCEINLINE_FUNCTION void team_fold(Member const& team, V* part, F const& f) {
  int const t = team.team_rank();
  for (int n = team.team_size(); n > 1;) {
    int const half = (n + 1) / 2;
    team.team_barrier();
    if (t + half < n) f(part[t], part[t + half]);
    n = half;
  }
}

// a chunk's or a node's reference counts left and right of the cell's median
// on each axis (2 d: left, 2 d + 1: right), as folded by a team
template <class I>
struct SideCounts {
  I c[6];
};
template <class I>
KOKKOS_FORCEINLINE_FUNCTION void add_side_counts(SideCounts<I>& a, SideCounts<I> const& b) {
  for (int j = 0; j < 6; ++j) a.c[j] += b.c[j];
}

// a small node's cheapest candidate so far (best < 0: the leaf) and its cost
struct SplitChoice {
  double cost;
  std::int32_t best;
};

// An upper bound of a level's chunk count, sum over its nodes of
// ceil(n_i / chunk_size) < refs / chunk_size + nodes, where the refs are the
// level's references (sum of n_i): the chunk kernels are launched over it,
// so that the host need not wait for the exact count, and the chunks beyond
// the count (chunks(nodes), on the device) return at once.
inline std::int64_t chunk_bound(std::int64_t nodes, std::int64_t refs) { return nodes + refs / chunk_size + 1; }

// the paper's per-chunk reduction of the references' boxes: each thread of
// the chunk's team extends its box, then the team folds the boxes in
// shared memory (a union: the same box in any order)
template <class T, class Nodes, class ChunkOffsets, class ChunkNode, class Boxes, class ChunkBoxes, class Member>
struct ChunkReduce {
  Nodes nodes;
  ChunkOffsets chunks;
  ChunkNode owner;
  Boxes boxes;
  ChunkBoxes chunk_boxes;
  std::int32_t node_count;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    std::int64_t const k = team.league_rank();
    if (k >= chunks(node_count)) return; // beyond the level's chunks (chunk_bound): the whole team
    int const t = team.team_rank(), ts = team.team_size();
    std::int32_t const i = owner(k);
    std::int32_t const b = nodes(i).begin + (std::int32_t(k) - chunks(i)) * chunk_size;
    std::int32_t const e = b + chunk_size < nodes(i).end ? b + chunk_size : nodes(i).end;
    Box<T, 3> box = Box<T, 3>::empty();
    for (std::int32_t r = b + t; r < e; r += ts) box.extend(boxes(r));
    Box<T, 3>* part = static_cast<Box<T, 3>*>(team.team_shmem().get_shmem(sizeof(Box<T, 3>) * ts));
    part[t] = box;
    team_fold(team, part, [](Box<T, 3>& a, Box<T, 3> const& b) { a.extend(b); });
    if (t == 0) chunk_boxes(k) = part[0];
  }
};

// per node: the segmented reduction of its chunks (the team's threads
// take every team-size-th chunk, then fold their boxes in shared memory: a
// union, the same box in any order), then the plan (Fig. 2)
template <class T, class Nodes, class ChunkOffsets, class ChunkBoxes, class Plans, class Member>
struct PlanLarge {
  Nodes nodes;
  ChunkOffsets chunks;
  ChunkBoxes chunk_boxes;
  Plans plans;
  T empty_ratio;
  int max_depth;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    std::int64_t const i = team.league_rank();
    int const t = team.team_rank(), ts = team.team_size();
    Box<T, 3> box = Box<T, 3>::empty();
    for (std::int32_t k = chunks(i) + t; k < chunks(i + 1); k += ts) box.extend(chunk_boxes(k));
    Box<T, 3>* part = static_cast<Box<T, 3>*>(team.team_shmem().get_shmem(sizeof(Box<T, 3>) * ts));
    part[t] = box;
    team_fold(team, part, [](Box<T, 3>& a, Box<T, 3> const& b) { a.extend(b); });
    if (t == 0) plan(i, part[0]);
  }
  KOKKOS_FUNCTION void plan(std::int64_t i, Box<T, 3> tight) const {
    using backend::add_rn;
    using backend::mul_rn;
    LargeNode<T> const node = nodes(i);
    tight = intersect(tight, node.cell);
    LargePlan<T> p;
    p.cuts = 0;
    p.leaf = 0;
    p.dim = 0;
    p.split = T(0);
    p.cell = node.cell;
    bool flat = true;
    for (int d = 0; d < 3; ++d) flat = flat && !(tight.hi[d] > tight.lo[d]);
    if (flat || node.depth + 1 > max_depth) { // a point: nothing to split
      p.leaf = 1;
      plans(i) = p;
      return;
    }
    // cut off empty space wider than Ce of the node, side by side
    for (int d = 0; d < 3; ++d) {
      T const ext = add_rn(node.cell.hi[d], -node.cell.lo[d]);
      if (!(ext > T(0))) continue;
      T const limit = mul_rn(empty_ratio, ext);
      if (add_rn(tight.lo[d], -node.cell.lo[d]) > limit) {
        p.cut_dim[p.cuts] = d;
        p.cut_side[p.cuts] = 0;
        p.cut_value[p.cuts] = tight.lo[d];
        ++p.cuts;
        p.cell.lo[d] = tight.lo[d];
      }
      if (add_rn(node.cell.hi[d], -tight.hi[d]) > limit) {
        p.cut_dim[p.cuts] = d;
        p.cut_side[p.cuts] = 1;
        p.cut_value[p.cuts] = tight.hi[d];
        ++p.cuts;
        p.cell.hi[d] = tight.hi[d];
      }
    }
    if (node.depth + p.cuts + 1 > max_depth) { // no room for the cuts: the median alone
      p.cuts = 0;
      p.cell = node.cell;
    }
    // spatial median of the longest axis of what is left
    int dim = 0;
    T best = add_rn(p.cell.hi[0], -p.cell.lo[0]);
    for (int d = 1; d < 3; ++d) {
      T const e = add_rn(p.cell.hi[d], -p.cell.lo[d]);
      if (e > best) {
        best = e;
        dim = d;
      }
    }
    p.dim = dim; // ChooseLargeAxis confirms it or picks another
    p.split = cell_median(p.cell, dim);
    plans(i) = p;
  }
};

// per chunk: how many references the median plane of each axis would send
// to each side (by their boxes), as the paper counts children's triangles;
// the chunk's team sums its threads' counts in shared memory
template <class T, class Nodes, class ChunkOffsets, class ChunkNode, class Plans, class Boxes, class Counts,
          class Member>
struct ChunkCountAxes {
  Nodes nodes;
  ChunkOffsets chunks;
  ChunkNode owner;
  Plans plans;
  Boxes boxes;
  Counts counts; // chunk x 6: left and right of axis 0, 1, 2
  std::int32_t node_count;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    std::int64_t const k = team.league_rank();
    if (k >= chunks(node_count)) return; // beyond the level's chunks (chunk_bound): the whole team
    int const t = team.team_rank(), ts = team.team_size();
    std::int32_t const i = owner(k);
    LargePlan<T> const& p = plans(i);
    std::int32_t c[6] = {0, 0, 0, 0, 0, 0};
    if (!p.leaf) {
      std::int32_t const b = nodes(i).begin + (std::int32_t(k) - chunks(i)) * chunk_size;
      std::int32_t const e = b + chunk_size < nodes(i).end ? b + chunk_size : nodes(i).end;
      T s[3];
      for (int d = 0; d < 3; ++d) s[d] = cell_median(p.cell, d);
      for (std::int32_t r = b + t; r < e; r += ts) {
        Box<T, 3> const box = boxes(r);
        for (int d = 0; d < 3; ++d) {
          bool left, right;
          sides(box, d, s[d], left, right);
          c[2 * d] += left ? 1 : 0;
          c[2 * d + 1] += right ? 1 : 0;
        }
      }
    }
    auto* part = static_cast<SideCounts<std::int32_t>*>(team.team_shmem().get_shmem(sizeof(SideCounts<std::int32_t>) * ts));
    for (int j = 0; j < 6; ++j) part[t].c[j] = c[j];
    team_fold(team, part, [](SideCounts<std::int32_t>& a, SideCounts<std::int32_t> const& b) { add_side_counts(a, b); });
    if (t == 0)
      for (int j = 0; j < 6; ++j) counts(k, j) = part[0].c[j];
  }
};

// per node: the median of the longest axis where SAH does not prefer a leaf
// to it, else the cheapest other axis's median, else a leaf
// (the chunks' counts summed by a team per node, as PlanLarge's boxes)
template <class T, class Nodes, class ChunkOffsets, class Plans, class Counts, class Member>
struct ChooseLargeAxis {
  Nodes nodes;
  ChunkOffsets chunks;
  Plans plans;
  Counts counts;
  Costs costs;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    std::int64_t const i = team.league_rank();
    if (plans(i).leaf) return; // the whole team
    int const t = team.team_rank(), ts = team.team_size();
    std::int64_t c[6] = {0, 0, 0, 0, 0, 0};
    for (std::int32_t k = chunks(i) + t; k < chunks(i + 1); k += ts)
      for (int j = 0; j < 6; ++j) c[j] += counts(k, j);
    auto* part = static_cast<SideCounts<std::int64_t>*>(team.team_shmem().get_shmem(sizeof(SideCounts<std::int64_t>) * ts));
    for (int j = 0; j < 6; ++j) part[t].c[j] = c[j];
    team_fold(team, part, [](SideCounts<std::int64_t>& a, SideCounts<std::int64_t> const& b) { add_side_counts(a, b); });
    if (t == 0) choose(i, part[0].c);
  }
  KOKKOS_FUNCTION void choose(std::int64_t i, std::int64_t const* c) const {
    LargePlan<T>& p = plans(i);
    std::int64_t const n = nodes(i).end - nodes(i).begin;
    double const a = area(p.cell);
    double const leaf = backend::mul_rn(costs.intersection, double(n));
    double cost[3];
    for (int d = 0; d < 3; ++d) {
      T const s = cell_median(p.cell, d);
      if (!(s > p.cell.lo[d] && s < p.cell.hi[d])) cost[d] = kdforge::detail::infinity<double>(); // too thin
      else if (a > 0.0)
        cost[d] = split_cost(costs, a, area(child_cell(p.cell, d, s, false)), area(child_cell(p.cell, d, s, true)),
                             c[2 * d], c[2 * d + 1]);
      else cost[d] = c[2 * d] < n || c[2 * d + 1] < n ? 0.0 : kdforge::detail::infinity<double>();
    }
    int chosen = p.dim;
    if (!(cost[chosen] < leaf)) {
      for (int d = 0; d < 3; ++d)
        if (cost[d] < cost[chosen]) chosen = d;
    }
    if (!(cost[chosen] < leaf)) {
      p.leaf = 1;
      p.cuts = 0;
      return;
    }
    p.dim = chosen;
    p.split = cell_median(p.cell, chosen);
  }
};

template <class Nodes>
KOKKOS_FUNCTION std::int32_t owner_of(Nodes const& nodes, std::int32_t count, std::int32_t r) {
  // the last node whose range begins at or before r (ranges are in order)
  std::int32_t lo = 0, hi = count - 1;
  while (lo < hi) {
    std::int32_t const mid = lo + (hi - lo + 1) / 2;
    if (nodes(mid).begin <= r) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// per reference: which children it goes to, with its box clipped to each
template <class T, class Nodes, class Plans, class Boxes, class Tris, class Corners, class Flags>
struct ClassifyRefs {
  Nodes nodes;
  std::int32_t node_count;
  Plans plans;
  Boxes boxes;
  Tris tris;
  Corners corners;
  Flags lflags;
  Flags rflags;
  Boxes lboxes;
  Boxes rboxes;
  KOKKOS_FUNCTION void operator()(std::int64_t r) const {
    std::int32_t const i = owner_of(nodes, node_count, std::int32_t(r));
    LargePlan<T> const& p = plans(i);
    if (p.leaf) {
      lflags(r) = 0;
      rflags(r) = 0;
      return;
    }
    Box<T, 3> const b = boxes(r);
    bool left, right;
    sides(b, p.dim, p.split, left, right);
    Box<T, 3> lb = b, rb = b;
    if (left && right && b.lo[p.dim] < p.split && b.hi[p.dim] > p.split) {
      // straddles the plane: clip the triangle to each child (Algorithm 1)
      T tri[3][3];
      std::int32_t const t = tris(r);
      for (int c = 0; c < 3; ++c)
        for (int d = 0; d < 3; ++d) tri[c][d] = corners(t, c, d);
      left = clipped_box(tri, child_cell(p.cell, p.dim, p.split, false), b, lb);
      right = clipped_box(tri, child_cell(p.cell, p.dim, p.split, true), b, rb);
    }
    lflags(r) = left ? 1 : 0;
    rflags(r) = right ? 1 : 0;
    lboxes(r) = lb;
    rboxes(r) = rb;
  }
};

// per node: the children's counts, the SAH check, and what the node adds
// to each list (scanned into offsets next)
template <class T, class Nodes, class Plans, class Scans, class Counts>
struct CountLarge {
  Nodes nodes;
  Plans plans;
  Scans lscan;
  Scans rscan;
  Counts new_nodes;
  Counts pool;
  Counts next_large;
  Counts next_small;
  Counts next_refs;
  Counts staged;
  Costs costs;
  int small_size;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    LargeNode<T> const node = nodes(i);
    LargePlan<T>& p = plans(i);
    std::int32_t const n = node.end - node.begin;
    std::int32_t const nl = lscan(node.end) - lscan(node.begin);
    std::int32_t const nr = rscan(node.end) - rscan(node.begin);
    if (!p.leaf) {
      double const a = area(p.cell);
      double const al = area(child_cell(p.cell, p.dim, p.split, false));
      double const ar = area(child_cell(p.cell, p.dim, p.split, true));
      bool const no_gain = a > 0.0 ? split_cost(costs, a, al, ar, nl, nr) >= backend::mul_rn(costs.intersection, double(n))
                                   : (nl == n && nr == n);
      if (no_gain) p.leaf = 1;
    }
    if (p.leaf) {
      new_nodes(i) = 0;
      pool(i) = n;
      next_large(i) = 0;
      next_small(i) = 0;
      next_refs(i) = 0;
      staged(i) = 0;
      return;
    }
    new_nodes(i) = 2 * p.cuts + 2;
    pool(i) = 0;
    next_large(i) = (nl > small_size ? 1 : 0) + (nr > small_size ? 1 : 0);
    next_small(i) = (nl > 0 && nl <= small_size ? 1 : 0) + (nr > 0 && nr <= small_size ? 1 : 0);
    next_refs(i) = (nl > small_size ? nl : 0) + (nr > small_size ? nr : 0);
    staged(i) = (nl <= small_size ? nl : 0) + (nr <= small_size ? nr : 0);
  }
};

// per node: the built nodes of its cut chain and split, its children in the
// next lists
template <class T, class Nodes, class Plans, class Scans, class Counts, class Built, class Roots>
struct EmitLarge {
  Nodes nodes;
  Plans plans;
  Scans lscan;
  Scans rscan;
  Counts new_nodes;
  Counts pool;
  Counts next_large;
  Counts next_small;
  Counts next_refs;
  Counts staged;
  Built built;
  Nodes next;
  Roots roots;
  std::int32_t built_base;
  std::int32_t pool_base;
  std::int32_t roots_base;
  int small_size;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    LargeNode<T> const node = nodes(i);
    LargePlan<T> const p = plans(i);
    BuildNode<T> bn{};
    bn.depth = node.depth;
    bn.mask = 0;
    if (p.leaf) {
      bn.kind = BuildNode<T>::pool_leaf;
      bn.left = bn.right = -1;
      bn.split = T(0);
      bn.a = pool_base + pool(i);
      bn.b = node.end - node.begin;
      built(node.id) = bn;
      return;
    }
    std::int32_t id = node.id;
    std::int32_t fresh = built_base + new_nodes(i);
    std::int32_t depth = node.depth;
    Box<T, 3> cell = node.cell;
    for (int k = 0; k < p.cuts; ++k) { // inner node: an empty leaf and the rest
      std::int32_t const empty = fresh++;
      std::int32_t const rest = fresh++;
      BuildNode<T> c{};
      c.kind = p.cut_dim[k];
      c.split = p.cut_value[k];
      c.depth = depth;
      c.left = p.cut_side[k] == 0 ? empty : rest;
      c.right = p.cut_side[k] == 0 ? rest : empty;
      c.a = c.b = 0;
      c.mask = 0;
      built(id) = c;
      BuildNode<T> e{};
      e.kind = BuildNode<T>::pool_leaf;
      e.left = e.right = -1;
      e.depth = depth + 1;
      e.split = T(0);
      e.a = 0;
      e.b = 0;
      e.mask = 0;
      built(empty) = e;
      if (p.cut_side[k] == 0) cell.lo[p.cut_dim[k]] = p.cut_value[k];
      else cell.hi[p.cut_dim[k]] = p.cut_value[k];
      id = rest;
      ++depth;
    }
    std::int32_t const child[2] = {fresh, fresh + 1};
    BuildNode<T> m{};
    m.kind = p.dim;
    m.split = p.split;
    m.depth = depth;
    m.left = child[0];
    m.right = child[1];
    m.a = m.b = 0;
    m.mask = 0;
    built(id) = m;
    std::int32_t const counts[2] = {lscan(node.end) - lscan(node.begin), rscan(node.end) - rscan(node.begin)};
    std::int32_t ref = next_refs(i);
    std::int32_t stage = staged(i);
    std::int32_t large = next_large(i);
    std::int32_t small = roots_base + next_small(i);
    for (int side = 0; side < 2; ++side) {
      Box<T, 3> const cc = child_cell(p.cell, p.dim, p.split, side == 1);
      std::int32_t const n = counts[side];
      if (n == 0) {
        BuildNode<T> e{};
        e.kind = BuildNode<T>::pool_leaf;
        e.left = e.right = -1;
        e.depth = depth + 1;
        e.split = T(0);
        e.a = 0;
        e.b = 0;
        e.mask = 0;
        built(child[side]) = e;
      } else if (n <= small_size) {
        roots(small++) = SmallRoot<T>{cc, child[side], depth + 1, n, stage};
        stage += n;
      } else {
        next(large++) = LargeNode<T>{cc, ref, ref + n, child[side], depth + 1};
        ref += n;
      }
    }
  }
};

// per reference: its copies into the children's lists (or the pool)
template <class T, class Nodes, class Plans, class Scans, class Counts, class Boxes, class Tris>
struct ScatterRefs {
  Nodes nodes;
  std::int32_t node_count;
  Plans plans;
  Scans lscan;
  Scans rscan;
  Counts pool;
  Counts next_refs;
  Counts staged;
  Tris tris;
  Boxes lboxes;
  Boxes rboxes;
  Tris next_tris;
  Boxes next_boxes;
  Tris staged_tris;
  Boxes staged_boxes;
  Tris pool_tris;
  std::int32_t pool_base;
  int small_size;
  KOKKOS_FUNCTION void operator()(std::int64_t r) const {
    std::int32_t const i = owner_of(nodes, node_count, std::int32_t(r));
    LargeNode<T> const node = nodes(i);
    if (plans(i).leaf) {
      pool_tris(pool_base + pool(i) + (std::int32_t(r) - node.begin)) = tris(r);
      return;
    }
    // large children's references go to the next level's lists, small
    // children's to the staging lists their small roots copy from
    std::int32_t const nl = lscan(node.end) - lscan(node.begin);
    bool const left_large = nl > small_size;
    if (lscan(r + 1) != lscan(r)) {
      std::int32_t const k = lscan(r) - lscan(node.begin);
      if (left_large) {
        next_tris(next_refs(i) + k) = tris(r);
        next_boxes(next_refs(i) + k) = lboxes(r);
      } else {
        staged_tris(staged(i) + k) = tris(r);
        staged_boxes(staged(i) + k) = lboxes(r);
      }
    }
    if (rscan(r + 1) != rscan(r)) {
      std::int32_t const k = rscan(r) - rscan(node.begin);
      std::int32_t const nr = rscan(node.end) - rscan(node.begin);
      if (nr > small_size) {
        std::int32_t const at = next_refs(i) + (left_large ? nl : 0) + k;
        next_tris(at) = tris(r);
        next_boxes(at) = rboxes(r);
      } else {
        std::int32_t const at = staged(i) + (left_large ? 0 : nl) + k;
        staged_tris(at) = tris(r);
        staged_boxes(at) = rboxes(r);
      }
    }
  }
};

// per small root made on this level: its triangles into its 64 slots
template <class T, class Roots, class Tris, class Boxes>
struct FillSmallRoots {
  Roots roots;
  std::int32_t first;
  Tris tris;
  Boxes boxes;
  Tris small_tris;
  Boxes small_boxes;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int32_t const r = first + std::int32_t(j / small_capacity);
    std::int32_t const k = std::int32_t(j % small_capacity);
    SmallRoot<T> const root = roots(r);
    if (k >= root.count) return;
    small_tris(std::int64_t(r) * small_capacity + k) = tris(root.source + k);
    small_boxes(std::int64_t(r) * small_capacity + k) = boxes(root.source + k);
  }
};

// ---- small-node stage ----------------------------------------------------

// PREPROCESSSMALLNODES: per candidate, the triangles on each side
template <class T, class Roots, class Boxes, class Candidates>
struct PreprocessCandidates {
  Roots roots;
  Boxes small_boxes;
  Candidates candidates;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const r = j / candidates_per_root;
    int const c = int(j % candidates_per_root);
    int const n = roots(r).count;
    Candidate<T> cand{0, 0, T(0), -1};
    if (c < 6 * n) {
      int const k = c / 6, dim = (c % 6) / 2, side = c % 2;
      Box<T, 3> const bk = small_boxes(r * small_capacity + k);
      T const v = side == 0 ? bk.lo[dim] : bk.hi[dim];
      cand.value = v;
      cand.dim = dim;
      for (int t = 0; t < n; ++t) {
        bool left, right;
        sides(small_boxes(r * small_capacity + t), dim, v, left, right);
        if (left) cand.left |= std::uint64_t(1) << t;
        if (right) cand.right |= std::uint64_t(1) << t;
      }
    }
    candidates(j) = cand;
  }
};

template <class T, class Roots, class Small>
struct StartSmallNodes {
  Roots roots;
  Small small;
  KOKKOS_FUNCTION void operator()(std::int64_t r) const {
    SmallRoot<T> const root = roots(r);
    std::uint64_t const mask =
        root.count >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << root.count) - std::uint64_t(1);
    small(r) = SmallNode<T>{root.cell, mask, std::int32_t(r), root.id, root.depth};
  }
};

// The position of the r-th set bit of s (r counted from 0, r < popcount(s)):
// a binary search by population counts, six steps.
KOKKOS_FORCEINLINE_FUNCTION int select_bit(std::uint64_t s, int r) {
  int pos = 0;
  for (int w = 32; w > 0; w /= 2) {
    std::uint64_t const low = s & ((std::uint64_t(1) << w) - 1);
    int const c = backend::popcount64(low);
    if (r >= c) {
      r -= c;
      s >>= w;
      pos += w;
    } else {
      s = low;
    }
  }
  return pos;
}

// Team size of the small nodes' choice: a warp on GPUs. A node has 6 |S|
// candidates, at most 384 and a few dozen below its small root's first
// levels, so wider teams mostly wait at the reduction's barriers.
template <class Exec>
constexpr int small_team_size() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible ? 1 : 32;
}

// PROCESSSMALLNODES, first half: the cheapest candidate per node (-1: leaf).
// The node's team splits its candidates (those of its own triangles, the
// set bits of its mask, as the paper's "j.triangle in s"); the cheapest
// wins, and between equal costs the first candidate, as a loop over them in
// order would pick.
template <class T, class Small, class Candidates, class Choice, class Counts, class Member>
struct ChooseSmallSplit {
  Small small;
  Candidates candidates;
  Choice choice;
  Counts children;
  Costs costs;
  int max_depth;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    std::int64_t const i = team.league_rank();
    int const t = team.team_rank(), ts = team.team_size();
    SmallNode<T> const node = small(i);
    std::uint64_t const s = node.mask;
    int const n = backend::popcount64(s);
    double const a0 = area(node.cell);
    double const leaf_cost = backend::mul_rn(costs.intersection, double(n)); // SAH0: the leaf
    double best_cost = leaf_cost;
    std::int32_t best = -1;
    if (n > 0 && a0 > 0.0 && node.depth + 1 <= max_depth) {
      std::int64_t const base = std::int64_t(node.root) * candidates_per_root;
      for (int j = t; j < 6 * n; j += ts) {
        int const c = 6 * select_bit(s, j / 6) + j % 6; // face j % 6 of the node's (j / 6)-th triangle
        Candidate<T> const cand = candidates(base + c);
        if (cand.dim < 0) continue; // not a triangle of the root (a mask never holds one)
        int const d = cand.dim;
        if (!(cand.value > node.cell.lo[d] && cand.value < node.cell.hi[d])) continue;
        int const cl = backend::popcount64(s & cand.left);
        int const cr = backend::popcount64(s & cand.right);
        double const al = area(child_cell(node.cell, d, cand.value, false));
        double const ar = area(child_cell(node.cell, d, cand.value, true));
        double const cost = split_cost(costs, a0, al, ar, cl, cr);
        if (cost < best_cost) {
          best_cost = cost;
          best = c;
        }
      }
    }
    auto* part = static_cast<SplitChoice*>(team.team_shmem().get_shmem(sizeof(SplitChoice) * ts));
    part[t] = SplitChoice{best_cost, best};
    double const leaf = leaf_cost;
    team_fold(team, part, [leaf](SplitChoice& a, SplitChoice const& b) {
      // a real split beats the leaf only when cheaper; between splits, the cheaper, then the first
      bool const take = b.best >= 0 && (a.best < 0 ? b.cost < leaf : (b.cost < a.cost || (b.cost == a.cost && b.best < a.best)));
      if (take) a = b;
    });
    if (t == 0) {
      choice(i) = part[0].best;
      children(i) = part[0].best >= 0 ? 2 : 0;
    }
  }
};

// PROCESSSMALLNODES, second half: the node written, its children listed
template <class T, class Small, class Candidates, class Choice, class Counts, class Built>
struct SplitSmall {
  Small small;
  Candidates candidates;
  Choice choice;
  Counts offsets;
  Built built;
  Small next;
  std::int32_t built_base;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    SmallNode<T> const node = small(i);
    BuildNode<T> bn{};
    bn.depth = node.depth;
    std::int32_t const c = choice(i);
    if (c < 0) {
      bn.kind = BuildNode<T>::mask_leaf;
      bn.left = bn.right = -1;
      bn.split = T(0);
      bn.a = node.root;
      bn.b = backend::popcount64(node.mask);
      bn.mask = node.mask;
      built(node.id) = bn;
      return;
    }
    Candidate<T> const cand = candidates(std::int64_t(node.root) * candidates_per_root + c);
    std::int32_t const at = offsets(i);
    bn.kind = cand.dim;
    bn.split = cand.value;
    bn.left = built_base + at;
    bn.right = built_base + at + 1;
    bn.a = bn.b = 0;
    bn.mask = 0;
    built(node.id) = bn;
    next(at) = SmallNode<T>{child_cell(node.cell, cand.dim, cand.value, false), node.mask & cand.left, node.root,
                            bn.left, node.depth + 1};
    next(at + 1) = SmallNode<T>{child_cell(node.cell, cand.dim, cand.value, true), node.mask & cand.right, node.root,
                                bn.right, node.depth + 1};
  }
};

// ---- output stage (Algorithm 5) -------------------------------------------

template <class Built, class Keys, class Ids>
struct DepthKeys {
  Built built;
  Keys keys;
  Ids ids;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    keys(i) = std::uint32_t(built(i).depth);
    ids(i) = std::int32_t(i);
  }
};

template <class Keys, class Levels>
struct LevelStarts {
  Keys keys;
  Levels levels;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    if (j == 0 || keys(j) != keys(j - 1)) levels(keys(j)) = std::int32_t(j);
  }
};

// UPPASS: sizes of the sub-trees, in nodes and in leaf references
template <class T, class Built, class Ids, class Sizes>
struct UpPass {
  Built built;
  Ids ids;
  std::int32_t first;
  Sizes nodes;
  Sizes refs;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int32_t const i = ids(first + j);
    BuildNode<T> const b = built(i);
    if (b.kind < 3) {
      nodes(i) = 1 + nodes(b.left) + nodes(b.right);
      refs(i) = refs(b.left) + refs(b.right);
    } else {
      nodes(i) = 1;
      refs(i) = b.b;
    }
  }
};

// DOWNPASS: preorder addresses, the node in its final form, a leaf's list
template <class T, class Built, class Ids, class Sizes, class Out, class Tris>
struct DownPass {
  Built built;
  Ids ids;
  std::int32_t first;
  Sizes nodes;
  Sizes refs;
  Sizes address;
  Sizes ref_offset;
  Out out;
  Tris pool_tris;
  Tris small_tris;
  Tris leaf_tris;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int32_t const i = ids(first + j);
    BuildNode<T> const b = built(i);
    std::int32_t const at = address(i), ro = ref_offset(i);
    TriangleNode<T> node;
    if (b.kind < 3) {
      address(b.left) = at + 1;
      address(b.right) = at + 1 + nodes(b.left);
      ref_offset(b.left) = ro;
      ref_offset(b.right) = ro + refs(b.left);
      node.kind = b.kind;
      node.a = at + 1 + nodes(b.left);
      node.b = 0;
      node.split = b.split;
    } else {
      node.kind = TriangleNode<T>::leaf_kind;
      node.a = ro;
      node.b = b.b;
      node.split = T(0);
      if (b.kind == BuildNode<T>::pool_leaf) {
        for (std::int32_t k = 0; k < b.b; ++k) leaf_tris(ro + k) = pool_tris(b.a + k);
      } else {
        std::int32_t k = 0;
        for (int bit = 0; bit < 64; ++bit)
          if ((b.mask >> bit) & 1u) leaf_tris(ro + k++) = small_tris(std::int64_t(b.a) * small_capacity + bit);
      }
    }
    out(at) = node;
  }
};

template <class Sizes>
struct SetRoot {
  Sizes address;
  Sizes ref_offset;
  KOKKOS_FUNCTION void operator()(std::int64_t) const {
    address(0) = 0;
    ref_offset(0) = 0;
  }
};

// ---- the driver ----------------------------------------------------------

namespace detail {
// Grows v to hold `needed` entries (at least doubling), keeping its first
// `valid` ones: the lists the stages append to. `zeroed`: the new list starts
// zeroed, for lists of fixed-size slots that their kernels fill only in
// part (a small root's triangles), so that copying a slot whole never reads
// bytes never written.
template <class Exec, class View>
void grow(Exec const& exec, View& v, std::size_t needed, std::size_t valid, bool zeroed = false) {
  if (v.extent(0) >= needed) return;
  std::size_t const size = std::max(needed, 2 * v.extent(0));
  auto w = zeroed ? backend::allocate<View>(v.label(), size)
                  : backend::allocate<View>(Kokkos::view_alloc(Kokkos::WithoutInitializing, v.label()), size);
  if (valid > 0)
    Kokkos::deep_copy(exec, Kokkos::subview(w, std::make_pair(std::size_t(0), valid)),
                      Kokkos::subview(v, std::make_pair(std::size_t(0), valid)));
  v = w;
}

// Exclusive scan of v(0..n) in place, after v(n) = 0, so v(n) is the total;
// queued on exec without waiting for it.
template <class Exec, class View>
void scan_async(Exec const& exec, View const& v, std::int64_t n, Kokkos::View<char*, typename Exec::memory_space>& space) {
  Kokkos::deep_copy(exec, Kokkos::subview(v, n), 0);
  auto const s = Kokkos::subview(v, std::make_pair(std::int64_t(0), n + 1));
  backend::exclusive_scan_async(exec, s, s, space);
}

// The totals of scans (v(n) of each) on the host, in one copy.
template <class Exec, class Totals, class HostTotals>
void read_totals(Exec const& exec, Totals const& totals, HostTotals const& host) {
  Kokkos::deep_copy(exec, host, totals);
  exec.fence();
  for (std::size_t j = 0; j < host.extent(0); ++j)
    KDFORGE_REQUIRE(host(j) >= 0, "build_sah_tree",
                    "the tree would hold more than 2^31 - 1 nodes or triangle references; lower "
                    "SahOptions::max_depth or build over fewer, less overlapping triangles");
}

// Team size of ScanCounts: one team scans all of a level's per-node lists.
template <class Exec>
constexpr int scan_team_size() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible ? 1 : 512;
}

// Exclusive scans in place of up to six lists of n counts (entries 0..n-1;
// each list's total into its entry n and, where `totals` has room, into
// totals(k)), by one team: a level's per-node lists are a few thousand
// entries, so one launch does what a vendor scan per list (two kernels and
// a fill each) did. Each thread sums a contiguous slice, the team scans the
// slices' sums, and each thread writes its slice's prefixes: integer sums,
// the same on every backend and team size.
template <class Counts, class Totals, class Member>
struct ScanCounts {
  Counts lists[6];
  int count;
  std::int64_t n;
  Totals totals;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    int const t = team.team_rank(), ts = team.team_size();
    std::int64_t const per = (n + ts - 1) / ts;
    std::int64_t const b = std::int64_t(t) * per < n ? std::int64_t(t) * per : n;
    std::int64_t const e = b + per < n ? b + per : n;
    for (int k = 0; k < count; ++k) {
      Counts const& v = lists[k];
      std::int32_t sum = 0;
      for (std::int64_t i = b; i < e; ++i) sum += v(i);
      std::int32_t at = team.team_scan(sum);
      for (std::int64_t i = b; i < e; ++i) {
        std::int32_t const x = v(i);
        v(i) = at;
        at += x;
      }
      if (t == ts - 1) { // the last slice ends at n
        v(n) = at;
        if (std::int64_t(k) < std::int64_t(totals.extent(0))) totals(k) = at;
      }
    }
  }
};
} // namespace detail

/// Builds the SAH tree over the mesh (`vertices`: V x 3, `triangles`: F x 3
/// indices, both checked by the caller: finite, in range). `small_team`,
/// `scan_team` and `node_team` (0: the backend's) size the teams that
/// choose the small nodes' splits, scan a level's per-node lists and fold
/// a large node's chunks: any size builds the same tree, so tests run the
/// GPU's teams on CPUs too.
template <class T, class Exec, class Vertices, class Triangles>
TriangleTree<typename Exec::memory_space, T> build(Exec const& exec, Vertices const& vertices,
                                                  Triangles const& triangles, SahOptions const& options,
                                                  int small_team = 0, int scan_team = 0, int node_team = 0) {
  using MS = typename Exec::memory_space;
  using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;
  using Team = Kokkos::TeamPolicy<Exec>;
  using Member = typename Team::member_type;
  int const team_size = reduction_team_size<Exec>();
  if (node_team <= 0) node_team = node_team_size<Exec>();
  if (small_team <= 0) small_team = small_team_size<Exec>();
  using BoxView = Kokkos::View<Box<T, 3>*, MS>;
  using IntView = Kokkos::View<std::int32_t*, MS>;
  using LargeView = Kokkos::View<LargeNode<T>*, MS>;
  using PlanView = Kokkos::View<LargePlan<T>*, MS>;
  using RootView = Kokkos::View<SmallRoot<T>*, MS>;
  using SmallView = Kokkos::View<SmallNode<T>*, MS>;
  using BuiltView = Kokkos::View<BuildNode<T>*, MS>;
  using CandView = Kokkos::View<Candidate<T>*, MS>;
  using OutView = Kokkos::View<TriangleNode<T>*, MS>;
  kdforge::detail::Region region("kdforge::build_sah_tree");
  std::int64_t const f = std::int64_t(triangles.extent(0));
  SahCosts const tree_costs{options.traversal_cost, options.intersection_cost};
  Costs const costs{options.traversal_cost, options.intersection_cost};
  int const max_depth = resolve_max_depth(options.max_depth, f);
  int const small_size = options.small_node_size;
  auto const W = Kokkos::WithoutInitializing;

  auto corners = backend::allocate<typename TriangleTree<MS, T>::corner_view>(
      Kokkos::view_alloc(W, "kdforge::sah::corners"), f);
  if (f == 0) {
    return TriangleTree<MS, T>(backend::allocate<OutView>("kdforge::sah::nodes", 0), backend::allocate<IntView>("kdforge::sah::leaf_triangles", 0), corners,
                               Box<T, 3>::empty(), 0, tree_costs);
  }
  // First sizes from the triangle count, so that the lists and the levels'
  // scratch seldom grow (each growth is an allocation, and on GPUs the free
  // of the old list waits for the device): about 4 nodes per triangle (3.7
  // to 3.9 in random soups of 2,000 to 300,000), a small root per 32
  // triangles, and half again as many references as triangles in a level,
  // where straddling triangles go to both children.
  std::size_t const uf = std::size_t(f);
  std::size_t const ref_capacity = uf + uf / 2 + 64;
  std::size_t const node_capacity = ref_capacity / std::size_t(std::max(small_size, 1) + 1) + 2;
  std::size_t const root_capacity = uf / 32 + 16;
  // initialisation: each triangle's corners and box, the scene box
  auto boxes = backend::allocate<BoxView>(Kokkos::view_alloc(W, "kdforge::sah::boxes"), ref_capacity);
  auto tris = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::tris"), ref_capacity);
  Box<T, 3> scene;
  {
    auto points = backend::allocate<Kokkos::View<Point<T, 3>*, MS>>(Kokkos::view_alloc(W, "kdforge::sah::points"), 3 * f);
    Kokkos::parallel_for("kdforge::sah::init", Policy(exec, 0, f),
                         InitTriangles<T, Vertices, Triangles, decltype(corners), BoxView, IntView, decltype(points)>{
                             vertices, triangles, corners, boxes, tris, points});
    exec.fence();
    auto const b = backend::bounding_box(exec, points);
    for (int d = 0; d < 3; ++d) {
      scene.lo[d] = b.lo[d];
      scene.hi[d] = b.hi[d];
    }
  }

  // the nodes as the stages make them; the leaves of the large-node stage's
  // triangles (the pool); the small roots and their triangles
  auto built = backend::allocate<BuiltView>(Kokkos::view_alloc(W, "kdforge::sah::built"), 4 * uf + 64);
  auto pool_tris = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::pool"), 64);
  auto roots = backend::allocate<RootView>(Kokkos::view_alloc(W, "kdforge::sah::roots"), root_capacity);
  auto small_tris = backend::allocate<IntView>("kdforge::sah::small_tris", root_capacity * small_capacity); // slots: zeroed
  auto small_boxes = backend::allocate<BoxView>(Kokkos::view_alloc(W, "kdforge::sah::small_boxes"), root_capacity * small_capacity);
  std::int32_t built_count = 1, pool_count = 0, root_count = 0;
  // scan temporary storage, and the totals the host needs from each level
  auto scan_space = backend::allocate<Kokkos::View<char*, MS>>("kdforge::sah::scan_workspace", 0);
  auto totals = backend::allocate<Kokkos::View<std::int32_t*, MS>>("kdforge::sah::totals", 6);
  auto const totals_h = Kokkos::create_mirror_view(Kokkos::HostSpace(), totals);
  using Totals = decltype(totals);
  if (scan_team <= 0) {
    // the most threads a block may have is lower in builds with device
    // debugging (-G); ScanCounts folds any team size to the same sums
    int const most = Team(exec, 1, 1).team_size_max(detail::ScanCounts<IntView, Totals, Member>{},
                                                    Kokkos::ParallelForTag{});
    scan_team = std::min(detail::scan_team_size<Exec>(), most);
  }
  // per-node lists of a level scanned in place by one team, totals(k) = list k's total
  auto const scan_counts = [&](Totals const& to, std::int64_t n, auto const&... lists) {
    Kokkos::parallel_for("kdforge::sah::scan_counts", Team(exec, 1, scan_team),
                         detail::ScanCounts<IntView, Totals, Member>{{lists...}, int(sizeof...(lists)), n, to});
  };

  auto active = backend::allocate<LargeView>(Kokkos::view_alloc(W, "kdforge::sah::active"), 1);
  std::int32_t active_count = 0;
  std::int64_t ref_count = f;
  {
    auto h = Kokkos::create_mirror_view(active);
    h(0) = LargeNode<T>{scene, 0, std::int32_t(f), 0, 0};
    Kokkos::deep_copy(active, h);
    if (f > small_size) {
      active_count = 1;
    } else { // a small root from the start
      auto hr = Kokkos::create_mirror_view(roots);
      hr(0) = SmallRoot<T>{scene, 0, 0, std::int32_t(f), 0};
      Kokkos::deep_copy(roots, hr);
      root_count = 1;
      Kokkos::parallel_for("kdforge::sah::small_roots", Policy(exec, 0, small_capacity),
                           FillSmallRoots<T, RootView, IntView, BoxView>{roots, 0, tris, boxes, small_tris, small_boxes});
    }
  }

  // ---- large-node stage: one level per pass, over scratch reused level to level
  auto chunks = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::chunks"), 0);
  auto owner = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::chunk_owner"), 0);
  auto chunk_boxes = backend::allocate<BoxView>(Kokkos::view_alloc(W, "kdforge::sah::chunk_boxes"), 0);
  auto plans = backend::allocate<PlanView>(Kokkos::view_alloc(W, "kdforge::sah::plans"), 0);
  auto axis_counts = backend::allocate<Kokkos::View<std::int32_t* [6], MS>>(Kokkos::view_alloc(W, "kdforge::sah::axis_counts"), 0);
  auto lscan = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::left"), 0);
  auto rscan = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::right"), 0);
  auto lboxes = backend::allocate<BoxView>(Kokkos::view_alloc(W, "kdforge::sah::left_boxes"), 0);
  auto rboxes = backend::allocate<BoxView>(Kokkos::view_alloc(W, "kdforge::sah::right_boxes"), 0);
  auto new_nodes = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::new_nodes"), 0);
  auto pool = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::pool_offsets"), 0);
  auto next_large = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::next_large"), 0);
  auto next_small = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::next_small"), 0);
  auto next_refs = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::next_refs"), 0);
  auto staged = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::staged"), 0);
  auto next = backend::allocate<LargeView>(Kokkos::view_alloc(W, "kdforge::sah::active"), 0);
  auto next_tris = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::tris"), 0);
  auto next_boxes = backend::allocate<BoxView>(Kokkos::view_alloc(W, "kdforge::sah::boxes"), 0);
  auto staged_tris = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::staged_tris"), 0);
  auto staged_boxes = backend::allocate<BoxView>(Kokkos::view_alloc(W, "kdforge::sah::staged_boxes"), 0);
  if (active_count > 0) {
    std::size_t const chunk_capacity = node_capacity + ref_capacity / chunk_size + 1;
    for (auto* v : {&chunks, &new_nodes, &pool, &next_large, &next_small, &next_refs, &staged})
      backend::reserve(*v, node_capacity + 1);
    backend::reserve(plans, node_capacity);
    backend::reserve(next, node_capacity);
    backend::reserve(owner, chunk_capacity);
    backend::reserve(chunk_boxes, chunk_capacity);
    backend::reserve(axis_counts, chunk_capacity);
    for (auto* v : {&lscan, &rscan}) backend::reserve(*v, ref_capacity + 1);
    for (auto* v : {&lboxes, &rboxes, &next_boxes}) backend::reserve(*v, ref_capacity);
    backend::reserve(next_tris, ref_capacity);
    backend::reserve(staged_tris, ref_capacity / 4);
    backend::reserve(staged_boxes, ref_capacity / 4);
  }
  while (active_count > 0) {
    kdforge::detail::Region level("kdforge::sah::large_level");
    std::int32_t const a = active_count;
    std::int64_t const refs = ref_count;
    backend::reserve(chunks, std::size_t(a) + 1);
    Kokkos::parallel_for("kdforge::sah::count_chunks", Policy(exec, 0, a),
                         CountChunks<LargeView, IntView>{active, chunks});
    scan_counts(Totals(), a, chunks);
    // the chunk kernels run over a bound of the count, which stays on the device
    std::int64_t const chunk_count = chunk_bound(a, refs);
    backend::reserve(owner, std::size_t(chunk_count));
    backend::reserve(chunk_boxes, std::size_t(chunk_count));
    Kokkos::parallel_for("kdforge::sah::chunk_owners", Policy(exec, 0, a),
                         FillChunkOwners<IntView, IntView>{chunks, owner});
    Kokkos::parallel_for("kdforge::sah::chunk_boxes",
                         Team(exec, int(chunk_count), team_size).set_scratch_size(0, Kokkos::PerTeam(sizeof(Box<T, 3>) * team_size)),
                         ChunkReduce<T, LargeView, IntView, IntView, BoxView, BoxView, Member>{active, chunks, owner,
                                                                                              boxes, chunk_boxes, a});
    backend::reserve(plans, std::size_t(a));
    Kokkos::parallel_for("kdforge::sah::plan_large",
                         Team(exec, a, node_team).set_scratch_size(0, Kokkos::PerTeam(sizeof(Box<T, 3>) * node_team)),
                         PlanLarge<T, LargeView, IntView, BoxView, PlanView, Member>{
                             active, chunks, chunk_boxes, plans, T(options.empty_space_ratio), max_depth});
    backend::reserve(axis_counts, std::size_t(chunk_count));
    Kokkos::parallel_for(
        "kdforge::sah::count_axes",
        Team(exec, int(chunk_count), team_size).set_scratch_size(0, Kokkos::PerTeam(sizeof(SideCounts<std::int32_t>) * team_size)),
        ChunkCountAxes<T, LargeView, IntView, IntView, PlanView, BoxView, decltype(axis_counts), Member>{
            active, chunks, owner, plans, boxes, axis_counts, a});
    Kokkos::parallel_for("kdforge::sah::choose_axis",
                         Team(exec, a, node_team).set_scratch_size(0, Kokkos::PerTeam(sizeof(SideCounts<std::int64_t>) * node_team)),
                         ChooseLargeAxis<T, LargeView, IntView, PlanView, decltype(axis_counts), Member>{
                             active, chunks, plans, axis_counts, costs});
    // each reference: left, right, both (clipped) or none
    for (auto* v : {&lscan, &rscan}) backend::reserve(*v, std::size_t(refs) + 1);
    for (auto* v : {&lboxes, &rboxes}) backend::reserve(*v, std::size_t(refs));
    Kokkos::parallel_for("kdforge::sah::classify", Policy(exec, 0, refs),
                         ClassifyRefs<T, LargeView, PlanView, BoxView, IntView, decltype(corners), IntView>{
                             active, a, plans, boxes, tris, corners, lscan, rscan, lboxes, rboxes});
    detail::scan_async(exec, lscan, refs, scan_space);
    detail::scan_async(exec, rscan, refs, scan_space);
    // per node: what it adds to each list
    for (auto* v : {&new_nodes, &pool, &next_large, &next_small, &next_refs, &staged})
      backend::reserve(*v, std::size_t(a) + 1);
    Kokkos::parallel_for("kdforge::sah::count_large", Policy(exec, 0, a),
                         CountLarge<T, LargeView, PlanView, IntView, IntView>{
                             active, plans, lscan, rscan, new_nodes, pool, next_large, next_small, next_refs, staged,
                             costs, small_size});
    scan_counts(totals, a, new_nodes, pool, next_large, next_small, next_refs, staged);
    detail::read_totals(exec, totals, totals_h);
    std::int32_t const added_nodes = totals_h(0), added_pool = totals_h(1), added_large = totals_h(2),
                       added_small = totals_h(3), added_refs = totals_h(4), added_staged = totals_h(5);
    KDFORGE_REQUIRE(std::int64_t(built_count) + added_nodes < std::numeric_limits<std::int32_t>::max() &&
                        std::int64_t(pool_count) + added_pool < std::numeric_limits<std::int32_t>::max() &&
                        (std::int64_t(root_count) + added_small) * small_capacity <
                            std::numeric_limits<std::int32_t>::max(),
                    "build_sah_tree", "the tree would hold more than 2^31 - 1 nodes or leaf references");
    detail::grow(exec, built, std::size_t(built_count + added_nodes), std::size_t(built_count));
    detail::grow(exec, pool_tris, std::size_t(pool_count + added_pool), std::size_t(pool_count));
    detail::grow(exec, roots, std::size_t(root_count + added_small), std::size_t(root_count));
    detail::grow(exec, small_tris, std::size_t(root_count + added_small) * small_capacity,
                 std::size_t(root_count) * small_capacity, true);
    detail::grow(exec, small_boxes, std::size_t(root_count + added_small) * small_capacity,
                 std::size_t(root_count) * small_capacity);
    backend::reserve(next, std::size_t(added_large));
    backend::reserve(next_tris, std::size_t(added_refs));
    backend::reserve(next_boxes, std::size_t(added_refs));
    backend::reserve(staged_tris, std::size_t(added_staged));
    backend::reserve(staged_boxes, std::size_t(added_staged));
    Kokkos::parallel_for("kdforge::sah::emit_large", Policy(exec, 0, a),
                         EmitLarge<T, LargeView, PlanView, IntView, IntView, BuiltView, RootView>{
                             active, plans, lscan, rscan, new_nodes, pool, next_large, next_small, next_refs, staged,
                             built, next, roots, built_count, pool_count, root_count, small_size});
    Kokkos::parallel_for("kdforge::sah::scatter", Policy(exec, 0, refs),
                         ScatterRefs<T, LargeView, PlanView, IntView, IntView, BoxView, IntView>{
                             active, a, plans, lscan, rscan, pool, next_refs, staged, tris, lboxes, rboxes, next_tris,
                             next_boxes, staged_tris, staged_boxes, pool_tris, pool_count, small_size});
    Kokkos::parallel_for("kdforge::sah::small_roots", Policy(exec, 0, std::int64_t(added_small) * small_capacity),
                         FillSmallRoots<T, RootView, IntView, BoxView>{roots, root_count, staged_tris, staged_boxes,
                                                                        small_tris, small_boxes});
    built_count += added_nodes;
    pool_count += added_pool;
    root_count += added_small;
    // the next level's lists become this one's; this one's are reused for the level after
    std::swap(active, next);
    std::swap(tris, next_tris);
    std::swap(boxes, next_boxes);
    active_count = added_large;
    ref_count = added_refs;
  }

  // ---- small-node stage
  if (root_count > 0) {
    kdforge::detail::Region stage("kdforge::sah::small_stage");
    auto candidates = backend::allocate<CandView>(Kokkos::view_alloc(W, "kdforge::sah::candidates"),
                        std::int64_t(root_count) * candidates_per_root);
    Kokkos::parallel_for("kdforge::sah::preprocess_small", Policy(exec, 0, std::int64_t(root_count) * candidates_per_root),
                         PreprocessCandidates<T, RootView, BoxView, CandView>{roots, small_boxes, candidates});
    auto small = backend::allocate<SmallView>(Kokkos::view_alloc(W, "kdforge::sah::small"), root_count);
    auto next_small_nodes = backend::allocate<SmallView>(Kokkos::view_alloc(W, "kdforge::sah::small"), 0);
    auto choice = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::choice"), 0);
    auto children = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::children"), 0);
    Kokkos::parallel_for("kdforge::sah::start_small", Policy(exec, 0, root_count),
                         StartSmallNodes<T, RootView, SmallView>{roots, small});
    std::int32_t small_count = root_count;
    for (auto* v : {&choice, &children}) backend::reserve(*v, 4 * std::size_t(root_count) + 1);
    backend::reserve(next_small_nodes, 4 * std::size_t(root_count));
    while (small_count > 0) {
      backend::reserve(choice, std::size_t(small_count));
      backend::reserve(children, std::size_t(small_count) + 1);
      Kokkos::parallel_for("kdforge::sah::choose_small",
                           Team(exec, small_count, small_team)
                               .set_scratch_size(0, Kokkos::PerTeam(sizeof(SplitChoice) * small_team)),
                           ChooseSmallSplit<T, SmallView, CandView, IntView, IntView, Member>{
                               small, candidates, choice, children, costs, max_depth});
      detail::scan_async(exec, children, small_count, scan_space);
      std::int32_t added = 0;
      Kokkos::deep_copy(exec, added, Kokkos::subview(children, small_count));
      exec.fence();
      KDFORGE_REQUIRE(added >= 0 && std::int64_t(built_count) + added < std::numeric_limits<std::int32_t>::max(),
                      "build_sah_tree", "the tree would hold more than 2^31 - 1 nodes");
      detail::grow(exec, built, std::size_t(built_count + added), std::size_t(built_count));
      backend::reserve(next_small_nodes, std::size_t(added));
      Kokkos::parallel_for("kdforge::sah::split_small", Policy(exec, 0, small_count),
                           SplitSmall<T, SmallView, CandView, IntView, IntView, BuiltView>{
                               small, candidates, choice, children, built, next_small_nodes, built_count});
      built_count += added;
      std::swap(small, next_small_nodes);
      small_count = added;
    }
  }

  // ---- output stage (Algorithm 5): levels, sizes bottom-up, preorder top-down
  kdforge::detail::Region output("kdforge::sah::preorder");
  auto keys = backend::allocate<Kokkos::View<std::uint32_t*, MS>>(Kokkos::view_alloc(W, "kdforge::sah::levels"), built_count);
  auto ids = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::level_ids"), built_count);
  Kokkos::parallel_for("kdforge::sah::depth_keys", Policy(exec, 0, built_count),
                       DepthKeys<BuiltView, decltype(keys), IntView>{built, keys, ids});
  backend::sort_by_key(exec, keys, ids, 0, 8);
  auto levels = backend::allocate<IntView>("kdforge::sah::level_starts", max_depth + 2);
  Kokkos::parallel_for("kdforge::sah::level_starts", Policy(exec, 0, built_count),
                       LevelStarts<decltype(keys), IntView>{keys, levels});
  exec.fence();
  auto const h_levels = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), levels);
  std::uint32_t deepest = 0;
  Kokkos::deep_copy(deepest, Kokkos::subview(keys, built_count - 1));
  int const height = int(deepest);
  std::vector<std::int32_t> starts(height + 2);
  for (int l = 0; l <= height; ++l) starts[l] = h_levels(l);
  starts[height + 1] = built_count;
  auto sub_nodes = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::sub_nodes"), built_count);
  auto sub_refs = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::sub_refs"), built_count);
  for (int l = height; l >= 0; --l)
    Kokkos::parallel_for("kdforge::sah::up_pass", Policy(exec, 0, starts[l + 1] - starts[l]),
                         UpPass<T, BuiltView, IntView, IntView>{built, ids, starts[l], sub_nodes, sub_refs});
  std::int32_t node_total = 0, ref_total = 0;
  Kokkos::deep_copy(node_total, Kokkos::subview(sub_nodes, 0));
  Kokkos::deep_copy(ref_total, Kokkos::subview(sub_refs, 0));
  auto out = backend::allocate<OutView>(Kokkos::view_alloc(W, "kdforge::sah::nodes"), node_total);
  auto leaf_tris = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::leaf_triangles"), ref_total);
  auto address = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::address"), built_count);
  auto ref_offset = backend::allocate<IntView>(Kokkos::view_alloc(W, "kdforge::sah::ref_offset"), built_count);
  Kokkos::parallel_for("kdforge::sah::root", Policy(exec, 0, 1), SetRoot<IntView>{address, ref_offset});
  for (int l = 0; l <= height; ++l)
    Kokkos::parallel_for("kdforge::sah::down_pass", Policy(exec, 0, starts[l + 1] - starts[l]),
                         DownPass<T, BuiltView, IntView, IntView, OutView, IntView>{
                             built, ids, starts[l], sub_nodes, sub_refs, address, ref_offset, out, pool_tris,
                             small_tris, leaf_tris});
  exec.fence();
  return TriangleTree<MS, T>(out, leaf_tris, corners, scene, height, tree_costs);
}

/// The SAH cost of a built tree (section 3: the expected cost of a ray that
/// crosses the scene box): the sum over inner nodes of C_ts A(node) / A(root)
/// plus the sum over leaves of C_i |leaf| A(leaf) / A(root), with the costs
/// the tree was built with, node cells taken from the scene box and the
/// split planes. A scene box of zero area (all triangles on one line) counts
/// every node with weight 1. Runs on the host (copies the nodes there).
template <class MS, class T>
double tree_cost(TriangleTree<MS, T> const& tree) {
  if (tree.node_count() == 0) return 0.0;
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tree.nodes());
  SahCosts const c = tree.costs();
  double const root = area(tree.bounds());
  struct Item {
    std::int32_t node;
    Box<T, 3> cell;
  };
  std::vector<Item> stack{Item{0, tree.bounds()}};
  double cost = 0.0;
  while (!stack.empty()) {
    Item const it = stack.back();
    stack.pop_back();
    double const w = root > 0.0 ? area(it.cell) / root : 1.0;
    auto const n = nodes(it.node);
    if (n.is_leaf()) {
      cost += c.intersection * double(n.count()) * w;
    } else {
      cost += c.traversal * w;
      stack.push_back(Item{it.node + 1, child_cell(it.cell, n.dim(), n.split, false)});
      stack.push_back(Item{n.right(), child_cell(it.cell, n.dim(), n.split, true)});
    }
  }
  return cost;
}

} // namespace kdforge::kernels::sah
