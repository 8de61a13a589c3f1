#pragma once
// Breadth-first bucket k-d tree builder: Hu, Nooshabadi & Ahmadi 2015,
// section II, Algorithms 1 and 2.
//
// As the paper: every dimension is sorted once (one segmented sort of D
// segments of N keys: CUB on GPUs); the tree grows one level at a time, all
// nodes of a level split at once; a node splits across the widest side of
// its bounding box at the box's midpoint; the points are redistributed by a
// stable partition of every dimension's sorted list (flags, one scan over
// all D lists, a scatter), so each node's points stay a contiguous, sorted
// range of every list, and a child's box is read off the first and last
// entries of its ranges. Nodes of at most B points are leaves (the paper's
// variant is B = 1).
//
// What differs, and why:
//  - A midpoint that splits nothing off (two values one ulp apart, or
//    rounding) falls back to the median of the node's sorted range in the
//    split dimension, which always splits; so do all levels from 32 on, which
//    bounds the height by 32 + log2(N) (midpoints alone make a node of
//    exponentially spaced values peel one point per level: a chain N deep,
//    and the walks' stacks are sized by the height). Copies of one point
//    split by rank too, so buckets never exceed B.
//  - Points that compare equal keep the order of their input indices in
//    every list (stable sorts and partitions), so the tree is the same on
//    every backend.
//  - The paper tracks node ownership per dimension; here one owner per
//    position serves all D lists: every position records the node it is in,
//    and every node its index in the level's list of splitting nodes, so a
//    level's owners are one pass over the N positions (AssignOwners).
//  - Small builds are bound by the host, not the GPU: a level is a handful
//    of kernels over a few thousand entries, and each launch, allocation and
//    wait for the device costs microseconds. So the children's boxes are
//    read by the scatter as it writes their ranges' ends, and whether they
//    split next is known when their parent's split is chosen (no pass of
//    their own); the compaction counts the nodes that split next, and that
//    count is the level's one read by the host; the first levels, which the
//    loop surely runs, are launched without it (the kernels read the
//    counts from the device: LevelCounts), so the host waits once for them
//    all; and the scratch of a small build comes from one block
//    (backend::Arena).
//  - Nodes of at most finish_limit points (in D <= finish_max_dim) leave
//    the loop and are finished by one team each (FinishSmall): the same
//    levels, splits and partitions, on the node's lists copied to the
//    team's scratch (shared memory on GPUs), with a team's barriers in
//    place of a level's launches and wait (with buckets of 8, the last 7
//    of the 16 levels of a tree of 100K points). So the tree is the one
//    the loop alone would build, its nodes numbered otherwise: level by
//    level above the finished nodes, then each finished subtree level by
//    level in the order the loop put them aside. Every child still comes
//    after its parent.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/builders/left_balanced/common.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace kdforge::kernels::bfs {

/// Levels that may split at the box's midpoint; deeper ones split at the
/// median (see the top).
inline constexpr int midpoint_levels = 32;

/// The loop's counts on the device (`state`, bucket trees), written by the
/// level's compaction and read by the next level's kernels, so the host
/// may launch a level before it has read how many nodes split on the last
/// one: the nodes that split on the next level, the node count (the next
/// level's first child), the nodes put aside for the team finish, and the
/// depth of the deepest node so far.
enum LevelCounts : int { state_splitting = 0, state_nodes = 1, state_small = 2, state_depth = 3, state_entries = 4 };

/// A node that splits on the current level: its range, and once chosen the
/// size of its left part.
template <class Index>
struct Splitting {
  Index node;
  Index begin;
  Index end;
  Index left_count;
};

template <class T>
using Key = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

// Kernels are named functors (common/points.hpp says why: no extended lambdas).

template <class PV, class Keys, class Order>
struct PresortKeys {
  PV pts; // N x D
  Keys keys;
  Order order;
  std::int64_t n;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const d = j / n, i = j - d * n;
    keys(j) = ordered_bits(pts(i, d));
    order(j) = typename Order::value_type(i);
  }
};

template <class Offsets>
struct SegmentOffsets {
  Offsets offsets;
  std::int64_t n;
  KOKKOS_FUNCTION void operator()(std::int64_t d) const { offsets(d) = typename Offsets::value_type(d * n); }
};

/// Box of node `node` (range [b, e)) from the first and last entries of its
/// ranges in the sorted lists: lo in columns [0, D), hi in [D, 2D).
template <class PV, class Order, class Boxes>
KOKKOS_FUNCTION void read_box(PV const& pts, Order const& order, Boxes const& boxes, std::int64_t n, int dim,
                              std::int64_t node, std::int64_t b, std::int64_t e, int d) {
  boxes(node, d) = pts(order(d * n + b), d);
  boxes(node, dim + d) = pts(order(d * n + e - 1), d);
}

template <class PV, class Order, class Boxes>
struct RootBox {
  PV pts;
  Order order;
  Boxes boxes;
  std::int64_t n;
  int dim;
  KOKKOS_FUNCTION void operator()(int d) const { read_box(pts, order, boxes, n, dim, 0, 0, n, d); }
};

/// A node's split: dimension, value, and how many of its points go left.
template <class T, class Index>
struct SplitChoice {
  int dim;
  T value;
  Index left;
};

/// The split of the node of range [begin, end) whose box is row `row` of
/// `boxes`, on level `level`: the first widest side of the box, its
/// midpoint, the median of the sorted range where the midpoint splits
/// nothing off or from level midpoint_levels on. coord(p, d): the
/// coordinate d of the point at position p of dimension d's sorted list
/// (the loop's lists, or a finishing team's).
template <class Boxes, class Index, class Coord>
KOKKOS_FUNCTION SplitChoice<typename Boxes::non_const_value_type, Index>
choose_split(Boxes const& boxes, std::int64_t row, Index begin, Index end, int dim, int level, Coord const& coord) {
  using T = typename Boxes::non_const_value_type;
  int best = 0;
  T width = T(-1);
  for (int d = 0; d < dim; ++d) {
    T const w = boxes(row, dim + d) - boxes(row, d);
    if (w > width) { // the first widest dimension
      width = w;
      best = d;
    }
  }
  Index const count = end - begin;
  T const lo = boxes(row, best), hi = boxes(row, dim + best);
  T const mid = T(0.5 * (double(lo) + double(hi)));
  // points with coordinate <= mid: the list is sorted, so a binary search
  Index a_lo = begin, a_hi = end; // first position with coordinate > mid
  while (a_lo < a_hi) {
    Index const m = a_lo + (a_hi - a_lo) / 2;
    if (coord(m, best) <= mid) a_lo = m + 1;
    else a_hi = m;
  }
  Index left = a_lo - begin;
  T value = mid;
  if (level >= midpoint_levels || left == 0 || left == count) { // the median: always splits
    left = count / 2;
    value = coord(Index(begin + left - 1), best);
  }
  return {best, value, left};
}

