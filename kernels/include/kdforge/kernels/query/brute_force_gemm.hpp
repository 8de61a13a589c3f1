#pragma once
// Exact kNN by brute force with a vendor GEMM: the form Hu, Nooshabadi &
// Ahmadi 2015 (section IV) and faiss's IndexFlatL2 compute brute force in,
// ||q||^2 + ||p||^2 - 2 q.p with the products q.p of a block of queries and
// a tile of points as one matrix product (cuBLAS on GPUs, the machine's BLAS
// on CPUs), then a k-selection per query over the tile.
//
// What differs, and why: kdforge answers every exact query identically,
// whichever strategy and backend runs it, with distances summed in
// dimension order (kernels/query/brute_force.hpp). The GEMM form rounds
// differently, and loses small distances to cancellation. So the GEMM only
// *selects candidates*, and the answer comes from the exact distances of the
// candidates:
//   1. a(q, p) = ||q||^2 + ||p||^2 - 2 fl(q.p), the norms in double, is
//      within e(q, p) = c (||q||^2 + ||p||^2) of the dimension-order
//      distance r(q, p), with c = 4 (D + 4) u (u: T's unit roundoff): the
//      GEMM's dot product is within D u sum|q_d p_d| <= D u (||q||^2 +
//      ||p||^2) / 2 of the exact one whatever its summation order, and the
//      dimension-order sum within (D + 2) u of the exact distance, itself at
//      most 2 (||q||^2 + ||p||^2);
//   2. each query keeps the `cap` smallest a(q, p) over all tiles (a heap
//      per query in global memory: after the first tiles few points enter);
//   3. tau = the largest a + e of the first k kept points bounds the k-th
//      smallest r from above; every point with r <= tau has a - e <= tau.
//      If the heap dropped a point, all dropped points have a >= A (the
//      heap's largest a), so they are out of the running when
//      A - c (||q||^2 + max ||p||^2) > tau;
//   4. the kept points with a - e <= tau get their exact r (dimension
//      order, no fused multiply-add, as the tiled kernel) and the k nearest
//      by (r, index) are the answer: exactly the tiled kernel's.
// A query for which 3. fails (many points tied at its k-th distance:
// duplicates, a lattice) is answered by the tiled kernel afterwards, so
// every answer is exact.
//
// Memory stays bounded: queries in blocks, points in tiles, the product of
// one block and one tile (a few hundred MiB on GPUs, tens on CPUs) plus the
// heaps and norms.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/query/brute_force.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/rows.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace kdforge::detail {

/// Where the GEMM brute force is worth its setup: a vendor GEMM for the
/// space, enough dimensions that the product dominates (below, reading
/// every product back costs more than the tiled kernel's sums: on 2 CPU
/// cores the GEMM form was 2x slower at D = 16 and 6.9x faster at D = 512),
/// and a k small enough for the per-query candidate heaps.
inline constexpr int gemm_brute_min_dim = 64;
inline constexpr int gemm_brute_max_k = 256;

/// Candidates kept per query: k plus as many again (at least 16), so that
/// near-ties at the k-th distance rarely overflow the heap.
inline int gemm_brute_capacity(int k) { return k + std::max(k, 16); }

/// The coefficient c of the candidate bound e(q, p) = c (||q||^2 + ||p||^2)
/// (see the file's comment).
template <class T>
double gemm_brute_error_coefficient(std::int64_t dim) {
  double const u = double(std::numeric_limits<T>::epsilon()) / 2;
  return 4.0 * double(dim + 4) * u;
}

/// The largest squared norm whose products and sums stay well inside T's
/// range in the GEMM.
template <class T>
double gemm_brute_safe_norm() {
  return double(std::numeric_limits<T>::max()) / 64;
}

/// Squared norms of the rows of a matrix, in double.
template <class V>
struct RowSqNorms {
  V v;
  Kokkos::View<double*, typename V::memory_space> out;
  std::int64_t first;
  int dim;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    double s = 0;
    for (int d = 0; d < dim; ++d) {
      double const x = double(v(first + i, d));
      s += x * x;
    }
    out(i) = s;
  }
};

/// A heap's row inside a query's candidate row: slice s of query j holds
/// entries [s * cap, (s + 1) * cap).
template <class View2D>
struct SliceRow {
  View2D v;
  std::int64_t row;
  int offset;
  KOKKOS_FORCEINLINE_FUNCTION typename View2D::reference_type operator()(int c) const { return v(row, offset + c); }
};

