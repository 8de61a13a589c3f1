#pragma once
// Exact kNN by brute force over all points, for any dimension known at run
// time: the strategy Hu, Nooshabadi & Ahmadi 2015 (section IV, Table II)
// measure their tree against, and the better one wherever a tree cannot
// prune (uniform data in hundreds of dimensions visits most leaves).
//
// Tiled like a matrix product: a team takes QB queries and walks over all
// points in tiles of PB; per tile the squared distances of the QB x PB
// pairs are accumulated over the dimensions in chunks of DC, the chunk of
// queries and of points staged in team scratch (shared memory on GPUs, L1
// on CPUs), each thread summing a 4 x 4 block of pairs in registers, so a
// coordinate read from memory serves 4 pairs and a staged one QB or PB.
//
// What differs from a GEMM (||q||^2 + ||p||^2 - 2 q.p, as cuBLAS-based brute
// force computes it): the distances are summed as sum_d (q_d - p_d)^2 in
// dimension order, rounded like the trees' walks (no fused multiply-add), so
// brute force and tree return the same neighbours, ties and rounding
// included, and the strategy a call picks never changes its answer; the
// GEMM form also loses the small distances of nearby points to cancellation.
// The price is one more instruction per pair and dimension than a GEMM.
//
// Candidates: each query's k nearest so far are a max-heap kept in its own
// output row (global memory; after the first tiles few pairs enter it), its
// bound cached in scratch, so any k runs without per-thread storage.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/rows.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kdforge::detail {

/// Tile shape of the brute-force kernel for coordinate type T: queries per
/// team, points per tile, dimensions per staged chunk. The scratch per team
/// (QB x (DC + 1) + PB x (DC + 1) + QB x PB + QB values) stays below the
/// 48 KiB of shared memory every CUDA device gives a block without opt-in.
template <class T>
struct BruteTile {
  static constexpr int QB = std::is_same<T, float>::value ? 64 : 32;
  static constexpr int PB = 64;
  static constexpr int DC = std::is_same<T, float>::value ? 32 : 16;
  static constexpr int pairs_per_thread = 16; ///< a 4 x 4 block
  static constexpr std::size_t scratch_values = std::size_t(QB) * (DC + 1) + std::size_t(PB) * (DC + 1) +
                                                std::size_t(QB) * PB + QB;
};

/// Points given as a View (row i: point i, or row i of a tree's points with
/// `ids` mapping it to the caller's index) and queries as an M x D View.
template <class Exec, class PV, class IV, class QV, class Result>
struct BruteKnnFunctor {
  using T = typename PV::non_const_value_type;
  using Index = typename decltype(Result::indices)::non_const_value_type;
  using Tile = BruteTile<T>;
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = Kokkos::View<T*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int QB = Tile::QB, PB = Tile::PB, DC = Tile::DC;

  PV points;
  IV ids; ///< empty: the row is the index
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  bool skip_self;
  std::int64_t n;
  std::int64_t m;
  int dim;
  /// Which query a row is, for skip_self (empty: the row itself).
  Kokkos::View<std::int64_t const*, typename Exec::memory_space> qids;

  KOKKOS_FORCEINLINE_FUNCTION Index id(std::int64_t i) const { return ids.extent(0) ? ids(i) : Index(i); }
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t qid(std::int64_t r) const { return qids.extent(0) ? qids(r) : r; }

