#pragma once
// Balanced median k-d trees built in place: the tree of Wehr & Radkowski
// 2018's split-and-sort builder (median_tree.hpp: every node at the median
// position of its chunk, round-robin split dimensions, positions computed,
// never stored), made by selecting and partitioning the caller's points
// where they lie instead of sorting copies of them. For point sets whose
// copies and sort buffers do not fit: billions of points on one GPU.
//
// Memory: the points (permuted in place; they become the tree's), one
// index per point (the caller's index of the point at each position), and
// for a moment per level the positions of the points on the wrong side of
// their chunk's median (8 bytes per misplaced pair, at most half the
// points; about a quarter for points in random order), made in rounds when
// that is more than the memory has; small per-chunk tables. Every loop
// runs over 64-bit ranges, so more than 2^32 points are fine.
//
// Per level l (chunk c = the positions [chunk_begin, chunk_end) of
// math.hpp), while chunks are wider than `finish_size` points:
//  - selection: the element of rank median(l, c) - chunk_begin(l, c) in each
//    chunk by the key (coordinate of dimension l mod D, input index), by
//    radix select: 8-bit digits of the coordinate's ordered bits, most
//    significant first, one histogram per chunk (a team counts its block of
//    positions in scratch, which spans at most two chunks), then 8-bit
//    digits of the index for the chunks where the coordinate ties;
//  - partition: the positions in [begin, median) holding a key not below
//    the target and those in [median, end) holding a key below it are equal
//    in number per chunk and listed in position order by one scan, so the
//    j-th of the first list and the j-th of the second lie in the same
//    chunk: swapping them puts every smaller key left of the median; the
//    target is then moved to the median position.
// The chunks below `finish_size` points are finished by one thread each,
// all their levels, by quickselect (median of three; heapsort where it
// degenerates) on the same key.
//
// What differs from the split-and-sort builder, and why: ties in a
// coordinate go by input index (its stable sorts keep the previous level's
// order): every node is then the unique element of its rank, so the tree is
// the same whatever the order of the work, on every backend and for every
// finish_size; with distinct coordinates it is the split-and-sort tree.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/builders/left_balanced/common.hpp>
#include <kdforge/kernels/builders/split_sort/math.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kdforge::kernels::in_place {

template <class Exec>
using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;

template <class T>
using Key = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

/// What is known of the element that becomes a chunk's node: the bits of
/// its key decided so far, its rank among the elements that match them.
template <class T>
struct Target {
  Key<T> key = 0;          // coordinate bits (all of them after the coordinate passes)
  std::uint64_t index = 0; // input-index bits (index passes)
  std::int64_t rank = 0;
  std::int64_t equal = 0; // elements with the target's coordinate, once known
  int by_index = 0;       // ties in the coordinate decided by the index
};

template <class T, class PV, class IV>
struct KeyOf {
  PV pts;
  IV idx;
  int d;
  KOKKOS_FORCEINLINE_FUNCTION Key<T> coord(std::int64_t i) const { return ordered_bits(pts(i)[d]); }
  /// Key of i below the target t (the left side of its chunk).
  KOKKOS_FORCEINLINE_FUNCTION bool below(std::int64_t i, Target<T> const& t) const {
    Key<T> const k = coord(i);
    return k < t.key || (t.by_index && k == t.key && std::uint64_t(idx(i)) < t.index);
  }
  KOKKOS_FORCEINLINE_FUNCTION bool is(std::int64_t i, Target<T> const& t) const {
    return coord(i) == t.key && (!t.by_index || std::uint64_t(idx(i)) == t.index);
  }
};

// Kernels are named functors (common/points.hpp says why: no extended lambdas).

template <class IV>
struct Iota {
  IV idx;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { idx(i) = typename IV::value_type(i); }
};

template <class TV>
struct InitTargets {
  TV targets;
  std::int64_t n;
  int l;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    using T = typename TV::value_type;
    T t;
    t.rank = split_sort::median(n, l, c) - split_sort::chunk_begin(n, l, c);
    targets(c) = t;
  }
};

/// Positions [first, first + block) of one team: which chunk each is in
/// (at most c0 and c0 + 1), and whether it is an upper level's node.
struct Span {
  std::int64_t c0, b0, b1; // chunk of `first`, its leading boundary, the next boundary
  KOKKOS_FORCEINLINE_FUNCTION static Span of(std::int64_t n, int l, std::int64_t first) {
    Span s;
    s.c0 = split_sort::chunk_of(n, l, first);
    s.b0 = split_sort::boundary(n, l, s.c0);
    s.b1 = split_sort::boundary(n, l, s.c0 + 1);
    return s;
  }
  /// -1 for an upper level's node, else 0 (chunk c0) or 1 (c0 + 1).
  KOKKOS_FORCEINLINE_FUNCTION int slot(std::int64_t i) const {
    if (i == b1 || (c0 > 0 && i == b0)) return -1;
    return i > b1 ? 1 : 0;
  }
};

