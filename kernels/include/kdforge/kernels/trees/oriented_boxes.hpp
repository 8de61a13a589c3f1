#pragma once
// Principal-axes boxes of sub-trees (D = 2 and 3): the box of a sub-tree's
// points along the eigenvectors of their covariance. Node boxes aligned with
// the coordinate axes are tight around points on an axis-aligned plane, but
// around a patch of a tilted plane, of a sphere or of a scanned surface they
// are as thick as the patch is wide, and around a piece of a diagonal line
// as thick as it is long: a query off such a surface meets hundreds of
// those boxes that hold nothing near it. Along the principal axes the same
// points are a thin slab (a surface) or a thin rod (a line), and the
// distance to that box is nearly the distance to the points themselves.
// This is the OBB of BVH and collision codes (Gottschalk, Lin & Manocha,
// "OBBTree", SIGGRAPH 1996), used here only as a second lower bound beside
// the axis-aligned box, on the nodes where it is markedly thinner.
//
// Built bottom-up with the axis-aligned boxes (node_boxes.hpp), O(1) per
// node: the covariance from the children's counts, means and second moments
// (Chan, Golub & LeVeque's pairwise update, stable for points far from the
// origin), its eigenvectors by cyclic Jacobi rotations in double, and the
// extent along each axis from the node's point and its children's boxes
// (the smaller of the supports of a child's axis-aligned and oriented box),
// rounded outward. A child's box contains its points, so a node's box
// contains its sub-tree's points, a little looser than their exact extent.
//
// Exactness. The axis-aligned distance is summed with the rounding of the
// point distances; the oriented one cannot be, so it is computed in double
// about the box's centre (the offset q - c is nearly exact, and the
// projections' errors are relative to it, not to q's coordinates), and
// scaled down by (1 - 8 eps) of the coordinate type: the stored axes are
// orthonormal only to D eps (their rounding), and a point's computed
// squared distance may undercut its exact one by (D + 2) eps / 2. So the
// bound never exceeds the computed squared distance of a point in the box,
// and pruning by it keeps results exactly those of brute force. What is
// lost is about the rounding of the distances themselves: points whose
// distances differ by less than that cannot be told apart by any exact
// method in that precision.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace kdforge::kernels {

/// Dimensions for which trees keep principal-axes boxes.
template <int D>
inline constexpr bool orientable = D == 2 || D == 3;

/// A box along D orthonormal axes: the points x below a node satisfy
/// |axis[i] . (x - center)| <= half[i] for every i.
template <class T, int D>
struct alignas(16) OrientedBox {
  T axis[D][D];
  T center[D];
  T half[D];
};

namespace oriented_detail {

template <class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr double epsilon() { // machine epsilon of T (2 ulps of 1)
  return sizeof(T) == 4 ? 1.1920928955078125e-7 : 2.220446049250313e-16;
}
KOKKOS_FORCEINLINE_FUNCTION double abs(double x) { return x < 0 ? -x : x; }

} // namespace oriented_detail

/// Lower bound of the squared distance from q to any point x in box f whose
/// squared distance is computed as sq_distance does (see the top).
template <class P, class T, int D>
KOKKOS_FORCEINLINE_FUNCTION T oriented_distance(P const& q, OrientedBox<T, D> const& f) {
  using oriented_detail::abs;
  double w[D], wn = 0;
  for (int d = 0; d < D; ++d) {
    w[d] = double(q[d]) - double(f.center[d]);
    wn += abs(w[d]);
  }
  double const pad = 1e-15 * wn; // the double projections' error, generously
  double s = 0;
  for (int i = 0; i < D; ++i) {
    double t = 0;
    for (int d = 0; d < D; ++d) t += double(f.axis[i][d]) * w[d];
    double const g = abs(t) - double(f.half[i]) - pad;
    s += g > 0 ? g * g : 0.0;
  }
  // 8 eps: the axes' D eps, the points' (D + 2) eps / 2, and this conversion's eps / 2
  return T(s * (1 - 8 * oriented_detail::epsilon<T>()));
}

