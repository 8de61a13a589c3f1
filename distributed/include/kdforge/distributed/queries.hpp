#pragma once
// The distributed queries: kNN and closest point in two phases, radius
// count and radius search in one (after ArborX's DistributedTree,
// Lebrun-Grandie, Prokopenko, Turcksin & Slattery 2020, section 3.3).
//
// kNN: phase 1 sends each query to its nearest ranks by the top's boxes
// until they hold k points (its own rank first where the query lies in its
// box: no traffic then); their k nearest give a bound, the k-th distance.
// Phase 2 sends it, with that bound, to every other rank whose boxes lie
// within the bound; they return their neighbours within it, found by walks
// that prune by the bound from the root. Closest point is kNN with k = 1.
//
// Same answers as one tree over the union: each rank's rows are exact for
// its points, sorted by (squared distance, index), and a rank's indices are
// in global order (rank-major offsets, or positions of the points ordered
// by id), so the rows merge by (squared distance, global index). The merge
// places each neighbour by counting, in every other row of its query, the
// neighbours that precede it (binary search): no sort, the same on every
// backend. A query whose rows come from one rank alone (in phase 2: from
// none), nearly every query where queries are owned where their points
// are, needs no merge: its row is copied (CopyKnn), and in phase 1 a
// query a rank sends itself alone goes from the local kNN straight into
// the phase-1 rows (SelfRows), with no entries returned.
// Distances are those of the local walks (kernels' sq_distance), the same
// bits as one tree computes. Box tests are never above a point's
// computed distance (top.hpp), and bounds are inclusive, so a tie at the
// bound on another rank is never missed.
//
// What differs from one tree: the unsorted rows of radius_search (no sort,
// no max_neighbors) hold the same neighbours in another order: rank by
// rank, each rank's part in its walk's order.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/closest_point.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/distributed/exchange.hpp>
#include <kdforge/distributed/results.hpp>
#include <kdforge/distributed/scratch.hpp>
#include <kdforge/distributed/top.hpp>
#include <kdforge/distributed/tree.hpp>
#include <kdforge/kernels/query/rows.hpp>
#include <kdforge/knn.hpp>
#include <kdforge/radius.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace kdforge::distributed {

// ---- the order of neighbours ------------------------------------------------

template <class T, class Index>
struct Candidate {
  T d;
  std::int64_t key; // global index (or caller id)
  std::int32_t rank;
  Index index;
};

/// (squared distance, global index); rank and index only break ties
/// between equal caller ids.
template <class T, class Index>
KOKKOS_INLINE_FUNCTION bool before(Candidate<T, Index> const& a, Candidate<T, Index> const& b) {
  if (a.d != b.d) return a.d < b.d;
  if (a.key != b.key) return a.key < b.key;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.index < b.index;
}

