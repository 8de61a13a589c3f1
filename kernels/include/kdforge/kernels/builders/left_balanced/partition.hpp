#pragma once
// Builder "presorted_partition" of left-balanced k-d trees.
//
// Paper: Wald 2022 (left-balanced trees, sections 2, 4 and 6) gives the tree,
// ss(s) and the pivot rule of observation 2.1: in a sub-tree's points sorted
// along its split dimension, the first ss(lChild(s)) go left, the next one is
// node s. What differs from the paper's tag algorithm, and why: instead of one
// full sort of (tag, coordinate) per level (~log2 N sorts), every dimension is
// sorted once (ties by input index) and each level only *partitions* the
// per-dimension orders stably, which keeps every segment sorted in every
// dimension. Segments are kept in in-order layout: sub-tree s owns positions
// [begin(s), begin(s) + ss(s)) in all D orders, its pivot sits at
// begin(s) + ss(lChild(s)), the left child's segment starts at begin(s) and
// the right child's right after the pivot. Produces exactly the tree of the
// tag builder (checked by a test).
//
// Cost per level: one pass that moves every position to its new sub-tree
// (the previous level's tag update) and marks each point's side, then for
// every two dimensions that are not being split one flag pass (both left
// counts in one 64-bit word), one scan and one scatter.
// Doing level l+1's side pass inside level l's scatters instead (where a
// point lands is its next-level position) measured slower on the H100: 1M
// 1.88 vs 1.82 ms, 10M 13.4 vs 12.9 ms (the heavier scatter lost more than
// the pass it saved), so each level keeps its own.
// The order being split is already partitioned (left | pivot | right is its
// sorted order), so under round robin its pass is skipped altogether; the two
// order buffers are therefore swapped per dimension, not as a whole.
// The last R levels (sub-trees of at most 2^R - 1 points, R = 11 for D <= 3)
// are finished by one team per sub-tree in team scratch (a GPU block in
// shared memory): those levels would otherwise cost a few launches over all
// N each while moving only small segments.
#include <kdforge/backends/memory.hpp>
#include <kdforge/kernels/builders/left_balanced/common.hpp>

#include <type_traits>
#include <utility>

