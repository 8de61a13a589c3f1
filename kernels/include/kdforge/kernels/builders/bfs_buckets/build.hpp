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
//    count is the level's one read by the host; and the scratch of a small
//    build comes from one block (backend::Arena).
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

/// Per splitting node: split dimension (widest side), split value
/// (midpoint) and the left part's size, with the median fallback; the
/// node's record and its children's.
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
  KOKKOS_FUNCTION void operator()(std::int64_t a) const {
    Splitting<Index> s = split(a);
    int best = 0;
    T width = T(-1);
    for (int d = 0; d < dim; ++d) {
      T const w = boxes(s.node, dim + d) - boxes(s.node, d);
      if (w > width) { // the first widest dimension
        width = w;
        best = d;
      }
    }
    Index const count = s.end - s.begin;
    T const lo = boxes(s.node, best), hi = boxes(s.node, dim + best);
    T const mid = T(0.5 * (double(lo) + double(hi)));
    // points with coordinate <= mid: the list is sorted, so a binary search
    Index a_lo = s.begin, a_hi = s.end; // first position with coordinate > mid
    while (a_lo < a_hi) {
      Index const m = a_lo + (a_hi - a_lo) / 2;
      if (pts(order(best * n + m), best) <= mid) a_lo = m + 1;
      else a_hi = m;
    }
    Index left = a_lo - s.begin;
    T value = mid;
    if (level >= midpoint_levels || left == 0 || left == count) { // the median: always splits
      left = count / 2;
      value = pts(order(best * n + s.begin + left - 1), best);
    }
    s.left_count = left;
    split(a) = s;
    auto node = nodes(s.node);
    node.left = Index(first_child + 2 * a);
    node.right = Index(first_child + 2 * a + 1);
    node.split_dim = best;
    node.split_value = value;
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
  KOKKOS_FUNCTION void operator()(std::int64_t p) const {
    using Index = typename Owners::non_const_value_type;
    Index const a = split_index(holder(p));
    owners(p) = a;
    if (a < 0) return;
    auto const s = split(a);
    bool const right = p - std::int64_t(s.begin) >= std::int64_t(s.left_count);
    holder(p) = Index(first_child + 2 * std::int64_t(a) + (right ? 1 : 0));
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
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const d = j / n, p = j - d * n;
    std::int64_t const a = owners(p);
    if (a < 0) {
      out(j) = order(j);
      return;
    }
    auto const s = split(a);
    std::int64_t const base = d * n;
    std::int64_t const lefts_before = std::int64_t(scan(j)) - std::int64_t(scan(base + s.begin));
    std::int64_t const rank = p - std::int64_t(s.begin);
    std::int64_t const to = flags(j) ? std::int64_t(s.begin) + lefts_before
                                     : std::int64_t(s.begin) + std::int64_t(s.left_count) + (rank - lefts_before);
    out(base + to) = order(j);
    if (boxes.extent(0)) {
      std::int64_t const mid = std::int64_t(s.begin) + std::int64_t(s.left_count);
      std::int64_t const child = first_child + 2 * a + (flags(j) ? 0 : 1);
      int const dd = int(d);
      if (to == (flags(j) ? std::int64_t(s.begin) : mid)) boxes(child, dd) = pts(order(j), dd);
      if (to == (flags(j) ? mid : std::int64_t(s.end)) - 1) boxes(child, dim + dd) = pts(order(j), dd);
    }
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
  Flags total = {};       // where given, its one entry gets how many of the `children` nodes split next
  std::int64_t children = 0;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    if (c == children - 1 && total.extent(0)) total(0) = scan(c) + flags(c);
    if (split_index.extent(0)) split_index(first_child + c) = flags(c) ? scan(c) : -1;
    if (!flags(c)) return;
    auto const node = nodes(first_child + c);
    using Index = decltype(node.begin);
    next(scan(c)) = Splitting<Index>{Index(first_child + c), node.begin, node.end, Index(0)};
  }
};