/// The rows returned by an exchange, seen per query: query i's runs are its
/// pairs query_offsets(i) .. query_offsets(i+1), each sorted.
template <class MS, class T, class Index>
struct Runs {
  Kokkos::View<std::int64_t*, MS> query_offsets;
  Kokkos::View<std::int32_t*, MS> dest;
  Kokkos::View<std::int64_t*, MS> position;
  Kokkos::View<std::int64_t*, MS> entry_offsets; // by send position, pairs + 1
  Kokkos::View<Neighbor<T, Index>*, MS> entries;
  Kokkos::View<std::int64_t*, MS> ids; // empty: keys from offsets
  Kokkos::View<std::int64_t*, MS> offsets; // global offset of each rank
  Kokkos::View<std::int32_t*, MS> counts; // by send position (kNN only; empty for radius)
  /// 0: rows at entry_offsets; k: row s in slots s*k .. s*k+k-1, its
  /// length counts(s) (send_back_slots: closest point's second phase)
  std::int64_t stride = 0;
  /// Whether the pair's rank wrote its row straight into the phase-1 rows
  /// (its own queries with one source: SelfRows), returning no entries.
  KOKKOS_INLINE_FUNCTION bool in_place(std::int64_t pair) const {
    return counts.extent(0) && counts(position(pair)) < 0;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t begin(std::int64_t pair) const {
    return stride ? position(pair) * stride : entry_offsets(position(pair));
  }
  KOKKOS_INLINE_FUNCTION std::int64_t length(std::int64_t pair) const {
    std::int64_t const s = position(pair);
    return stride ? std::int64_t(counts(s)) : entry_offsets(s + 1) - entry_offsets(s);
  }
  KOKKOS_INLINE_FUNCTION Candidate<T, Index> get(std::int64_t pair, std::int64_t b, std::int64_t t) const {
    Neighbor<T, Index> const e = entries(b + t);
    std::int32_t const r = dest(pair);
    return {e.sq_dist, ids.extent(0) ? ids(b + t) : offsets(r) + std::int64_t(e.index), r, e.index};
  }
};

/// M x k rows (the kNN results, their global_indices as the keys).
template <class MS, class T, class Index>
struct Rows {
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MS> ranks;
  Kokkos::View<Index**, Kokkos::LayoutRight, MS> indices;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MS> keys;
  Kokkos::View<T**, Kokkos::LayoutRight, MS> d;
  KOKKOS_INLINE_FUNCTION Candidate<T, Index> get(std::int64_t i, std::int64_t t) const {
    return {d(i, t), keys(i, t), ranks(i, t), indices(i, t)};
  }
  KOKKOS_INLINE_FUNCTION void set(std::int64_t i, std::int64_t t, Candidate<T, Index> const& c) const {
    d(i, t) = c.d;
    keys(i, t) = c.key;
    ranks(i, t) = c.rank;
    indices(i, t) = c.index;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t length(std::int64_t i) const {
    std::int64_t n = 0;
    while (n < std::int64_t(ranks.extent(1)) && ranks(i, n) >= 0) ++n;
    return n;
  }
};

template <class T, class Index>
KOKKOS_INLINE_FUNCTION Candidate<T, Index> missing() {
  return {detail::infinity<T>(), -1, -1, Index(-1)};
}

/// Entries of one run (of n, the first `limit` looked at) that come before c.
template <class Get, class C>
KOKKOS_INLINE_FUNCTION std::int64_t count_before(Get const& get, std::int64_t n, C const& c) {
  std::int64_t lo = 0, hi = n;
  while (lo < hi) {
    std::int64_t const mid = lo + (hi - lo) / 2;
    if (before(get(mid), c)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

template <class R>
struct RunGet {
  R const& runs;
  std::int64_t pair, b;
  KOKKOS_INLINE_FUNCTION auto operator()(std::int64_t t) const { return runs.get(pair, b, t); }
};
template <class R>
struct RowGet {
  R const& rows;
  std::int64_t i;
  KOKKOS_INLINE_FUNCTION auto operator()(std::int64_t t) const { return rows.get(i, t); }
};

/// Whether query i's row has one source or none (no merge to do): in
/// phase 1 one run or none, in phase 2 (`prior` not empty) no run. Where
/// queries are owned where their points are, that is nearly every query.
template <class MS, class T, class Index>
KOKKOS_INLINE_FUNCTION bool single_source(Runs<MS, T, Index> const& runs, Rows<MS, T, Index> const& prior,
                                          std::int64_t i) {
  std::int64_t const n = runs.query_offsets(i + 1) - runs.query_offsets(i);
  return prior.ranks.extent(0) ? n == 0 : n <= 1;
}

/// The rows of single-source queries (MergeKnn skips them). On a GPU a
/// thread per entry (i, t), so that the reads and writes of a warp are
/// contiguous where a thread per query strides them by k; on CPU cores a
/// thread per query, whose row is contiguous in its own cache lines.
template <class MS, class T, class Index>
struct CopyKnn {
  Runs<MS, T, Index> runs;
  Rows<MS, T, Index> prior;
  Rows<MS, T, Index> out;
  std::int64_t k;
  bool per_query;
  KOKKOS_INLINE_FUNCTION void copy(std::int64_t i, std::int64_t t) const {
    std::int64_t const a0 = runs.query_offsets(i);
    if (prior.ranks.extent(0)) out.set(i, t, prior.get(i, t));
    else if (runs.query_offsets(i + 1) > a0 && t < runs.length(a0)) out.set(i, t, runs.get(a0, runs.begin(a0), t));
    else out.set(i, t, missing<T, Index>());
  }
  KOKKOS_INLINE_FUNCTION bool copied(std::int64_t i) const {
    if (!single_source(runs, prior, i)) return false;
    std::int64_t const a0 = runs.query_offsets(i);
    return prior.ranks.extent(0) || runs.query_offsets(i + 1) == a0 || !runs.in_place(a0);
  }
  KOKKOS_FUNCTION void operator()(std::int64_t w) const {
    if (per_query) {
      if (copied(w))
        for (std::int64_t t = 0; t < k; ++t) copy(w, t);
    } else if (copied(w / k)) {
      copy(w / k, w % k);
    }
  }
};

/// A thread per query on CPU cores, per entry on a GPU (CopyKnn says why).
template <class Exec>
constexpr bool per_query_rows() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
}

/// kNN merge: query i's k nearest of its runs and, in phase 2, of the
/// phase-1 row (`prior`, empty in phase 1). Single-source queries are
/// CopyKnn's.
template <class MS, class T, class Index>
struct MergeKnn {
  Runs<MS, T, Index> runs;
  Rows<MS, T, Index> prior;
  Rows<MS, T, Index> out;
  std::int64_t k;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if (single_source(runs, prior, i)) return;
    for (std::int64_t t = 0; t < k; ++t) out.set(i, t, missing<T, Index>());
    std::int64_t const a0 = runs.query_offsets(i), a1 = runs.query_offsets(i + 1);
    std::int64_t const plen = prior.ranks.extent(0) ? prior.length(i) : 0;
    // run -1 is the prior row, runs 0 .. a1-a0-1 the pairs
    for (std::int64_t ra = plen > 0 ? -1 : 0; ra < a1 - a0; ++ra) {
      std::int64_t const la = ra < 0 ? plen : runs.length(a0 + ra);
      std::int64_t const ba = ra < 0 ? 0 : runs.begin(a0 + ra);
      for (std::int64_t t = 0; t < la && t < k; ++t) {
        Candidate<T, Index> const c = ra < 0 ? prior.get(i, t) : runs.get(a0 + ra, ba, t);
        std::int64_t pos = t;
        for (std::int64_t rb = plen > 0 ? -1 : 0; rb < a1 - a0 && pos < k; ++rb) {
          if (rb == ra) continue;
          if (rb < 0) {
            pos += count_before(RowGet<Rows<MS, T, Index>>{prior, i}, plen < k ? plen : k, c);
          } else {
            std::int64_t const lb = runs.length(a0 + rb);
            pos += count_before(RunGet<Runs<MS, T, Index>>{runs, a0 + rb, runs.begin(a0 + rb)}, lb < k ? lb : k, c);
          }
        }
        if (pos < k) out.set(i, pos, c);
      }
    }
  }
};

/// Radius rows: lengths (capped), then the neighbours placed by rank in
/// (distance, global index) order where sorted, rank by rank otherwise.
template <class MS, class T, class Index>
struct MergeRadiusCount {
  Runs<MS, T, Index> runs;
  std::int64_t cap;
  Kokkos::View<std::int64_t*, MS> lengths;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t n = 0;
    for (std::int64_t a = runs.query_offsets(i); a < runs.query_offsets(i + 1); ++a) n += runs.length(a);
    lengths(i) = cap >= 0 && n > cap ? cap : n;
  }
};

template <class MS, class T, class Index>
struct MergeRadiusFill {
  Runs<MS, T, Index> runs;
  Kokkos::View<std::int64_t*, MS> offsets;
  Kokkos::View<std::int32_t*, MS> ranks;
  Kokkos::View<Index*, MS> indices;
  Kokkos::View<std::int64_t*, MS> keys;
  Kokkos::View<T*, MS> d;
  bool sorted;
  KOKKOS_INLINE_FUNCTION void put(std::int64_t at, Candidate<T, Index> const& c) const {
    ranks(at) = c.rank;
    indices(at) = c.index;
    keys(at) = c.key;
    d(at) = c.d;
  }
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const base = offsets(i), n = offsets(i + 1) - base;
    std::int64_t const a0 = runs.query_offsets(i), a1 = runs.query_offsets(i + 1);
    if (!sorted) {
      std::int64_t pos = 0;
      for (std::int64_t a = a0; a < a1; ++a) {
        std::int64_t const b = runs.begin(a), l = runs.length(a);
        for (std::int64_t t = 0; t < l; ++t) put(base + pos++, runs.get(a, b, t));
      }
      return;
    }
    for (std::int64_t a = a0; a < a1; ++a) {
      std::int64_t const ba = runs.begin(a), la = runs.length(a);
      for (std::int64_t t = 0; t < la && t < n; ++t) {
        Candidate<T, Index> const c = runs.get(a, ba, t);
        std::int64_t pos = t;
        for (std::int64_t b = a0; b < a1 && pos < n; ++b) {
          if (b == a) continue;
          std::int64_t const lb = runs.length(b);
          pos += count_before(RunGet<Runs<MS, T, Index>>{runs, b, runs.begin(b)}, lb < n ? lb : n, c);
        }
        if (pos < n) put(base + pos, c);
      }
    }
  }
};

template <class MS>
struct MergeCounts {
  Kokkos::View<std::int64_t*, MS> query_offsets;
  Kokkos::View<std::int64_t*, MS> position;
  Kokkos::View<std::int64_t*, MS> counts; // by send position
  std::int64_t cap;
  Kokkos::View<std::int64_t*, MS> out;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t n = 0;
    for (std::int64_t a = query_offsets(i); a < query_offsets(i + 1); ++a) n += counts(position(a));
    out(i) = cap >= 0 && n > cap ? cap : n;
  }
};