/// Per splitting node: its split (choose_split), the node's record and its
/// children's.
template <class PV, class Order, class Boxes, class Nodes, class Split, class NextFlags = Order>
struct ChooseSplit {
  using T = typename PV::non_const_value_type;
  using Index = typename Order::non_const_value_type;
  PV pts;
  Order order;
  Boxes boxes;
  Nodes nodes;
  Split split;
  std::int64_t n;
  int dim;
  int level;
  std::int64_t first_child; // children of split(a) are first_child + 2a, + 1
  NextFlags next_flags = {}; // where given: per child (2a, 2a + 1), 1 where it splits on the next level
  std::int64_t bucket = 0;
  NextFlags state = {}; // where given (LevelCounts), the level's count and first child: a launch may be wider
  KOKKOS_FUNCTION void operator()(std::int64_t a) const {
    std::int64_t first = first_child;
    if (state.extent(0)) {
      if (a >= std::int64_t(state(state_splitting))) return;
      first = std::int64_t(state(state_nodes));
    }
    Splitting<Index> s = split(a);
    auto const c = choose_split(boxes, std::int64_t(s.node), s.begin, s.end, dim, level,
                                [&](Index p, int d) { return pts(order(d * n + p), d); });
    Index const count = s.end - s.begin, left = c.left;
    s.left_count = left;
    split(a) = s;
    auto node = nodes(s.node);
    node.left = Index(first + 2 * a);
    node.right = Index(first + 2 * a + 1);
    node.split_dim = c.dim;
    node.split_value = c.value;
    nodes(s.node) = node;
    nodes(node.left) = BucketNode<T, Index>{Index(-1), Index(-1), s.begin, Index(s.begin + left), -1, T(0)};
    nodes(node.right) = BucketNode<T, Index>{Index(-1), Index(-1), Index(s.begin + left), s.end, -1, T(0)};
    if (next_flags.extent(0)) {
      next_flags(2 * a) = std::int64_t(left) > bucket ? 1 : 0;
      next_flags(2 * a + 1) = std::int64_t(count - left) > bucket ? 1 : 0;
    }
  }
};

/// Per position, once per level: the splitting node that holds it (its
/// index a in the level's list `split`, or -1 for a leaf's position), the
/// node that holds it from the next level on (split(a)'s left child up to
/// its left part's size, else its right child: first_child + 2a, + 1), and
/// side(i) of the point i at this position of the split dimension's list: 1
/// when it goes right. Loads of the holder, its split index, the splitting
/// record and its node's split dimension, in place of a binary search over
/// the level's list by every entry of all D lists in each of three passes.
/// split_index(v) is v's index in `split`, -1 for a leaf or a node that
/// does not split on this level.
template <class Owners, class SplitIndex, class Split, class Nodes, class Side>
struct AssignOwners {
  Owners owners;          // n
  Owners holder;          // n: the node each position is in
  SplitIndex split_index; // per node
  Split split;
  Nodes nodes;
  Owners order; // the D sorted lists
  Side side;    // per point
  std::int64_t n;
  std::int64_t first_child;
  Owners state = {}; // where given (LevelCounts), the first child is read there
  KOKKOS_FUNCTION void operator()(std::int64_t p) const {
    using Index = typename Owners::non_const_value_type;
    Index const a = split_index(holder(p));
    owners(p) = a;
    if (a < 0) return;
    std::int64_t const first = state.extent(0) ? std::int64_t(state(state_nodes)) : first_child;
    auto const s = split(a);
    bool const right = p - std::int64_t(s.begin) >= std::int64_t(s.left_count);
    holder(p) = Index(first + 2 * std::int64_t(a) + (right ? 1 : 0));
    int const d = nodes(s.node).split_dim;
    side(order(d * n + p)) = right ? 1 : 0;
  }
};

/// isleft over all D lists (1 for a splitting node's left points, else 0).
template <class Order, class Side, class Flags>
struct LeftFlags {
  Order order;
  Order owners;
  Side side;
  Flags flags;
  std::int64_t n;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const p = j % n;
    std::int64_t const a = owners(p);
    flags(j) = a >= 0 && side(order(j)) == 0 ? 1 : 0;
  }
};

/// Where the entry at position p of a splitting node's range [begin, end),
/// split after `left_count` positions, goes in the stable partition of the
/// range: a left point after the `lefts_before` left ones before it, a
/// right one after all left ones and the right ones before it; and whether
/// it lands first or last in its child's range (where the child's box is
/// read off). The loop's Scatter (place) and the finishing team share it.
struct Placement {
  std::int64_t to;
  bool first, last;
};
KOKKOS_FORCEINLINE_FUNCTION Placement placement(std::int64_t begin, std::int64_t left_count, std::int64_t end,
                                                std::int64_t p, std::int64_t lefts_before, bool left) {
  std::int64_t const mid = begin + left_count;
  std::int64_t const to = left ? begin + lefts_before : mid + (p - begin - lefts_before);
  return {to, to == (left ? begin : mid), to == (left ? mid : end) - 1};
}

/// Entry j of the list that starts at `base` (dimension d, position p of
/// splitting node s's range) to its place in the stable partition of the
/// node's range in `out` (placement). Where given the points and boxes, a
/// child's first and last entries write its box (row `child_row`) in
/// dimension d.
template <class Order, class Index, class PV, class Boxes>
KOKKOS_FUNCTION void place(Order const& in, Order const& out, PV const& pts, Boxes const& boxes, int dim, int d,
                           std::int64_t base, std::int64_t j, std::int64_t p, Splitting<Index> const& s, bool left,
                           std::int64_t lefts_before, std::int64_t child_row) {
  Placement const at = placement(std::int64_t(s.begin), std::int64_t(s.left_count), std::int64_t(s.end), p,
                                 lefts_before, left);
  out(base + at.to) = in(j);
  if (boxes.extent(0)) {
    if (at.first) boxes(child_row, d) = pts(in(j), d);
    if (at.last) boxes(child_row, dim + d) = pts(in(j), d);
  }
}

/// The stable partition of every list: a splitting node's left points to
/// the front of its range, its right ones after them, each in list order
/// (positions from the exclusive scan of the left flags); leaves' ranges
/// stay.
/// Where given the points and boxes, it also reads the children's boxes off
/// the first and last entries of their ranges as it writes them (children
/// of split(a): first_child + 2a, + 1), in place of a pass of its own.
template <class Order, class Split, class Flags,
          class PV = Kokkos::View<float**, Kokkos::LayoutRight, typename Order::memory_space>, class Boxes = PV>
struct Scatter {
  Order order;
  Order out;
  Split split;
  Flags flags;
  Flags scan;
  Order owners;
  std::int64_t n;
  PV pts = {};
  Boxes boxes = {};
  int dim = 0;
  std::int64_t first_child = 0;
  Order state = {}; // where given (LevelCounts), the first child is read there
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const d = j / n, p = j - d * n;
    std::int64_t const a = owners(p);
    if (a < 0) {
      out(j) = order(j);
      return;
    }
    auto const s = split(a);
    std::int64_t const base = d * n;
    bool const left = flags(j) != 0;
    std::int64_t const first = state.extent(0) ? std::int64_t(state(state_nodes)) : first_child;
    place(order, out, pts, boxes, dim, int(d), base, j, p, s, left,
          std::int64_t(scan(j)) - std::int64_t(scan(base + s.begin)), first + 2 * a + (left ? 0 : 1));
  }
};