/// Step 2 for one tile: the tile's points offered to the heaps of a block's
/// queries. prod is the tile x block product, row-major: the block's
/// queries side by side, so the lanes of a GPU warp (one query each) read
/// adjacent values. On GPUs each query has `slices` heaps, one per slice of
/// the tile's points, so that enough warps run to read the product at the
/// memory's speed; a CPU thread takes QB queries and reads the product row
/// by row.
template <class Exec, class T, class IV, class Index>
struct GemmOfferFunctor {
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  using MS = typename Exec::memory_space;
  static constexpr bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  static constexpr int QB = on_host ? 16 : 32;
  using Cands = Kokkos::View<double**, Kokkos::LayoutRight, MS>;
  using Rows = Kokkos::View<Index**, Kokkos::LayoutRight, MS>;
  using Heap = kernels::RowHeapOps<double, Index, SliceRow<Rows>, SliceRow<Cands>>;
  Kokkos::View<double const*, MS> qn, pn; // qn: the block's queries; pn: all points
  Kokkos::View<T const**, Kokkos::LayoutRight, MS> prod;
  Cands cand_a;
  Rows cand_p;
  IV ids;
  std::int64_t q0, p0, mb, nb;
  int cap, slices;
  double coef, sq_cutoff;
  bool skip_self;

  KOKKOS_FORCEINLINE_FUNCTION Index id(std::int64_t i) const { return ids.extent(0) ? ids(i) : Index(i); }
  KOKKOS_FORCEINLINE_FUNCTION Heap heap(std::int64_t j, int s) const {
    return Heap{SliceRow<Rows>{cand_p, j, s * cap}, SliceRow<Cands>{cand_a, j, s * cap}, cap};
  }
  /// Offers point p0 + i to query j's heap h, whose largest a is top.
  KOKKOS_FORCEINLINE_FUNCTION void offer(Heap const& h, double& top, double qnj, std::int64_t i, std::int64_t j) const {
    double const pni = pn(p0 + i);
    double const a = qnj + pni - 2 * double(prod(i, j));
    if (a > top) return;
    if (a - coef * (qnj + pni) > sq_cutoff) return; // every exact distance is beyond the cutoff
    if (skip_self && std::int64_t(id(p0 + i)) == q0 + j) return;
    Neighbor<double, Index> const x{a, Index(p0 + i)};
    if (!(x < h.get(0))) return;
    h.sift_down(0, cap, x);
    top = h.get(0).sq_dist;
  }

  KOKKOS_FUNCTION void operator()(member_type const& team) const {
    int const s = int(team.league_rank() % slices);
    std::int64_t const j0 = std::int64_t(team.league_rank() / slices) * QB;
    int const qb = int(j0 + QB <= mb ? QB : mb - j0);
    std::int64_t const i0 = nb * s / slices, i1 = nb * (s + 1) / slices;
    if constexpr (on_host) {
      double top[QB];
      double qv[QB];
      for (int b = 0; b < qb; ++b) {
        top[b] = heap(j0 + b, s).get(0).sq_dist;
        qv[b] = qn(j0 + b);
      }
      for (std::int64_t i = i0; i < i1; ++i)
        for (int b = 0; b < qb; ++b) offer(heap(j0 + b, s), top[b], qv[b], i, j0 + b);
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qb), [&](int b) {
        std::int64_t const j = j0 + b;
        Heap const h = heap(j, s);
        double top = h.get(0).sq_dist;
        double const qnj = qn(j);
        for (std::int64_t i = i0; i < i1; ++i) offer(h, top, qnj, i, j);
      });
    }
  }
};

/// Steps 3 and 4 for a block: the bound, the exact distances of the
/// candidates within it, the k nearest into the result rows; or the flag
/// that sends the query to the tiled kernel.
template <class Exec, class PV, class IV, class QV, class Result>
struct GemmFinishFunctor {
  using T = typename PV::non_const_value_type;
  using Index = typename decltype(Result::indices)::non_const_value_type;
  using MS = typename Exec::memory_space;
  using Cands = Kokkos::View<double**, Kokkos::LayoutRight, MS>;
  using Rows = Kokkos::View<Index**, Kokkos::LayoutRight, MS>;
  static constexpr int max_slices = 64;
  PV points;
  IV ids;
  QV queries;
  Result res;
  Kokkos::View<double const*, MS> qn, pn;
  Cands cand_a;
  Rows cand_p;
  Kokkos::View<int*, MS> redo;
  double pn_max, coef, safe;
  std::int64_t q0;
  int k, cap, slices, dim;
  T sq_cutoff;

