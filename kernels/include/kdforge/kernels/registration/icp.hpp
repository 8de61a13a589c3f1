#pragma once
// Iterative Closest Point: what one iteration sums per correspondence and
// the small solves of the sums (device-callable: the loop of
// icp_loop.hpp runs them in its reductions' final step; the reference loop
// in core/include/kdforge/icp.hpp runs them on the host).
//
// Paper: Wehr & Radkowski 2018, sections I and V: ICP tracking of a rigid
// object in range-camera scans, the scan's k-d tree rebuilt every frame by
// the split-and-sort builder and each iteration's nearest neighbours found
// exactly or approximately with the bounded double-ended queue (capacity Q).
// The paper uses ICP as its application and gives no ICP details; the
// registration steps follow the classic papers:
//  - point to point: Besl & McKay 1992, the rigid fit of the 3x3
//    cross-covariance in closed form by Horn's unit quaternion (1987; the
//    largest eigenvector of a 4x4 symmetric matrix), which never returns a
//    reflection and stays defined for planar clouds (rank-2 covariance);
//  - point to plane: Chen & Medioni 1992, linearised (small angles) as in
//    Low 2004: 6x6 normal equations, rotations scaled by the cloud's radius
//    so their eigenvalues compare with the translations'.
// What differs: every sum an iteration needs (17 for point to point, 30 for
// point to plane) is one parallel_reduce over the correspondences, in
// double, about a reference point near the clouds (no cancellation at large
// coordinate offsets); the 4x4/3x3/6x6 eigen-solves are cyclic Jacobi in
// double, written once for the host and the device, except Horn's
// quaternion in the iterations, which comes first from Theobald's QCP
// (2005: Newton's method on the 4x4 matrix's characteristic polynomial,
// then a column of the adjugate; horn_quaternion): one GPU thread runs each
// iteration's solve, and the Jacobi sweeps took ~15,000 dependent
// instructions there, about as long as the iteration's walks. Jacobi stays
// where the largest eigenvalue is not well separated.
// Degeneracy is reported from the singular values (point to point) or the
// eigenvalues of the normal equations (point to plane), and the 6x6 system
// is solved by a pseudo-inverse, so an unconstrained direction gets no
// motion instead of an arbitrary one.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/registration.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>

namespace kdforge::kernels::registration {

/// N sums in double, reduced with one parallel_reduce.
template <int N>
struct Sums {
  double v[N];
};

/// Kokkos reducer of Sums<N>: element-wise addition.
template <int N>
struct SumsReducer {
  using reducer = SumsReducer;
  using value_type = Sums<N>;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  result_view_type value;
  KOKKOS_INLINE_FUNCTION explicit SumsReducer(value_type& v) : value(&v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& dst, value_type const& src) const {
    for (int i = 0; i < N; ++i) dst.v[i] += src.v[i];
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dst, volatile value_type const& src) const {
    for (int i = 0; i < N; ++i) dst.v[i] += src.v[i];
  }
#endif
  KOKKOS_INLINE_FUNCTION void init(value_type& x) const {
    for (int i = 0; i < N; ++i) x.v[i] = 0;
  }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return value; }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

/// The transform as float or double for a kernel: x -> r x + t.
template <class T>
struct DeviceTransform {
  T r[3][3];
  T t[3];
};

template <class T>
KOKKOS_INLINE_FUNCTION DeviceTransform<T> device_transform(RigidTransform const& x) {
  DeviceTransform<T> d;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) d.r[i][j] = T(x.rotation[i][j]);
    d.t[i] = T(x.translation[i]);
  }
  return d;
}

/// x(p) in double, rounded to T, with explicit rounding (no fused
/// multiply-add): the same bits on every backend, so every backend queries
/// the tree with the same moved points.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Point<T, 3> moved_point(DeviceTransform<double> const& d, Point<T, 3> const& p) {
  using backend::add_rn;
  using backend::mul_rn;
  Point<T, 3> q;
  for (int a = 0; a < 3; ++a)
    q[a] = T(add_rn(add_rn(add_rn(mul_rn(d.r[a][0], double(p[0])), mul_rn(d.r[a][1], double(p[1]))),
                           mul_rn(d.r[a][2], double(p[2]))),
                    d.t[a]));
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && (defined(__GNUC__) || defined(__clang__))
  // q through memory: GCC 12 (-O3, the ICP loop's OpenMP kernel) kept the
  // unrounded double values for q's later uses in the sums while the
  // search used the rounded floats, so the loop's sums differed from the
  // reference loop's by float rounding; an empty asm with q as a memory
  // operand makes every use read the rounded coordinates.
  asm volatile("" : "+m"(q));