/// One radix-select pass: per chunk, how many of the elements matching the
/// target's decided bits have each 8-bit digit at `shift` (of the
/// coordinate, or of the index where `index_pass`).
template <class Exec, class T, class KO, class TV, class HV>
struct HistogramTeams {
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  KO key;
  TV targets;
  HV hist; // chunks x 256
  std::int64_t n, block;
  int l, shift;
  bool index_pass;
  static constexpr int key_bits = int(8 * sizeof(Key<T>));

  KOKKOS_FORCEINLINE_FUNCTION int digit(std::int64_t i, Target<T> const& t) const {
    Key<T> const k = key.coord(i);
    if (!index_pass) {
      if (shift + 8 < key_bits && (k >> (shift + 8)) != (t.key >> (shift + 8))) return -1;
      return int((k >> shift) & 0xffu);
    }
    if (!t.by_index || k != t.key) return -1;
    std::uint64_t const x = std::uint64_t(key.idx(i));
    if (shift + 8 < 64 && (x >> (shift + 8)) != (t.index >> (shift + 8))) return -1;
    return int((x >> shift) & 0xffu);
  }

  KOKKOS_FUNCTION void operator()(member_type const& team) const {
    std::int64_t const first = std::int64_t(team.league_rank()) * block;
    std::int64_t const count = first + block < n ? block : n - first;
    Scratch h(team.team_scratch(0), 512);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 512), [&](int j) { h(j) = 0; });
    Span const s = Span::of(n, l, first);
    std::int64_t const chunks = std::int64_t(1) << l;
    Target<T> const t0 = targets(s.c0);
    Target<T> const t1 = s.c0 + 1 < chunks ? targets(s.c0 + 1) : t0;
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, count), [&](std::int64_t k) {
      std::int64_t const i = first + k;
      int const slot = s.slot(i);
      if (slot < 0) return;
      int const dg = digit(i, slot ? t1 : t0);
      if (dg >= 0) Kokkos::atomic_add(&h(slot * 256 + dg), std::uint32_t(1)); // atomic_increment: deprecated in Kokkos 4
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 512), [&](int j) {
      std::int64_t const c = s.c0 + j / 256;
      if (h(j) != 0 && c < chunks) Kokkos::atomic_add(&hist(c * 256 + (j & 255)), std::uint64_t(h(j)));
    });
  }
};

/// After a pass: the digit holding each chunk's target, its bits decided,
/// its rank among the elements with them; the chunk's histogram zeroed.
template <class T, class TV, class HV>
struct Resolve {
  TV targets;
  HV hist;
  int shift;
  bool index_pass;
  bool last_coordinate_pass;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    Target<T> t = targets(c);
    bool const active = !index_pass || t.by_index;
    std::uint64_t cum = 0;
    bool found = false;
    for (int dg = 0; dg < 256; ++dg) {
      std::uint64_t const h = hist(c * 256 + dg);
      hist(c * 256 + dg) = 0;
      if (!active || found) continue;
      if (std::uint64_t(t.rank) < cum + h) {
        t.rank -= std::int64_t(cum);
        if (index_pass) t.index |= std::uint64_t(dg) << shift;
        else t.key |= Key<T>(dg) << shift;
        if (last_coordinate_pass) {
          t.equal = std::int64_t(h);
          t.by_index = h > 1 ? 1 : 0;
        }
        found = true;
      }
      cum += h;
    }
    if (active) targets(c) = t;
  }
};

template <class TV>
struct MaxEqual {
  TV targets;
  KOKKOS_FUNCTION void operator()(std::int64_t c, std::int64_t& v) const {
    v = targets(c).equal > v ? targets(c).equal : v;
  }
};

/// Counts of the misplaced positions before a position: left of the median
/// but not below the target (x), right of it and below (y).
struct Misplaced {
  std::int64_t x = 0, y = 0;
};