// ---- which ranks a query goes to --------------------------------------------

template <class MS, class T, int D>
struct Top {
  Kokkos::View<TopBox<T, D>*, MS> rank_boxes, sub_boxes;
  Kokkos::View<std::int64_t*, MS> tree_sizes;
  int per_rank, P, me;
  RankGrid<MS, D> grid;
  KOKKOS_INLINE_FUNCTION T distance(Point<T, D> const& q, int p, T limit) const {
    return rank_distance(rank_boxes, sub_boxes, per_rank, p, q, limit);
  }
  /// Every rank with points within squared distance `limit` of q (as the
  /// top sees them) and for which skip(p) is false, in rank order: from
  /// q's grid cell where that settles it, else by a scan of all ranks.
  template <class Skip, class Emit>
  KOKKOS_INLINE_FUNCTION void within(Point<T, D> const& q, T limit, Skip const& skip, Emit& emit) const {
    double gap;
    std::int64_t const c = grid.cell(q, gap);
    if (c >= 0 && RankGrid<MS, D>::settles(gap, double(limit))) {
      for (std::int64_t a = grid.offsets(c); a < grid.offsets(c + 1); ++a) {
        int const p = grid.ranks(a);
        if (!skip(p) && distance(q, p, limit) <= limit) emit(p);
      }
      return;
    }
    for (int p = 0; p < P; ++p)
      if (tree_sizes(p) > 0 && !skip(p) && distance(q, p, limit) <= limit) emit(p);
  }
};

struct SkipNone {
  KOKKOS_INLINE_FUNCTION bool operator()(int) const { return false; }
};

/// Every rank whose boxes lie within the radius.
template <class MS, class T, int D>
struct RadiusRule {
  Top<MS, T, D> top;
  Kokkos::View<Point<T, D>*, MS> queries;
  T sq_r;
  template <class Emit>
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, Emit& emit) const {
    top.within(queries(i), sq_r, SkipNone{}, emit);
  }
};

/// kNN phase 1: the nearest ranks by box distance (ties: this rank first,
/// then the following ones, so queries inside many boxes spread) until they
/// hold k points, none beyond the cutoff.
template <class MS, class T, int D>
struct NearestRule {
  Top<MS, T, D> top;
  Kokkos::View<Point<T, D>*, MS> queries;
  std::int64_t k;
  T sq_cutoff;
  template <class Emit>
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, Emit& emit) const {
    Point<T, D> const q = queries(i);
    std::int64_t have = 0;
    T prev_d = T(-1);
    int prev_rot = -1;
    // the first pick from q's grid cell where a rank there holds q (at
    // distance 0): every rank that does meets the cell, and the scan
    // below would pick the first of them in rotation order too
    double gap;
    std::int64_t const c = top.grid.cell(q, gap);
    if (c >= 0) {
      int best = -1, best_rot = top.P;
      for (std::int64_t a = top.grid.offsets(c); a < top.grid.offsets(c + 1); ++a) {
        int const p = top.grid.ranks(a);
        int const rot = p >= top.me ? p - top.me : p + top.P - top.me;
        if (rot < best_rot && top.distance(q, p, T(0)) == T(0)) {
          best = p;
          best_rot = rot;
        }
      }
      if (best >= 0) {
        emit(best);
        have += top.tree_sizes(best);
        prev_d = T(0);
        prev_rot = best_rot;
      }
    }
    while (have < k) {
      int best = -1, best_rot = top.P;
      T best_d = detail::infinity<T>();
      // no rank can come before one at this distance: nearer ones were
      // picked already, and ties go to the first in rotation order
      T const floor_d = prev_d < T(0) ? T(0) : prev_d;
      for (int rot = 0; rot < top.P; ++rot) {
        int const p = (top.me + rot) % top.P;
        if (top.tree_sizes(p) == 0) continue;
        T const d = top.distance(q, p, best_d); // exact unless above best_d
        if (d > sq_cutoff) continue;
        if (d < prev_d || (d == prev_d && rot <= prev_rot)) continue; // picked already
        if (best < 0 || d < best_d || (d == best_d && rot < best_rot)) {
          best = p;
          best_d = d;
          best_rot = rot;
          if (d == floor_d) break; // e.g. the query's own rank, at distance 0
        }
      }
      if (best < 0) break;
      emit(best);
      have += top.tree_sizes(best);
      prev_d = best_d;
      prev_rot = best_rot;
    }
  }
};

/// kNN phase 2: the other ranks within the bound of phase 1 (its k-th
/// distance; +inf where it found fewer than k), and the cutoff.
template <class MS, class T, int D, class Index>
struct BoundRule {
  Top<MS, T, D> top;
  Kokkos::View<Point<T, D>*, MS> queries;
  T sq_cutoff;
  Kokkos::View<std::int64_t*, MS> prev_offsets;
  Kokkos::View<std::int32_t*, MS> prev_dest;
  Rows<MS, T, Index> phase1;
  KOKKOS_INLINE_FUNCTION T bound(std::int64_t i) const {
    std::int64_t const k = std::int64_t(phase1.ranks.extent(1));
    return phase1.ranks(i, k - 1) >= 0 ? phase1.d(i, k - 1) : detail::infinity<T>();
  }
  template <class Emit>
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, Emit& emit) const {
    T const b = bound(i);
    T const limit = b < sq_cutoff ? b : sq_cutoff;
    top.within(queries(i), limit, Asked{prev_offsets(i), prev_offsets(i + 1), prev_dest}, emit);
  }
  struct Asked { // by phase 1
    std::int64_t begin, end;
    Kokkos::View<std::int32_t*, MS> dest;
    KOKKOS_INLINE_FUNCTION bool operator()(int p) const {
      bool asked = false;
      for (std::int64_t a = begin; a < end; ++a) asked = asked || dest(a) == p;
      return asked;
    }
  };
};

template <class T, int D>
struct PointBound {
  Point<T, D> p;
  T bound;
};

template <class MS, class T, int D>
struct MakePoint {
  Kokkos::View<Point<T, D>*, MS> queries;
  KOKKOS_INLINE_FUNCTION Point<T, D> operator()(std::int64_t i) const { return queries(i); }
};

template <class MS, class T, int D, class Index>
struct MakePointBound {
  BoundRule<MS, T, D, Index> rule;
  KOKKOS_INLINE_FUNCTION PointBound<T, D> operator()(std::int64_t i) const { return {rule.queries(i), rule.bound(i)}; }
};

template <class In, class Points, class Bounds>
struct Unpack {
  In in;
  Points points;
  Bounds bounds;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    points(j) = in(j).p;
    bounds(j) = in(j).bound;
  }
};