/// The compaction of a level of few children by one team: each thread sums
/// the flags of a contiguous slice of the children, the team scans the
/// slices' sums, and each thread compacts its slice (CompactNext's work,
/// with the scan of the flags and its total) in one launch where a vendor
/// scan and CompactNext take three. Integer sums: the same on every backend
/// and team size.
template <class Nodes, class Flags, class Split, class Member>
struct CompactByTeam {
  Nodes nodes;
  Flags flags;
  Split next;
  std::int64_t first_child;
  Flags split_index;
  Flags total;
  std::int64_t children;
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    using Index = typename Flags::non_const_value_type;
    int const t = team.team_rank(), ts = team.team_size();
    std::int64_t const per = (children + ts - 1) / ts;
    std::int64_t const b = std::int64_t(t) * per < children ? std::int64_t(t) * per : children;
    std::int64_t const e = b + per < children ? b + per : children;
    Index sum = 0;
    for (std::int64_t c = b; c < e; ++c) sum += flags(c);
    Index at = team.team_scan(sum);
    for (std::int64_t c = b; c < e; ++c) {
      bool const splits = flags(c) != 0;
      split_index(first_child + c) = splits ? at : Index(-1);
      if (splits) {
        auto const node = nodes(first_child + c);
        next(at) = Splitting<Index>{Index(first_child + c), node.begin, node.end, Index(0)};
        ++at;
      }
    }
    if (t == ts - 1) total(0) = at; // the last slice ends at `children`
  }
};

/// Children a level may have for CompactByTeam to compact them: a team of
/// 512 threads walks slices of at most 128 entries.
inline constexpr std::int64_t team_compact_limit = std::int64_t(1) << 16;

/// Threads of CompactByTeam's team: one on hosts (a slice of all children),
/// on GPUs 512 or the largest power of two a block may have in this build
/// (Kokkos 3's team scan needs a power of two).
template <class Exec, class Functor>
int compact_team_size(Exec const& exec, Functor const& f) {
  if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
    (void)exec;
    (void)f;
    return 1;
  } else {
    int const most = Kokkos::TeamPolicy<Exec>(exec, 1, 1).team_size_max(f, Kokkos::ParallelForTag{});
    int size = 1;
    while (size * 2 <= most && size < 512) size *= 2;
    return size;
  }
}

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
  std::int64_t const block = sort_phase > level_phase ? sort_phase : level_phase;
  return block <= arena_scratch_limit ? block : 0;
}