  KOKKOS_FORCEINLINE_FUNCTION Index id(std::int64_t i) const { return ids.extent(0) ? ids(i) : Index(i); }

  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const qi = q0 + j;
    double const qnj = qn(j);
    if (!(qnj <= safe)) { // its products may have overflowed
      redo(qi) = 1;
      return;
    }
    auto const empty = kernels::empty_slot_index<Index>();
    // each slice's heap ascending by a; the empty slots (a = +inf) last
    int head[max_slices];
    for (int s = 0; s < slices; ++s) {
      kernels::RowHeapOps<double, Index, SliceRow<Rows>, SliceRow<Cands>>{
          SliceRow<Rows>{cand_p, j, s * cap}, SliceRow<Cands>{cand_a, j, s * cap}, cap}
          .sort_heap();
      head[s] = 0;
    }
    // tau: the largest a + e of the k smallest a over all slices (a merge
    // of the sorted slices); +inf when fewer than k points were kept
    double tau = 0;
    for (int c = 0; c < k; ++c) {
      int best = -1;
      for (int s = 0; s < slices; ++s) {
        if (head[s] >= cap || cand_p(j, s * cap + head[s]) == empty) continue;
        if (best < 0 || cand_a(j, s * cap + head[s]) < cand_a(j, best * cap + head[best])) best = s;
      }
      if (best < 0) {
        tau = infinity<double>();
        break;
      }
      std::int64_t const e = best * cap + head[best]++;
      double const ub = cand_a(j, e) + coef * (qnj + pn(cand_p(j, e)));
      tau = ub > tau ? ub : tau;
    }
    // a full slice dropped points: all of them must be beyond tau
    for (int s = 0; s < slices; ++s) {
      if (cand_p(j, s * cap + cap - 1) == empty) continue;
      double const a_max = cand_a(j, s * cap + cap - 1);
      if (!(a_max - coef * (qnj + pn_max) > tau)) {
        redo(qi) = 1;
        return;
      }
    }
    using Ops = kernels::RowHeapOps<T, Index, Row<decltype(res.indices)>, Row<decltype(res.sq_distances)>>;
    Ops heap{Row<decltype(res.indices)>{res.indices, qi}, Row<decltype(res.sq_distances)>{res.sq_distances, qi}, k};
    for (int c = 0; c < k; ++c) heap.set(c, Neighbor<T, Index>{sq_cutoff, empty});
    for (int s = 0; s < slices; ++s) {
      for (int c = 0; c < cap; ++c) {
        Index const row = cand_p(j, s * cap + c);
        if (row == empty) break;
        if (cand_a(j, s * cap + c) - coef * (qnj + pn(row)) > tau) continue;
        T d2 = T(0);
        for (int d = 0; d < dim; ++d) {
          T const t = T(queries(qi, d)) - T(points(row, d));
          d2 = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(d2, backend::mul_rn(t, t));
        }
        Neighbor<T, Index> const x{d2, id(row)};
        if (x < heap.get(0)) heap.sift_down(0, k, x);
      }
    }
    heap.sort_heap();
    for (int c = 0; c < k; ++c) {
      if (res.indices(qi, c) == empty) {
        res.indices(qi, c) = invalid_index<Index>();
        res.sq_distances(qi, c) = infinity<T>();
      }
    }
  }
};

/// Copies row ids(r) of `from` into row r of `to`.
template <class From, class To, class Ids>
struct GatherRows {
  From from;
  To to;
  Ids ids;
  int dim;
  KOKKOS_FUNCTION void operator()(std::int64_t r) const {
    for (int d = 0; d < dim; ++d) to(r, d) = from(ids(r), d);
  }
};