// ---- the rows of the queries a rank received --------------------------------

/// Row lengths of local kNN results: the valid neighbours within the
/// query's bound (a prefix: rows are sorted, missing ones last).
template <class Idx, class Dist, class Bounds, class Counts>
struct KnnRowCount {
  Idx idx;
  Dist dist;
  Bounds bounds; // empty: no bound
  Counts counts;
  Kokkos::View<std::int8_t*, typename Counts::memory_space> in_place; // empty: none
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    using T = typename Dist::non_const_value_type;
    std::int64_t const k = std::int64_t(idx.extent(1));
    T const b = bounds.extent(0) ? bounds(j) : detail::infinity<T>();
    std::int64_t c = 0;
    while (c < k && idx(j, c) >= 0 && dist(j, c) <= b) ++c;
    counts(j) = c;
    if (in_place.extent(0)) in_place(j) = 0;
  }
};

/// The index a rank reports for tree position `pos`: the caller's index on
/// that rank, and with caller ids the id.
template <class MS, class Index>
struct LocalIds {
  Kokkos::View<Index*, MS> perm;
  Kokkos::View<std::int64_t*, MS> ids;
  KOKKOS_INLINE_FUNCTION Index index(Index pos) const { return perm.extent(0) ? perm(pos) : pos; }
};

/// The rows' entries: a thread per (query j, column c) on a GPU, per
/// query on CPU cores (CopyKnn says why).
template <class MS, class T, class Index, class Idx, class Dist>
struct KnnRowFill {
  Idx idx;
  Dist dist;
  Kokkos::View<std::int64_t*, MS> offsets;
  LocalIds<MS, Index> local;
  Kokkos::View<Neighbor<T, Index>*, MS> entries;
  Kokkos::View<std::int64_t*, MS> entry_ids;
  Kokkos::View<std::int32_t*, MS> counts32;
  Kokkos::View<std::int8_t*, MS> in_place; // empty: none
  bool per_query;
  KOKKOS_INLINE_FUNCTION std::int32_t count(std::int64_t j, std::int64_t n) const {
    return in_place.extent(0) && in_place(j) ? -1 : std::int32_t(n);
  }
  KOKKOS_INLINE_FUNCTION void fill(std::int64_t j, std::int64_t c, std::int64_t b) const {
    Index const pos = idx(j, c);
    entries(b + c) = Neighbor<T, Index>{dist(j, c), local.index(pos)};
    if (entry_ids.extent(0)) entry_ids(b + c) = local.ids(pos);
  }
  KOKKOS_FUNCTION void operator()(std::int64_t w) const {
    std::int64_t const k = std::int64_t(idx.extent(1));
    std::int64_t const j = per_query ? w : w / k;
    std::int64_t const b = offsets(j), n = offsets(j + 1) - b;
    if (per_query) {
      counts32(j) = count(j, n);
      for (std::int64_t c = 0; c < n; ++c) fill(j, c, b);
      return;
    }
    std::int64_t const c = w % k;
    if (c == 0) counts32(j) = count(j, n);
    if (c < n) fill(j, c, b);
  }
};

/// Rows in k slots each (closest point's second phase: fixed slots return
/// in one exchange, without the row counts' exchange before it): row j's
/// valid entries, then (+inf, -1) to slot k.
/// A thread per slot on a GPU, per row on CPU cores (CopyKnn says why).
template <class MS, class T, class Index, class Idx, class Dist>
struct KnnSlotFill {
  Idx idx;
  Dist dist;
  Kokkos::View<std::int64_t*, MS> counts; // valid entries per row
  LocalIds<MS, Index> local;
  Kokkos::View<Neighbor<T, Index>*, MS> entries;
  Kokkos::View<std::int64_t*, MS> entry_ids;
  bool per_query;
  KOKKOS_INLINE_FUNCTION void fill(std::int64_t j, std::int64_t c, std::int64_t k) const {
    std::int64_t const at = j * k + c;
    if (c < counts(j)) {
      Index const pos = idx(j, c);
      entries(at) = Neighbor<T, Index>{dist(j, c), local.index(pos)};
      if (entry_ids.extent(0)) entry_ids(at) = local.ids(pos);
    } else {
      entries(at) = Neighbor<T, Index>{detail::infinity<T>(), Index(-1)};
      if (entry_ids.extent(0)) entry_ids(at) = -1;
    }
  }
  KOKKOS_FUNCTION void operator()(std::int64_t w) const {
    std::int64_t const k = std::int64_t(idx.extent(1));
    if (per_query)
      for (std::int64_t c = 0; c < k; ++c) fill(w, c, k);
    else
      fill(w / k, w % k, k);
  }
};

/// Phase 1, the queries this rank sent itself that have no other source:
/// their rows go straight from the local kNN into the phase-1 rows (what
/// the fill, the return to itself and the copy would have put there), and
/// their returned rows are left empty (count -1: Runs::in_place). Where
/// queries are owned where their points are, that is nearly every row. A
/// thread per entry on a GPU, per row on CPU cores (CopyKnn says why).
template <class MS, class T, class Index, class Idx, class Dist>
struct SelfRows {
  Idx idx;
  Dist dist;
  Kokkos::View<std::int64_t*, MS> counts; // valid entries per received row (before the scan)
  Kokkos::View<std::int8_t*, MS> in_place;
  Kokkos::View<std::int64_t*, MS> query_offsets, sorted, pair_query;
  std::int64_t recv_at, send_at; // the self block's first row, and its first send position
  LocalIds<MS, Index> local;
  Kokkos::View<std::int64_t*, MS> global_offsets;
  std::int32_t me;
  Rows<MS, T, Index> rows;
  bool per_query;
  KOKKOS_INLINE_FUNCTION std::int64_t query(std::int64_t j) const {
    std::int64_t const q = pair_query(sorted(send_at + j));
    return query_offsets(q + 1) - query_offsets(q) == 1 ? q : -1;
  }
  KOKKOS_INLINE_FUNCTION void put(std::int64_t jr, std::int64_t q, std::int64_t t, std::int64_t n) const {
    if (t >= n) {
      rows.set(q, t, missing<T, Index>());
      return;
    }
    Index const pos = idx(jr, t);
    std::int64_t const key = local.ids.extent(0) ? local.ids(pos) : global_offsets(me) + std::int64_t(local.index(pos));
    rows.set(q, t, Candidate<T, Index>{dist(jr, t), key, me, local.index(pos)});
  }
  KOKKOS_FUNCTION void operator()(std::int64_t w) const {
    std::int64_t const k = std::int64_t(idx.extent(1));
    std::int64_t const j = per_query ? w : w / k, jr = recv_at + j;
    std::int64_t const q = query(j);
    if (q < 0) return;
    std::int64_t const n = counts(jr);
    if (per_query) {
      for (std::int64_t t = 0; t < k; ++t) put(jr, q, t, n);
    } else {
      put(jr, q, w % k, n);
    }
  }
};