namespace kdforge::kernels {

namespace partition_detail {
// Kernels are named functors, not extended lambdas (see points.hpp).

/// The D per-dimension orders, each living in buffer a or b: bit e of in_b
/// says which (D > 64: bit 0 for all rows, which then always move together).
template <class PermV, int D>
struct Rows {
  PermV a, b;
  std::uint64_t in_b = 0;
  KOKKOS_FORCEINLINE_FUNCTION bool row_in_b(int e) const { return ((D <= 64 ? in_b >> e : in_b) & 1u) != 0; }
  KOKKOS_FORCEINLINE_FUNCTION typename PermV::value_type at(int e, std::int64_t j) const {
    return row_in_b(e) ? b(e, j) : a(e, j);
  }
};

/// Split dimension of active node s: `rr_dim` (>= 0) for the whole level
/// under round robin, else the stored per-node one.
template <class Dims>
KOKKOS_FORCEINLINE_FUNCTION int split_dim_of(Dims const& dims, int rr_dim, std::int64_t s) {
  return rr_dim >= 0 ? rr_dim : int(dims(s));
}

/// Level l's first pass: moves each position from its level-(l-1) node to
/// the child holding it (the tag update of the previous level, fused here to
/// save a pass and a launch per level; a child's segment begin follows from
/// its parent's), then says which side of its level-l node each point goes;
/// the pivot becomes the node.
template <class IV, class Rws, class Dims, class Side>
struct Sides {
  IV tag, node_begin, node_point;
  Rws rows;
  Dims dims;
  Side side;
  std::int64_t n;
  int l, rr_dim;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t s = tag(j);
    std::int64_t begin = 0;
    if (l > 0) {
      if (s < lb::full(l - 1)) return; // settled before level l-1
      std::int64_t const b = node_begin(s);
      std::int64_t const pv = b + lb::subtree_size(lb::left_child(s), n);
      if (j == pv) return; // node s's own point, chosen at level l-1
      begin = j < pv ? b : pv + 1;
      s = j < pv ? lb::left_child(s) : lb::right_child(s);
      tag(j) = typename IV::value_type(s);
      if (j == begin) node_begin(s) = typename IV::value_type(begin);
    }
    std::int64_t const pivot = begin + lb::subtree_size(lb::left_child(s), n);
    auto const p = rows.at(split_dim_of(dims, rr_dim, s), j);
    side(p) = j < pivot ? 0 : (j == pivot ? 1 : 2);
    if (j == pivot) node_point(s) = p;
  }
};
/// Flag pass for up to two orders e1, e2 (e2 < 0: only e1): the left count
/// of each in its own 32-bit half of one 64-bit scan word (a whole array
/// has fewer than 2^32 points, so the low half never carries into the high
/// one); the pivot's position in each order is recorded per node instead of
/// counted. Moving two orders per pass halves the launches and the reads of
/// tag, node_begin and the scan.
template <class IV, class PermV, class Dims, class Side, class Scan>
struct PairFlags {
  IV tag, pivot_pos1, pivot_pos2;
  PermV src1, src2;
  Dims dims;
  Side side;
  Scan scan;
  std::int64_t fixed;
  int e1, e2, rr_dim;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    using Index = typename IV::value_type;
    std::int64_t const s = tag(j);
    std::uint64_t w = 0;
    if (s >= fixed) {
      int const ds = split_dim_of(dims, rr_dim, s);
      if (ds != e1) {
        std::uint8_t const sd = side(src1(e1, j));
        if (sd == 0) w = 1;
        else if (sd == 1) pivot_pos1(s) = Index(j);
      }
      if (e2 >= 0 && ds != e2) {
        std::uint8_t const sd = side(src2(e2, j));
        if (sd == 0) w |= std::uint64_t(1) << 32;
        else if (sd == 1) pivot_pos2(s) = Index(j);
      }
    }
    scan(j) = w;
  }
};
/// Stable three-way partition (left | pivot | right) of every active
/// segment, in orders e1 and e2 (e2 < 0: only e1).
template <class IV, class PermV, class Dims, class Side, class Scan>
struct PairScatter {
  IV tag, node_begin, pivot_pos1, pivot_pos2;
  PermV src1, dst1, src2, dst2;
  Dims dims;
  Side side;
  Scan scan;
  std::int64_t n, fixed;
  int e1, e2, rr_dim;
  struct Segment {
    bool active;
    int ds;
    std::int64_t s, begin, pivot;
  };
  KOKKOS_FORCEINLINE_FUNCTION void move(PermV const& src, PermV const& dst, IV const& pivot_pos, int e, std::int64_t j,
                                        Segment const& g, std::int64_t left_before) const {
    auto const p = src(e, j);
    if (!g.active || g.ds == e) {
      dst(e, j) = p;
      return;
    }
    std::uint8_t const sd = side(p);
    std::int64_t dest;
    if (sd == 0) dest = g.begin + left_before;
    else if (sd == 1) dest = g.pivot;
    else dest = g.pivot + 1 + (j - g.begin - left_before - (std::int64_t(pivot_pos(g.s)) < j ? 1 : 0));
    dst(e, dest) = p;
  }
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    Segment g{false, -1, tag(j), 0, 0};
    std::uint64_t before = 0;
    if (g.s >= fixed) {
      g.active = true;
      g.ds = split_dim_of(dims, rr_dim, g.s);
      g.begin = node_begin(g.s);
      g.pivot = g.begin + lb::subtree_size(lb::left_child(g.s), n);
      before = scan(j) - scan(g.begin);
    }
    move(src1, dst1, pivot_pos1, e1, j, g, std::int64_t(before & 0xffffffffu));
    if (e2 >= 0) move(src2, dst2, pivot_pos2, e2, j, g, std::int64_t(before >> 32));
  }
};
/// Levels finished per team at the bottom: sub-trees of at most 2^R - 1
/// points, whose D orders (16-bit local ids) and bookkeeping live in team
/// scratch (shared memory on GPUs; Kokkos grants 40 KiB a team there).
/// Bytes per slot: D orders + move buffer + scan + owner (2 each), side (1),
/// per local node segment begin, pivot position and the pivot's place in the
/// order being moved (2 each), plus the split dimension (1) under widest.
template <int D, bool Widest>
KOKKOS_INLINE_FUNCTION constexpr int team_finish_levels() {
  int r = 11;
  while (r > 1 && ((1 << r) - 1) * (2 * D + 13 + (Widest ? 1 : 0)) > 40 * 1024 - 512) --r;
  return r;
}

