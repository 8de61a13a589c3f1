#pragma once
// Forwarding queries to ranks and their rows back (after ArborX's
// DistributedTree: Lebrun-Grandie et al. 2020, section 3.3).
//
//  route:   a rule names, per query, the ranks to ask; the (query, rank)
//           pairs are counted, listed query by query, and stably sorted by
//           rank (where not in rank order already), which lays out the send
//           buffer rank by rank with each rank's queries in the caller's
//           order.
//  forward: counts by MPI_Alltoall, the queries (and a bound per query
//           where the rule has one) by MPI_Alltoallv.
//  back:    the receiving rank's rows, one per query received (a count and
//           its neighbours), returned by two MPI_Alltoallv in the order they
//           came: counts first, then the neighbours, so no rank needs to
//           know another's row sizes in advance. The receiver of the rows
//           finds each pair's row by a scan of the counts. Rows of at most
//           one entry (closest point's second phase) return in one slot
//           each instead, in one exchange (send_back_slots).
//
// Only what an answer needs travels: D coordinates out (and the kNN bound
// in the second phase), a row count and (squared distance, index) per
// neighbour back; global ids only where the caller gave them.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/distributed/communicator.hpp>
#include <kdforge/distributed/results.hpp>
#include <kdforge/distributed/scratch.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kdforge::distributed {

/// The (query, rank) pairs of one exchange.
template <class MemorySpace>
struct Routes {
  Kokkos::View<std::int64_t*, MemorySpace> query_offsets; ///< M + 1: query i's pairs, in the rule's order
  Kokkos::View<std::int32_t*, MemorySpace> dest;          ///< rank of each pair
  Kokkos::View<std::int64_t*, MemorySpace> pair_query;    ///< query of each pair
  Kokkos::View<std::int64_t*, MemorySpace> sorted;        ///< send position -> pair
  Kokkos::View<std::int64_t*, MemorySpace> position;      ///< pair -> send position
  std::vector<std::int64_t> send_counts;                  ///< pairs per rank
  std::vector<std::int64_t> recv_counts;                  ///< queries each rank sends this one
  std::int64_t pairs = 0;
};

/// Destinations the count pass keeps per query, so that the fill pass
/// copies them instead of asking the rule again (most queries have one or
/// two; a rule tests every rank's boxes, so on many ranks it is most of
/// the routing).
inline constexpr int route_cached = 4;

template <class Rule, class Counts, class MS>
struct RouteCount {
  Rule rule;
  Counts counts;
  Kokkos::View<std::int32_t*, MS> cache; // route_cached per query
  struct Counter {
    std::int32_t* kept;
    std::int64_t n = 0;
    KOKKOS_INLINE_FUNCTION void operator()(int p) {
      if (n < route_cached) kept[n] = p;
      ++n;
    }
  };
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    Counter c{&cache(i * route_cached)};
    rule(i, c);
    counts(i) = c.n;
  }
};

template <class Rule, class MS>
struct RouteFill {
  Rule rule;
  Kokkos::View<std::int64_t*, MS> offsets;
  Kokkos::View<std::int32_t*, MS> dest;
  Kokkos::View<std::int64_t*, MS> pair_query;
  Kokkos::View<std::uint32_t*, MS> keys;
  Kokkos::View<std::int64_t*, MS> sorted;
  struct Writer {
    RouteFill const* f;
    std::int64_t i, pos;
    KOKKOS_INLINE_FUNCTION void operator()(int p) {
      f->dest(pos) = p;
      f->pair_query(pos) = i;
      f->keys(pos) = std::uint32_t(p);
      f->sorted(pos) = pos;
      ++pos;
    }
  };
  Kokkos::View<std::int32_t*, MS> cache; // RouteCount's
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    Writer w{this, i, offsets(i)};
    std::int64_t const n = offsets(i + 1) - offsets(i);
    if (n <= route_cached) {
      for (std::int64_t j = 0; j < n; ++j) w(cache(i * route_cached + j));
    } else {
      rule(i, w); // the same destinations in the same order: the rule is deterministic
    }
  }
};