/// After SelfRows (a thread per row): the rows it wrote return no entries.
template <class MS>
struct SelfRowsDone {
  Kokkos::View<std::int64_t*, MS> counts;
  Kokkos::View<std::int8_t*, MS> in_place;
  Kokkos::View<std::int64_t*, MS> query_offsets, sorted, pair_query;
  std::int64_t recv_at, send_at;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const q = pair_query(sorted(send_at + j));
    if (query_offsets(q + 1) - query_offsets(q) != 1) return;
    counts(recv_at + j) = 0;
    in_place(recv_at + j) = 1;
  }
};

template <class MS, class T, class Index, class Res>
struct RadiusRowFill {
  Res res;
  LocalIds<MS, Index> local;
  Kokkos::View<Neighbor<T, Index>*, MS> entries;
  Kokkos::View<std::int64_t*, MS> entry_ids;
  Kokkos::View<std::int64_t*, MS> counts;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const b = res.offsets(j), e = res.offsets(j + 1);
    counts(j) = e - b;
    for (std::int64_t c = b; c < e; ++c) {
      Index const pos = res.indices(c);
      entries(c) = Neighbor<T, Index>{res.sq_distances(c), local.index(pos)};
      if (entry_ids.extent(0)) entry_ids(c) = local.ids(pos);
    }
  }
};

template <class QV, int D>
struct FirstNonFinite {
  QV q;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    for (int d = 0; d < D; ++d)
      if (!detail::is_finite(q(i)[d]) && i < m) m = i;
  }
};

// ---- one call ----------------------------------------------------------------

/// The shared steps of the operations, with this rank's clock and traffic.
template <class Exec, class MS, class LocalTree>
struct Call {
  using T = typename LocalTree::coordinate_type;
  using Index = typename LocalTree::index_type;
  static constexpr int D = LocalTree::dimension;
  using PV = Kokkos::View<Point<T, D>*, MS>;

  Exec const& exec;
  State<MS, LocalTree>& s;
  char const* where;
  Traffic traffic;
  Kokkos::Timer timer;

  Call(Exec const& e, State<MS, LocalTree>& st, char const* w) : exec(e), s(st), where(w) {
    s.stats = DistributedStats{};
    s.scratch.begin();
  }
  ~Call() {
    s.stats.bytes_sent = traffic.sent;
    s.stats.bytes_received = traffic.received;
  }
  /// Seconds since the last lap (the execution space fenced).
  double lap() {
    exec.fence();
    double const t = timer.seconds();
    timer.reset();
    return t;
  }
  Top<MS, T, D> top() const {
    return {s.rank_boxes, s.sub_boxes, s.tree_sizes, s.boxes_per_rank, s.comm.size(), s.comm.rank(), s.grid};
  }
  LocalIds<MS, Index> local_ids() const { return {s.perm, s.ids}; }

  /// The queries as points, checked finite on every rank together.
  template <class Queries, class Check>
  PV queries(Queries const& queries, Check const& check) {
    PV q;
    s.comm.collectively([&] {
      check();
      q = detail::query_points<Exec, LocalTree>(exec, queries);
      std::int64_t const m = std::int64_t(q.extent(0));
      std::int64_t bad = std::numeric_limits<std::int64_t>::max();
      if (m > 0)
        Kokkos::parallel_reduce("kdforge::distributed::check_queries", Kokkos::RangePolicy<Exec>(exec, 0, m),
                                FirstNonFinite<PV, D>{q}, Kokkos::Min<std::int64_t>(bad));
      KDFORGE_REQUIRE(bad == std::numeric_limits<std::int64_t>::max(), where, "query ", bad, " of rank ",
                      s.comm.rank(), " has a NaN or infinite coordinate; pass finite queries");
    });
    s.stats.queries = std::int64_t(q.extent(0));
    return q;
  }

  template <class Rule>
  Routes<MS> route(Rule const& rule, std::int64_t m) {
    Routes<MS> r = distributed::route(exec, s.comm, rule, m, s.scratch);
    s.stats.sent_pairs += r.pairs;
    s.stats.remote_pairs += r.pairs - r.send_counts[std::size_t(s.comm.rank())];
    ++s.stats.phases;
    return r;
  }

  /// The queries to their ranks (the counts first: each rank learns how
  /// many it receives from each).
  template <class Elem, class Make>
  Kokkos::View<Elem*, MS> forward(Routes<MS>& r, Make const& make) {
    auto send = pack<Exec, MS, Elem>(exec, r, make, s.scratch);
    s.stats.route_s += lap();
    r.recv_counts = s.comm.exchange_counts(r.send_counts);
    auto recv =
        s.comm.alltoallv(exec, send, r.send_counts, r.recv_counts, traffic, "kdforge::distributed::queries", &s.scratch);
    s.stats.forward_s += lap();
    return recv;
  }

  Runs<MS, T, Index> runs(Routes<MS> const& r, Returned<MS, T, Index, std::int32_t> const& b) const {
    return {r.query_offsets, r.dest, r.position, b.offsets, b.entries, b.ids, s.offsets, b.counts, b.stride};
  }
  Runs<MS, T, Index> runs(Routes<MS> const& r, Returned<MS, T, Index, std::int64_t> const& b) const {
    return {r.query_offsets, r.dest, r.position, b.offsets, b.entries, b.ids, s.offsets, {}};
  }