#endif
  return q;
}

/// moved(i) = transform(source(i)).
template <class Exec, class T, class Src, class Dst>
void transform_points(Exec const& exec, Src const& source, Dst const& moved, RigidTransform const& x) {
  auto const d = device_transform<double>(x);
  Kokkos::parallel_for("kdforge::icp::transform", Kokkos::RangePolicy<Exec>(exec, 0, source.extent(0)),
                       KOKKOS_LAMBDA(std::int64_t i) { moved(i) = moved_point<T>(d, source(i)); });
}

// Point to point: n, sum a (3), sum b (3), sum a b^T (9), sum |a - b|^2,
// with a = moved source - c, b = target - c.
inline constexpr int point_sums = 17;
// Point to plane: n, J^T J (21, upper triangle), J^T r (6), sum r^2, sum |a - b|^2.
inline constexpr int plane_sums = 30;

/// Adds one correspondence, moved source point p and target point q at
/// squared distance d2, to the point-to-point sums about c.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void add_point_pair(Sums<point_sums>& acc, Point<T, 3> const& p, Point<T, 3> const& q,
                                                double d2, double const c[3]) {
  double const a[3] = {double(p[0]) - c[0], double(p[1]) - c[1], double(p[2]) - c[2]};
  double const b[3] = {double(q[0]) - c[0], double(q[1]) - c[1], double(q[2]) - c[2]};
  acc.v[0] += 1;
  for (int u = 0; u < 3; ++u) {
    acc.v[1 + u] += a[u];
    acc.v[4 + u] += b[u];
    for (int w = 0; w < 3; ++w) acc.v[7 + 3 * u + w] += a[u] * b[w];
  }
  acc.v[16] += d2;
}

/// Adds one correspondence with the target normal nn to the point-to-plane
/// sums: residual r = (a - b) . n, Jacobian row [(a / scale) x n, n] for the
/// increment (rotation about c, scaled; translation), inv = 1 / scale. A zero
/// normal (none estimated) leaves the pair out.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void add_plane_pair(Sums<plane_sums>& acc, Point<T, 3> const& p, Point<T, 3> const& q,
                                                Point<T, 3> const& nn, double d2, double const c[3], double inv) {
  double const n[3] = {double(nn[0]), double(nn[1]), double(nn[2])};
  if (n[0] == 0 && n[1] == 0 && n[2] == 0) return;
  double const a[3] = {double(p[0]) - c[0], double(p[1]) - c[1], double(p[2]) - c[2]};
  double const b[3] = {double(q[0]) - c[0], double(q[1]) - c[1], double(q[2]) - c[2]};
  double const r = (a[0] - b[0]) * n[0] + (a[1] - b[1]) * n[1] + (a[2] - b[2]) * n[2];
  double const J[6] = {inv * (a[1] * n[2] - a[2] * n[1]), inv * (a[2] * n[0] - a[0] * n[2]),
                       inv * (a[0] * n[1] - a[1] * n[0]), n[0], n[1], n[2]};
  acc.v[0] += 1;
  int k = 1;
  for (int u = 0; u < 6; ++u)
    for (int w = u; w < 6; ++w) acc.v[k++] += J[u] * J[w];
  for (int u = 0; u < 6; ++u) acc.v[22 + u] += J[u] * r;
  acc.v[28] += r * r;
  acc.v[29] += d2;
}