template <class Nodes, class Flags, class Split>
struct CompactNext {
  Nodes nodes;
  Flags flags;
  Flags scan;
  Split next;
  std::int64_t first_child;
  Flags split_index = {}; // where the compacted nodes split next (bucket trees): their index in `next`, else -1
  Flags total = {};       // where given, how many of the `children` nodes split next (its first entry; LevelCounts below)
  std::int64_t children = 0;
  int depth = 0; // the children's
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    if (c == children - 1 && total.extent(0)) {
      total(0) = scan(c) + flags(c);
      if (total.extent(0) >= state_entries) { // LevelCounts; none put aside (CompactByTeam does that)
        using Index = typename Flags::non_const_value_type;
        total(state_nodes) = Index(first_child + children);
        total(state_depth) = Index(depth);
      }
    }
    if (split_index.extent(0)) split_index(first_child + c) = flags(c) ? scan(c) : -1;
    if (!flags(c)) return;
    auto const node = nodes(first_child + c);
    using Index = decltype(node.begin);
    next(scan(c)) = Splitting<Index>{Index(first_child + c), node.begin, node.end, Index(0)};
  }
};

/// A node put aside for the team finish (FinishSmall): its record, its
/// range and its depth.
template <class Index>
struct Small {
  Index node;
  Index begin;
  Index end;
  Index depth;
};

/// The compaction of a level of few children by one team: each thread sums
/// the flags of a contiguous slice of the children, the team scans the
/// slices' sums, and each thread compacts its slice (CompactNext's work,
/// with the scan of the flags and its total) in one launch where a vendor
/// scan and CompactNext take three. Integer sums: the same on every backend
/// and team size.
/// The level's counts come from `state` (LevelCounts: its children are the
/// first 2 state(state_splitting) entries of `flags`, numbered from
/// state(state_nodes)), and the next level's go back there, so the host
/// need not know them to launch it.
/// Where `small_limit` is positive, a child that splits next and holds at
/// most that many points goes to `small` (after the state(state_small)
/// there already) for the team finish instead of to `next`. The two counts
/// are scanned as one 64-bit sum, one in each half.
template <class Nodes, class Flags, class Split, class Member, class SmallList = Kokkos::View<Small<typename Flags::non_const_value_type>*, typename Flags::memory_space>>
struct CompactByTeam {
  Nodes nodes;
  Flags flags;
  Split next;
  Flags split_index;
  Flags state;
  SmallList small = {};
  std::int64_t small_limit = 0;
  int depth = 0; // the children's
  KOKKOS_FUNCTION bool put_aside(std::int64_t v) const {
    if (small_limit <= 0) return false;
    auto const node = nodes(v);
    return std::int64_t(node.end) - std::int64_t(node.begin) <= small_limit;
  }
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    using Index = typename Flags::non_const_value_type;
    constexpr std::int64_t one_small = std::int64_t(1) << 32;
    int const t = team.team_rank(), ts = team.team_size();
    // read before the scan's barriers; the last thread writes after them
    std::int64_t const children = 2 * std::int64_t(state(state_splitting));
    std::int64_t const first_child = std::int64_t(state(state_nodes));
    std::int64_t const small_at = std::int64_t(state(state_small));
    std::int64_t const per = (children + ts - 1) / ts;
    std::int64_t const b = std::int64_t(t) * per < children ? std::int64_t(t) * per : children;
    std::int64_t const e = b + per < children ? b + per : children;
    std::int64_t sum = 0;
    for (std::int64_t c = b; c < e; ++c)
      if (flags(c)) sum += put_aside(first_child + c) ? one_small : 1;
    std::int64_t const at = team.team_scan(sum);
    std::int64_t at_next = at & (one_small - 1), at_small = at >> 32;
    for (std::int64_t c = b; c < e; ++c) {
      bool const splits = flags(c) != 0;
      bool const aside = splits && put_aside(first_child + c);
      split_index(first_child + c) = splits && !aside ? Index(at_next) : Index(-1);
      if (!splits) continue;
      auto const node = nodes(first_child + c);
      if (aside) small(small_at + at_small++) = Small<Index>{Index(first_child + c), node.begin, node.end, Index(depth)};
      else next(at_next++) = Splitting<Index>{Index(first_child + c), node.begin, node.end, Index(0)};
    }
    if (t == ts - 1) { // the last slice ends at `children`
      state(state_splitting) = Index(at_next);
      state(state_nodes) = Index(first_child + children);
      state(state_small) = Index(small_at + at_small);
      if (children > 0) state(state_depth) = Index(depth);
    }
  }
};

/// Children a level may have for CompactByTeam to compact them: a team of
/// 512 threads walks slices of at most 128 entries.
inline constexpr std::int64_t team_compact_limit = std::int64_t(1) << 16;

/// Threads of the builder's one-team kernels: one on hosts (each team walks
/// its work alone), on GPUs `most` or the largest power of two a block may
/// have for this functor in this build (Kokkos 3's team scan needs a power
/// of two).
template <class Exec, class Functor>
int team_size_for(Exec const& exec, Functor const& f, int most = 512) {
  if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
    (void)exec;
    (void)f;
    (void)most;
    return 1;
  } else {
    int const cap = Kokkos::TeamPolicy<Exec>(exec, 1, 1).team_size_max(f, Kokkos::ParallelForTag{});
    int size = 1;
    while (size * 2 <= cap && size * 2 <= most) size *= 2;
    return size;
  }
}

/// Nodes of at most this many points are finished by one team each
/// (FinishSmall), in points of D <= finish_max_dim dimensions: there a
/// level of the breadth-first loop costs launches and a wait for the
/// device, and a team's barriers far less. The team keeps the node's lists
/// in its scratch (shared memory on GPUs), at most finish_scratch_budget
/// bytes, which bounds the nodes it takes in D dimensions
/// (finish_points). Higher dimensions keep the loop: their levels are
/// bound by the work, and the finish's copies of the boxes would grow with
/// D.
inline constexpr std::int64_t finish_limit = 1024;
inline constexpr int finish_max_dim = 8;
/// The team scratch of one finishing team, the same on every backend (so
/// are the trees' numbering): under the 48 KiB a GPU block may have
/// without asking for more.
inline constexpr std::int64_t finish_scratch_budget = std::int64_t(40) << 10;

/// A splitting node inside the team finish: its local number, its range of
/// the team's positions, its left part's size and split dimension.
struct LocalSplit {
  std::uint16_t node;
  std::uint16_t begin;
  std::uint16_t end;
  std::uint16_t left;
  std::int16_t dim;
  std::uint16_t unused;
};

/// Bytes of team scratch for nodes of at most `m` points in `dim`
/// dimensions, buckets of `bucket` points: per position its point's index,
/// its entries in both buffers of the D lists and in their scan (one more
/// at the end), its point's side, its owner and holder, two local nodes'
/// split indices; the level lists, twice; each piece rounded to 16 bytes.
template <class Index>
KOKKOS_INLINE_FUNCTION std::int64_t finish_scratch_bytes(std::int64_t m, int dim, std::int64_t bucket) {
  auto const round = [](std::int64_t b) { return (b + 15) / 16 * 16; };
  std::int64_t const lists = m / (bucket + 1) + 1;
  return round(m * std::int64_t(sizeof(Index))) + 2 * round(dim * m * 2) + round((dim * m + 1) * 2) + round(m) +
         2 * round(m * 2) + round(2 * m * 2) + 2 * round(lists * std::int64_t(sizeof(LocalSplit)));
}