  /// Local kNN of the received points and their rows (within `bounds`
  /// where given), returned to the senders. With `direct` (phase 1), the
  /// rows of this rank's own single-source queries go straight there
  /// (SelfRows) and return empty. With `slots` (phase 2 of closest point),
  /// every row returns in k slots (KnnSlotFill): one exchange instead of two.
  Returned<MS, T, Index, std::int32_t> knn_rows(Routes<MS> const& r, PV const& points,
                                                Kokkos::View<T*, MS> const& bounds, int k,
                                                QueryOptions const& options,
                                                Rows<MS, T, Index> const* direct = nullptr, bool slots = false) {
    std::int64_t const n = std::int64_t(points.extent(0));
    Kokkos::View<std::int32_t*, MS> counts32;
    Kokkos::View<std::int64_t*, MS> offsets;
    Kokkos::View<Neighbor<T, Index>*, MS> entries;
    Kokkos::View<std::int64_t*, MS> ids;
    s.comm.collectively([&] {
      counts32 = s.scratch.template take<Kokkos::View<std::int32_t*, MS>>("kdforge::distributed::row_counts", n);
      offsets = s.scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::row_offsets", n + 1);
      QueryOptions o = options;
      o.check_queries = false; // checked on every rank together
      KnnResultFor<Exec, LocalTree> res;
      res.indices = s.scratch.template take<decltype(res.indices)>("kdforge::distributed::local_indices", n, k);
      res.sq_distances =
          s.scratch.template take<decltype(res.sq_distances)>("kdforge::distributed::local_sq_distances", n, k);
      Kokkos::View<std::int8_t*, MS> in_place;
      if (direct) in_place = s.scratch.template take<Kokkos::View<std::int8_t*, MS>>("kdforge::distributed::in_place", n);
      // within the bounds (phase 2): the walks prune by them from the root,
      // where a query far from this rank's points would otherwise walk
      // until it had k of them, all then dropped by KnnRowCount
      Kokkos::View<T const*, MS> const cut = bounds;
      detail::api_call<MS>("knn", [&] { detail::knn_impl(exec, s.tree, points, k, res, o, s.workspace, cut); });
      Kokkos::parallel_for("kdforge::distributed::knn_rows", Kokkos::RangePolicy<Exec>(exec, 0, n),
                           KnnRowCount<decltype(res.indices), decltype(res.sq_distances), Kokkos::View<T*, MS>,
                                       decltype(offsets)>{res.indices, res.sq_distances, bounds, offsets, in_place});
      constexpr bool per_query = per_query_rows<Exec>();
      if (direct) {
        int const me = s.comm.rank();
        std::int64_t send_at = 0, recv_at = 0;
        for (int p = 0; p < me; ++p) {
          send_at += r.send_counts[std::size_t(p)];
          recv_at += r.recv_counts[std::size_t(p)];
        }
        std::int64_t const self = r.send_counts[std::size_t(me)];
        if (self > 0) {
          Kokkos::parallel_for("kdforge::distributed::self_rows",
                               Kokkos::RangePolicy<Exec>(exec, 0, per_query ? self : self * std::int64_t(k)),
                               SelfRows<MS, T, Index, decltype(res.indices), decltype(res.sq_distances)>{
                                   res.indices, res.sq_distances, offsets, in_place, r.query_offsets, r.sorted,
                                   r.pair_query, recv_at, send_at, local_ids(), s.offsets, me, *direct, per_query});
          Kokkos::parallel_for("kdforge::distributed::self_rows_done", Kokkos::RangePolicy<Exec>(exec, 0, self),
                               SelfRowsDone<MS>{offsets, in_place, r.query_offsets, r.sorted, r.pair_query, recv_at,
                                                send_at});
        }
      }
      if (slots) {
        entries = s.scratch.template take<Kokkos::View<Neighbor<T, Index>*, MS>>("kdforge::distributed::rows",
                                                                                 n * std::int64_t(k));
        if (s.has_ids)
          ids = s.scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::row_ids", n * std::int64_t(k));
        Kokkos::parallel_for("kdforge::distributed::knn_slots",
                             Kokkos::RangePolicy<Exec>(exec, 0, per_query ? n : n * std::int64_t(k)),
                             KnnSlotFill<MS, T, Index, decltype(res.indices), decltype(res.sq_distances)>{
                                 res.indices, res.sq_distances, offsets, local_ids(), entries, ids, per_query});
        exec.fence();
        return;
      }
      std::int64_t const total = scan_with_total(exec, offsets, s.scratch.vendor());
      entries = s.scratch.template take<Kokkos::View<Neighbor<T, Index>*, MS>>("kdforge::distributed::rows", total);
      if (s.has_ids) ids = s.scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::row_ids", total);
      Kokkos::parallel_for("kdforge::distributed::knn_fill",
                           Kokkos::RangePolicy<Exec>(exec, 0, per_query ? n : n * std::int64_t(k)),
                           KnnRowFill<MS, T, Index, decltype(res.indices), decltype(res.sq_distances)>{
                               res.indices, res.sq_distances, offsets, local_ids(), entries, ids, counts32, in_place,
                               per_query});
      exec.fence();
    });
    s.stats.local_s += lap();
    auto back = slots ? send_back_slots(exec, s.comm, r, entries, ids, k, s.has_ids, traffic, s.scratch)
                      : send_back(exec, s.comm, r, counts32, offsets, entries, ids, true, s.has_ids, traffic, s.scratch);
    s.stats.return_s += lap();
    return back;
  }
};

/// The m rows of `out` from the runs (and the prior rows): copies for
/// single-source queries, the merge for the others.
template <class Exec, class MS, class T, class Index>
void merge_knn(Exec const& exec, Runs<MS, T, Index> const& runs, Rows<MS, T, Index> const& prior,
               Rows<MS, T, Index> const& out, std::int64_t m, std::int64_t k) {
  constexpr bool per_query = per_query_rows<Exec>();
  Kokkos::parallel_for("kdforge::distributed::knn_copy", Kokkos::RangePolicy<Exec>(exec, 0, per_query ? m : m * k),
                       CopyKnn<MS, T, Index>{runs, prior, out, k, per_query});
  Kokkos::parallel_for("kdforge::distributed::knn_merge", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       MergeKnn<MS, T, Index>{runs, prior, out, k});
}

template <class R, class Index, class MS>
void ensure_knn(R& out, std::int64_t m, int k) {
  detail::ensure_extents(out.ranks, "kdforge::distributed::knn::ranks", m, k);
  detail::ensure_extents(out.indices, "kdforge::distributed::knn::indices", m, k);
  detail::ensure_extents(out.global_indices, "kdforge::distributed::knn::global_indices", m, k);
  detail::ensure_extents(out.sq_distances, "kdforge::distributed::knn::sq_distances", m, k);
}

