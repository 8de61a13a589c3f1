#pragma once
// Watertight ray/triangle intersection: Woop, Benthin & Wald 2013,
// "Watertight Ray/Triangle Intersection" (JCGT 2(1)), section 3 and
// Figure 1 (their pseudo code without back-face culling).
//
// The ray is turned into its own frame once (kz: the direction's largest
// component, kx and ky the others, swapped where that component is negative
// so the frame keeps its winding; a shear maps the direction onto the z
// axis); each triangle's corners are moved into that frame, and the hit is
// decided by the signs of the three 2-D edge functions U, V, W. Two
// triangles that share an edge evaluate that edge's function from the same
// transformed corners with the operands swapped, so they get exactly
// opposite values, and a ray through the edge hits one of them (or both,
// where the value is zero): no ray slips through a shared edge or vertex.
//
// What differs, and why:
//  - Every product and sum is rounded on its own (backend::mul_rn/add_rn):
//    a fused multiply-add would round a*b - c*d differently from c*d - a*b
//    and break the antisymmetry above, and would make GPU and CPU answers
//    differ.
//  - Where an edge function of float coordinates is exactly zero it is
//    recomputed in double, as the paper does: the products of floats are
//    exact in double, so its sign is then exact. Double coordinates have no
//    wider type here; zero then counts as inside for both triangles (the
//    paper's rule), which keeps the test watertight, at the price of the
//    rare double hit on an edge.
//  - t is computed by division after the sign tests rather than kept scaled
//    by det: the same correctly rounded t for the closest-hit comparisons of
//    every backend and of the brute-force reference.
//  - A hit must lie where the ray crosses the triangle's box: after the
//    sign tests the ray is clipped to the box as the walks clip it (the
//    same rounding slack; exact along axes the ray does not move on). A ray
//    that misses the box misses: where rounding has eaten the sign tests'
//    precision (products of double corners close to the origin underflow
//    to zero and count as an edge; float corners of 1e26 beside a ray at
//    unit scale) they report hits away from the triangle, which the walks
//    never reach. A t outside the ray's interval through the box is moved
//    to its nearer end, not refused: t is a weighted mean of the corners'
//    distances along the ray, exact only to rounding of those distances,
//    which is far more than rounding of t where the ray starts close to a
//    large triangle (a shadow ray 6.5e-4 above a floor 8 units wide:
//    t = 2.16692e-4 for an exact 2.16596e-4, which the floor's flat box
//    pins to within 1e-10). The true hit lies in the interval, so the
//    moved t is the better one, and the walks, which look for hits there,
//    find it.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/ray.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cstdint>
#include <type_traits>

namespace kdforge::kernels {

/// A few units of rounding of a ray parameter t: the walks widen the ray's
/// interval through a box by it, and a hit must lie within its triangle's
/// box widened the same way.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T ray_rounding_slack(T t) {
  constexpr T eps = std::is_same<T, float>::value ? T(FLT_EPSILON) : T(DBL_EPSILON);
  return T(8) * eps * (t < T(0) ? -t : t);
}

/// A ray in its own frame (Woop et al. 2013, section 3: the per-ray
/// precomputation): permutation kx, ky, kz and shear Sx, Sy, Sz.
template <class T>
struct WatertightRay {
  T org[3];
  T dir[3];
  T tmin;
  T tmax;
  int kx, ky, kz;
  T Sx, Sy, Sz;
};

template <class T>
KOKKOS_FUNCTION WatertightRay<T> make_watertight_ray(Ray<T> const& r) {
  WatertightRay<T> w;
  for (int d = 0; d < 3; ++d) {
    w.org[d] = r.origin[d];
    w.dir[d] = r.direction[d];
  }
  w.tmin = r.tmin;
  w.tmax = r.tmax;
  T const ax = r.direction[0] < T(0) ? -r.direction[0] : r.direction[0];
  T const ay = r.direction[1] < T(0) ? -r.direction[1] : r.direction[1];
  T const az = r.direction[2] < T(0) ? -r.direction[2] : r.direction[2];
  int kz = 0;
  if (ay > ax) kz = 1;
  if (az > (kz == 0 ? ax : ay)) kz = 2;
  int kx = kz + 1 == 3 ? 0 : kz + 1;
  int ky = kx + 1 == 3 ? 0 : kx + 1;
  if (r.direction[kz] < T(0)) {
    int const t = kx;
    kx = ky;
    ky = t;
  }
  w.kx = kx;
  w.ky = ky;
  w.kz = kz;
  w.Sx = r.direction[kx] / r.direction[kz];
  w.Sy = r.direction[ky] / r.direction[kz];
  w.Sz = T(1) / r.direction[kz];
  return w;
}

