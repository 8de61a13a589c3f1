#pragma once
// Ray queries on triangle trees: closest hit and any hit, the walk of
// walks/ray_stack.hpp and the watertight ray/triangle test of
// common/ray_triangle.hpp (Woop, Benthin & Wald 2013).
//
// Closest hit: the smallest t in [tmin, tmax]; between hits at the same t
// the smaller triangle index, as a loop over all triangles would choose.
// Any hit: whether some triangle is hit in [tmin, tmax] (shadow rays); the
// walk stops at the first one.
//
// On GPUs the any-hit rays are taken from a pool by a fixed set of threads
// (RayPoolFunctor, after Aila & Laine 2009) rather than a thread each.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/ray.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/common/ray_triangle.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/walks/ray_stack.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels {

template <class Tree>
struct ClosestHitVisitor {
  using T = typename Tree::coordinate_type;
  /// The walk skips waiting nodes beyond the nearest hit so far.
  static constexpr bool prunes = true;
  Tree const* tree = nullptr;
  WatertightRay<T> ray{};
  T best = T(0);
  std::int32_t triangle = -1;
  T u = T(0);
  T v = T(0);
  ClosestHitVisitor() = default;
  KOKKOS_FUNCTION ClosestHitVisitor(Tree const& t, Ray<T> const& r)
      : tree(&t), ray(make_watertight_ray(r)), best(r.tmax) {}
  KOKKOS_FUNCTION void test(std::int32_t i) {
    TriangleHit<T> const h = intersect_tree_triangle(*tree, ray, i, ray.tmin, best);
    if (h.hit && (triangle < 0 || h.t < best || (h.t == best && i < triangle))) {
      triangle = i;
      best = h.t;
      u = h.u;
      v = h.v;
    }
  }
  KOKKOS_FUNCTION T limit() const { return best; }
  KOKKOS_FUNCTION bool done() const { return false; }
  KOKKOS_FUNCTION Hit<T> result() const {
    Hit<T> h;
    h.triangle = triangle;
    h.t = triangle >= 0 ? best : kdforge::detail::infinity<T>();
    h.u = triangle >= 0 ? u : T(0);
    h.v = triangle >= 0 ? v : T(0);
    return h;
  }
};

template <class Tree>
struct AnyHitVisitor {
  using T = typename Tree::coordinate_type;
  /// The limit stays tmax: no waiting node lies beyond it.
  static constexpr bool prunes = false;
  Tree const* tree = nullptr;
  WatertightRay<T> ray{};
  bool found = false;
  AnyHitVisitor() = default;
  KOKKOS_FUNCTION AnyHitVisitor(Tree const& t, Ray<T> const& r) : tree(&t), ray(make_watertight_ray(r)) {}
  KOKKOS_FUNCTION void test(std::int32_t i) {
    found = intersect_tree_triangle(*tree, ray, i, ray.tmin, ray.tmax).hit;
  }
  KOKKOS_FUNCTION T limit() const { return ray.tmax; }
  KOKKOS_FUNCTION bool done() const { return found; }
  KOKKOS_FUNCTION bool result() const { return found; }
};

/// A thread per ray: out(i) is ray i's answer (Visitor: ClosestHitVisitor
/// or AnyHitVisitor).
template <class Visitor, class Tree, class Rays, class Out>
struct RayFunctor {
  Tree tree;
  Rays rays;
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    auto const r = rays(i);
    Visitor vis(tree, r);
    traverse_ray_stack(tree, r, vis);
    out(i) = vis.result();
  }
};

/// Rays from a pool, the persistent threads with dynamic fetch of Aila &
/// Laine 2009 ("Understanding the efficiency of ray traversal on GPUs"):
/// each of a fixed number of threads takes the next untaken ray (a shared
/// counter, `next`, zero at the start) whenever its own is done, between
/// two leaves of the others' walks. With a thread per ray, a warp runs
/// until its longest ray is done and its threads idle meanwhile; shadow
/// rays, of which some end at the first leaf and others cross the scene,
/// kept 3.4 of 32 threads busy on the dragon (ncu, H200). Any order of
/// taking gives each ray the answer a thread of its own would.
template <class Visitor, class Tree, class Rays, class Out, class Counter>
struct RayPoolFunctor {
  Tree tree;
  Rays rays;
  Out out;
  Counter next;
  KOKKOS_FUNCTION void operator()(std::int64_t) const {
    using T = typename Tree::coordinate_type;
    std::int64_t const m = std::int64_t(rays.extent(0));
    RayWalker<Tree, Visitor::prunes> walk;
    Ray<T> ray{};
    Visitor vis;
    std::int64_t i = -1;
    bool running = false;
    while (true) {
      if (!running) {
        if (i >= 0) out(i) = vis.result();
        // the threads of a warp that take one together take consecutive
        // rays, with one atomic add (a million adds to one counter cost
        // more than a million eye rays' walks)
        i = std::int64_t(backend::claim_slot(&next()));
        if (i >= m) return;
        ray = rays(i);
        vis = Visitor(tree, ray);
        running = walk.start(tree, ray);
      }
      if (running) running = walk.step(tree, ray, vis);
    }
  }
};

/// Whether any-hit walks on `Exec` take their rays from a pool
/// (RayPoolFunctor) rather than a thread per ray: on GPUs, whose warps wait
/// for their longest ray; CPU threads run their rays one by one either way.
/// A thread takes one ray at a time: taking 8 or 32 consecutive ones, to
/// spare atomics, spread a warp's rays over 8-32 times the pixels and cut
/// the dragon's shadow rays to 0.17 and 0.07 G/s (H200).
/// Closest-hit walks keep a thread per ray: eye rays of neighbouring pixels
/// end together, and a pool, which mixes them, measured slower (H200: 1.5
/// -> 1.0 G rays/s on the kitchen, 1.06 -> 0.61 on the dragon), where
/// shadow rays gained 1.3-1.8x.
template <class Exec>
constexpr bool any_hit_pool_default() {
  return kdforge::detail::runs_on_gpu<Exec>();
}

/// Runs the walks of all rays, answers in `out` (Visitor: ClosestHitVisitor
/// or AnyHitVisitor), from a pool of `workers` threads (0:
/// exec.concurrency(); at most one per ray) or a thread per ray.
template <class Visitor, class Exec, class Tree, class Rays, class Out>
void launch_ray_walks(Exec const& exec, char const* name, Tree const& tree, Rays const& rays, Out const& out, bool pool,
                      std::int64_t workers = 0) {
  using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;
  std::int64_t const m = std::int64_t(rays.extent(0));
  if (m == 0) return;
  if (!pool) {
    Kokkos::parallel_for(name, Policy(exec, 0, m), RayFunctor<Visitor, Tree, Rays, Out>{tree, rays, out});
    return;
  }
  // unsigned long long: the type CUDA adds atomically in one instruction
  // (Kokkos adds an std::int64_t by a compare-and-swap loop, which the
  // threads' contention slowed by orders of magnitude)
  using Counter = Kokkos::View<unsigned long long, typename Out::memory_space>;
  Counter const next = backend::allocate<Counter>(Kokkos::view_alloc(exec, "kdforge::rays::next")); // zero
  if (workers <= 0) workers = std::int64_t(exec.concurrency());
  if (workers > m) workers = m;
  Kokkos::parallel_for(name, Policy(exec, 0, workers),
                       RayPoolFunctor<Visitor, Tree, Rays, Out, Counter>{tree, rays, out, next});
}

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