/// One team per sub-tree root s of level l0, all of the sub-tree's levels:
/// the same pivot rule and the same stable three-way partitions as the
/// level passes, on the team's own copy of the D orders, with points renamed
/// to local ids 0 .. ss(s)-1 (their rank in dimension 0). A level is a
/// handful of team-wide passes over the sub-tree's positions (split sides,
/// then per moved order: flags + team scan, scatter, copy back), so a GPU
/// block moves ~2k points per level in shared memory where the level passes
/// would cost four launches over all N. Per-node values (segment begin,
/// pivot position) are computed once per node: the 64-bit sub-tree size
/// arithmetic per position and pass made the first version 3x slower.
template <class Exec, class T, int D, class Index, int R, bool Widest, class PV, class IV, class Rws, class Dims, class Lid>
struct FinishSubtreeTeams {
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  template <class V>
  using Scratch = Kokkos::View<V*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int M = (1 << R) - 1;
  static constexpr std::uint16_t settled = 0xffff;
  Box<T, D> bounds;
  PV pts;
  IV node_begin, node_point;
  Rws rows;
  Dims dims;
  Lid lid; // global point id -> local id, scratch of n entries
  std::int64_t n;
  int l0;

  /// What operator() takes from team scratch, view by view (each rounded up).
  static std::size_t scratch_bytes() {
    return Scratch<std::uint16_t>::shmem_size(std::size_t(D) * M) + 6 * Scratch<std::uint16_t>::shmem_size(M) +
           Scratch<std::uint8_t>::shmem_size(M) + (Widest ? Scratch<std::uint8_t>::shmem_size(M) : 0);
  }

  /// Exclusive scan of v(k) over k < m in place, each thread a contiguous
  /// run (one team-wide scan of the run sums, not one per chunk).
  KOKKOS_FUNCTION static void team_exclusive_scan(member_type const& team, Scratch<std::uint16_t> const& v, int m) {
    int const per = (m + team.team_size() - 1) / team.team_size();
    int const lo = team.team_rank() * per < m ? team.team_rank() * per : m;
    int const hi = lo + per < m ? lo + per : m;
    int sum = 0;
    for (int k = lo; k < hi; ++k) sum += v(k);
    int run = team.team_scan(sum);
    for (int k = lo; k < hi; ++k) {
      int const f = v(k);
      v(k) = std::uint16_t(run);
      run += f;
    }
  }