/// Both kNN phases into `out` (M x k).
template <class Exec, class MS, class LocalTree, class Queries>
void knn(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries, int k,
         DistributedKnnResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type>& out,
         QueryOptions const& options, char const* where) {
  using C = Call<Exec, MS, LocalTree>;
  using T = typename C::T;
  using Index = typename C::Index;
  constexpr int D = C::D;
  using PV = typename C::PV;
  using RowsT = Rows<MS, T, Index>;
  auto& s = tree.state();
  s.comm.call(where, [&] {
    C call(exec, s, where);
    T sq_cutoff{};
    PV q = call.queries(queries, [&] {
      KDFORGE_REQUIRE(k >= 1, where, "k must be >= 1 (got ", k, ")");
      sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, where, "QueryOptions::cutoff_radius");
      detail::refuse_bucket_only_options(options, where);
      (void)detail::make_walk<Exec>(options, where); // options checked before anything travels
    });
    std::int64_t const m = std::int64_t(q.extent(0));
    auto const top = call.top();

    // phase 1: the nearest ranks
    auto r1 = call.route(NearestRule<MS, T, D>{top, q, k, sq_cutoff}, m);
    auto recv1 = call.template forward<Point<T, D>>(r1, MakePoint<MS, T, D>{q});
    RowsT phase1;
    phase1.ranks = s.scratch.template take<decltype(phase1.ranks)>("kdforge::distributed::knn::phase1", m, k);
    phase1.indices = s.scratch.template take<decltype(phase1.indices)>("kdforge::distributed::knn::phase1", m, k);
    phase1.keys = s.scratch.template take<decltype(phase1.keys)>("kdforge::distributed::knn::phase1", m, k);
    phase1.d = s.scratch.template take<decltype(phase1.d)>("kdforge::distributed::knn::phase1", m, k);
    auto back1 = call.knn_rows(r1, recv1, Kokkos::View<T*, MS>(), k, options, &phase1);
    // every query asked this rank alone (m pairs, all its own; no query has
    // two pairs to one rank): SelfRows wrote every row, nothing to copy
    bool const all_in_place = r1.pairs == m && r1.send_counts[std::size_t(s.comm.rank())] == m;
    if (!all_in_place) merge_knn(exec, call.runs(r1, back1), RowsT{}, phase1, m, k);
    s.stats.merge_s += call.lap();

    // phase 2: every other rank within the bound
    double const before2 = s.stats.total_s();
    BoundRule<MS, T, D, Index> rule2{top, q, sq_cutoff, r1.query_offsets, r1.dest, phase1};
    auto r2 = call.route(rule2, m);
    auto recv2 = call.template forward<PointBound<T, D>>(r2, MakePointBound<MS, T, D, Index>{rule2});
    std::int64_t const n2 = std::int64_t(recv2.extent(0));
    PV points2 = s.scratch.template take<PV>("kdforge::distributed::points2", n2);
    auto bounds2 = s.scratch.template take<Kokkos::View<T*, MS>>("kdforge::distributed::bounds2", n2);
    Kokkos::parallel_for("kdforge::distributed::unpack", Kokkos::RangePolicy<Exec>(exec, 0, n2),
                         Unpack<decltype(recv2), PV, decltype(bounds2)>{recv2, points2, bounds2});
    // closest point's rows in one slot each (send_back_slots): one exchange
    // instead of two, the same bytes. Larger k pads every row to k entries,
    // and through host staging the bytes cost more than the exchange saved
    // (4 H100s, weak 25M x 2.5M per GPU, kNN k = 8: return 0.59-0.64 ms
    // in two exchanges, 0.83-0.85 in slots; closest point: 3.33-3.38 ms
    // in all, 3.12-3.15 in slots).
    auto back2 = call.knn_rows(r2, points2, bounds2, k, options, nullptr, k == 1);
    // the caller's result (whose Views `res` may share) is written only
    // once every rank holds all it needs: nothing after the agreement fails
    auto res = out;
    ensure_knn<decltype(res), Index, MS>(res, m, k);
    s.comm.agree();
    merge_knn(exec, call.runs(r2, back2), phase1, RowsT{res.ranks, res.indices, res.global_indices, res.sq_distances},
              m, k);
    s.stats.merge_s += call.lap();
    s.stats.phase2_s = s.stats.total_s() - before2;
    out = res;
  });
}

} // namespace kdforge::distributed

namespace kdforge {

/// The k nearest neighbours over all ranks' points of each of this rank's
/// queries, sorted by (squared distance, global index): the rows one tree
/// over the union of the points gives, ties included. Collective: every rank
/// calls it with its own queries (any number, none included) and the same
/// k and options. options.cutoff_radius and the walk options apply as for
/// one tree. A failure on any rank makes every rank throw the same error
/// (a NaN query: kdforge::Error; memory: kdforge::OutOfMemoryError), with
/// `out` as it was on every rank. Returns with the results complete.
template <class Exec, class MS, class LocalTree, class Queries>
void knn(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries, int k,
         DistributedKnnResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type>& out,
         QueryOptions const& options = {}) {
  detail::Region region("kdforge::distributed::knn");
  distributed::knn(exec, tree, queries, k, out, options, "knn");
}

template <class Exec, class MS, class LocalTree, class Queries>
DistributedKnnResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type>
knn(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries, int k,
    QueryOptions const& options = {}) {
  DistributedKnnResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type> out;
  knn(exec, tree, queries, k, out, options);
  return out;
}

/// The closest point over all ranks of each of this rank's queries (kNN
/// with k = 1), or missing where nothing lies within options.cutoff_radius.
/// Collective, as knn.
template <class Exec, class MS, class LocalTree, class Queries>
void closest_point(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries,
                   DistributedClosestResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type>& out,
                   QueryOptions const& options = {}) {
  detail::Region region("kdforge::distributed::closest_point");
  tree.state().comm.call("closest_point", [&] {
    auto& rows = tree.state().closest_rows; // kept between calls: rewritten in place when M is the same
    distributed::knn(exec, tree, queries, 1, rows, options, "closest_point");
    std::int64_t const m = std::int64_t(rows.ranks.extent(0));
    auto res = out; // written after the agreement, as in knn
    detail::ensure_extents(res.ranks, "kdforge::distributed::closest::ranks", m);
    detail::ensure_extents(res.indices, "kdforge::distributed::closest::indices", m);
    detail::ensure_extents(res.global_indices, "kdforge::distributed::closest::global_indices", m);
    detail::ensure_extents(res.sq_distances, "kdforge::distributed::closest::sq_distances", m);
    tree.state().comm.agree();
    Kokkos::deep_copy(exec, res.ranks, Kokkos::subview(rows.ranks, Kokkos::ALL, 0));
    Kokkos::deep_copy(exec, res.indices, Kokkos::subview(rows.indices, Kokkos::ALL, 0));
    Kokkos::deep_copy(exec, res.global_indices, Kokkos::subview(rows.global_indices, Kokkos::ALL, 0));
    Kokkos::deep_copy(exec, res.sq_distances, Kokkos::subview(rows.sq_distances, Kokkos::ALL, 0));
    exec.fence();
    out = res;
  });
}

template <class Exec, class MS, class LocalTree, class Queries>
DistributedClosestResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type>
closest_point(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries,
              QueryOptions const& options = {}) {
  DistributedClosestResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type> out;
  closest_point(exec, tree, queries, out, options);
  return out;
}

/// The number of points of all ranks within `radius` (inclusive) of each of
/// this rank's queries, capped at options.max_neighbors where >= 0.
/// Collective, as knn.
template <class Exec, class MS, class LocalTree, class Queries>
void radius_count(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries, double radius,
                  Kokkos::View<std::int64_t*, MS>& counts, RadiusOptions const& options = {}) {
  using C = distributed::Call<Exec, MS, LocalTree>;
  using T = typename C::T;
  using Index = typename C::Index;
  constexpr int D = C::D;
  detail::Region region("kdforge::distributed::radius_count");
  auto& s = tree.state();
  s.comm.call("radius_count", [&] {
    C call(exec, s, "radius_count");
    T sq_r{};
    auto q = call.queries(queries, [&] {
      sq_r = detail::checked_sq_radius<T>(radius, "radius_count", "radius");
      KDFORGE_REQUIRE(options.max_neighbors >= -1, "radius_count", "RadiusOptions::max_neighbors must be >= 0, or -1 for no limit");
      (void)detail::make_walk<Exec>(options, "radius_count");
    });
    std::int64_t const m = std::int64_t(q.extent(0));
    auto r = call.route(distributed::RadiusRule<MS, T, D>{call.top(), q, sq_r}, m);
    auto recv = call.template forward<Point<T, D>>(r, distributed::MakePoint<MS, T, D>{q});
    Kokkos::View<std::int64_t*, MS> local;
    s.comm.collectively([&] {
      RadiusOptions o = options;
      o.check_queries = false;
      local = s.scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::radius_counts",
                                                                       std::int64_t(recv.extent(0)));
      kdforge::radius_count(exec, s.tree, recv, radius, local, o, s.workspace);
      exec.fence();
    });
    s.stats.local_s += call.lap();
    auto back = distributed::send_back(exec, s.comm, r, local, Kokkos::View<std::int64_t*, MS>(),
                                       Kokkos::View<Neighbor<T, Index>*, MS>(), Kokkos::View<std::int64_t*, MS>(), false,
                                       false, call.traffic, s.scratch);
    s.stats.return_s += call.lap();
    auto res = counts; // written after the agreement, as in knn
    detail::ensure_extents(res, "kdforge::distributed::radius::counts", m);
    s.comm.agree();
    Kokkos::parallel_for("kdforge::distributed::radius_count_merge", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         distributed::MergeCounts<MS>{r.query_offsets, r.position, back.counts, options.max_neighbors, res});
    s.stats.merge_s += call.lap();
    counts = res;
  });
}