  KOKKOS_FUNCTION void operator()(member_type const& team) const {
    using IR = Row<decltype(res.indices)>;
    using DR = Row<decltype(res.sq_distances)>;
    using Ops = kernels::RowHeapOps<T, Index, IR, DR>;
    Scratch s(team.team_scratch(0), Tile::scratch_values);
    T* const qs = s.data();                      // QB x (DC + 1): the padding spreads rows over banks
    T* const ps = qs + QB * (DC + 1);            // PB x (DC + 1)
    T* const dist = ps + PB * (DC + 1);          // QB x PB
    T* const bound = dist + QB * PB;             // QB
    std::int64_t const q0 = std::int64_t(team.league_rank()) * QB;
    int const qn = int(q0 + QB <= m ? QB : m - q0);

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qn), [&](int b) {
      Ops heap{IR{res.indices, q0 + b}, DR{res.sq_distances, q0 + b}, k};
      for (int j = 0; j < k; ++j) heap.set(j, Neighbor<T, Index>{sq_cutoff, kernels::empty_slot_index<Index>()});
      bound[b] = sq_cutoff;
    });

    for (std::int64_t p0 = 0; p0 < n; p0 += PB) {
      int const pn = int(p0 + PB <= n ? PB : n - p0);
      for (int d0 = 0; d0 < dim; d0 += DC) {
        int const dn = d0 + DC <= dim ? DC : dim - d0;
        team.team_barrier(); // the previous chunk's (or tile's) readers are done
        // stage the chunk; rows past the end read as the first row so the
        // sums stay finite (their pairs are never offered)
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QB * DC), [&](int e) {
          int const r = e / DC, c = e % DC;
          if (c < dn) qs[r * (DC + 1) + c] = queries(r < qn ? q0 + r : q0, d0 + c);
        });
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, PB * DC), [&](int e) {
          int const r = e / DC, c = e % DC;
          if (c < dn) ps[r * (DC + 1) + c] = points(r < pn ? p0 + r : p0, d0 + c);
        });
        team.team_barrier();
        // each thread: a 4 x 4 block of pairs, summed over the chunk in
        // dimension order onto the tile's running sums
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (QB / 4) * (PB / 4)), [&](int blk) {
          int const r0 = (blk / (PB / 4)) * 4, c0 = (blk % (PB / 4)) * 4;
          T acc[4][4];
          KDFORGE_UNROLL
          for (int a = 0; a < 4; ++a)
            KDFORGE_UNROLL
            for (int b = 0; b < 4; ++b) acc[a][b] = d0 == 0 ? T(0) : dist[(r0 + a) * PB + c0 + b];
          for (int c = 0; c < dn; ++c) {
            T qv[4], pv[4];
            KDFORGE_UNROLL
            for (int a = 0; a < 4; ++a) qv[a] = qs[(r0 + a) * (DC + 1) + c];
            KDFORGE_UNROLL
            for (int b = 0; b < 4; ++b) pv[b] = ps[(c0 + b) * (DC + 1) + c];
            KDFORGE_UNROLL
            for (int a = 0; a < 4; ++a)
              KDFORGE_UNROLL
              for (int b = 0; b < 4; ++b) {
                T const t = qv[a] - pv[b];
                acc[a][b] = backend::add_rn(acc[a][b], backend::mul_rn(t, t));
              }
          }
          KDFORGE_UNROLL
          for (int a = 0; a < 4; ++a)
            KDFORGE_UNROLL
            for (int b = 0; b < 4; ++b) dist[(r0 + a) * PB + c0 + b] = acc[a][b];
        });
      }
      team.team_barrier();
      // each query offers the tile's points to its heap
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qn), [&](int b) {
        std::int64_t const qi = q0 + b;
        T top = bound[b];
        Ops heap{IR{res.indices, qi}, DR{res.sq_distances, qi}, k};
        for (int j = 0; j < pn; ++j) {
          T const d2 = dist[b * PB + j];
          if (d2 > top) continue;
          Index const idx = id(p0 + j);
          if (skip_self && std::int64_t(idx) == qid(qi)) continue;
          Neighbor<T, Index> const x{d2, idx};
          if (!(x < heap.get(0))) continue;
          heap.sift_down(0, k, x);
          top = heap.get(0).sq_dist;
        }
        bound[b] = top;
      });
    }
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qn), [&](int b) {
      std::int64_t const qi = q0 + b;
      Ops heap{IR{res.indices, qi}, DR{res.sq_distances, qi}, k};
      heap.sort_heap();
      for (int j = 0; j < k; ++j) {
        if (res.indices(qi, j) == kernels::empty_slot_index<Index>()) {
          res.indices(qi, j) = invalid_index<Index>();
          res.sq_distances(qi, j) = infinity<T>();
        }
      }
    });
  }
};

/// Exact kNN of the M x D `queries` among the N x D `points` by brute force
/// into `res` (M x k Views already allocated). `ids` maps a row of points to
/// the index reported (empty: the row itself). skip_self: query i leaves the
/// point reported as i out of its row (queries that are the points);
/// `qids` (optional) says which query row r is, where the rows are a
/// subset of the queries.
template <class Exec, class PV, class IV, class QV, class Result>
void run_brute_knn(Exec const& exec, PV const& points, IV const& ids, QV const& queries, int k, Result const& res,
                   typename PV::non_const_value_type sq_cutoff, bool skip_self,
                   Kokkos::View<std::int64_t const*, typename Exec::memory_space> qids = {}) {
  using T = typename PV::non_const_value_type;
  using F = BruteKnnFunctor<Exec, PV, IV, QV, Result>;
  using Tile = BruteTile<T>;
  std::int64_t const m = std::int64_t(queries.extent(0));
  if (m == 0) return;
  std::int64_t const teams = (m + Tile::QB - 1) / Tile::QB;
  // GPUs: one thread per 4 x 4 block of pairs; CPUs: one thread per team,
  // which runs the team's loops itself, the tiles in its core's cache
  int const team_size = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible
                            ? 1
                            : (Tile::QB / 4) * (Tile::PB / 4);
  Kokkos::TeamPolicy<Exec> policy(exec, int(teams), team_size);
  policy.set_scratch_size(0, Kokkos::PerTeam(Tile::scratch_values * sizeof(T)));
  Kokkos::parallel_for("kdforge::knn::brute_force", policy,
                       F{points, ids, queries, res, k, sq_cutoff, skip_self, std::int64_t(points.extent(0)), m,
                         int(points.extent(1)), qids});
}

} // namespace kdforge::detail