  KOKKOS_FUNCTION void operator()(member_type const& team) const {
    std::int64_t const s = lb::full(l0) + team.league_rank();
    int const m = int(lb::subtree_size(s, n)); // 1 .. M
    std::int64_t begin = 0; // from the parent's segment (no tag pass after the last level pass)
    if (s > 0) {
      std::int64_t const p = lb::parent(s);
      begin = node_begin(p) + (s == lb::left_child(p) ? 0 : lb::subtree_size(lb::left_child(p), n) + 1);
    }
    Scratch<std::uint16_t> ord(team.team_scratch(0), std::size_t(D) * M); // order e at ord(e * M + k)
    Scratch<std::uint16_t> tmp(team.team_scratch(0), M), excl(team.team_scratch(0), M), owner(team.team_scratch(0), M);
    Scratch<std::uint16_t> nb(team.team_scratch(0), M), pv(team.team_scratch(0), M), piv_e(team.team_scratch(0), M);
    Scratch<std::uint8_t> side(team.team_scratch(0), M);
    Scratch<std::uint8_t> nd;
    if (Widest) nd = Scratch<std::uint8_t>(team.team_scratch(0), M);

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](int k) {
      lid(rows.at(0, begin + k)) = std::uint16_t(k);
      ord(k) = std::uint16_t(k);
      owner(k) = 0;
    });
    team.team_barrier();
    for (int e = 1; e < D; ++e)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m),
                           [&](int k) { ord(e * M + k) = lid(rows.at(e, begin + k)); });
    Kokkos::single(Kokkos::PerTeam(team), [&] { nb(0) = 0; });
    team.team_barrier();

    // Local node x of depth t is global node first(t) + x - (2^t - 1).
    for (int t = 0;; ++t) {
      std::int64_t const first = ((s + 1) << t) - 1; // leftmost descendant on depth t
      if (first >= n) break;
      int const xfirst = (1 << t) - 1;
      int const count = int(lb::min64(std::int64_t(1) << t, n - first));
      int const rr = (l0 + t) % D; // the split dimension under round robin
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, count), [&](int i) {
        std::int64_t const u = first + i;
        int const d = Widest ? widest_split_dim<T, D, Index>(u, bounds, pts, node_point, dims) : rr;
        dims(u) = std::uint8_t(d);
        if (Widest) nd(xfirst + i) = std::uint8_t(d);
        pv(xfirst + i) = std::uint16_t(nb(xfirst + i) + int(lb::subtree_size(lb::left_child(u), n)));
      });
      team.team_barrier();
      // Sides: every position of a depth-t segment says where its point goes.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](int k) {
        int const x = owner(k);
        if (x == settled) return;
        int const piv = pv(x);
        std::uint16_t const p = ord((Widest ? int(nd(x)) : rr) * M + k);
        side(p) = k < piv ? 0 : (k == piv ? 1 : 2);
        if (k == piv) node_point(first + (x - xfirst)) = rows.at(0, begin + p);
      });
      team.team_barrier();
      for (int e = 0; e < D; ++e) {
        if (!Widest && e == rr) continue; // the split order already is left | pivot | right
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](int k) {
          int const x = owner(k);
          std::uint16_t f = 0;
          if (x != settled && (!Widest || nd(x) != e)) {
            std::uint8_t const sd = side(ord(e * M + k));
            if (sd == 0) f = 1;
            else if (sd == 1) piv_e(x) = std::uint16_t(k);
          }
          excl(k) = f;
        });
        team.team_barrier();
        team_exclusive_scan(team, excl, m);
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](int k) {
          int const x = owner(k);
          std::uint16_t const p = ord(e * M + k);
          if (x == settled || (Widest && nd(x) == e)) {
            tmp(k) = p;
            return;
          }
          int const b = nb(x);
          int const piv = pv(x);
          int const before = excl(k) - excl(b);
          std::uint8_t const sd = side(p);
          int const dest = sd == 0 ? b + before : (sd == 1 ? piv : piv + 1 + (k - b - before - (piv_e(x) < k ? 1 : 0)));
          tmp(dest) = p;
        });
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](int k) { ord(e * M + k) = tmp(k); });
        team.team_barrier();
      }
      // Positions move to the children of depth t + 1; the pivots settle.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](int k) {
        int const x = owner(k);
        if (x == settled) return;
        int const b = nb(x);
        int const piv = pv(x);
        if (k < piv) {
          owner(k) = std::uint16_t(2 * x + 1);
          if (k == b) nb(2 * x + 1) = std::uint16_t(b);
        } else if (k == piv) {
          owner(k) = settled;
        } else {
          owner(k) = std::uint16_t(2 * x + 2);
          if (k == piv + 1) nb(2 * x + 2) = std::uint16_t(piv + 1);
        }
      });
      team.team_barrier();
    }
  }
};
} // namespace partition_detail