/// Sums of the accepted correspondences (index >= 0, squared distance <=
/// sq_max) between moved source points and the target, added in the
/// processing order `order` (empty: as given).
template <class Exec, class T, class Moved, class Target, class Idx, class Dist, class Order>
Sums<point_sums> point_to_point_sums(Exec const& exec, Moved const& moved, Target const& target, Idx const& idx,
                                     Dist const& sq_dist, double sq_max, double const c[3], Order const& order) {
  double const c0 = c[0], c1 = c[1], c2 = c[2];
  Sums<point_sums> s;
  Kokkos::parallel_reduce(
      "kdforge::icp::point_to_point_sums", Kokkos::RangePolicy<Exec>(exec, 0, moved.extent(0)),
      KOKKOS_LAMBDA(std::int64_t k, Sums<point_sums> & acc) {
        std::int64_t const i = order.extent(0) ? std::int64_t(order(k)) : k;
        auto const j = idx(i);
        double const d2 = double(sq_dist(i));
        if (j < 0 || !(d2 <= sq_max)) return;
        double const cc[3] = {c0, c1, c2};
        add_point_pair<T>(acc, moved(i), target(j), d2, cc);
      },
      SumsReducer<point_sums>(s));
  exec.fence();
  return s;
}

/// Point-to-plane sums (add_plane_pair) of the accepted correspondences,
/// in the processing order `order` (empty: as given).
template <class Exec, class T, class Moved, class Target, class Normals, class Idx, class Dist, class Order>
Sums<plane_sums> point_to_plane_sums(Exec const& exec, Moved const& moved, Target const& target, Normals const& normals,
                                     Idx const& idx, Dist const& sq_dist, double sq_max, double const c[3],
                                     double scale, Order const& order) {
  double const c0 = c[0], c1 = c[1], c2 = c[2], inv = 1.0 / scale;
  Sums<plane_sums> s;
  Kokkos::parallel_reduce(
      "kdforge::icp::point_to_plane_sums", Kokkos::RangePolicy<Exec>(exec, 0, moved.extent(0)),
      KOKKOS_LAMBDA(std::int64_t k, Sums<plane_sums> & acc) {
        std::int64_t const i = order.extent(0) ? std::int64_t(order(k)) : k;
        auto const j = idx(i);
        double const d2 = double(sq_dist(i));
        if (j < 0 || !(d2 <= sq_max)) return;
        double const cc[3] = {c0, c1, c2};
        add_plane_pair<T>(acc, moved(i), target(j), normals(j), d2, cc, inv);
      },
      SumsReducer<plane_sums>(s));
  exec.fence();
  return s;
}

/// Adds p to the count, the sum and the sum of squared lengths about c.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void add_centroid(double v[5], Point<T, 3> const& p, double const c[3]) {
  double const a[3] = {double(p[0]) - c[0], double(p[1]) - c[1], double(p[2]) - c[2]};
  v[0] += 1;
  v[1] += a[0];
  v[2] += a[1];
  v[3] += a[2];
  v[4] += a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
}

/// Sum and count of the points (for the reference point c and the radius).
template <class Exec, class T, class Pts>
Sums<5> centroid_sums(Exec const& exec, Pts const& pts, double const c[3]) {
  double const c0 = c[0], c1 = c[1], c2 = c[2];
  Sums<5> s;
  Kokkos::parallel_reduce(
      "kdforge::icp::centroid", Kokkos::RangePolicy<Exec>(exec, 0, pts.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i, Sums<5> & acc) {
        double const cc[3] = {c0, c1, c2};
        add_centroid<T>(acc.v, pts(i), cc);
      },
      SumsReducer<5>(s));
  exec.fence();
  return s;
}

/// The reference point of a centroid sum about the origin, and the RMS
/// radius (1 where it is 0 or not finite) of a sum about that point.
KOKKOS_INLINE_FUNCTION void centroid_of(double const v[5], double c[3]) {
  for (int u = 0; u < 3; ++u) c[u] = v[1 + u] / v[0];
}
KOKKOS_INLINE_FUNCTION double radius_of(double const v[5]) {
  double const scale = ::sqrt(v[4] / v[0]);
  return scale > 0 && scale <= DBL_MAX ? scale : 1.0;
}

// ---- the small symmetric eigenproblems (host and device) ----

