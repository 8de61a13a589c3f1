#pragma once
// The walk of triangle trees (kernels/trees/triangle_tree.hpp) along a ray:
// Zhou, Hou, Wang & Guo 2008, section 4, the conventional stack-based
// front-to-back traversal (as in Horn et al. 2007): the ray is clipped to
// the scene box; at an inner node the ray's interval [t0, t1] is cut at the
// split plane, the near child is walked first and the far one waits on a
// per-ray stack of fixed size with its interval; a leaf's triangles are
// shown to the visitor; a waiting node whose interval starts beyond the
// nearest hit so far is skipped, and the walk ends when every waiting node
// would be.
//
// What differs, and why:
//  - The paper's stack holds 50 entries; here the builder bounds the height
//    (triangle_tree_max_height), and the stack holds one entry per level, so
//    it never overflows.
//  - The triangle tests are not limited to the leaf's interval but to the
//    ray's [tmin, nearest hit so far]: a triangle that reaches into later
//    cells is accepted where it is first met, and the early exit still
//    waits until a hit lies inside the leaf's interval.
//  - Rounding of the plane crossings must not drop a cell the ray touches:
//    the scene box's interval is widened by a few units of rounding (as in
//    Ize 2013, "Robust BVH Ray Traversal"), a crossing within a few units of
//    rounding of the interval's ends visits both children, and a ray that
//    runs in a split plane (zero direction across it) visits both children.
//    Triangles that lie in a plane are in both children (the builder), so
//    such rays find them.
//  - The paper ends a closest-hit walk after a leaf when the nearest hit
//    lies before the leaf's exit: every waiting interval starts at or after
//    it. A ray that runs in a split plane breaks that order: both children
//    wait with the same interval, so a hit in the first says nothing about
//    the second, which may hold a nearer hit, or one at the same t with a
//    smaller index. The walk therefore keeps the smallest interval start
//    of the waiting entries (each entry holds that of those below it, for
//    its pop), and ends when that start lies beyond the nearest hit by
//    more than the rounding slack the triangle test allows at a box's
//    faces (a hit in a waiting cell may come out a few units of rounding
//    before the cell's start; ties are walked: equal t, smaller index).
//    Without in-plane rays it ends where the paper's does, up to that
//    slack.
//
// A visitor offers:
//   void test(std::int32_t triangle)   the ray meets a leaf listing it
//   T limit() const                    skip waiting nodes whose interval starts beyond it
//   bool done() const                  stop now (any-hit queries)
//   static constexpr bool prunes       whether limit() may fall below the
//                                      ray's tmax (false: the walk keeps no
//                                      smallest start, see Entry)
// and, for kernels/query/rays.hpp's launches (a thread per ray, or a pool
// whose threads reuse one visitor for ray after ray): a constructor from
// (tree, ray), a default constructor, copy assignment, and result(), the
// ray's answer.
#include <kdforge/base/ray.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/common/ray_triangle.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cstdint>
#include <type_traits>