/// Returns node_point: node_point(s) = index (into pts) of the point at node
/// s. Fills dims(s) for every node.
template <class Exec, class T, int D, class Index>
Kokkos::View<Index*, typename Exec::memory_space>
build_left_balanced_partition(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts,
                              SplitPolicy policy, Box<T, D> const& bounds,
                              Kokkos::View<std::uint8_t*, typename Exec::memory_space> const& dims) {
  using namespace partition_detail;
  using MS = typename Exec::memory_space;
  using IV = Kokkos::View<Index*, MS>;
  using PermV = Kokkos::View<Index**, Kokkos::LayoutRight, MS>;
  using DimV = Kokkos::View<std::uint8_t*, MS>;
  using ScanV = Kokkos::View<std::uint64_t*, MS>;
  std::int64_t const n = std::int64_t(pts.extent(0));
  auto node_point = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::node_point"), n);
  if (n == 0) return node_point;

  Rows<PermV, D> rows{presort_dimensions<Exec, T, D, Index>(exec, pts),
                      backend::allocate<PermV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::perm_next"), D, n), 0};
  // Zeroed by asynchronous fills: an initialised View fences after its fill.
  auto tag = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::tag"), n); // sub-tree owning each position
  auto node_begin = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::node_begin"), n); // segment begins
  Kokkos::deep_copy(exec, tag, Index(0));
  Kokkos::deep_copy(exec, node_begin, Index(0));
  auto side = backend::allocate<DimV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::side"), n);
  auto scan = backend::allocate<ScanV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::scan"), n);
  auto pivot_pos1 = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::pivot_pos1"), n); // per node
  auto pivot_pos2 = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::pivot_pos2"), n);
  // Vendor scan scratch allocated once: a fresh temporary per scan cost
  // ~50 us each on the H100.
  Kokkos::View<char*, MS> scan_workspace;

  constexpr bool gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  bool const widest = policy == SplitPolicy::widest_dimension;
  int const R = widest ? team_finish_levels<D, true>() : team_finish_levels<D, false>();
  int const L = lb::num_levels(n);
  int const l0 = L > R ? L - R : 0;
  bool const skip_split_row = policy == SplitPolicy::round_robin && D <= 64;
  for (int l = 0; l < l0; ++l) {
    // Round robin needs no per-node dimensions while building (and the tree
    // keeps none): the level's dimension is passed to the kernels.
    int const rr_dim = policy == SplitPolicy::round_robin ? l % D : -1;
    if (rr_dim < 0) compute_level_split_dims<Exec, T, D, Index>(exec, l, n, policy, bounds, pts, node_point, dims);
    std::int64_t const fixed = lb::full(l); // nodes of levels < l are final
    Kokkos::parallel_for("kdforge::build::partition::side", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         Sides<IV, Rows<PermV, D>, DimV, DimV>{tag, node_begin, node_point, rows, dims, side, n, l,
                                                               rr_dim});
    if (l == L - 1) break; // every segment of the last level is a single node

    // The orders to move this level, two per flag/scan/scatter round.
    int moving[D];
    int count = 0;
    for (int e = 0; e < D; ++e)
      if (!(skip_split_row && e == l % D)) moving[count++] = e; // the split order is already left | pivot | right
    for (int i = 0; i < count; i += 2) {
      int const e1 = moving[i], e2 = i + 1 < count ? moving[i + 1] : -1;
      bool const b1 = rows.row_in_b(e1), b2 = rows.row_in_b(e2 >= 0 ? e2 : e1); // e2 < 0: unused
      PermV const &src1 = b1 ? rows.b : rows.a, &dst1 = b1 ? rows.a : rows.b;
      PermV const &src2 = b2 ? rows.b : rows.a, &dst2 = b2 ? rows.a : rows.b;
      // Flags, then a plain scan: fusing the flags into the scan's input
      // (a transform iterator) made each scan 34 us instead of 14 + 12 at 1M
      // on the H100: the gathers of side() then sit inside the scan's
      // serialised look-back.
      Kokkos::parallel_for("kdforge::build::partition::flags", Kokkos::RangePolicy<Exec>(exec, 0, n),
                           PairFlags<IV, PermV, DimV, DimV, ScanV>{tag, pivot_pos1, pivot_pos2, src1, src2, dims, side,
                                                                   scan, fixed, e1, e2, rr_dim});
      backend::exclusive_scan_async(exec, scan, scan, scan_workspace);
      Kokkos::parallel_for("kdforge::build::partition::scatter", Kokkos::RangePolicy<Exec>(exec, 0, n),
                           PairScatter<IV, PermV, DimV, DimV, ScanV>{tag, node_begin, pivot_pos1, pivot_pos2, src1,
                                                                     dst1, src2, dst2, dims, side, scan, n, fixed, e1,
                                                                     e2, rr_dim});
      if (D <= 64) {
        rows.in_b ^= std::uint64_t(1) << e1;
        if (e2 >= 0) rows.in_b ^= std::uint64_t(1) << e2;
      }
    }
    if (D > 64) rows.in_b ^= 1u;
  }
  if (l0 < L) {
    auto lid = backend::allocate<Kokkos::View<std::uint16_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::local_id"), n);
    int const roots = int(lb::min64(lb::full(l0 + 1), n) - lb::full(l0));
    auto finish = [&](auto widest_tag) {
      constexpr bool W = decltype(widest_tag)::value;
      using Finish = FinishSubtreeTeams<Exec, T, D, Index, team_finish_levels<D, W>(), W, Kokkos::View<Point<T, D>*, MS>, IV,
                                        Rows<PermV, D>, DimV, Kokkos::View<std::uint16_t*, MS>>;
      Kokkos::TeamPolicy<Exec> tp(exec, roots, gpu ? 256 : 1);
      Kokkos::parallel_for("kdforge::build::partition::finish", tp.set_scratch_size(0, Kokkos::PerTeam(Finish::scratch_bytes())),
                           Finish{bounds, pts, node_begin, node_point, rows, dims, lid, n, l0});
    };
    if (widest) finish(std::true_type{});
    else finish(std::false_type{});
  }
  return node_point;
}

} // namespace kdforge::kernels
