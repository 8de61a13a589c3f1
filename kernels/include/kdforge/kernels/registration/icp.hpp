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
// double, written once for the host and the device.
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

/// Eigen-decomposition of the symmetric n x n matrix a (n <= 6, destroyed) by
/// cyclic Jacobi rotations: eigenvalues in w, eigenvectors as the columns of
/// v, sorted by descending eigenvalue.
template <int n>
KOKKOS_INLINE_FUNCTION void symmetric_eigen(double a[n][n], double w[n], double v[n][n]) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) v[i][j] = i == j ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0, diag = 0;
    for (int p = 0; p < n; ++p) {
      diag += a[p][p] * a[p][p];
      for (int q = p + 1; q < n; ++q) off += a[p][q] * a[p][q];
    }
    if (off <= 1e-30 * diag || off == 0) break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        if (a[p][q] == 0) continue;
        double const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        double const t = (theta >= 0 ? 1.0 : -1.0) / (::fabs(theta) + ::sqrt(theta * theta + 1));
        double const c = 1 / ::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < n; ++k) { // a = a J, v = v J
          double const ap = a[k][p], aq = a[k][q];
          a[k][p] = c * ap - s * aq;
          a[k][q] = s * ap + c * aq;
          double const vp = v[k][p], vq = v[k][q];
          v[k][p] = c * vp - s * vq;
          v[k][q] = s * vp + c * vq;
        }
        for (int k = 0; k < n; ++k) { // a = J^T a
          double const ap = a[p][k], aq = a[q][k];
          a[p][k] = c * ap - s * aq;
          a[q][k] = s * ap + c * aq;
        }
      }
  }
  for (int i = 0; i < n; ++i) w[i] = a[i][i];
  for (int i = 0; i < n; ++i) { // selection sort, descending
    int m = i;
    for (int j = i + 1; j < n; ++j)
      if (w[j] > w[m]) m = j;
    if (m == i) continue;
    double const tw = w[i];
    w[i] = w[m];
    w[m] = tw;
    for (int k = 0; k < n; ++k) {
      double const tv = v[k][i];
      v[k][i] = v[k][m];
      v[k][m] = tv;
    }
  }
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
  double w4[4], v4[4][4];
  symmetric_eigen<4>(N, w4, v4);
  double q[4] = {v4[0][0], v4[1][0], v4[2][0], v4[3][0]};
  double const ql = ::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (int u = 0; u < 4; ++u) q[u] /= ql;
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