/// One Jacobi rotation of the cyclic sweep, zeroing a[p][q]: a = J^T a J,
/// v = v J. The indices are template arguments so that, with the loops over
/// k unrolled, the matrices stay in registers on GPUs: a run-time index
/// puts an array in local memory, and the solve, which one thread runs in
/// each iteration's final step (icp_loop.hpp), then took ~50 us.
template <int n, int p, int q>
KOKKOS_FORCEINLINE_FUNCTION void jacobi_rotation(double (&a)[n][n], double (&v)[n][n]) {
  if (a[p][q] == 0) return;
  double const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
  double const t = (theta >= 0 ? 1.0 : -1.0) / (::fabs(theta) + ::sqrt(theta * theta + 1));
  double const c = 1 / ::sqrt(t * t + 1), s = t * c;
  KDFORGE_UNROLL
  for (int k = 0; k < n; ++k) { // a = a J, v = v J
    double const ap = a[k][p], aq = a[k][q];
    a[k][p] = c * ap - s * aq;
    a[k][q] = s * ap + c * aq;
    double const vp = v[k][p], vq = v[k][q];
    v[k][p] = c * vp - s * vq;
    v[k][q] = s * vp + c * vq;
  }
  KDFORGE_UNROLL
  for (int k = 0; k < n; ++k) { // a = J^T a
    double const ap = a[p][k], aq = a[q][k];
    a[p][k] = c * ap - s * aq;
    a[q][k] = s * ap + c * aq;
  }
}

/// The rotations of one cyclic sweep, (p, q) in row order from (p, q).
template <int n, int p, int q>
KOKKOS_FORCEINLINE_FUNCTION void jacobi_sweep(double (&a)[n][n], double (&v)[n][n]) {
  if constexpr (p < n - 1) {
    if constexpr (q < n) {
      jacobi_rotation<n, p, q>(a, v);
      jacobi_sweep<n, p, q + 1>(a, v);
    } else {
      jacobi_sweep<n, p + 1, p + 2>(a, v);
    }
  }
}

/// Eigen-decomposition of the symmetric n x n matrix a (n <= 6, destroyed) by
/// cyclic Jacobi rotations: eigenvalues in w, eigenvectors as the columns of
/// v, sorted by descending eigenvalue. Every index is known at compile time
/// (see jacobi_rotation).
template <int n>
KOKKOS_INLINE_FUNCTION void symmetric_eigen(double (&a)[n][n], double (&w)[n], double (&v)[n][n]) {
  KDFORGE_UNROLL
  for (int i = 0; i < n; ++i) {
    KDFORGE_UNROLL
    for (int j = 0; j < n; ++j) v[i][j] = i == j ? 1.0 : 0.0;
  }
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0, diag = 0;
    KDFORGE_UNROLL
    for (int p = 0; p < n; ++p) {
      diag += a[p][p] * a[p][p];
      KDFORGE_UNROLL
      for (int q = p + 1; q < n; ++q) off += a[p][q] * a[p][q];
    }
    if (off <= 1e-30 * diag || off == 0) break;
    jacobi_sweep<n, 0, 1>(a, v);
  }
  KDFORGE_UNROLL
  for (int i = 0; i < n; ++i) w[i] = a[i][i];
  // descending: every pair (i, j > i) exchanged when out of order, so that
  // no index depends on the values
  KDFORGE_UNROLL
  for (int i = 0; i < n; ++i) {
    KDFORGE_UNROLL
    for (int j = i + 1; j < n; ++j) {
      bool const swap = w[j] > w[i];
      double const wi = w[i], wj = w[j];
      w[i] = swap ? wj : wi;
      w[j] = swap ? wi : wj;
      KDFORGE_UNROLL
      for (int k = 0; k < n; ++k) {
        double const vi = v[k][i], vj = v[k][j];
        v[k][i] = swap ? vj : vi;
        v[k][j] = swap ? vi : vj;
      }
    }
  }
}