/// The finish's limit for a build in `dim` dimensions with buckets of
/// `bucket` points: the largest node (at most finish_limit points) whose
/// lists fit the team's scratch; 0 where the finish is off (no node it
/// could take splits).
template <class Index>
std::int64_t finish_points(int dim, std::int64_t bucket) {
  if (dim > finish_max_dim) return 0;
  std::int64_t m = finish_limit;
  while (m > bucket && finish_scratch_bytes<Index>(m, dim, bucket) > finish_scratch_budget) m -= 16;
  return m > bucket ? m : 0;
}

/// Bytes the team finish holds in memory for a build of N points (0 where
/// it is off): two rows of nodes and boxes per position, and per put-aside
/// node its record, count, depth and first row.
template <class T, class Index>
std::int64_t finish_bytes(std::int64_t n, std::int64_t dim, std::int64_t bucket) {
  if (finish_points<Index>(int(dim), bucket) == 0 || n <= bucket) return 0;
  std::int64_t const smalls = n / (bucket + 1) + 1;
  return 2 * n * std::int64_t(sizeof(BucketNode<T, Index>) + 2 * dim * sizeof(T)) +
         smalls * std::int64_t(sizeof(Small<Index>) + 3 * sizeof(Index));
}

/// The team finish: one team builds the whole subtree below a put-aside
/// node (small(t), range [b, e) of m points), level by level as the loop
/// does, with team barriers in place of launches and of the host's wait
/// for each level's count. The team copies the node's D lists into its
/// scratch as local numbers (k: the point at position b + k of dimension
/// 0's list; `slot` maps a point to its k), and keeps there all the loop's
/// per-position arrays (sides, owners, holders, flags by their scan) and
/// its level lists: its steps read shared memory where the loop's read
/// memory. Its nodes are numbered locally (the put-aside node 0, the others
/// breadth first from 1) and written to rows 2b + local of `rows` and
/// `row_boxes` (a subtree has at most 2m - 1 nodes), so teams never share
/// an entry. The splits are the loop's (the rules of choose_split, on the
/// same levels), so the tree is the one the loop alone would build,
/// numbered otherwise. results(2t), results(2t + 1): the subtree's nodes
/// below its root, and its deepest level.
template <class PV, class Order, class Boxes, class Nodes, class SmallList, class Member>
struct FinishSmall {
  using T = typename PV::non_const_value_type;
  using Index = typename Order::non_const_value_type;
  PV pts;
  Order order; // the lists, as the loop left them; dimension 0's gets the subtrees' order
  Order slot;  // per point
  Boxes boxes; // the tree's: the put-aside nodes' boxes
  Nodes rows;
  Boxes row_boxes;
  SmallList small;
  Order results;
  std::int64_t n;
  int dim;
  std::int64_t bucket;
  std::int64_t cap; // finish_points: the scratch is carved for nodes of this many points