/// Exact kNN of `queries` among `points` through a vendor GEMM (see the
/// file's comment); the same answers as run_brute_knn. Only where
/// backend::has_gemm<Exec>.
template <class Exec, class PV, class IV, class QV, class Result>
void run_gemm_brute_knn(Exec const& exec, PV const& points, IV const& ids, QV const& queries, int k,
                        Result const& res, typename PV::non_const_value_type sq_cutoff, bool skip_self) {
  using T = typename PV::non_const_value_type;
  using Index = typename decltype(Result::indices)::non_const_value_type;
  using MS = typename Exec::memory_space;
  using Mat = Kokkos::View<T**, Kokkos::LayoutRight, MS>;
  std::int64_t const n = std::int64_t(points.extent(0));
  std::int64_t const m = std::int64_t(queries.extent(0));
  int const dim = int(points.extent(1));
  if (m == 0) return;
  constexpr bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  int const cap = gemm_brute_capacity(k);
  double const coef = gemm_brute_error_coefficient<T>(dim);

  // the operands as contiguous row-major matrices (copies only where the
  // caller's layout or strides differ)
  auto row_major = [&](auto const& v, char const* label) {
    Mat out;
    if (std::is_same<typename std::decay_t<decltype(v)>::array_layout, Kokkos::LayoutRight>::value &&
        v.span_is_contiguous()) {
      out = Mat(const_cast<T*>(v.data()), v.extent(0), v.extent(1));
    } else {
      out = backend::allocate<Mat>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), v.extent(0), v.extent(1));
      Kokkos::deep_copy(exec, out, v);
    }
    return out;
  };
  Mat const p = row_major(points, "kdforge::knn::brute_force::points");
  Mat const q = row_major(queries, "kdforge::knn::brute_force::queries");

  auto pn = backend::allocate<Kokkos::View<double*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::pn"), n);
  Kokkos::parallel_for("kdforge::knn::brute_force::norms", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       RowSqNorms<Mat>{p, pn, 0, dim});
  double pn_max = 0;
  Kokkos::parallel_reduce("kdforge::knn::brute_force::max_norm", Kokkos::RangePolicy<Exec>(exec, 0, n),
                          KOKKOS_LAMBDA(std::int64_t i, double& mx) { mx = pn(i) > mx ? pn(i) : mx; },
                          Kokkos::Max<double>(pn_max));
  // Coordinates so large that the products could overflow T: the tiled
  // kernel alone (queries of such norms are sent to it one by one below).
  double const safe = gemm_brute_safe_norm<T>();
  if (!(pn_max <= safe)) {
    run_brute_knn(exec, points, ids, queries, k, res, sq_cutoff, skip_self);
    return;
  }

  // block and tile sizes: the product of one block and one tile within a
  // budget (GPUs: 256 MiB; CPUs: 32 MiB, nearer the caches)
  std::int64_t const budget = (on_host ? (std::int64_t(32) << 20) : (std::int64_t(256) << 20)) / std::int64_t(sizeof(T));
  std::int64_t const mb = std::min<std::int64_t>(m, on_host ? 1024 : 16384);
  std::int64_t const nb = std::max<std::int64_t>(1, std::min<std::int64_t>(std::max<std::int64_t>(n, 1), budget / mb));

  // slices of each tile per query on GPUs: enough warps to read the
  // product at memory speed (at least 64 points a slice)
  using Offer = GemmOfferFunctor<Exec, T, IV, Index>;
  using Finish = GemmFinishFunctor<Exec, PV, IV, QV, Result>;
  std::int64_t const blocks = (mb + Offer::QB - 1) / Offer::QB;
  int const slices = on_host ? 1
                             : int(std::max<std::int64_t>(1, std::min<std::int64_t>({std::int64_t(Finish::max_slices),
                                                                                    (4096 + blocks - 1) / blocks,
                                                                                    nb / 64})));
  auto prod = backend::allocate<Mat>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::product"), nb, mb);
  auto cand_a = backend::allocate<Kokkos::View<double**, Kokkos::LayoutRight, MS>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::cand_a"), mb, std::int64_t(slices) * cap);
  auto cand_p = backend::allocate<Kokkos::View<Index**, Kokkos::LayoutRight, MS>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::cand_p"), mb, std::int64_t(slices) * cap);
  auto qn = backend::allocate<Kokkos::View<double*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::qn"), mb);
  auto redo = backend::allocate<Kokkos::View<int*, MS>>("kdforge::knn::brute_force::redo", m);

  int const team = on_host ? 1 : Offer::QB;
  std::int64_t const row_len = std::int64_t(slices) * cap;
  for (std::int64_t q0 = 0; q0 < m; q0 += mb) {
    std::int64_t const bm = std::min(mb, m - q0);
    Kokkos::parallel_for("kdforge::knn::brute_force::query_norms", Kokkos::RangePolicy<Exec>(exec, 0, bm),
                         RowSqNorms<Mat>{q, qn, q0, dim});
    Kokkos::parallel_for("kdforge::knn::brute_force::init", Kokkos::RangePolicy<Exec>(exec, 0, bm),
                         KOKKOS_LAMBDA(std::int64_t j) {
                           for (std::int64_t c = 0; c < row_len; ++c) {
                             cand_a(j, c) = infinity<double>();
                             cand_p(j, c) = kernels::empty_slot_index<Index>();
                           }
                         });
    for (std::int64_t p0 = 0; p0 < n; p0 += nb) {
      std::int64_t const bn = std::min(nb, n - p0);
      // prod (bn x bm, row stride mb) = points[p0, p0 + bn) x queries[q0, q0 + bm)^T
      backend::gemm_abt(exec, bn, bm, dim, p.data() + p0 * std::int64_t(p.stride(0)), std::int64_t(p.stride(0)),
                        q.data() + q0 * std::int64_t(q.stride(0)), std::int64_t(q.stride(0)), prod.data(), std::int64_t(prod.stride(0)));
      std::int64_t const bblocks = (bm + Offer::QB - 1) / Offer::QB;
      Kokkos::parallel_for("kdforge::knn::brute_force::select",
                           Kokkos::TeamPolicy<Exec>(exec, int(bblocks * slices), team),
                           Offer{qn, pn, prod, cand_a, cand_p, ids, q0, p0, bm, bn, cap, slices, coef,
                                 double(sq_cutoff), skip_self});
    }
    Kokkos::parallel_for("kdforge::knn::brute_force::finish", Kokkos::RangePolicy<Exec>(exec, 0, bm),
                         Finish{points, ids, queries, res, qn, pn, cand_a, cand_p, redo, pn_max, coef, safe, q0, k,
                                cap, slices, dim, sq_cutoff});
  }

  // queries whose candidates could not settle the answer: the tiled kernel
  std::int64_t nredo = 0;
  Kokkos::parallel_reduce("kdforge::knn::brute_force::count_redo", Kokkos::RangePolicy<Exec>(exec, 0, m),
                          KOKKOS_LAMBDA(std::int64_t i, std::int64_t& s) { s += redo(i); }, nredo);
  if (nredo == 0) return;
  auto which = backend::allocate<Kokkos::View<std::int64_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::redo_rows"), nredo);
  Kokkos::parallel_scan("kdforge::knn::brute_force::list_redo", Kokkos::RangePolicy<Exec>(exec, 0, m),
                        KOKKOS_LAMBDA(std::int64_t i, std::int64_t& s, bool final) {
                          if (final && redo(i)) which(s) = i;
                          s += redo(i);
                        });
  auto rq = backend::allocate<Mat>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::redo_queries"), nredo, dim);
  Kokkos::parallel_for("kdforge::knn::brute_force::gather", Kokkos::RangePolicy<Exec>(exec, 0, nredo),
                       GatherRows<QV, Mat, decltype(which)>{queries, rq, which, dim});
  Result sub{backend::allocate<decltype(Result::indices)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::redo_indices"), nredo, k),
             backend::allocate<decltype(Result::sq_distances)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::brute_force::redo_d2"), nredo, k)};
  run_brute_knn(exec, points, ids, rq, k, sub, sq_cutoff, skip_self, which);
  auto const ri = res.indices;
  auto const rd = res.sq_distances;
  auto const si = sub.indices;
  auto const sd = sub.sq_distances;
  Kokkos::parallel_for("kdforge::knn::brute_force::scatter", Kokkos::RangePolicy<Exec>(exec, 0, nredo),
                       KOKKOS_LAMBDA(std::int64_t r) {
                         for (int c = 0; c < k; ++c) {
                           ri(which(r), c) = si(r, c);
                           rd(which(r), c) = sd(r, c);
                         }
                       });
}

