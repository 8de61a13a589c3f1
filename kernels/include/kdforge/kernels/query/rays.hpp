#pragma once
// Ray queries on triangle trees: closest hit and any hit, one thread per
// ray, the walk of walks/ray_stack.hpp, and the watertight ray/triangle
// test of common/ray_triangle.hpp (Woop, Benthin & Wald 2013).
//
// Closest hit: the smallest t in [tmin, tmax]; between hits at the same t
// the smaller triangle index, as a loop over all triangles would choose.
// Any hit: whether some triangle is hit in [tmin, tmax] (shadow rays); the
// walk stops at the first one.
#include <kdforge/base/ray.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/common/ray_triangle.hpp>
#include <kdforge/kernels/query/walks/ray_stack.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels {

template <class Tree>
struct ClosestHitVisitor {
  using T = typename Tree::coordinate_type;
  Tree const& tree;
  WatertightRay<T> ray;
  T best;
  std::int32_t triangle = -1;
  T u = T(0);
  T v = T(0);
  KOKKOS_FUNCTION void test(std::int32_t i) {
    TriangleHit<T> const h = intersect_tree_triangle(tree, ray, i, ray.tmin, best);
    if (h.hit && (triangle < 0 || h.t < best || (h.t == best && i < triangle))) {
      triangle = i;
      best = h.t;
      u = h.u;
      v = h.v;
    }
  }
  KOKKOS_FUNCTION T limit() const { return best; }
  KOKKOS_FUNCTION bool done() const { return false; }
};

template <class Tree>
struct AnyHitVisitor {
  using T = typename Tree::coordinate_type;
  Tree const& tree;
  WatertightRay<T> ray;
  bool found = false;
  KOKKOS_FUNCTION void test(std::int32_t i) {
    if (!found) found = intersect_tree_triangle(tree, ray, i, ray.tmin, ray.tmax).hit;
  }
  KOKKOS_FUNCTION T limit() const { return ray.tmax; }
  KOKKOS_FUNCTION bool done() const { return found; }
};

template <class Tree, class Rays, class Hits>
struct ClosestHitFunctor {
  Tree tree;
  Rays rays;
  Hits hits;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    using T = typename Tree::coordinate_type;
    Ray<T> const r = rays(i);
    ClosestHitVisitor<Tree> vis{tree, make_watertight_ray(r), r.tmax};
    traverse_ray_stack(tree, r, vis);
    Hit<T> h;
    h.triangle = vis.triangle;
    h.t = vis.triangle >= 0 ? vis.best : kdforge::detail::infinity<T>();
    h.u = vis.triangle >= 0 ? vis.u : T(0);
    h.v = vis.triangle >= 0 ? vis.v : T(0);
    hits(i) = h;
  }
};

template <class Tree, class Rays, class Occluded>
struct AnyHitFunctor {
  Tree tree;
  Rays rays;
  Occluded occluded;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    using T = typename Tree::coordinate_type;
    Ray<T> const r = rays(i);
    AnyHitVisitor<Tree> vis{tree, make_watertight_ray(r)};
    traverse_ray_stack(tree, r, vis);
    occluded(i) = vis.found;
  }
};

/// The first ray (smallest index) that is unusable: a NaN or infinite
/// origin or direction component, a zero direction, a NaN tmin / tmax, or a
/// negative tmin (rays start at t >= 0, as Embree's and OptiX's do: the
/// walk is tested for those, and missed hits behind the origin before).
template <class Rays>
struct FirstBadRay {
  Rays rays;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& first) const {
    auto const r = rays(i);
    bool bad = !(r.tmin >= 0) || r.tmax != r.tmax;
    bool zero = true;
    for (int d = 0; d < 3; ++d) {
      bad = bad || !kdforge::detail::is_finite(r.origin[d]) || !kdforge::detail::is_finite(r.direction[d]);
      zero = zero && r.direction[d] == 0;
    }
    if ((bad || zero) && i < first) first = i;
  }
};

} // namespace kdforge::kernels