  KOKKOS_FUNCTION void operator()(Member const& team) const {
    std::int64_t const t = team.league_rank();
    int const rank = team.team_rank(), ts = team.team_size();
    auto const sm = small(t);
    std::int64_t const b = std::int64_t(sm.begin), m = std::int64_t(sm.end) - b, row0 = 2 * b;
    // the scratch, carved as finish_scratch_bytes counts it
    char* at = static_cast<char*>(team.team_shmem().get_shmem(finish_scratch_bytes<Index>(cap, dim, bucket)));
    auto const take = [&](std::int64_t bytes) {
      char* const r = at;
      at += (bytes + 15) / 16 * 16;
      return r;
    };
    std::int64_t const lists = cap / (bucket + 1) + 1;
    Index* const gid = reinterpret_cast<Index*>(take(cap * std::int64_t(sizeof(Index))));
    std::uint16_t* const list_a = reinterpret_cast<std::uint16_t*>(take(dim * cap * 2));
    std::uint16_t* const list_b = reinterpret_cast<std::uint16_t*>(take(dim * cap * 2));
    std::uint16_t* const scan = reinterpret_cast<std::uint16_t*>(take((dim * cap + 1) * 2));
    std::uint8_t* const side = reinterpret_cast<std::uint8_t*>(take(cap));
    std::int16_t* const owner = reinterpret_cast<std::int16_t*>(take(cap * 2));
    std::uint16_t* const holder = reinterpret_cast<std::uint16_t*>(take(cap * 2));
    std::int16_t* const split_index = reinterpret_cast<std::int16_t*>(take(2 * cap * 2));
    LocalSplit* const level_a = reinterpret_cast<LocalSplit*>(take(lists * std::int64_t(sizeof(LocalSplit))));
    LocalSplit* const level_b = reinterpret_cast<LocalSplit*>(take(lists * std::int64_t(sizeof(LocalSplit))));

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](std::int64_t k) {
      Index const g = order(b + k);
      gid[k] = g;
      slot(g) = Index(k);
      list_a[k] = std::uint16_t(k);
      holder[k] = 0;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 2 * dim), [&](int c) { row_boxes(row0, c) = boxes(sm.node, c); });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (dim - 1) * m), [&](std::int64_t j) {
      std::int64_t const d = 1 + j / m, i = j - (d - 1) * m;
      list_a[d * m + i] = std::uint16_t(slot(order(d * n + b + i)));
    });
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      level_a[0] = LocalSplit{0, 0, std::uint16_t(m), 0, -1, 0};
      split_index[0] = 0;
      rows(row0) = BucketNode<T, Index>{Index(-1), Index(-1), sm.begin, sm.end, -1, T(0)};
    });
    team.team_barrier();
    std::int64_t count = 1, local_nodes = 1;
    int sub = 0;
    bool flip = false;
    std::int64_t const entries = std::int64_t(dim) * m;
    std::int64_t const per = (entries + ts - 1) / ts;
    std::int64_t const lo = rank * per < entries ? rank * per : entries;
    std::int64_t const hi = lo + per < entries ? lo + per : entries;
    while (count > 0) {
      LocalSplit* const cur = flip ? level_b : level_a;
      LocalSplit* const nxt = flip ? level_a : level_b;
      std::uint16_t const* const src = flip ? list_b : list_a;
      std::uint16_t* const dst = flip ? list_a : list_b;
      std::int64_t const first_child = local_nodes;
      int const level = int(sm.depth) + sub;
      // the splits (choose_split, on the local lists)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, count), [&](std::int64_t a) {
        LocalSplit s = cur[a];
        std::int64_t const row = row0 + s.node;
        auto const c = choose_split(row_boxes, row, std::int64_t(s.begin), std::int64_t(s.end), dim, level,
                                    [&](std::int64_t p, int d) { return pts(gid[src[d * m + p]], d); });
        int const best = c.dim;
        std::int64_t const left = c.left;
        T const value = c.value;
        s.left = std::uint16_t(left);
        s.dim = std::int16_t(best);
        cur[a] = s;
        Index const lc = Index(first_child + 2 * a);
        rows(row) = BucketNode<T, Index>{lc, Index(lc + 1), Index(b + s.begin), Index(b + s.end), best, value};
        rows(row0 + lc) = BucketNode<T, Index>{Index(-1), Index(-1), Index(b + s.begin), Index(b + s.begin + left), -1, T(0)};
        rows(row0 + lc + 1) = BucketNode<T, Index>{Index(-1), Index(-1), Index(b + s.begin + left), Index(b + s.end), -1, T(0)};
      });
      team.team_barrier();
      // owners and sides (AssignOwners)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](std::int64_t i) {
        std::int16_t const a = split_index[holder[i]];
        owner[i] = a;
        if (a < 0) return;
        LocalSplit const s = cur[a];
        bool const right = i - std::int64_t(s.begin) >= std::int64_t(s.left);
        holder[i] = std::uint16_t(first_child + 2 * std::int64_t(a) + (right ? 1 : 0));
        side[src[std::int64_t(s.dim) * m + i]] = right ? 1 : 0;
      });
      team.team_barrier();
      // the left flags' exclusive scan over the D lists one after another
      // (LeftFlags and the scan; a flag is its scan's step), each thread a
      // contiguous slice
      int sum = 0;
      for (std::int64_t j = lo; j < hi; ++j) {
        std::int64_t const d = j / m, i = j - d * m;
        sum += owner[i] >= 0 && side[src[j]] == 0 ? 1 : 0;
      }
      int run = team.team_scan(sum);
      for (std::int64_t j = lo; j < hi; ++j) {
        std::int64_t const d = j / m, i = j - d * m;
        scan[j] = std::uint16_t(run);
        run += owner[i] >= 0 && side[src[j]] == 0 ? 1 : 0;
      }
      if (rank == ts - 1) scan[entries] = std::uint16_t(run); // the last slice ends at `entries`
      team.team_barrier();
      // the partition (Scatter), the children's boxes off their ends
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, entries), [&](std::int64_t j) {
        std::int64_t const d = j / m, i = j - d * m, base = d * m;
        std::int16_t const a = owner[i];
        if (a < 0) {
          dst[j] = src[j];
          return;
        }
        LocalSplit const s = cur[a];
        bool const left = scan[j + 1] != scan[j];
        std::int64_t const lefts_before = std::int64_t(scan[j]) - std::int64_t(scan[base + s.begin]);
        Placement const at = placement(s.begin, s.left, s.end, i, lefts_before, left);
        dst[base + at.to] = src[j];
        std::int64_t const child_row = row0 + first_child + 2 * std::int64_t(a) + (left ? 0 : 1);
        int const dd = int(d);
        if (at.first) row_boxes(child_row, dd) = pts(gid[src[j]], dd);
        if (at.last) row_boxes(child_row, dim + dd) = pts(gid[src[j]], dd);
      });
      team.team_barrier();
      // the next level's list (CompactByTeam)
      std::int64_t const children = 2 * count;
      std::int64_t const cper = (children + ts - 1) / ts;
      std::int64_t const cb = rank * cper < children ? rank * cper : children;
      std::int64_t const ce = cb + cper < children ? cb + cper : children;
      auto const range = [&](std::int64_t c) {
        LocalSplit const s = cur[c / 2];
        return c % 2 == 0 ? Kokkos::pair<std::int64_t, std::int64_t>(s.begin, s.begin + s.left)
                          : Kokkos::pair<std::int64_t, std::int64_t>(s.begin + s.left, s.end);
      };
      int csum = 0;
      for (std::int64_t c = cb; c < ce; ++c) {
        auto const r = range(c);
        csum += r.second - r.first > bucket ? 1 : 0;
      }
      int cat = team.team_scan(csum);
      for (std::int64_t c = cb; c < ce; ++c) {
        auto const r = range(c);
        bool const sp = r.second - r.first > bucket;
        split_index[first_child + c] = sp ? std::int16_t(cat) : std::int16_t(-1);
        if (sp) nxt[cat++] = LocalSplit{std::uint16_t(first_child + c), std::uint16_t(r.first), std::uint16_t(r.second), 0, -1, 0};
      }
      int next_count = cat; // the last slice ends at `children`
      team.team_broadcast(next_count, ts - 1);
      team.team_barrier();
      local_nodes += children;
      count = next_count;
      ++sub;
      flip = !flip;
    }
    // dimension 0's list, the order of the subtree's points, back to
    // `order` (the gather reads it): the last level wrote list_b where
    // the number of levels is odd
    std::uint16_t const* const final_list = flip ? list_b : list_a;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](std::int64_t i) { order(b + i) = gid[final_list[i]]; });
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      results(2 * t) = Index(local_nodes - 1);
      results(2 * t + 1) = Index(int(sm.depth) + sub);
    });
  }
};

/// One team over the finished subtrees: the first row of each one's nodes
/// (rows from `first_row` on, in the order of `small`), the rows in all
/// (total(0)) and the deepest level (total(1)).
template <class Flags, class Member>
struct FinishOffsets {
  Flags results;
  Flags first_rows;
  Flags total;
  std::int64_t smalls;
  std::int64_t first_row;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    using Index = typename Flags::non_const_value_type;
    int const t = team.team_rank(), ts = team.team_size();
    std::int64_t const per = (smalls + ts - 1) / ts;
    std::int64_t const b = std::int64_t(t) * per < smalls ? std::int64_t(t) * per : smalls;
    std::int64_t const e = b + per < smalls ? b + per : smalls;
    std::int64_t sum = 0;
    Index deepest = 0;
    for (std::int64_t c = b; c < e; ++c) {
      sum += std::int64_t(results(2 * c));
      deepest = results(2 * c + 1) > deepest ? results(2 * c + 1) : deepest;
    }
    std::int64_t at = first_row + team.team_scan(sum);
    for (std::int64_t c = b; c < e; ++c) {
      first_rows(c) = Index(at);
      at += std::int64_t(results(2 * c));
    }
    team.team_reduce(Kokkos::Max<Index>(deepest));
    if (t == ts - 1) {
      total(0) = Index(at);
      total(1) = deepest;
    }
  }
};

/// The finished subtrees' rows into the tree, one team each: local node j
/// > 0 of subtree t to row first_rows(t) + j - 1, its children's links
/// likewise; local node 0's record (its split and links) to the put-aside
/// node's row.
template <class Nodes, class Boxes, class Flags, class SmallList, class Member>
struct FinishCopy {
  Nodes nodes;
  Boxes boxes;
  Nodes rows;
  Boxes row_boxes;
  SmallList small;
  Flags results;
  Flags first_rows;
  int dim;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    using Index = typename Flags::non_const_value_type;
    std::int64_t const t = team.league_rank();
    auto const sm = small(t);
    std::int64_t const row0 = 2 * std::int64_t(sm.begin), first = std::int64_t(first_rows(t));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, std::int64_t(results(2 * t)) + 1), [&](std::int64_t j) {
      auto node = rows(row0 + j);
      if (!node.is_leaf()) {
        node.left = Index(first + node.left - 1);
        node.right = Index(first + node.right - 1);
      }
      if (j == 0) {
        nodes(sm.node) = node;
        return;
      }
      nodes(first + j - 1) = node;
      for (int c = 0; c < 2 * dim; ++c) boxes(first + j - 1, c) = row_boxes(row0 + j, c);
    });
  }
};