/// Lists the misplaced positions whose rank (per kind) lies in
/// [first, first + capacity): the j-th of each list are swapped.
template <class T, class KO, class TV, class LV>
struct ListMisplaced {
  using value_type = Misplaced;
  KO key;
  TV targets;
  LV xs, ys;
  std::int64_t n, first, capacity;
  int l;
  KOKKOS_FUNCTION void init(value_type& v) const { v.x = v.y = 0; }
  KOKKOS_FUNCTION void join(value_type& a, value_type const& b) const {
    a.x += b.x;
    a.y += b.y;
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    a.x += b.x;
    a.y += b.y;
  }
#endif
  KOKKOS_FUNCTION void operator()(std::int64_t i, value_type& u, bool final) const {
    std::int64_t const c = split_sort::chunk_of(n, l, i);
    if (c > 0 && split_sort::boundary(n, l, c) == i) return; // an upper level's node
    std::int64_t const m = split_sort::median(n, l, c);
    bool const below = key.below(i, targets(c));
    if (i < m && !below) {
      if (final && u.x >= first && u.x < first + capacity) xs(u.x - first) = i;
      ++u.x;
    } else if (i >= m && below) {
      if (final && u.y >= first && u.y < first + capacity) ys(u.y - first) = i;
      ++u.y;
    }
  }
};

template <class PV, class IV>
KOKKOS_FORCEINLINE_FUNCTION void swap_at(PV const& pts, IV const& idx, std::int64_t a, std::int64_t b) {
  auto const p = pts(a);
  pts(a) = pts(b);
  pts(b) = p;
  auto const x = idx(a);
  idx(a) = idx(b);
  idx(b) = x;
}

template <class PV, class IV, class LV>
struct SwapLists {
  PV pts;
  IV idx;
  LV xs, ys;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const { swap_at(pts, idx, xs(j), ys(j)); }
};

/// Where each chunk's target lies (right of the median, after the swaps).
template <class T, class KO, class TV, class MV>
struct FindTargets {
  KO key;
  TV targets;
  MV where;
  std::int64_t n;
  int l;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const c = split_sort::chunk_of(n, l, i);
    if (c > 0 && split_sort::boundary(n, l, c) == i) return;
    if (i >= split_sort::median(n, l, c) && key.is(i, targets(c))) where(c) = i;
  }
};

template <class PV, class IV, class MV>
struct PlaceTargets {
  PV pts;
  IV idx;
  MV where;
  std::int64_t n;
  int l;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    std::int64_t const m = split_sort::median(n, l, c);
    if (where(c) != m) swap_at(pts, idx, where(c), m);
  }
};

/// One thread per chunk of level `l0`: every level of its sub-tree, each
/// chunk's node put at its median position by quickselect on the key.
template <class T, int D, class PV, class IV>
struct FinishChunks {
  PV pts;
  IV idx;
  std::int64_t n;
  int l0, levels;

  KOKKOS_FORCEINLINE_FUNCTION bool less(std::int64_t a, std::int64_t b, int d) const {
    Key<T> const ka = ordered_bits(pts(a)[d]), kb = ordered_bits(pts(b)[d]);
    return ka < kb || (ka == kb && idx(a) < idx(b));
  }
  KOKKOS_FUNCTION void sift_down(std::int64_t lo, std::int64_t root, std::int64_t size, int d) const {
    while (true) {
      std::int64_t child = 2 * root + 1;
      if (child >= size) return;
      if (child + 1 < size && less(lo + child, lo + child + 1, d)) ++child;
      if (!less(lo + root, lo + child, d)) return;
      swap_at(pts, idx, lo + root, lo + child);
      root = child;
    }
  }
  /// Sorts [lo, hi) by the key: the fallback that cannot degenerate.
  KOKKOS_FUNCTION void heap_sort(std::int64_t lo, std::int64_t hi, int d) const {
    std::int64_t const size = hi - lo;
    for (std::int64_t r = size / 2 - 1; r >= 0; --r) sift_down(lo, r, size, d);
    for (std::int64_t end = size - 1; end > 0; --end) {
      swap_at(pts, idx, lo, lo + end);
      sift_down(lo, 0, end, d);
    }
  }
  /// Puts the element of rank k - lo of [lo, hi) at k, smaller keys before it.
  KOKKOS_FUNCTION void select(std::int64_t lo, std::int64_t hi, std::int64_t k, int d) const {
    int budget = 16;
    for (std::int64_t w = hi - lo; w > 1; w >>= 1) budget += 2;
    while (hi - lo > 1) {
      if (hi - lo <= 12) { // insertion sort
        for (std::int64_t i = lo + 1; i < hi; ++i)
          for (std::int64_t j = i; j > lo && less(j, j - 1, d); --j) swap_at(pts, idx, j, j - 1);
        return;
      }
      if (--budget < 0) {
        heap_sort(lo, hi, d);
        return;
      }
      std::int64_t const mid = lo + (hi - lo) / 2, last = hi - 1;
      // median of three to `last`, the pivot
      if (less(mid, lo, d)) swap_at(pts, idx, mid, lo);
      if (less(last, lo, d)) swap_at(pts, idx, last, lo);
      if (less(mid, last, d)) swap_at(pts, idx, mid, last);
      std::int64_t store = lo;
      for (std::int64_t j = lo; j < last; ++j)
        if (less(j, last, d)) swap_at(pts, idx, j, store++);
      swap_at(pts, idx, store, last);
      if (store == k) return;
      if (k < store) hi = store;
      else lo = store + 1;
    }
  }
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    for (int l = l0; l < levels; ++l) {
      std::int64_t const first = c << (l - l0), last = (c + 1) << (l - l0);
      for (std::int64_t cc = first; cc < last; ++cc)
        select(split_sort::chunk_begin(n, l, cc), split_sort::chunk_end(n, l, cc), split_sort::median(n, l, cc), l % D);
    }
  }
};