namespace kdforge::kernels {

/// Entries of a ray walk's stack: one per level is the most it holds.
inline constexpr int ray_stack_capacity = triangle_tree_max_height + 1;

namespace ray_walk_detail {
// whether an interval starting at t0 lies beyond a hit at t, rounding aside
template <class T>
KOKKOS_FORCEINLINE_FUNCTION bool starts_beyond(T t0, T t) {
  return t0 - ray_rounding_slack(t0) > t;
}

// A waiting node and the ray's interval in its cell. A walk that prunes
// (Prunes: its limit shrinks as it finds hits) keeps, besides, the smallest
// t0 of the entries below; one whose limit stays the ray's tmax (any hit)
// never prunes, since every interval lies inside [tmin, tmax], and spares
// the field, the registers and the instructions that keep it.
template <class T, bool Prunes>
struct Entry {
  std::int32_t node;
  T t0;
  T t1;
  T below; // the smallest t0 of the entries below this one
};
template <class T>
struct Entry<T, false> {
  std::int32_t node;
  T t0;
  T t1;
};

// A walk's stack of waiting nodes, held by reference to the walk's own
// variables (entries, top, and lowest: the smallest t0 of the entries,
// when top > 0, kept only by walks that prune), which a walk in one
// function keeps in registers where it can (the stack as a struct of its
// own cost 4-8% of eye rays, H200).
template <class T, bool Prunes = true>
struct Stack {
  Entry<T, Prunes>* entries;
  int& top;
  T& lowest;
  KOKKOS_FORCEINLINE_FUNCTION void push(std::int32_t node, T a, T b) const {
    if constexpr (Prunes) {
      entries[top] = Entry<T, Prunes>{node, a, b, lowest};
      lowest = top == 0 || a < lowest ? a : lowest;
    } else {
      entries[top] = Entry<T, Prunes>{node, a, b};
    }
    ++top;
  }
  // the next waiting node the nearest hit (limit) has not ruled out, into
  // node, t0, t1: false if none. A hit in it may come out a few units of
  // rounding before its interval's start (the slack the triangle test
  // allows at a box's faces).
  KOKKOS_FORCEINLINE_FUNCTION bool pop(T limit, std::int32_t& node, T& t0, T& t1) const {
    if constexpr (!Prunes) {
      if (top == 0) return false;
      Entry<T, Prunes> const e = entries[--top];
      node = e.node;
      t0 = e.t0;
      t1 = e.t1;
      return true;
    } else {
      while (true) {
        if (top == 0 || starts_beyond(lowest, limit)) return false;
        Entry<T, Prunes> const e = entries[--top];
        lowest = e.below;
        if (starts_beyond(e.t0, limit)) continue;
        node = e.node;
        t0 = e.t0;
        t1 = e.t1;
        return true;
      }
    }
  }
};

// The ray's interval [t0, t1] inside the scene box (widened by rounding):
// false if it misses the box or the tree is empty.
template <class Tree, class T>
KOKKOS_FORCEINLINE_FUNCTION bool clip_to_scene(Tree const& tree, Ray<T> const& ray, T& t0, T& t1) {
  if (tree.node_count() == 0) return false;
  t0 = ray.tmin;
  t1 = ray.tmax;
  Box<T, 3> const box = tree.bounds();
  for (int d = 0; d < 3; ++d) {
    T const o = ray.origin[d], dir = ray.direction[d];
    if (dir == T(0)) {
      if (o < box.lo[d] || o > box.hi[d]) return false;
      continue;
    }
    T ta = (box.lo[d] - o) / dir, tb = (box.hi[d] - o) / dir;
    if (ta > tb) {
      T const s = ta;
      ta = tb;
      tb = s;
    }
    ta -= ray_rounding_slack(ta);
    tb += ray_rounding_slack(tb);
    t0 = ta > t0 ? ta : t0;
    t1 = tb < t1 ? tb : t1;
  }
  return t0 <= t1;
}

// From `node` down to the first leaf the ray meets in [t0, t1], the far
// children pushed; returns the leaf (node, t0, t1 then its own).
template <class Tree, class T, bool Prunes>
KOKKOS_FORCEINLINE_FUNCTION auto descend(Tree const& tree, Ray<T> const& ray, Stack<T, Prunes> const& stack, std::int32_t& node,
                                         T& t0, T& t1) {
  auto n = tree.node(node);
  while (!n.is_leaf()) {
    int const d = n.dim();
    T const s = n.split;
    T const o = ray.origin[d], dir = ray.direction[d];
    std::int32_t const left = node + 1, right = n.right();
    if (dir == T(0)) { // parallel to the plane: the side it runs on, both if in it
      if (o < s) node = left;
      else if (o > s) node = right;
      else {
        stack.push(right, t0, t1);
        node = left;
      }
    } else {
      T const t = (s - o) / dir;
      std::int32_t const near = dir > T(0) ? left : right;
      std::int32_t const far = dir > T(0) ? right : left;
      T const margin = ray_rounding_slack(t);
      if (t > t1 + margin) node = near;      // the ray leaves the cell before the plane
      else if (t < t0 - margin) node = far;  // it meets the cell behind the plane
      else {
        T const tc = t < t0 ? t0 : t > t1 ? t1 : t;
        stack.push(far, tc, t1);
        node = near;
        t1 = tc;
      }
    }
    n = tree.node(node);
  }
  return n;
}
} // namespace ray_walk_detail

/// Walks `tree` along `ray`, showing the visitor the triangles of the
/// leaves the ray meets, front to back.
template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_ray_stack(Tree const& tree, Ray<typename Tree::coordinate_type> const& ray,
                                        Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  T t0, t1;
  if (!ray_walk_detail::clip_to_scene(tree, ray, t0, t1)) return;
  constexpr bool prunes = Visitor::prunes;
  ray_walk_detail::Entry<T, prunes> entries[ray_stack_capacity];
  int top = 0;
  T lowest = T(0);
  ray_walk_detail::Stack<T, prunes> const stack{entries, top, lowest};
  std::int32_t node = 0;
  while (true) {
    auto const n = ray_walk_detail::descend(tree, ray, stack, node, t0, t1);
    for (std::int32_t i = n.begin(); i < n.begin() + n.count(); ++i) {
      visitor.test(tree.leaf_triangle(i));
      if (visitor.done()) return;
    }
    if (!stack.pop(visitor.limit(), node, t0, t1)) return;
  }
}

/// The walk of traverse_ray_stack, resumable a leaf at a time: start()
/// clips the ray to the scene box; each step() descends to the next leaf
/// the ray meets, shows the visitor its triangles and takes the next
/// waiting node, and says whether the walk goes on. A thread can so take
/// another ray when its own is done, where others of its warp are not (the
/// ray pools of kernels/query/rays.hpp). A thread walking one ray keeps to
/// traverse_ray_stack: the same walk in this form measured 10-20% fewer
/// eye rays a second (H200).
template <class Tree, bool Prunes = true>
struct RayWalker {
  using T = typename Tree::coordinate_type;
  ray_walk_detail::Entry<T, Prunes> entries[ray_stack_capacity];
  int top = 0;
  T lowest = T(0);
  T t0 = T(0), t1 = T(0);
  std::int32_t node = 0;

  /// false: the walk is over before it starts (an empty tree, a ray that
  /// misses the scene box)
  KOKKOS_FORCEINLINE_FUNCTION bool start(Tree const& tree, Ray<T> const& ray) {
    top = 0;
    node = 0;
    return ray_walk_detail::clip_to_scene(tree, ray, t0, t1);
  }

  /// The next leaf: false when the walk is over.
  template <class Visitor>
  KOKKOS_FORCEINLINE_FUNCTION bool step(Tree const& tree, Ray<T> const& ray, Visitor& visitor) {
    ray_walk_detail::Stack<T, Prunes> const stack{entries, top, lowest};
    auto const n = ray_walk_detail::descend(tree, ray, stack, node, t0, t1);
    for (std::int32_t i = n.begin(); i < n.begin() + n.count(); ++i) {
      visitor.test(tree.leaf_triangle(i));
      if (visitor.done()) return false;
    }
    return stack.pop(visitor.limit(), node, t0, t1);
  }
};

} // namespace kdforge::kernels