template <class Exec, class MS, class LocalTree, class Queries>
Kokkos::View<std::int64_t*, MS> radius_count(Exec const& exec, DistributedTree<MS, LocalTree> const& tree,
                                             Queries const& queries, double radius, RadiusOptions const& options = {}) {
  Kokkos::View<std::int64_t*, MS> counts;
  radius_count(exec, tree, queries, radius, counts, options);
  return counts;
}

/// All points of all ranks within `radius` (inclusive) of each of this
/// rank's queries, in CSR form. With options.sort or max_neighbors >= 0 the
/// rows are those of one tree over the union (sorted by squared distance,
/// then global index); otherwise they hold the same neighbours rank by
/// rank. Collective, as knn.
template <class Exec, class MS, class LocalTree, class Queries>
void radius_search(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries, double radius,
                   DistributedRadiusResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type>& out,
                   RadiusOptions const& options = {}) {
  using C = distributed::Call<Exec, MS, LocalTree>;
  using T = typename C::T;
  using Index = typename C::Index;
  constexpr int D = C::D;
  detail::Region region("kdforge::distributed::radius_search");
  auto& s = tree.state();
  s.comm.call("radius_search", [&] {
    C call(exec, s, "radius_search");
    T sq_r{};
    auto q = call.queries(queries, [&] {
      sq_r = detail::checked_sq_radius<T>(radius, "radius_search", "radius");
      KDFORGE_REQUIRE(options.max_neighbors >= -1, "radius_search", "RadiusOptions::max_neighbors must be >= 0, or -1 for no limit");
      (void)detail::make_walk<Exec>(options, "radius_search");
    });
    std::int64_t const m = std::int64_t(q.extent(0));
    auto r = call.route(distributed::RadiusRule<MS, T, D>{call.top(), q, sq_r}, m);
    auto recv = call.template forward<Point<T, D>>(r, distributed::MakePoint<MS, T, D>{q});
    std::int64_t const n = std::int64_t(recv.extent(0));
    bool const sorted = options.sort || options.max_neighbors >= 0;
    Kokkos::View<std::int64_t*, MS> row_counts;
    Kokkos::View<std::int64_t*, MS> row_offsets;
    Kokkos::View<Neighbor<T, Index>*, MS> entries;
    Kokkos::View<std::int64_t*, MS> ids;
    s.comm.collectively([&] {
      row_counts = s.scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::row_counts", n);
      RadiusOptions o = options;
      o.check_queries = false;
      o.sort = sorted; // each rank's part sorted, for the merge
      RadiusResultFor<Exec, LocalTree> res;
      kdforge::radius_search(exec, s.tree, recv, radius, res, o, s.workspace);
      std::int64_t const total = std::int64_t(res.indices.extent(0));
      entries = s.scratch.template take<Kokkos::View<Neighbor<T, Index>*, MS>>("kdforge::distributed::rows", total);
      if (s.has_ids) ids = s.scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::row_ids", total);
      Kokkos::parallel_for("kdforge::distributed::radius_rows", Kokkos::RangePolicy<Exec>(exec, 0, n),
                           distributed::RadiusRowFill<MS, T, Index, decltype(res)>{res, call.local_ids(), entries, ids, row_counts});
      row_offsets = res.offsets;
      exec.fence();
    });
    s.stats.local_s += call.lap();
    auto back = distributed::send_back(exec, s.comm, r, row_counts, row_offsets, entries, ids, true, s.has_ids,
                                       call.traffic, s.scratch);
    s.stats.return_s += call.lap();
    auto runs = call.runs(r, back);
    // new Views throughout, assigned to `out` once filled
    auto res = out;
    auto sized = [&](auto& v, char const* label, std::int64_t n_rows) {
      using V = std::decay_t<decltype(v)>;
      v = backend::allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), std::size_t(n_rows));
    };
    sized(res.offsets, "kdforge::distributed::radius::offsets", m + 1);
    Kokkos::parallel_for("kdforge::distributed::radius_lengths", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         distributed::MergeRadiusCount<MS, T, Index>{runs, options.max_neighbors, res.offsets});
    std::int64_t const total = distributed::scan_with_total(exec, res.offsets, s.scratch.vendor());
    sized(res.ranks, "kdforge::distributed::radius::ranks", total);
    sized(res.indices, "kdforge::distributed::radius::indices", total);
    sized(res.global_indices, "kdforge::distributed::radius::global_indices", total);
    sized(res.sq_distances, "kdforge::distributed::radius::sq_distances", total);
    s.comm.agree(); // so no rank replaces its `out` while another fails
    Kokkos::parallel_for("kdforge::distributed::radius_merge", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         distributed::MergeRadiusFill<MS, T, Index>{runs, res.offsets, res.ranks, res.indices,
                                                                    res.global_indices, res.sq_distances, sorted});
    s.stats.merge_s += call.lap();
    out = res;
  });
}

template <class Exec, class MS, class LocalTree, class Queries>
DistributedRadiusResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type>
radius_search(Exec const& exec, DistributedTree<MS, LocalTree> const& tree, Queries const& queries, double radius,
              RadiusOptions const& options = {}) {
  DistributedRadiusResult<MS, typename LocalTree::coordinate_type, typename LocalTree::index_type> out;
  radius_search(exec, tree, queries, radius, out, options);
  return out;
}

} // namespace kdforge