/// The cofactor (r, c) of the 4x4 matrix m.
template <int r, int c>
KOKKOS_FORCEINLINE_FUNCTION double cofactor4(double const (&m)[4][4]) {
  constexpr int r0 = r == 0 ? 1 : 0, r1 = r <= 1 ? 2 : 1, r2 = r <= 2 ? 3 : 2;
  constexpr int c0 = c == 0 ? 1 : 0, c1 = c <= 1 ? 2 : 1, c2 = c <= 2 ? 3 : 2;
  double const d = m[r0][c0] * (m[r1][c1] * m[r2][c2] - m[r1][c2] * m[r2][c1]) -
                   m[r0][c1] * (m[r1][c0] * m[r2][c2] - m[r1][c2] * m[r2][c0]) +
                   m[r0][c2] * (m[r1][c0] * m[r2][c1] - m[r1][c1] * m[r2][c0]);
  return (r + c) % 2 ? -d : d;
}

/// Row r of the cofactors of m (of a symmetric m: column r of its adjugate).
template <int r>
KOKKOS_FORCEINLINE_FUNCTION void cofactor_row4(double const (&m)[4][4], double (&out)[4]) {
  out[0] = cofactor4<r, 0>(m);
  out[1] = cofactor4<r, 1>(m);
  out[2] = cofactor4<r, 2>(m);
  out[3] = cofactor4<r, 3>(m);
}

/// The unit eigenvector of the largest eigenvalue of Horn's symmetric,
/// traceless 4x4 matrix N, by Theobald's QCP (Acta Cryst. A61, 2005): the
/// characteristic polynomial p(l) = l^4 - tr(N^2)/2 l^2 - tr(N^3)/3 l +
/// det N, Newton's method from sqrt(tr(N^2)) (no eigenvalue lies above it;
/// from above the largest root the iterates fall monotonically to it), and
/// the largest column of adj(N - l I), which is a multiple of the
/// eigenvector when l is a simple eigenvalue. Its error grows as p'(l) (the
/// product of the other eigenvalues' distances to l) falls: evaluating p
/// costs ~eps tr(N^2)^2, so l is off by ~eps tr(N^2)^2 / p'(l) and the
/// column by that over the gap to the next eigenvalue. False, q untouched,
/// where p'(l) is below 1e-3 tr(N^2)^(3/2) (the largest eigenvalue close to
/// the next, as for a source on a line), and the caller uses Jacobi; above
/// it the error stays below ~eps / 1e-6, a few 1e-10.
KOKKOS_INLINE_FUNCTION bool horn_quaternion(double const (&N)[4][4], double (&q)[4]) {
  double n2[4][4];
  KDFORGE_UNROLL
  for (int i = 0; i < 4; ++i) {
    KDFORGE_UNROLL
    for (int j = 0; j < 4; ++j) n2[i][j] = N[i][0] * N[0][j] + N[i][1] * N[1][j] + N[i][2] * N[2][j] + N[i][3] * N[3][j];
  }
  double tr2 = 0, tr3 = 0;
  KDFORGE_UNROLL
  for (int i = 0; i < 4; ++i) {
    tr2 += n2[i][i];
    KDFORGE_UNROLL
    for (int j = 0; j < 4; ++j) tr3 += n2[i][j] * N[j][i];
  }
  double const det = N[0][0] * cofactor4<0, 0>(N) + N[0][1] * cofactor4<0, 1>(N) + N[0][2] * cofactor4<0, 2>(N) +
                     N[0][3] * cofactor4<0, 3>(N);
  double const c2 = -0.5 * tr2, c1 = -tr3 / 3, c0 = det;
  if (!(tr2 > 0) || !(tr2 <= DBL_MAX)) return false;
  double l = ::sqrt(tr2);
  for (int it = 0; it < 100; ++it) {
    double const l2 = l * l;
    double const p = (l2 + c2) * l2 + c1 * l + c0;
    double const dp = (4 * l2 + 2 * c2) * l + c1;
    if (!(dp > 0)) break;
    double const next = l - p / dp;
    if (!(next < l)) break; // rounding: no more progress
    l = next;
  }
  double const dp = (4 * l * l + 2 * c2) * l + c1;
  if (!(dp > 1e-3 * tr2 * ::sqrt(tr2))) return false;
  double m[4][4];
  KDFORGE_UNROLL
  for (int i = 0; i < 4; ++i) {
    KDFORGE_UNROLL
    for (int j = 0; j < 4; ++j) m[i][j] = i == j ? N[i][j] - l : N[i][j];
  }
  double a[4][4];
  cofactor_row4<0>(m, a[0]);
  cofactor_row4<1>(m, a[1]);
  cofactor_row4<2>(m, a[2]);
  cofactor_row4<3>(m, a[3]);
  double best[4] = {a[0][0], a[0][1], a[0][2], a[0][3]};
  double best_norm = best[0] * best[0] + best[1] * best[1] + best[2] * best[2] + best[3] * best[3];
  KDFORGE_UNROLL
  for (int r = 1; r < 4; ++r) {
    double const norm = a[r][0] * a[r][0] + a[r][1] * a[r][1] + a[r][2] * a[r][2] + a[r][3] * a[r][3];
    bool const take = norm > best_norm;
    best_norm = take ? norm : best_norm;
    KDFORGE_UNROLL
    for (int u = 0; u < 4; ++u) best[u] = take ? a[r][u] : best[u];
  }
  if (!(best_norm > 0) || !(best_norm <= DBL_MAX)) return false;
  double const inv = 1 / ::sqrt(best_norm);
  KDFORGE_UNROLL
  for (int u = 0; u < 4; ++u) q[u] = best[u] * inv;
  return true;
}