/// What build() holds at its peak, estimated: peak_bytes, and the scratch
/// block on top where there is one (it holds what peak_bytes counts as the
/// phases' scratch, and on GPUs the presort's larger buffers).
template <class T, class Index, class MemorySpace>
std::int64_t build_peak_bytes(std::int64_t n, std::int64_t dim, std::int64_t bucket) {
  return peak_bytes<T, Index>(n, dim) + scratch_block_bytes<T, Index, MemorySpace>(n, dim, bucket);
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
  std::int64_t splitting = n > bucket ? 1 : 0;
  if (splitting) Kokkos::deep_copy(exec, Kokkos::subview(split, 0), Splitting<Index>{Index(0), Index(0), Index(n), Index(0)});
  std::int64_t node_count = 1;
  int level = 0;
  Flags order_out, flags, scan, owners, holder, split_index;
  Flags level_total; // how many nodes split on the next level
  int compact_team = 0;
  typename Flags::HostMirror level_total_host;
  Kokkos::View<std::uint8_t*, MS> side;
  if (splitting) {
    owners = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::owners"), n);
    holder = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::holder"), n);
    Kokkos::deep_copy(exec, holder, Index(0)); // all in the root
    split_index = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::split_index"), capacity);
    Kokkos::deep_copy(exec, Kokkos::subview(split_index, 0), Index(0));
    order_out = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::order_out"), dn);
    flags = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::flags"), dn);
    scan = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::scan"), dn);
    side = backend::allocate<Kokkos::View<std::uint8_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::side"), n);
    level_total = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::level_total"), 1);
    level_total_host = Kokkos::create_mirror_view(level_total);
  }
  while (splitting > 0) { // Algorithm 2, one level
    kdforge::detail::Region r("kdforge::build_bucket_tree::level");
    std::int64_t const first_child = node_count;
    if (first_child + 2 * splitting > capacity) {
      while (first_child + 2 * splitting > capacity) capacity *= 2;
      capacity = capacity < 2 * n - 1 ? capacity : 2 * n - 1;
      backend::resize_keeping(split_index, std::size_t(node_count), capacity);
      backend::ArenaPause<MS> const pause; // the tree's own
      backend::resize_keeping(nodes, std::size_t(node_count), capacity);
      backend::resize_keeping(boxes, std::size_t(node_count), capacity, 2 * dim);
    }
    std::int64_t const children = 2 * splitting;
    backend::reserve(next_flags, children, "kdforge::bucket_tree::next_flags");
    backend::reserve(next_scan, children, "kdforge::bucket_tree::next_scan");
    Kokkos::parallel_for("kdforge::build_bucket_tree::split", Kokkos::RangePolicy<Exec>(exec, 0, splitting),
                         ChooseSplit<decltype(pts), Flags, decltype(boxes), decltype(nodes), Split>{
                             pts, order, boxes, nodes, split, n, dim, level, first_child, next_flags, bucket});
    Kokkos::parallel_for("kdforge::build_bucket_tree::owners", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         AssignOwners<Flags, Flags, Split, decltype(nodes), decltype(side)>{
                             owners, holder, split_index, split, nodes, order, side, n, first_child});
    Kokkos::parallel_for("kdforge::build_bucket_tree::flags", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         LeftFlags<Flags, decltype(side), Flags>{order, owners, side, flags, n});
    backend::exclusive_scan_async(exec, flags, scan, scan_space); // its total is not needed
    Kokkos::parallel_for("kdforge::build_bucket_tree::scatter", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         Scatter<Flags, Split, Flags, decltype(pts), decltype(boxes)>{
                             order, order_out, split, flags, scan, owners, n, pts, boxes, dim, first_child});
    std::swap(order, order_out);
    // The compaction counts the nodes that split next, and the host reads
    // that one number: one wait for the device a level, after the level's
    // last kernel, where a scan returning its total waits and copies more.
    // A node that splits holds more than B points, so at most N / (B + 1)
    // do: `next` holds them before anyone knows how many there are.
    backend::reserve(next, std::min<std::int64_t>(children, n / (bucket + 1)), "kdforge::bucket_tree::splitting");
    if (children <= team_compact_limit) {
      using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
      CompactByTeam<decltype(nodes), Flags, Split, Member> const f{nodes,       next_flags,  next,    first_child,
                                                                  split_index, level_total, children};
      if (compact_team == 0) compact_team = compact_team_size(exec, f);
      Kokkos::parallel_for("kdforge::build_bucket_tree::compact_team", Kokkos::TeamPolicy<Exec>(exec, 1, compact_team), f);
    } else {
      backend::exclusive_scan_async(exec, Kokkos::subview(next_flags, std::make_pair(std::int64_t(0), children)),
                                    Kokkos::subview(next_scan, std::make_pair(std::int64_t(0), children)), scan_space);
      Kokkos::parallel_for("kdforge::build_bucket_tree::compact", Kokkos::RangePolicy<Exec>(exec, 0, children),
                           CompactNext<decltype(nodes), Flags, Split>{nodes, next_flags, next_scan, next, first_child,
                                                                      split_index, level_total, children});
    }
    Kokkos::deep_copy(exec, level_total_host, level_total);
    exec.fence();
    std::int64_t const next_count = std::int64_t(level_total_host(0));
    std::swap(split, next);
    splitting = next_count;
    node_count += children;
    ++level;
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