/// Chunk width from which one thread finishes a sub-tree: GPUs want the
/// coalesced level passes as deep as the per-chunk tables allow; CPU
/// threads, few, do better on sub-trees that fit their caches.
template <class Exec>
std::int64_t default_finish_size(std::int64_t n) {
  constexpr bool gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
  std::int64_t const w = gpu ? 2048 : 65536;
  std::int64_t const tables = n >> 19; // at most 2^19 chunks per level pass: 1 GiB of histograms
  return w > tables ? w : tables;
}

/// Bytes the build allocates beyond the points and indices, at most, for
/// `n` points: the per-chunk tables of its deepest level pass and the
/// lists of misplaced positions (at most one pair per two points).
template <class T>
std::int64_t scratch_bytes(std::int64_t n, std::int64_t finish_size) {
  std::int64_t chunks = 1;
  while (chunks < (std::int64_t(1) << 19) && (n / (2 * chunks)) > finish_size) chunks *= 2;
  return chunks * std::int64_t(256 * sizeof(std::uint64_t) + sizeof(Target<T>) + sizeof(std::int64_t)) +
         (n / 2) * std::int64_t(2 * sizeof(std::int64_t));
}

/// Builds the median tree's order of `pts` in place; returns idx: idx(i)
/// is the caller's index of the point now at position i. `pts` must be
/// finite.
template <class Exec, class T, int D, class Index, class PV>
Kokkos::View<Index*, typename Exec::memory_space> build(Exec const& exec, PV const& pts, std::int64_t finish_size) {
  using MS = typename Exec::memory_space;
  using IV = Kokkos::View<Index*, MS>;
  using TV = Kokkos::View<Target<T>*, MS>;
  using HV = Kokkos::View<std::uint64_t*, MS>;
  using LV = Kokkos::View<std::int64_t*, MS>;
  using KO = KeyOf<T, PV, IV>;
  constexpr bool gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  kdforge::detail::Region region("kdforge::build_median_in_place");
  std::int64_t const n = std::int64_t(pts.extent(0));
  auto idx = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::indices"), n);
  Kokkos::parallel_for("kdforge::in_place::iota", Policy<Exec>(exec, 0, n), Iota<IV>{idx});
  int const levels = split_sort::internal_levels(n);
  if (finish_size < 1) finish_size = default_finish_size<Exec>(n);

  int top = 0; // levels done by the passes over all points
  while (top < levels && top < 19 && (n >> top) > finish_size) ++top;
  TV targets;
  HV hist;
  Kokkos::View<char*, MS> lists_storage;
  for (int l = 0; l < top; ++l) {
    kdforge::detail::Region level_region("kdforge::in_place::level");
    std::int64_t const chunks = std::int64_t(1) << l;
    int const d = l % D;
    KO const key{pts, idx, d};
    if (std::int64_t(targets.extent(0)) < chunks) {
      targets = TV(); // the previous level's tables first, then the larger ones
      hist = HV();
      targets = backend::allocate<TV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::in_place::targets"), chunks);
      hist = backend::allocate<HV>("kdforge::in_place::histograms", chunks * 256); // zeroed; each pass re-zeroes it
    }
    Kokkos::parallel_for("kdforge::in_place::targets", Policy<Exec>(exec, 0, chunks), InitTargets<TV>{targets, n, l});

    // selection: coordinate digits, then index digits where coordinates tie
    std::int64_t const narrowest = (n >> l) - 1; // no chunk of level l is narrower
    std::int64_t const block = std::min<std::int64_t>(gpu ? 4096 : 65536, narrowest > 1 ? narrowest : 1);
    int const league = int((n + block - 1) / block);
    auto pass = [&](int shift, bool index_pass, bool last_coordinate_pass) {
      using H = HistogramTeams<Exec, T, KO, TV, HV>;
      Kokkos::TeamPolicy<Exec> tp(exec, league, gpu ? 256 : 1);
      Kokkos::parallel_for("kdforge::in_place::histogram", tp.set_scratch_size(0, Kokkos::PerTeam(512 * sizeof(std::uint32_t))),
                           H{key, targets, hist, n, block, l, shift, index_pass});
      Kokkos::parallel_for("kdforge::in_place::resolve", Policy<Exec>(exec, 0, chunks),
                           Resolve<T, TV, HV>{targets, hist, shift, index_pass, last_coordinate_pass});
    };
    for (int shift = int(8 * sizeof(Key<T>)) - 8; shift >= 0; shift -= 8) pass(shift, false, shift == 0);
    std::int64_t ties = 0;
    Kokkos::parallel_reduce("kdforge::in_place::ties", Policy<Exec>(exec, 0, chunks), MaxEqual<TV>{targets},
                            Kokkos::Max<std::int64_t>(ties));
    if (ties > 1) {
      int const bits = bits_for(n);
      for (int shift = ((bits - 1) / 8) * 8; shift >= 0; shift -= 8) pass(shift, true, false);
    }

    // partition: list the misplaced pairs (in rounds when they are many), swap them
    using List = ListMisplaced<T, KO, TV, LV>;
    Misplaced total;
    Kokkos::parallel_scan("kdforge::in_place::count_misplaced", Policy<Exec>(exec, 0, n),
                          List{key, targets, LV(), LV(), n, 0, 0, l}, total);
    KDFORGE_REQUIRE(total.x == total.y, "build_median_in_place", "internal error: ", total.x, " and ", total.y,
                    " misplaced points at level ", l);
    if (total.x > 0) {
      // as many pairs per round as the memory has room for, with a margin
      std::size_t const room = backend::available_bytes_in<MS>() / 2;
      std::int64_t capacity = std::int64_t(room / (2 * sizeof(std::int64_t)));
      capacity = std::max<std::int64_t>(std::min<std::int64_t>(capacity, total.x), std::min<std::int64_t>(total.x, 1 << 20));
      std::size_t const bytes = std::size_t(capacity) * 2 * sizeof(std::int64_t);
      if (lists_storage.extent(0) < bytes) {
        lists_storage = {};
        lists_storage = backend::allocate<Kokkos::View<char*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::in_place::misplaced"), bytes);
      }
      LV const xs(reinterpret_cast<std::int64_t*>(lists_storage.data()), capacity);
      LV const ys(reinterpret_cast<std::int64_t*>(lists_storage.data()) + capacity, capacity);
      for (std::int64_t first = 0; first < total.x; first += capacity) {
        Misplaced unused;
        Kokkos::parallel_scan("kdforge::in_place::list_misplaced", Policy<Exec>(exec, 0, n),
                              List{key, targets, xs, ys, n, first, capacity, l}, unused);
        std::int64_t const count = std::min(capacity, total.x - first);
        Kokkos::parallel_for("kdforge::in_place::swap", Policy<Exec>(exec, 0, count), SwapLists<PV, IV, LV>{pts, idx, xs, ys});
      }
    }
    auto where = LV(reinterpret_cast<std::int64_t*>(hist.data()), chunks); // the histograms are zero: free to borrow
    Kokkos::parallel_for("kdforge::in_place::find_targets", Policy<Exec>(exec, 0, n),
                         FindTargets<T, KO, TV, LV>{key, targets, where, n, l});
    Kokkos::parallel_for("kdforge::in_place::place_targets", Policy<Exec>(exec, 0, chunks),
                         PlaceTargets<PV, IV, LV>{pts, idx, where, n, l});
    Kokkos::deep_copy(exec, Kokkos::subview(hist, Kokkos::make_pair(std::int64_t(0), chunks)), std::uint64_t(0));
  }
  lists_storage = {};
  hist = {};
  targets = {};
  if (top < levels)
    Kokkos::parallel_for("kdforge::in_place::finish", Policy<Exec>(exec, 0, std::int64_t(1) << top),
                         FinishChunks<T, D, PV, IV>{pts, idx, n, top, levels});
  exec.fence();
  return idx;
}

} // namespace kdforge::kernels::in_place