/// The rotation of a unit quaternion (w, x, y, z).
KOKKOS_INLINE_FUNCTION void quaternion_rotation(double const q[4], double r[3][3]) {
  double const w = q[0], x = q[1], y = q[2], z = q[3];
  r[0][0] = w * w + x * x - y * y - z * z;
  r[0][1] = 2 * (x * y - w * z);
  r[0][2] = 2 * (x * z + w * y);
  r[1][0] = 2 * (x * y + w * z);
  r[1][1] = w * w - x * x + y * y - z * z;
  r[1][2] = 2 * (y * z - w * x);
  r[2][0] = 2 * (x * z - w * y);
  r[2][1] = 2 * (y * z + w * x);
  r[2][2] = w * w - x * x - y * y + z * z;
}

/// What one iteration's solve gives.
struct Step {
  RigidTransform increment; ///< applied after the current transform
  double sq_error = 0;      ///< mean squared correspondence distance
  std::int64_t count = 0;
  double singular_values[3] = {0, 0, 0};
  double weakest_axis[3] = {0, 0, 0}; ///< point to point: smallest singular direction
  double largest_eigenvalue = 0;      ///< point to plane: of the normal equations
};

/// The increment x -> R (x - c) + c + t that best maps the moved source a
/// onto the target b in least squares (Horn 1987), from the 17 sums; with
/// `singular_values`, also the singular values and the weakest direction of
/// the cross-covariance (a second eigen-solve, which the loop needs only
/// at the final transform).
KOKKOS_INLINE_FUNCTION Step solve_point_to_point(Sums<point_sums> const& s, double const c[3],
                                                 bool singular_values = true) {
  Step st;
  double const n = s.v[0];
  st.count = std::int64_t(n);
  if (n < 1) return st;
  double ma[3], mb[3], h[3][3];
  for (int u = 0; u < 3; ++u) {
    ma[u] = s.v[1 + u] / n;
    mb[u] = s.v[4 + u] / n;
  }
  for (int u = 0; u < 3; ++u)
    for (int w = 0; w < 3; ++w) h[u][w] = s.v[7 + 3 * u + w] / n - ma[u] * mb[w]; // cross-covariance, source x target
  st.sq_error = s.v[16] / n;
  // Horn's symmetric 4x4 matrix; its largest eigenvector is the quaternion.
  double const Sxx = h[0][0], Sxy = h[0][1], Sxz = h[0][2], Syx = h[1][0], Syy = h[1][1], Syz = h[1][2],
               Szx = h[2][0], Szy = h[2][1], Szz = h[2][2];
  double N[4][4] = {{Sxx + Syy + Szz, Syz - Szy, Szx - Sxz, Sxy - Syx},
                    {Syz - Szy, Sxx - Syy - Szz, Sxy + Syx, Szx + Sxz},
                    {Szx - Sxz, Sxy + Syx, -Sxx + Syy - Szz, Syz + Szy},
                    {Sxy - Syx, Szx + Sxz, Syz + Szy, -Sxx - Syy + Szz}};
  double q[4];
  if (!horn_quaternion(N, q)) {
    double w4[4], v4[4][4];
    symmetric_eigen<4>(N, w4, v4);
    KDFORGE_UNROLL
    for (int u = 0; u < 4; ++u) q[u] = v4[u][0];
    double const ql = ::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    KDFORGE_UNROLL
    for (int u = 0; u < 4; ++u) q[u] /= ql;
  }
  double r[3][3];
  quaternion_rotation(q, r);
  // x -> r (x - c) + c + (mb - r ma): absolute translation c + mb - r (ma + c)
  for (int u = 0; u < 3; ++u) {
    for (int w = 0; w < 3; ++w) st.increment.rotation[u][w] = r[u][w];
    st.increment.translation[u] =
        c[u] + mb[u] - (r[u][0] * (ma[0] + c[0]) + r[u][1] * (ma[1] + c[1]) + r[u][2] * (ma[2] + c[2]));
  }
  if (!singular_values) return st;
  // singular values of h: square roots of the eigenvalues of h h^T, whose
  // eigenvectors are the source-side singular directions
  double hh[3][3], w3[3], v3[3][3];
  for (int u = 0; u < 3; ++u)
    for (int w = 0; w < 3; ++w) hh[u][w] = h[u][0] * h[w][0] + h[u][1] * h[w][1] + h[u][2] * h[w][2];
  symmetric_eigen<3>(hh, w3, v3);
  for (int u = 0; u < 3; ++u) {
    st.singular_values[u] = ::sqrt(w3[u] > 0 ? w3[u] : 0.0);
    st.weakest_axis[u] = v3[u][2];
  }
  return st;
}

