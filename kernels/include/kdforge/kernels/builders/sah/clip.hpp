#pragma once
// Geometry of the SAH builder (builders/sah/build.hpp): boxes and their
// surface areas, a triangle clipped to a box, and the rounding that keeps a
// clipped box from ever losing a part of its triangle.
//
// Zhou et al. 2008 (section 3.1, Algorithm 1) clip a triangle that straddles
// a large node's split plane to each child; the box of the clipped polygon
// is tighter than the triangle's box cut by the plane, and a triangle whose
// polygon misses a child cell (its box only grazes a corner of it) is not
// listed there. The polygon is clipped in double (Sutherland-Hodgman against
// the cell's six planes, the cell widened by a few units of rounding), and
// its box is widened by the same margin and rounded outwards to T: whatever
// the rounding, the box holds the part of the triangle in the cell, so no
// leaf misses a triangle a ray can hit there.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cfloat>

namespace kdforge::kernels::sah {

/// Surface area of a box, in double, each operation rounded on its own so
/// every backend gets the same value (and the same tree).
template <class T>
KOKKOS_FUNCTION double area(Box<T, 3> const& b) {
  using backend::add_rn;
  using backend::mul_rn;
  double const dx = add_rn(double(b.hi[0]), -double(b.lo[0]));
  double const dy = add_rn(double(b.hi[1]), -double(b.lo[1]));
  double const dz = add_rn(double(b.hi[2]), -double(b.lo[2]));
  return mul_rn(2.0, add_rn(add_rn(mul_rn(dx, dy), mul_rn(dy, dz)), mul_rn(dz, dx)));
}

template <class T>
KOKKOS_FUNCTION Box<T, 3> intersect(Box<T, 3> const& a, Box<T, 3> const& b) {
  Box<T, 3> r;
  for (int d = 0; d < 3; ++d) {
    r.lo[d] = a.lo[d] > b.lo[d] ? a.lo[d] : b.lo[d];
    r.hi[d] = a.hi[d] < b.hi[d] ? a.hi[d] : b.hi[d];
  }
  return r;
}

/// The largest T not above x (x - a bit more where T is float and rounding
/// went up); double values pass unchanged.
template <class T>
KOKKOS_FUNCTION T round_down(double x) {
  T r = T(x);
  if (double(r) > x) r = r - ((r < T(0) ? -r : r) * T(FLT_EPSILON) + T(FLT_MIN));
  return r;
}
template <class T>
KOKKOS_FUNCTION T round_up(double x) {
  T r = T(x);
  if (double(r) < x) r = r + ((r < T(0) ? -r : r) * T(FLT_EPSILON) + T(FLT_MIN));
  return r;
}

/// Clips the triangle `tri` (3 corners, double) to the box [lo, hi] widened
/// by `tol`; false where nothing of it is left, else the box of what is
/// left, widened by tol, in `out`.
KOKKOS_INLINE_FUNCTION bool clip_triangle(double const (&tri)[3][3], double const (&lo)[3], double const (&hi)[3],
                                          double tol, double (&out_lo)[3], double (&out_hi)[3]) {
  using backend::add_rn;
  using backend::mul_rn;
  // at most 3 + 6 corners: each plane adds at most one
  double poly[9][3], next[9][3];
  int n = 3;
  for (int c = 0; c < 3; ++c)
    for (int d = 0; d < 3; ++d) poly[c][d] = tri[c][d];
  for (int d = 0; d < 3; ++d) {
    for (int side = 0; side < 2; ++side) {
      double const plane = side == 0 ? add_rn(lo[d], -tol) : add_rn(hi[d], tol);
      int m = 0;
      for (int j = 0; j < n; ++j) {
        double const* p = poly[j];
        double const* q = poly[j + 1 == n ? 0 : j + 1];
        // signed distance inside the half space: >= 0 keeps the corner
        double const dp = side == 0 ? add_rn(p[d], -plane) : add_rn(plane, -p[d]);
        double const dq = side == 0 ? add_rn(q[d], -plane) : add_rn(plane, -q[d]);
        if (dp >= 0.0) {
          for (int k = 0; k < 3; ++k) next[m][k] = p[k];
          ++m;
        }
        if ((dp > 0.0 && dq < 0.0) || (dp < 0.0 && dq > 0.0)) {
          double const t = dp / add_rn(dp, -dq);
          for (int k = 0; k < 3; ++k) next[m][k] = add_rn(p[k], mul_rn(t, add_rn(q[k], -p[k])));
          next[m][d] = plane;
          ++m;
        }
      }
      n = m;
      if (n == 0) return false;
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < 3; ++k) poly[j][k] = next[j][k];
    }
  }
  for (int d = 0; d < 3; ++d) {
    double l = poly[0][d], h = poly[0][d];
    for (int j = 1; j < n; ++j) {
      l = poly[j][d] < l ? poly[j][d] : l;
      h = poly[j][d] > h ? poly[j][d] : h;
    }
    out_lo[d] = add_rn(l, -tol);
    out_hi[d] = add_rn(h, tol);
  }
  return true;
}

/// The box of the part of triangle `tri` (corners in T) in `cell`, no
/// larger than `box` (the triangle's box so far): false where the triangle
/// misses the cell.
template <class T>
KOKKOS_FUNCTION bool clipped_box(T const (&tri)[3][3], Box<T, 3> const& cell, Box<T, 3> const& box, Box<T, 3>& out) {
  double corners[3][3], lo[3], hi[3], olo[3], ohi[3];
  double scale = 0.0;
  for (int c = 0; c < 3; ++c)
    for (int d = 0; d < 3; ++d) {
      corners[c][d] = double(tri[c][d]);
      double const a = corners[c][d] < 0.0 ? -corners[c][d] : corners[c][d];
      scale = a > scale ? a : scale;
    }
  for (int d = 0; d < 3; ++d) {
    lo[d] = double(cell.lo[d]);
    hi[d] = double(cell.hi[d]);
    double const a = (lo[d] < 0.0 ? -lo[d] : lo[d]) > (hi[d] < 0.0 ? -hi[d] : hi[d]) ? (lo[d] < 0.0 ? -lo[d] : lo[d])
                                                                                      : (hi[d] < 0.0 ? -hi[d] : hi[d]);
    scale = a > scale ? a : scale;
  }
  // a few units of double rounding per clipping step, relative to the
  // largest coordinate involved (the interpolation's error scale)
  double const tol = 64.0 * DBL_EPSILON * scale + DBL_MIN;
  if (!clip_triangle(corners, lo, hi, tol, olo, ohi)) return false;
  Box<T, 3> c;
  for (int d = 0; d < 3; ++d) {
    c.lo[d] = round_down<T>(olo[d]);
    c.hi[d] = round_up<T>(ohi[d]);
  }
  out = intersect(intersect(c, box), cell);
  for (int d = 0; d < 3; ++d)
    if (out.lo[d] > out.hi[d]) return false;
  return true;
}

} // namespace kdforge::kernels::sah