/// The result of one ray/triangle test: hit within [tmin, tmax] or not, the
/// ray parameter and the barycentric weights of corners 1 and 2.
template <class T>
struct TriangleHit {
  bool hit;
  T t;
  T u;
  T v;
};

namespace watertight_detail {
// a * b - c * d, each operation rounded on its own
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T cross2(T a, T b, T c, T d) {
  return backend::add_rn(backend::mul_rn(a, b), -backend::mul_rn(c, d));
}
// the ray's interval [t0, t1] through the box of corners a, b, c, widened
// by the rounding slack the walks widen boxes by (walks/ray_stack.hpp);
// exact along axes the ray does not move on. False where the ray misses
// the box.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION bool box_interval(WatertightRay<T> const& w, T const* a, T const* b, T const* c, T& t0,
                                              T& t1) {
  t0 = -::kdforge::detail::infinity<T>();
  t1 = ::kdforge::detail::infinity<T>();
  for (int d = 0; d < 3; ++d) {
    T const lo = a[d] < b[d] ? (a[d] < c[d] ? a[d] : c[d]) : (b[d] < c[d] ? b[d] : c[d]);
    T const hi = a[d] > b[d] ? (a[d] > c[d] ? a[d] : c[d]) : (b[d] > c[d] ? b[d] : c[d]);
    T const o = w.org[d], dir = w.dir[d];
    if (dir == T(0)) {
      if (o < lo || o > hi) return false;
      continue;
    }
    T ta = (lo - o) / dir, tb = (hi - o) / dir;
    if (ta > tb) {
      T const x = ta;
      ta = tb;
      tb = x;
    }
    ta -= ray_rounding_slack(ta);
    tb += ray_rounding_slack(tb);
    t0 = ta > t0 ? ta : t0;
    t1 = tb < t1 ? tb : t1;
  }
  return t0 <= t1;
}
} // namespace watertight_detail