/// Pairs j whose rank key is above the next one's (none: already in rank
/// order).
template <class MS>
struct Descents {
  Kokkos::View<std::uint32_t*, MS> keys;
  KOKKOS_FUNCTION void operator()(std::int64_t j, std::int64_t& n) const { n += keys(j) > keys(j + 1) ? 1 : 0; }
};

template <class MS>
struct RouteIndex {
  Kokkos::View<std::int64_t*, MS> sorted, position;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const { position(sorted(j)) = j; }
};

/// first(p): where rank p's pairs begin in the sorted keys (first(P) = pairs),
/// by binary search (no atomics: every pair would hit one of P counters).
template <class MS>
struct RankStarts {
  Kokkos::View<std::uint32_t*, MS> keys;
  Kokkos::View<std::int64_t*, MS> first;
  std::int64_t n;
  KOKKOS_FUNCTION void operator()(std::int64_t p) const {
    std::int64_t lo = 0, hi = n;
    while (lo < hi) {
      std::int64_t const mid = lo + (hi - lo) / 2;
      if (std::int64_t(keys(mid)) < p) lo = mid + 1;
      else hi = mid;
    }
    first(p) = lo;
  }
};

template <class Offsets>
struct SetLast {
  Offsets offsets;
  std::int64_t index, value;
  KOKKOS_FUNCTION void operator()(std::int64_t) const { offsets(index) = value; }
};

/// offsets(m) = total after an exclusive scan of offsets(0 .. m-1), with
/// the vendor scan's storage in `vendor` (Scratch::vendor).
template <class Exec, class V>
std::int64_t scan_with_total(Exec const& exec, V const& offsets,
                             Kokkos::View<char*, typename Exec::memory_space>& vendor) {
  std::int64_t const m = std::int64_t(offsets.extent(0)) - 1;
  auto head = Kokkos::subview(offsets, std::make_pair(std::int64_t(0), m));
  std::int64_t const total = backend::exclusive_scan(exec, head, head, vendor);
  Kokkos::parallel_for("kdforge::distributed::scan_total", Kokkos::RangePolicy<Exec>(exec, 0, 1),
                       SetLast<V>{offsets, m, total});
  return total;
}

/// The pairs of `m` queries under `rule`, sorted by rank (local: the
/// counts are exchanged by forward).
template <class Exec, class MS, class Rule>
Routes<MS> route(Exec const& exec, Communicator<MS> const& comm, Rule const& rule, std::int64_t m,
                 Scratch<MS>& scratch) {
  int const P = comm.size();
  Routes<MS> r;
  r.query_offsets = scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::query_offsets", m + 1);
  auto cache = scratch.template take<Kokkos::View<std::int32_t*, MS>>("kdforge::distributed::route_cache",
                                                                      m * route_cached);
  Kokkos::parallel_for("kdforge::distributed::route_count", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       RouteCount<Rule, decltype(r.query_offsets), MS>{rule, r.query_offsets, cache});
  r.pairs = scan_with_total(exec, r.query_offsets, scratch.vendor());
  auto alloc = [&](auto& v, char const* label) {
    using V = std::decay_t<decltype(v)>;
    v = scratch.template take<V>(label, r.pairs);
  };
  alloc(r.dest, "kdforge::distributed::dest");
  alloc(r.pair_query, "kdforge::distributed::pair_query");
  alloc(r.sorted, "kdforge::distributed::sorted");
  alloc(r.position, "kdforge::distributed::position");
  auto keys = scratch.template take<Kokkos::View<std::uint32_t*, MS>>("kdforge::distributed::keys", r.pairs);
  Kokkos::parallel_for("kdforge::distributed::route_fill", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       RouteFill<Rule, MS>{rule, r.query_offsets, r.dest, r.pair_query, keys, r.sorted, cache});
  std::int64_t descents = 0;
  // pairs that are in rank order already (all to one rank, as where
  // queries are owned where their points are) need no sort: one pass that
  // finds no descent instead
  if (P > 1 && r.pairs > 1)
    Kokkos::parallel_reduce("kdforge::distributed::route_sorted", Kokkos::RangePolicy<Exec>(exec, 0, r.pairs - 1),
                            Descents<MS>{keys}, descents);
  if (descents > 0) {
    int bits = 1;
    while ((1 << bits) < P) ++bits;
    // stable: each rank's queries stay in order; the fence below waits for it
    backend::sort_by_key_async(exec, keys, r.sorted, scratch.vendor(), 0, bits);
  }
  Kokkos::parallel_for("kdforge::distributed::route_index", Kokkos::RangePolicy<Exec>(exec, 0, r.pairs),
                       RouteIndex<MS>{r.sorted, r.position});
  auto first = scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::rank_starts", std::int64_t(P) + 1);
  Kokkos::parallel_for("kdforge::distributed::rank_starts", Kokkos::RangePolicy<Exec>(exec, 0, std::int64_t(P) + 1),
                       RankStarts<MS>{keys, first, r.pairs});
  std::vector<std::int64_t> h_first(std::size_t(P) + 1);
  Kokkos::deep_copy(exec, Kokkos::View<std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                              h_first.data(), h_first.size()),
                    first);
  exec.fence();
  r.send_counts.assign(std::size_t(P), 0);
  for (int p = 0; p < P; ++p) r.send_counts[std::size_t(p)] = h_first[std::size_t(p) + 1] - h_first[std::size_t(p)];
  return r;
}