/// Exact brute-force kNN by the method asked for (BruteForceMethod): the
/// GEMM where it is available and pays, the tiled kernel otherwise. `where`
/// names the caller in errors.
template <class Exec, class PV, class IV, class QV, class Result>
void run_brute_knn_by(Exec const& exec, PV const& points, IV const& ids, QV const& queries, int k,
                      Result const& res, typename PV::non_const_value_type sq_cutoff, bool skip_self,
                      BruteForceMethod method, char const* where) {
  bool const fits = k <= gemm_brute_max_k;
  if (method == BruteForceMethod::gemm) {
    KDFORGE_REQUIRE(backend::has_gemm<Exec>, where,
                    "BruteForceMethod::gemm: this build has no GEMM for this execution space (configure with "
                    "KDFORGE_ENABLE_BLAS=ON where a BLAS or cuBLAS is installed), or use BruteForceMethod::automatic");
    KDFORGE_REQUIRE(fits, where, "BruteForceMethod::gemm: k = ", k, " is above its limit of ", gemm_brute_max_k,
                    "; use BruteForceMethod::tiles or automatic");
  }
  if constexpr (backend::has_gemm<Exec>) {
    bool const use = method == BruteForceMethod::gemm ||
                     (method == BruteForceMethod::automatic && fits && points.extent(1) >= gemm_brute_min_dim);
    if (use) {
      run_gemm_brute_knn(exec, points, ids, queries, k, res, sq_cutoff, skip_self);
      return;
    }
  }
  run_brute_knn(exec, points, ids, queries, k, res, sq_cutoff, skip_self);
}

} // namespace kdforge::detail