/// Woop, Benthin & Wald 2013: the watertight test of ray `w` against the
/// triangle of corners a, b, c (pointers to 3 coordinates each). Zero-area
/// triangles never hit (det = 0). Hits are accepted for finite t in
/// [tmin, tmax] of the given bounds.
template <class T>
KOKKOS_FUNCTION TriangleHit<T> intersect_watertight(WatertightRay<T> const& w, T const* a, T const* b, T const* c,
                                                   T tmin, T tmax) {
  using backend::add_rn;
  using backend::mul_rn;
  using watertight_detail::cross2;
  using watertight_detail::box_interval;
  TriangleHit<T> res{false, T(0), T(0), T(0)};
  // corners relative to the origin, then sheared into the ray's frame
  T const Ax0 = add_rn(a[w.kx], -w.org[w.kx]), Ay0 = add_rn(a[w.ky], -w.org[w.ky]), Az0 = add_rn(a[w.kz], -w.org[w.kz]);
  T const Bx0 = add_rn(b[w.kx], -w.org[w.kx]), By0 = add_rn(b[w.ky], -w.org[w.ky]), Bz0 = add_rn(b[w.kz], -w.org[w.kz]);
  T const Cx0 = add_rn(c[w.kx], -w.org[w.kx]), Cy0 = add_rn(c[w.ky], -w.org[w.ky]), Cz0 = add_rn(c[w.kz], -w.org[w.kz]);
  T const Ax = add_rn(Ax0, -mul_rn(w.Sx, Az0)), Ay = add_rn(Ay0, -mul_rn(w.Sy, Az0));
  T const Bx = add_rn(Bx0, -mul_rn(w.Sx, Bz0)), By = add_rn(By0, -mul_rn(w.Sy, Bz0));
  T const Cx = add_rn(Cx0, -mul_rn(w.Sx, Cz0)), Cy = add_rn(Cy0, -mul_rn(w.Sy, Cz0));
  // scaled barycentric coordinates: the 2-D edge functions
  T U = cross2(Cx, By, Cy, Bx);
  T V = cross2(Ax, Cy, Ay, Cx);
  T W = cross2(Bx, Ay, By, Ax);
  if constexpr (std::is_same<T, float>::value) {
    if (U == T(0) || V == T(0) || W == T(0)) {
      // exact products in double, one rounding: the sign is exact
      U = T(cross2(double(Cx), double(By), double(Cy), double(Bx)));
      V = T(cross2(double(Ax), double(Cy), double(Ay), double(Cx)));
      W = T(cross2(double(Bx), double(Ay), double(By), double(Ax)));
    }
  }
  if ((U < T(0) || V < T(0) || W < T(0)) && (U > T(0) || V > T(0) || W > T(0))) return res;
  T const det = add_rn(add_rn(U, V), W);
  if (det == T(0)) return res;
  T const Az = mul_rn(w.Sz, Az0), Bz = mul_rn(w.Sz, Bz0), Cz = mul_rn(w.Sz, Cz0);
  T const Tsc = add_rn(add_rn(mul_rn(U, Az), mul_rn(V, Bz)), mul_rn(W, Cz));
  T t = Tsc / det;
  // a hit whose distance overflows T (a tiny direction, a huge mesh) is no
  // hit: t = inf is not a place on the ray, and the walks, which clip the
  // ray to finite cells, could never reach it, so every path agrees on a miss
  if (!::kdforge::detail::is_finite(t)) return res;
  // a ray that misses the triangle's box misses (see the top): where
  // rounding has eaten the sign tests' precision they can report a hit
  // away from the triangle, which the walks, clipping to boxes, never
  // reach; a t beside the ray's interval through the box is rounding of
  // the corners' distances, and the hit lies in the interval. Not so for a
  // direction with a subnormal component: a face of the box then pins the
  // interval to a place the rounding of positions, magnified by 1 / d,
  // decides, and a t beyond the slack of its ends is the plane met
  // elsewhere on the ray (found by the rays fuzz target: a ray of tmin =
  // tmax = 0 on a face of a triangle's box, the plane met at t = -1): a
  // miss, as the walks, which reach the triangle only through its cells,
  // find.
  T t0, t1;
  if (!box_interval(w, a, b, c, t0, t1)) return res;
  bool subnormal = false;
  for (int d = 0; d < 3; ++d) {
    T const ad = w.dir[d] < T(0) ? -w.dir[d] : w.dir[d];
    subnormal = subnormal || (ad > T(0) && ad < (std::is_same<T, float>::value ? T(FLT_MIN) : T(DBL_MIN)));
  }
  if (subnormal) {
    T const at = t < T(0) ? -t : t, a0 = t0 < T(0) ? -t0 : t0, a1 = t1 < T(0) ? -t1 : t1;
    T const slack = ray_rounding_slack(at > a0 ? (at > a1 ? at : a1) : (a0 > a1 ? a0 : a1));
    if (t < t0 - slack || t > t1 + slack) return res;
  }
  t = t < t0 ? t0 : t > t1 ? t1 : t;
  if (!(t >= tmin && t <= tmax)) return res;
  res.hit = true;
  res.t = t;
  res.u = V / det;
  res.v = W / det;
  return res;
}

/// The watertight test against triangle i of a tree (its corners as the
/// mesh gave them).
template <class Tree>
KOKKOS_FORCEINLINE_FUNCTION TriangleHit<typename Tree::coordinate_type>
intersect_tree_triangle(Tree const& tree, WatertightRay<typename Tree::coordinate_type> const& w, std::int32_t i,
                        typename Tree::coordinate_type tmin, typename Tree::coordinate_type tmax) {
  using T = typename Tree::coordinate_type;
  T a[3], b[3], c[3];
  for (int d = 0; d < 3; ++d) {
    a[d] = tree.corner(i, 0, d);
    b[d] = tree.corner(i, 1, d);
    c[d] = tree.corner(i, 2, d);
  }
  return intersect_watertight(w, a, b, c, tmin, tmax);
}

} // namespace kdforge::kernels