/// The points in tree order (dimension 0's list) and their input indices.
template <class PV, class Order, class Out, class Indices>
struct GatherPoints {
  PV pts;
  Order order;
  Out out;
  Indices indices;
  int dim;
  KOKKOS_FUNCTION void operator()(std::int64_t p) const {
    auto const i = order(p);
    indices(p) = i;
    for (int d = 0; d < dim; ++d) out(p, d) = pts(i, d);
  }
};

/// Bytes the build holds at its peak for N points in D dimensions: the
/// points and their copy in tree order, D sorted lists twice (double
/// buffered), their keys during the presort and the sort's own buffers,
/// the partition flags and their scan. (On GPUs a presort of at most 64
/// lists takes more, 24 bytes per entry, only where free memory holds twice
/// that: backends/cuda/primitives.hpp. What the build needs stays this.)
template <class T, class Index>
std::int64_t peak_bytes(std::int64_t n, std::int64_t dim) {
  std::int64_t const dn = n * dim;
  std::int64_t const sort_phase = dn * std::int64_t(2 * sizeof(Key<T>) + 2 * sizeof(Index));
  std::int64_t const level_phase = dn * std::int64_t(2 * sizeof(Index) + 2 * sizeof(Index)) +
                                   4 * n * std::int64_t(sizeof(Index)); // owners, holders, split indices
  return 2 * dn * std::int64_t(sizeof(T)) + (sort_phase > level_phase ? sort_phase : level_phase) +
         4 * n * std::int64_t(sizeof(Index) + 2 * dim * sizeof(T));
}

/// Nodes the builder allocates first: at most 2N - 1; trees of midpoint
/// splits have about 2.9 N / B, so one doubling at most, as a rule.
inline std::int64_t first_node_capacity(std::int64_t n, std::int64_t bucket) {
  return n < 512 ? 2 * n : std::min<std::int64_t>(2 * n - 1, 3 * (n / bucket) + 1024);
}

/// Splitting nodes a level has, as a rule (the level lists' first size).
inline std::int64_t level_guess(std::int64_t n, std::int64_t bucket) { return std::min<std::int64_t>(n, n / bucket + 1024); }

/// Builds whose scratch is at most this take it from one block: below it an
/// allocation's fixed cost (a wait for the device on GPUs) outweighs the
/// work it serves; above it the block's zeroing would cost more than the
/// allocations it saves.
inline constexpr std::int64_t arena_scratch_limit = std::int64_t(64) << 20;

/// Bytes of the block that serves a build's scratch (backend::Arena), 0
/// where the build allocates its scratch piece by piece (more than
/// arena_scratch_limit). Counted as an arena serves them (in steps of 256
/// bytes), phase by phase: the presort (its keys and segment offsets, and
/// the sort's buffers: on GPUs CUB's composite keys, positions, alternate
/// buffers and storage, at most 48 bytes an entry and 2 MiB; on hosts the
/// alternate keys and values) and the levels (the lists' second buffer, the
/// left flags and their scan, the owners, holders and sides per position,
/// the split indices per node, the level lists and counts, and the scan's
/// storage). One block of the larger serves both phases in turn.
template <class T, class Index, class MemorySpace>
std::int64_t scratch_block_bytes(std::int64_t n, std::int64_t dim, std::int64_t bucket) {
  if (n <= bucket) return 0; // no levels, and a presort too small to matter
  auto const round = [](std::int64_t b) { return (b + 255) / 256 * 256; };
  std::int64_t const dn = n * dim;
  std::int64_t const capacity = first_node_capacity(n, bucket), guess = level_guess(n, bucket);
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;
  std::int64_t const sort_buffers =
      host ? round(dn * std::int64_t(sizeof(Key<T>))) + round(dn * std::int64_t(sizeof(Index))) + (64 << 10)
           : round(dn * 48) + (2 << 20);
  std::int64_t const sort_phase = round(dn * std::int64_t(sizeof(Key<T>))) + round((dim + 1) * 8) + sort_buffers;
  std::int64_t const level_phase = 3 * round(dn * std::int64_t(sizeof(Index))) + 2 * round(n * std::int64_t(sizeof(Index))) +
                                   round(n) + round(capacity * std::int64_t(sizeof(Index))) +
                                   2 * round(guess * std::int64_t(sizeof(Splitting<Index>))) +
                                   2 * round(2 * guess * std::int64_t(sizeof(Index))) + round(dn / 8) + (256 << 10);
  // the team finish's (finish_bytes), in 5 Views
  std::int64_t const finish = finish_bytes<T, Index>(n, dim, bucket);
  std::int64_t const block = std::max(sort_phase, level_phase + (finish > 0 ? finish + 5 * 256 : 0));
  return block <= arena_scratch_limit ? block : 0;
}

/// What build() holds at its peak, estimated: peak_bytes and the team
/// finish's scratch, and the scratch block on top where there is one (it
/// holds what those count as the phases' scratch, and on GPUs the presort's
/// larger buffers).
template <class T, class Index, class MemorySpace>
std::int64_t build_peak_bytes(std::int64_t n, std::int64_t dim, std::int64_t bucket) {
  return peak_bytes<T, Index>(n, dim) + finish_bytes<T, Index>(n, dim, bucket) +
         scratch_block_bytes<T, Index, MemorySpace>(n, dim, bucket);
}