/// send(j) = make(pair sorted(j)): the send buffer in rank order.
template <class MS, class Make, class Out>
struct Pack {
  Kokkos::View<std::int64_t*, MS> sorted;
  Kokkos::View<std::int64_t*, MS> pair_query;
  Make make;
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const { out(j) = make(pair_query(sorted(j))); }
};

template <class Exec, class MS, class Elem, class Make>
Kokkos::View<Elem*, MS> pack(Exec const& exec, Routes<MS> const& r, Make const& make, Scratch<MS>& scratch) {
  auto out = scratch.template take<Kokkos::View<Elem*, MS>>("kdforge::distributed::send", r.pairs);
  Kokkos::parallel_for("kdforge::distributed::pack", Kokkos::RangePolicy<Exec>(exec, 0, r.pairs),
                       Pack<MS, Make, decltype(out)>{r.sorted, r.pair_query, make, out});
  return out;
}

/// What came back: per pair (by send position) its row count and where its
/// neighbours begin.
template <class MS, class T, class Index, class Count>
struct Returned {
  Kokkos::View<Count*, MS> counts;                 ///< pairs
  Kokkos::View<std::int64_t*, MS> offsets;         ///< pairs + 1 (empty for counts-only rows)
  Kokkos::View<Neighbor<T, Index>*, MS> entries;
  Kokkos::View<std::int64_t*, MS> ids;             ///< with caller ids: per entry
  std::int64_t stride = 0;                         ///< k: row s in slots s*k .. s*k+k-1 (send_back_slots)
};

template <class In, class Out>
struct Widen {
  In in;
  Out out;
  // a negative count: a row its own rank wrote in place (no entries)
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { out(i) = in(i) < 0 ? 0 : std::int64_t(in(i)); }
};

template <class Offsets, class Displ, class Out>
struct AtDisplacements {
  Offsets offsets;
  Displ displ;
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t p) const { out(p) = offsets(displ(p)); }
};

/// offsets(displ[p]) for p = 0 .. P: the entries of each rank's block.
template <class Exec, class MS>
std::vector<std::int64_t> block_entries(Exec const& exec, Kokkos::View<std::int64_t*, MS> const& offsets,
                                        std::vector<std::int64_t> const& counts, Scratch<MS>& scratch) {
  std::size_t const P = counts.size();
  std::vector<std::int64_t> displ(P + 1, 0);
  for (std::size_t p = 0; p < P; ++p) displ[p + 1] = displ[p] + counts[p];
  using H = Kokkos::View<std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  auto d_displ = scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::displ", P + 1);
  auto d_out = scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::blocks", P + 1);
  Kokkos::deep_copy(exec, d_displ, H(displ.data(), P + 1));
  Kokkos::parallel_for("kdforge::distributed::blocks", Kokkos::RangePolicy<Exec>(exec, 0, std::int64_t(P) + 1),
                       AtDisplacements<Kokkos::View<std::int64_t*, MS>, decltype(d_displ), decltype(d_out)>{offsets, d_displ, d_out});
  std::vector<std::int64_t> at(P + 1);
  Kokkos::deep_copy(exec, H(at.data(), P + 1), d_out);
  exec.fence();
  std::vector<std::int64_t> per(P);
  for (std::size_t p = 0; p < P; ++p) per[p] = at[p + 1] - at[p];
  return per;
}