/// The linearised point-to-plane increment from the 30 sums; the pseudo-
/// inverse leaves directions with eigenvalue below ratio x the largest
/// unmoved. singular_values: the three smallest eigenvalues, descending.
KOKKOS_INLINE_FUNCTION Step solve_point_to_plane(Sums<plane_sums> const& s, double const c[3], double scale,
                                                 double ratio) {
  Step st;
  double const n = s.v[0];
  st.count = std::int64_t(n);
  if (n < 1) return st;
  st.sq_error = s.v[29] / n;
  double A[6][6], b[6];
  int k = 1;
  for (int u = 0; u < 6; ++u)
    for (int w = u; w < 6; ++w) A[u][w] = A[w][u] = s.v[k++] / n;
  for (int u = 0; u < 6; ++u) b[u] = -s.v[22 + u] / n;
  double w6[6], v6[6][6];
  symmetric_eigen<6>(A, w6, v6);
  double x[6] = {0, 0, 0, 0, 0, 0};
  for (int e = 0; e < 6; ++e) {
    if (!(w6[e] > ratio * w6[0]) || w6[e] <= 0) continue;
    double dot = 0;
    for (int u = 0; u < 6; ++u) dot += v6[u][e] * b[u];
    for (int u = 0; u < 6; ++u) x[u] += v6[u][e] * dot / w6[e];
  }
  for (int u = 0; u < 3; ++u) st.singular_values[u] = w6[3 + u];
  st.largest_eigenvalue = w6[0];
  double const omega[3] = {x[0] / scale, x[1] / scale, x[2] / scale};
  double const angle = ::sqrt(omega[0] * omega[0] + omega[1] * omega[1] + omega[2] * omega[2]);
  RigidTransform r = RigidTransform::from_axis_angle(omega, angle);
  // x -> R (x - c) + c + tau
  for (int u = 0; u < 3; ++u) {
    for (int w = 0; w < 3; ++w) st.increment.rotation[u][w] = r.rotation[u][w];
    st.increment.translation[u] =
        c[u] + x[3 + u] - (r.rotation[u][0] * c[0] + r.rotation[u][1] * c[1] + r.rotation[u][2] * c[2]);
  }
  return st;
}

} // namespace kdforge::kernels::registration