/// The builder: `pts` is N x D, finite (checked by the caller).
template <class Index, class Exec, class T>
BucketTree<typename Exec::memory_space, T, Index> build(Exec const& exec,
                                                          Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> pts,
                                                          std::int64_t bucket) {
  using MS = typename Exec::memory_space;
  using Tree = BucketTree<MS, T, Index>;
  using NodeT = BucketNode<T, Index>;
  kdforge::detail::Region region("kdforge::build_bucket_tree");
  std::int64_t const n = std::int64_t(pts.extent(0));
  int const dim = int(pts.extent(1));
  std::int64_t const peak = build_peak_bytes<T, Index, MS>(n, dim, bucket);
  // the tree's own Views (the points and indices: every entry written by
  // the gather) are never from the scratch arena below
  auto tree_points = backend::allocate<Kokkos::View<T**, Kokkos::LayoutRight, MS>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::points"), n, dim);
  auto indices = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::indices"), n);
  if (n == 0)
    return Tree(tree_points, indices, backend::allocate<Kokkos::View<NodeT*, MS>>("kdforge::bucket_tree::nodes", 0),
                backend::allocate<Kokkos::View<T**, Kokkos::LayoutRight, MS>>("kdforge::bucket_tree::boxes", 0, 2 * dim), 0, bucket,
                peak);
  std::int64_t const dn = n * std::int64_t(dim);

  // nodes and boxes grow level by level
  std::int64_t capacity = first_node_capacity(n, bucket);
  auto nodes = backend::allocate<Kokkos::View<NodeT*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::nodes"), capacity);
  auto boxes = backend::allocate<Kokkos::View<T**, Kokkos::LayoutRight, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::boxes"),
                                                  capacity, 2 * dim);
  auto order = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::order"), dn);

  // The scratch of a small build comes from one block, used by the presort
  // and then again by the levels: some twenty allocations, each a wait for
  // the device on GPUs, cost more than such a build's kernels.
  std::int64_t const guess = level_guess(n, bucket);
  backend::Arena<MS> arena;
  if (std::int64_t const block = scratch_block_bytes<T, Index, MS>(n, dim, bucket)) arena.reserve(std::size_t(block));
  // no scopes over an arena without a block: they would grow one
  bool const from_block = arena.bytes() > 0;
  std::optional<backend::ArenaScope<MS>> scope;

  // Algorithm 1: every dimension sorted once (one segmented sort)
  {
    kdforge::detail::Region r("kdforge::build_bucket_tree::presort");
    if (from_block) scope.emplace(arena);
    auto keys = backend::allocate<Kokkos::View<Key<T>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::keys"), dn);
    auto offsets = backend::allocate<Kokkos::View<std::int64_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::offsets"),
                                            dim + 1);
    Kokkos::parallel_for("kdforge::build_bucket_tree::keys", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         PresortKeys<decltype(pts), decltype(keys), decltype(order)>{pts, keys, order, n});
    Kokkos::parallel_for("kdforge::build_bucket_tree::offsets", Kokkos::RangePolicy<Exec>(exec, 0, dim + 1),
                         SegmentOffsets<decltype(offsets)>{offsets, n});
    backend::segmented_sort_by_key(exec, keys, order, offsets);
    // the sort's scratch dies here; the levels' reuse its block (the sort
    // is ordered before them on `exec`, and an arena's memory is never
    // given back to the memory space meanwhile)
  }
  scope.reset();
  if (from_block) scope.emplace(arena);

  Kokkos::deep_copy(exec, Kokkos::subview(nodes, 0), NodeT{Index(-1), Index(-1), Index(0), Index(n), -1, T(0)});
  Kokkos::parallel_for("kdforge::build_bucket_tree::root_box", Kokkos::RangePolicy<Exec>(exec, 0, dim),
                       RootBox<decltype(pts), decltype(order), decltype(boxes)>{pts, order, boxes, n, dim});

  using Split = Kokkos::View<Splitting<Index>*, MS>;
  using Flags = Kokkos::View<Index*, MS>;
  // a level's scratch is kept across levels and grows only when a level
  // needs more (backend::reserve)
  Split split, next;
  Flags next_flags, next_scan;
  Kokkos::View<char*, MS> scan_space; // the vendor scans' temporary storage
  backend::reserve(split, guess, "kdforge::bucket_tree::splitting");
  backend::reserve(next, guess, "kdforge::bucket_tree::splitting");
  backend::reserve(next_flags, 2 * guess, "kdforge::bucket_tree::next_flags");
  backend::reserve(next_scan, 2 * guess, "kdforge::bucket_tree::next_scan");
  // Nodes of at most small_limit points are put aside as the loop meets
  // them, and each is finished by one team after it (FinishSmall).
  std::int64_t const small_limit = finish_points<Index>(dim, bucket);
  using SmallList = Kokkos::View<Small<Index>*, MS>;
  SmallList small;
  std::int64_t small_count = 0;
  if (small_limit > 0 && n > bucket) // put-aside nodes hold more than B points each, and none share one
    small = backend::allocate<SmallList>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::small"),
                                         n / (bucket + 1) + 1);
  std::int64_t splitting = n > bucket ? 1 : 0;
  if (splitting && n <= small_limit) {
    Kokkos::deep_copy(exec, Kokkos::subview(small, 0), Small<Index>{Index(0), Index(0), Index(n), Index(0)});
    small_count = 1;
    splitting = 0;
  }
  if (splitting) Kokkos::deep_copy(exec, Kokkos::subview(split, 0), Splitting<Index>{Index(0), Index(0), Index(n), Index(0)});
  std::int64_t node_count = 1;
  int level = 0;
  Flags order_out, flags, scan, owners, holder, split_index;
  Flags state; // the loop's counts (LevelCounts); after it, the finish's
  int compact_team = 0;
  typename Flags::HostMirror state_host;
  Kokkos::View<std::uint8_t*, MS> side;
  if (n > bucket) {
    owners = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::owners"), n);
    holder = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::holder"), n);
    Kokkos::deep_copy(exec, holder, Index(0)); // all in the root
    split_index = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::split_index"), capacity);
    Kokkos::deep_copy(exec, Kokkos::subview(split_index, 0), Index(0));
    order_out = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::order_out"), dn);
    flags = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::flags"), dn);
    scan = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::scan"), dn);
    side = backend::allocate<Kokkos::View<std::uint8_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::side"), n);
    state = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::state"), state_entries);
    state_host = Kokkos::create_mirror_view(state);
    state_host(state_splitting) = Index(splitting);
    state_host(state_nodes) = Index(node_count);
    state_host(state_small) = Index(small_count);
    state_host(state_depth) = Index(0);
    Kokkos::deep_copy(exec, state, state_host);
  }
  // The first levels run without a wait. A node of more than `keeps`
  // points splits on its level (it is neither a leaf nor put aside), and
  // after L levels some node holds at least N / 2^L points, so the loop
  // runs every level L with N / 2^L > keeps. Those levels are launched
  // before the host knows their counts: their kernels read the counts
  // from `state`, their launches sized by what a level L may have (2^L
  // splitting nodes, 2^(L+2) - 1 nodes after it, within `capacity` and one
  // team's compaction; 2^L <= N / keeps <= N / B, within the lists' first
  // reservations too, so no blind level allocates). The host reads the
  // counts once after the last of them, and after every level from there on.
  int blind = 0;
  if (splitting) {
    std::int64_t const keeps = small_limit > 0 ? small_limit : bucket;
    while (n > (keeps << blind) && (std::int64_t(4) << blind) - 1 <= capacity &&
           (std::int64_t(2) << blind) <= team_compact_limit) // (at most 16 levels)
      ++blind;
  }
  while (splitting > 0) { // Algorithm 2, one level
    kdforge::detail::Region r("kdforge::build_bucket_tree::level");
    bool const blind_level = level < blind;
    // nodes that split on this level, and the first child's number: known,
    // or on a blind level bounds (and read by the kernels from `state`)
    std::int64_t const splits = blind_level ? std::int64_t(1) << level : splitting;
    std::int64_t const first_child = blind_level ? (std::int64_t(2) << level) - 1 : node_count;
    if (first_child + 2 * splits > capacity) { // never on a blind level (`blind` keeps within capacity)
      while (first_child + 2 * splits > capacity) capacity *= 2;
      capacity = capacity < 2 * n - 1 ? capacity : 2 * n - 1;
      backend::resize_keeping(split_index, std::size_t(node_count), capacity);
      backend::ArenaPause<MS> const pause; // the tree's own
      backend::resize_keeping(nodes, std::size_t(node_count), capacity);
      backend::resize_keeping(boxes, std::size_t(node_count), capacity, 2 * dim);
    }
    std::int64_t const children = 2 * splits;
    backend::reserve(next_flags, children, "kdforge::bucket_tree::next_flags");
    backend::reserve(next_scan, children, "kdforge::bucket_tree::next_scan");
    Kokkos::parallel_for("kdforge::build_bucket_tree::split", Kokkos::RangePolicy<Exec>(exec, 0, splits),
                         ChooseSplit<decltype(pts), Flags, decltype(boxes), decltype(nodes), Split>{
                             pts, order, boxes, nodes, split, n, dim, level, first_child, next_flags, bucket, state});
    Kokkos::parallel_for("kdforge::build_bucket_tree::owners", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         AssignOwners<Flags, Flags, Split, decltype(nodes), decltype(side)>{
                             owners, holder, split_index, split, nodes, order, side, n, first_child, state});
    Kokkos::parallel_for("kdforge::build_bucket_tree::flags", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         LeftFlags<Flags, decltype(side), Flags>{order, owners, side, flags, n});
    backend::exclusive_scan_async(exec, flags, scan, scan_space); // its total is not needed
    Kokkos::parallel_for("kdforge::build_bucket_tree::scatter", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         Scatter<Flags, Split, Flags, decltype(pts), decltype(boxes)>{
                             order, order_out, split, flags, scan, owners, n, pts, boxes, dim, first_child, state});
    std::swap(order, order_out);
    // The compaction counts the nodes that split next into `state`, and
    // the host reads it: one wait for the device a level (none on a blind
    // one), after the level's last kernel, where a scan returning its total
    // waits and copies more. A node that splits holds more than B points,
    // so at most N / (B + 1) do: `next` holds them before anyone knows how
    // many there are.
    backend::reserve(next, std::min<std::int64_t>(children, n / (bucket + 1)), "kdforge::bucket_tree::splitting");
    if (children <= team_compact_limit) {
      using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
      CompactByTeam<decltype(nodes), Flags, Split, Member> const f{
          nodes, next_flags, next, split_index, state, small, small_limit, level + 1};
      if (compact_team == 0) compact_team = team_size_for(exec, f);
      Kokkos::parallel_for("kdforge::build_bucket_tree::compact_team", Kokkos::TeamPolicy<Exec>(exec, 1, compact_team), f);
    } else { // a level the host knows (`blind` stays below the limit)
      backend::exclusive_scan_async(exec, Kokkos::subview(next_flags, std::make_pair(std::int64_t(0), children)),
                                    Kokkos::subview(next_scan, std::make_pair(std::int64_t(0), children)), scan_space);
      Kokkos::parallel_for("kdforge::build_bucket_tree::compact", Kokkos::RangePolicy<Exec>(exec, 0, children),
                           CompactNext<decltype(nodes), Flags, Split>{nodes, next_flags, next_scan, next, first_child,
                                                                      split_index, state, children, level + 1});
    }
    std::swap(split, next);
    ++level;
    if (level < blind) continue; // launched before this level's counts are known
    Kokkos::deep_copy(exec, state_host, state);
    exec.fence();
    splitting = std::int64_t(state_host(state_splitting));
    node_count = std::int64_t(state_host(state_nodes));
    small_count = std::int64_t(state_host(state_small));
    level = int(state_host(state_depth));
  }
  if (small_count > 0) { // the team finish
    kdforge::detail::Region r("kdforge::build_bucket_tree::finish");
    using Nodes = Kokkos::View<NodeT*, MS>;
    using Boxes = Kokkos::View<T**, Kokkos::LayoutRight, MS>;
    auto const alloc = [](std::string const& label) { return Kokkos::view_alloc(Kokkos::WithoutInitializing, label); };
    auto rows = backend::allocate<Nodes>(alloc("kdforge::bucket_tree::finish_rows"), 2 * n);
    auto row_boxes = backend::allocate<Boxes>(alloc("kdforge::bucket_tree::finish_boxes"), 2 * n, 2 * dim);
    auto results = backend::allocate<Flags>(alloc("kdforge::bucket_tree::finish_results"), 2 * small_count);
    auto first_rows = backend::allocate<Flags>(alloc("kdforge::bucket_tree::finish_first_rows"), small_count);
    using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
    // `holder` (free now) maps points to their local numbers
    FinishSmall<decltype(pts), Flags, Boxes, Nodes, SmallList, Member> const finish{
        pts, order, holder, boxes, rows, row_boxes, small, results, n, dim, bucket, small_limit};
    Kokkos::parallel_for("kdforge::build_bucket_tree::finish",
                         Kokkos::TeamPolicy<Exec>(exec, small_count, team_size_for(exec, finish))
                             .set_scratch_size(0, Kokkos::PerTeam(finish_scratch_bytes<Index>(small_limit, dim, bucket))),
                         finish);
    FinishOffsets<Flags, Member> const offsets{results, first_rows, state, small_count, node_count};
    Kokkos::parallel_for("kdforge::build_bucket_tree::finish_offsets",
                         Kokkos::TeamPolicy<Exec>(exec, 1, team_size_for(exec, offsets)), offsets);
    Kokkos::deep_copy(exec, state_host, state);
    exec.fence();
    std::int64_t const rows_total = std::int64_t(state_host(0));
    level = std::max(level, int(state_host(1)));
    if (rows_total > capacity) {
      capacity = rows_total;
      backend::ArenaPause<MS> const pause; // the tree's own
      backend::resize_keeping(nodes, std::size_t(node_count), capacity);
      backend::resize_keeping(boxes, std::size_t(node_count), capacity, 2 * dim);
    }
    FinishCopy<Nodes, Boxes, Flags, SmallList, Member> const copy{nodes, boxes, rows, row_boxes, small, results, first_rows, dim};
    Kokkos::parallel_for("kdforge::build_bucket_tree::finish_copy",
                         Kokkos::TeamPolicy<Exec>(exec, small_count, team_size_for(exec, copy, 64)), copy);
    node_count = rows_total;
  }
  Kokkos::parallel_for("kdforge::build_bucket_tree::gather", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       GatherPoints<decltype(pts), decltype(order), decltype(tree_points), decltype(indices)>{
                           pts, order, tree_points, indices, dim});
  scope.reset();
  // The tree keeps its first node_count rows: in place where they fill most
  // of the allocation or what is left is small (no second allocation and
  // copy), else copied to an allocation of their size.
  std::int64_t const row_bytes = std::int64_t(sizeof(NodeT)) + 2 * dim * std::int64_t(sizeof(T));
  if (4 * node_count >= 3 * capacity || (capacity - node_count) * row_bytes <= (std::int64_t(1) << 20)) {
    nodes = Kokkos::subview(nodes, std::make_pair(std::int64_t(0), node_count));
    boxes = Kokkos::subview(boxes, std::make_pair(std::int64_t(0), node_count), Kokkos::ALL);
  } else {
    backend::resize(nodes, node_count);
    backend::resize(boxes, node_count, 2 * dim);
  }
  exec.fence(); // the scratch dies with this scope
  return Tree(tree_points, indices, nodes, boxes, level, bucket, peak);
}

} // namespace kdforge::kernels::bfs