/// Rows of the queries received (row_counts, and when `with_entries` their
/// offsets and neighbours), returned to the ranks that sent the queries.
template <class Exec, class MS, class T, class Index, class Count>
Returned<MS, T, Index, Count> send_back(Exec const& exec, Communicator<MS>& comm, Routes<MS> const& r,
                                        Kokkos::View<Count*, MS> const& row_counts,
                                        Kokkos::View<std::int64_t*, MS> const& row_offsets,
                                        Kokkos::View<Neighbor<T, Index>*, MS> const& entries,
                                        Kokkos::View<std::int64_t*, MS> const& entry_ids, bool with_entries,
                                        bool with_ids, Traffic& traffic, Scratch<MS>& scratch) {
  Returned<MS, T, Index, Count> back;
  back.counts = comm.alltoallv(exec, row_counts, r.recv_counts, r.send_counts, traffic, "kdforge::distributed::row_counts",
                               &scratch);
  if (!with_entries) return back;
  back.offsets = scratch.template take<Kokkos::View<std::int64_t*, MS>>("kdforge::distributed::back_offsets", r.pairs + 1);
  Kokkos::parallel_for("kdforge::distributed::widen", Kokkos::RangePolicy<Exec>(exec, 0, r.pairs),
                       Widen<decltype(back.counts), decltype(back.offsets)>{back.counts, back.offsets});
  scan_with_total(exec, back.offsets, scratch.vendor());
  auto const send_entries = block_entries(exec, row_offsets, r.recv_counts, scratch);
  auto const recv_entries = block_entries(exec, back.offsets, r.send_counts, scratch);
  back.entries =
      comm.alltoallv(exec, entries, send_entries, recv_entries, traffic, "kdforge::distributed::neighbors", &scratch);
  if (with_ids) // every rank alike: the tree was built with ids or without on all
    back.ids = comm.alltoallv(exec, entry_ids, send_entries, recv_entries, traffic, "kdforge::distributed::ids", &scratch);
  return back;
}

/// The lengths of rows returned in k slots: their leading valid entries.
template <class MS, class T, class Index>
struct SlotLengths {
  Kokkos::View<Neighbor<T, Index>*, MS> entries;
  Kokkos::View<std::int32_t*, MS> lengths;
  std::int64_t k;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    std::int32_t n = 0;
    while (n < k && entries(s * k + n).index >= 0) ++n;
    lengths(s) = n;
  }
};

/// Rows of k slots each (`entries`, `entry_ids`: k per query received),
/// returned in one exchange; each row's length is then its leading valid
/// entries (index >= 0).
template <class Exec, class MS, class T, class Index>
Returned<MS, T, Index, std::int32_t> send_back_slots(Exec const& exec, Communicator<MS>& comm, Routes<MS> const& r,
                                                     Kokkos::View<Neighbor<T, Index>*, MS> const& entries,
                                                     Kokkos::View<std::int64_t*, MS> const& entry_ids, int k,
                                                     bool with_ids, Traffic& traffic, Scratch<MS>& scratch) {
  std::size_t const P = r.send_counts.size();
  std::vector<std::int64_t> send(P), recv(P);
  for (std::size_t p = 0; p < P; ++p) {
    send[p] = r.recv_counts[p] * k;
    recv[p] = r.send_counts[p] * k;
  }
  Returned<MS, T, Index, std::int32_t> back;
  back.stride = k;
  back.entries = comm.alltoallv(exec, entries, send, recv, traffic, "kdforge::distributed::neighbors", &scratch);
  if (with_ids)
    back.ids = comm.alltoallv(exec, entry_ids, send, recv, traffic, "kdforge::distributed::ids", &scratch);
  back.counts = scratch.template take<Kokkos::View<std::int32_t*, MS>>("kdforge::distributed::slot_lengths", r.pairs);
  Kokkos::parallel_for("kdforge::distributed::slot_lengths", Kokkos::RangePolicy<Exec>(exec, 0, r.pairs),
                       SlotLengths<MS, T, Index>{back.entries, back.counts, k});
  return back;
}

} // namespace kdforge::distributed