namespace oriented_detail {

/// Eigenvectors of the symmetric matrix a (destroyed) as the rows of v, by
/// cyclic Jacobi rotations (Golub & Van Loan, 8.5): to double precision in a
/// few sweeps for D <= 3, whatever the eigenvalues' multiplicity.
template <int D>
KOKKOS_FUNCTION void symmetric_eigenvectors(double (&a)[D][D], double (&v)[D][D]) {
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) v[i][j] = i == j ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 16; ++sweep) {
    double off = 0, diag = 0;
    for (int p = 0; p < D; ++p) {
      diag += a[p][p] * a[p][p];
      for (int q = p + 1; q < D; ++q) off += a[p][q] * a[p][q];
    }
    if (!(off > 1e-32 * diag)) break; // also ends on 0 and NaN
    for (int p = 0; p < D; ++p) {
      for (int q = p + 1; q < D; ++q) {
        if (a[p][q] == 0) continue;
        double const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        double const at = abs(theta);
        double t = at > 1e150 ? 0.5 / at : 1.0 / (at + ::sqrt(theta * theta + 1));
        t = theta < 0 ? -t : t;
        double const c = 1 / ::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < D; ++k) { // columns p and q
          double const akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < D; ++k) { // rows p and q
          double const apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (int k = 0; k < D; ++k) { // eigenvectors are the rows of v
          double const vpk = v[p][k], vqk = v[q][k];
          v[p][k] = c * vpk - s * vqk;
          v[q][k] = s * vpk + c * vqk;
        }
      }
    }
  }
}

/// Count, mean (relative to a fixed origin) and second central moments of a
/// set of points (Chan, Golub & LeVeque 1979): merged pairwise.
template <int D>
struct Moments {
  double n = 0;
  double mean[D] = {};
  double m2[D][D] = {};
  KOKKOS_FUNCTION void add(Moments const& b) {
    if (b.n == 0) return;
    double const nn = n + b.n;
    double delta[D];
    for (int d = 0; d < D; ++d) delta[d] = b.mean[d] - mean[d];
    double const w = n * b.n / nn;
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) m2[i][j] += b.m2[i][j] + delta[i] * delta[j] * w;
    for (int d = 0; d < D; ++d) mean[d] += delta[d] * (b.n / nn);
    n = nn;
  }
  template <class P>
  KOKKOS_FUNCTION static Moments of_point(P const& p, double const (&origin)[D]) {
    Moments r;
    r.n = 1;
    for (int d = 0; d < D; ++d) r.mean[d] = double(p[d]) - origin[d];
    return r;
  }
};

/// The largest value of axis . x over an axis-aligned box [lo, hi]
/// (sign +1) or minus its smallest (sign -1), in double.
template <class T, int D>
KOKKOS_FUNCTION double aligned_support(double const (&axis)[D], T const (&lo)[D], T const (&hi)[D], double sign) {
  double r = 0;
  for (int d = 0; d < D; ++d) {
    double const a = sign * axis[d];
    r += a > 0 ? a * double(hi[d]) : a * double(lo[d]);
  }
  return r;
}

/// The same over an oriented box f: an upper bound, since f's axes are
/// orthonormal only to rounding (a point of f is center + sum_j y_j axis_j
/// with |y_j| <= half_j up to ~2 D eps_T |y|, the margin added).
template <class T, int D>
KOKKOS_FUNCTION double oriented_support(double const (&axis)[D], OrientedBox<T, D> const& f, double sign) {
  double r = 0, ymag = 0;
  for (int d = 0; d < D; ++d) r += sign * axis[d] * double(f.center[d]);
  for (int j = 0; j < D; ++j) {
    double c = 0;
    for (int d = 0; d < D; ++d) c += axis[d] * double(f.axis[j][d]);
    r += abs(c) * double(f.half[j]);
    ymag += double(f.half[j]);
  }
  return r + 4 * D * epsilon<T>() * ymag;
}

/// x rounded to a value that T represents exactly, as a double: for float,
/// Dekker's split (the high 24 bits of x), computed with correctly rounded
/// operations so that no compiler can fold it away; 0 below float's normal
/// range. Lets a stored T be used in double arithmetic without converting
/// it back, a round trip compilers have been seen to drop (GCC 12's SLP
/// vectorizer kept the unrounded double).
template <class T>
KOKKOS_FUNCTION double representable(double x) {
  if constexpr (sizeof(T) == sizeof(double)) {
    return x;
  } else {
    if (!(abs(x) > 1e-30)) return 0.0;
    double const c = backend::mul_rn(536870913.0, x); // 2^29 + 1
    return backend::add_rn(c, -backend::add_rn(c, -x));
  }
}

/// x moved down (sign -1) or up (+1) past the double computation's own
/// error (relative 1e-15 of x and of `scale`, the largest |coordinate| sum
/// of the tree) and then by one more ulp of T, so that the T bounds it
/// whichever way the conversion rounded. (::sqrt and this arithmetic
/// instead of Kokkos' math functions: their namespace differs between
/// Kokkos 3 and 4.)
template <class T>
KOKKOS_FUNCTION T round_out(double x, double scale, double sign) {
  double const w = x + sign * 1e-15 * (abs(x) + scale);
  T const r = T(w);
  return r + T(sign) * (T(abs(double(r)) * epsilon<T>()) + T(1e-30));
}

} // namespace oriented_detail

} // namespace kdforge::kernels
