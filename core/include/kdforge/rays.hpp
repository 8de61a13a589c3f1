#pragma once
// Ray queries on SAH triangle trees (kdforge::build_sah_tree): the closest
// hit of each ray, or whether anything is hit at all (shadow rays). The
// kernels are in kernels/query/rays.hpp, the walk in
// kernels/query/walks/ray_stack.hpp.
//
//   Kokkos::View<kdforge::Ray<float>*, MemorySpace> rays("rays", m);   // origin, direction, tmin, tmax
//   auto hits = kdforge::intersect_closest(exec, tree, rays);         // Hit: triangle (-1: none), t, u, v
//   auto shadowed = kdforge::intersect_any(exec, tree, rays);         // bool per ray
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/ray.hpp>
#include <kdforge/build_sah_tree.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/kernels/query/rays.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace kdforge {

namespace detail {
template <class Exec, class MS, class T, class Rays>
void check_rays(Exec const& exec, TriangleTree<MS, T> const& tree, Rays const& rays, char const* where) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge: the first argument of a ray query must be a Kokkos execution space instance");
  static_assert(Kokkos::is_view<Rays>::value && Rays::rank == 1 &&
                    std::is_same<typename Rays::non_const_value_type, Ray<T>>::value,
                "kdforge: rays must be a rank-1 Kokkos::View of kdforge::Ray<T>, T the tree's coordinate type");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename Rays::memory_space>::accessible &&
                    Kokkos::SpaceAccessibility<Exec, MS>::accessible,
                "kdforge: the rays and the tree must be in memory the execution space can read");
  KDFORGE_REQUIRE(tree.height() < kernels::ray_stack_capacity, where, "the tree is ", tree.height(),
                  " levels deep; the walks' stacks hold ", kernels::ray_stack_capacity - 1);
  std::int64_t const m = std::int64_t(rays.extent(0));
  if (m == 0) return;
  std::int64_t const none = std::numeric_limits<std::int64_t>::max();
  std::int64_t bad = none;
  Kokkos::parallel_reduce("kdforge::rays::check", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, m),
                          kernels::FirstBadRay<Rays>{rays}, Kokkos::Min<std::int64_t>(bad));
  KDFORGE_REQUIRE(bad == none, where, "ray ", bad,
                  " has a NaN or infinite origin or direction component, a zero direction, a NaN tmin or tmax, or a "
                  "negative tmin (rays start at t >= 0)");
}
} // namespace detail

namespace detail {
// `pool`: the rays taken from a pool by a fixed set of `workers` threads (0:
// as many as the backend runs at once), or a thread each
// (kernels::launch_ray_walks; the same answers, tests run both)
template <class Exec, class MS, class T, class Rays>
void intersect_closest_impl(Exec const& exec, TriangleTree<MS, T> const& tree, Rays const& rays,
                            Kokkos::View<Hit<T>*, MS>& hits, bool pool = false,
                            std::int64_t workers = 0) {
  detail::check_rays(exec, tree, rays, "intersect_closest");
  detail::Region region("kdforge::intersect_closest");
  std::int64_t const m = std::int64_t(rays.extent(0));
  if (std::int64_t(hits.extent(0)) != m)
    hits = backend::allocate<Kokkos::View<Hit<T>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::hits"), m);
  kernels::launch_ray_walks<kernels::ClosestHitVisitor<TriangleTree<MS, T>>>(exec, "kdforge::intersect_closest", tree,
                                                                             rays, hits, pool, workers);
}
} // namespace detail

/// The closest hit of each ray: hits(i) is the triangle (the caller's index
/// in the mesh; -1: none) met first within [tmin, tmax], its t and
/// barycentric u, v (the hit point is (1 - u - v) v0 + u v1 + v v2); ties
/// at equal t go to the smaller triangle index. `hits` is reused when it
/// has one entry per ray, else reallocated. Errors (kdforge::Error): a ray
/// with a NaN or infinite origin or direction, a zero direction, or a NaN
/// tmin or tmax (the first one named).
template <class Exec, class MS, class T, class Rays>
void intersect_closest(Exec const& exec, TriangleTree<MS, T> const& tree, Rays const& rays,
                       Kokkos::View<Hit<T>*, MS>& hits) {
  return detail::api_call<typename Exec::memory_space>("intersect_closest", [&] {
    auto res = hits; // filled, then assigned to hits once every allocation has succeeded
    detail::intersect_closest_impl(exec, tree, rays, res);
    hits = res;
  });
}

/// As above, into a new View.
template <class Exec, class MS, class T, class Rays>
Kokkos::View<Hit<T>*, MS> intersect_closest(Exec const& exec, TriangleTree<MS, T> const& tree, Rays const& rays) {
  Kokkos::View<Hit<T>*, MS> hits;
  intersect_closest(exec, tree, rays, hits);
  return hits;
}

namespace detail {
template <class Exec, class MS, class T, class Rays>
void intersect_any_impl(Exec const& exec, TriangleTree<MS, T> const& tree, Rays const& rays,
                        Kokkos::View<bool*, MS>& occluded, bool pool = kernels::any_hit_pool_default<Exec>(),
                        std::int64_t workers = 0) {
  detail::check_rays(exec, tree, rays, "intersect_any");
  detail::Region region("kdforge::intersect_any");
  std::int64_t const m = std::int64_t(rays.extent(0));
  if (std::int64_t(occluded.extent(0)) != m)
    occluded = backend::allocate<Kokkos::View<bool*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::occluded"), m);
  kernels::launch_ray_walks<kernels::AnyHitVisitor<TriangleTree<MS, T>>>(exec, "kdforge::intersect_any", tree, rays,
                                                                         occluded, pool, workers);
}
} // namespace detail

/// Whether each ray hits any triangle within [tmin, tmax] (shadow rays:
/// tmax just short of the light). `occluded` is reused when it has one
/// entry per ray, else reallocated. Errors as intersect_closest.
template <class Exec, class MS, class T, class Rays>
void intersect_any(Exec const& exec, TriangleTree<MS, T> const& tree, Rays const& rays,
                   Kokkos::View<bool*, MS>& occluded) {
  return detail::api_call<typename Exec::memory_space>("intersect_any", [&] {
    auto res = occluded; // filled, then assigned to occluded once every allocation has succeeded
    detail::intersect_any_impl(exec, tree, rays, res);
    occluded = res;
  });
}

/// As above, into a new View.
template <class Exec, class MS, class T, class Rays>
Kokkos::View<bool*, MS> intersect_any(Exec const& exec, TriangleTree<MS, T> const& tree, Rays const& rays) {
  Kokkos::View<bool*, MS> occluded;
  intersect_any(exec, tree, rays, occluded);
  return occluded;
}

} // namespace kdforge
