#pragma once
// The walk of bucket trees with a team of vector lanes per query (a warp on
// NVIDIA GPUs): the walk of walks/box_stack.hpp (nearer child box first,
// the farther one waiting on a stack, leaves' points shown to the visitor),
// run by every lane of the team in step, with the lanes splitting each sum
// over the dimensions between them.
//
// Why: a thread per query walking points of hundreds of dimensions reads a
// different 2 KiB row than every other lane of its warp at each step (the
// rows of 32 queries in different leaves), and waits for the slowest of 32
// walks; Hu, Nooshabadi & Ahmadi 2015 (section III) run one query per
// thread as well, on 3-D and 512-D data alike. Here the 32 lanes of a warp
// read 32 consecutive coordinates of one row, and a warp's queries never
// wait for each other.
//
// What keeps the answers those of every other walk and of brute force
// (distances summed in dimension order, each term rounded, no fused
// multiply-add: box_stack.hpp): a sum split over lanes is added in another
// order, so it may differ from that distance in the last bits. It only
// decides what to skip, with a margin that covers any order's rounding:
// - a box's bound is the lanes' sum shrunk by (1 - 2 (D + 2) eps) and less
//   an absolute (D + 2) x 4 x the smallest normal value (subnormal terms
//   round by an absolute amount), so it never exceeds the dimension-order
//   distance of a point in the box;
// - a point is skipped when its lanes' sum, shrunk the same way, exceeds
//   the visitor's bound: its dimension-order distance would too. Every
//   other point's distance is summed again in dimension order, by every
//   lane (the same loads, one row), and that value is what the visitor
//   sees. Those are the points that may enter a kNN list: k and a few more
//   per query, where the walk looks at hundreds.
// So the visitor sees the same values as with box_stack.hpp; only which
// far points it is not shown differs, and none of them could enter.
//
// On CPU backends a team has one vector lane: the sums run in one loop, and
// the walk gives the same answers, slower than box_stack.hpp (two sums for
// the points that pass); the tests run it there too.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/kernels/query/walks/box_stack.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace kdforge::kernels {
template <class T, int N>
struct LaneSums;
} // namespace kdforge::kernels

namespace Kokkos {
/// Sums start at zero (Kokkos' nested reductions ask the identity here).
template <class T, int N>
struct reduction_identity<kdforge::kernels::LaneSums<T, N>> {
  KOKKOS_FORCEINLINE_FUNCTION static kdforge::kernels::LaneSums<T, N> sum() { return {}; }
};
} // namespace Kokkos

namespace kdforge::kernels {

/// N sums reduced over a team's vector lanes at once: one pass over the
/// dimensions keeps N independent rows' loads in flight, where N passes
/// would wait for one row at a time.
template <class T, int N>
struct LaneSums {
  T v[N];
  KOKKOS_INLINE_FUNCTION LaneSums() {
    for (int j = 0; j < N; ++j) v[j] = T(0);
  }
  KOKKOS_INLINE_FUNCTION LaneSums& operator+=(LaneSums const& o) {
    for (int j = 0; j < N; ++j) v[j] += o.v[j];
    return *this;
  }
  KOKKOS_INLINE_FUNCTION void operator+=(LaneSums const volatile& o) volatile {
    for (int j = 0; j < N; ++j) v[j] += o.v[j];
  }
};

/// Squared distance from row q of `queries` to the boxes of nodes a and b,
/// the dimensions split over the team's vector lanes (any order of
/// addition), then bounded below by `margin`.
template <class Member, class Tree, class QV>
KOKKOS_FORCEINLINE_FUNCTION void team_box_distances(Member const& member, Tree const& tree, QV const& queries,
                                                    std::int64_t q, typename Tree::index_type a,
                                                    typename Tree::index_type b,
                                                    TeamBoundMargin<typename Tree::coordinate_type> const& margin,
                                                    typename Tree::coordinate_type& da,
                                                    typename Tree::coordinate_type& db) {
  using T = typename Tree::coordinate_type;
  int const dim = tree.dim();
  LaneSums<T, 2> s;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, dim),
      [&](int d, LaneSums<T, 2>& r) {
        T const x = T(queries(q, d));
        T const ua = tree.lo(a, d) - x, va = x - tree.hi(a, d);
        T const ub = tree.lo(b, d) - x, vb = x - tree.hi(b, d);
        T ta = ua > va ? ua : va, tb = ub > vb ? ub : vb;
        ta = ta > T(0) ? ta : T(0);
        tb = tb > T(0) ? tb : T(0);
        r.v[0] += ta * ta;
        r.v[1] += tb * tb;
      },
      s);
  da = margin.lower(s.v[0]);
  db = margin.lower(s.v[1]);
}

/// Whether a visitor wants to know each leaf's size (the strategy's sample).
template <class V, class = void>
struct has_leaf_hook : std::false_type {};
template <class V>
struct has_leaf_hook<V, std::void_t<decltype(std::declval<V&>().leaf(std::int64_t(0)))>> : std::true_type {};

/// Points of a bucket whose lanes' sums one pass computes.
inline constexpr int team_points_per_pass = 8;

/// Shows the visitor the points of bucket [begin, end) that could enter it,
/// with their dimension-order distances (see above).
template <class Member, class Tree, class QV, class Visitor>
KOKKOS_FORCEINLINE_FUNCTION bool team_visit_bucket(Member const& member, Tree const& tree, QV const& queries,
                                                   std::int64_t q, typename Tree::index_type begin,
                                                   typename Tree::index_type end,
                                                   TeamBoundMargin<typename Tree::coordinate_type> const& margin,
                                                   Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int P = team_points_per_pass;
  int const dim = tree.dim();
  if constexpr (has_leaf_hook<Visitor>::value) {
    visitor.leaf(std::int64_t(end - begin));
    if (visitor.done()) return true;
  }
  for (Index i = begin; i < end; i += P) {
    int const n = end - i < P ? int(end - i) : P;
    LaneSums<T, P> s;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, dim),
        [&](int d, LaneSums<T, P>& r) {
          T const x = T(queries(q, d));
          KDFORGE_UNROLL
          for (int j = 0; j < P; ++j) {
            if (j < n) {
              T const t = x - tree.coord(i + j, d);
              r.v[j] += t * t;
            }
          }
        },
        s);
    for (int j = 0; j < n; ++j) {
      if (margin.lower(s.v[j]) > visitor.bound()) continue;
      visitor.visit(tree.original_index(i + j), bucket_sq_distance(tree, queries, q, i + Index(j)));
      if (visitor.done()) return true;
    }
  }
  return false;
}

/// Walks `tree` for row q of `queries` with the vector lanes of `member`,
/// every lane in step, showing the visitor every point of every leaf within
/// its reach that could enter it.
template <class Member, class Tree, class QV, class Visitor>
KOKKOS_FUNCTION void traverse_box_team(Member const& member, Tree const& tree, QV const& queries, std::int64_t q,
                                       Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  if (tree.node_count() == 0) return;
  TeamBoundMargin<T> const margin(tree.dim());
  struct Entry {
    Index node;
    T lb;
  } stack[box_stack_capacity];
  int top = 0;
  {
    T root = T(0), unused = T(0);
    team_box_distances(member, tree, queries, q, Index(0), Index(0), margin, root, unused);
    stack[top++] = Entry{Index(0), root};
  }
  while (top > 0) {
    Entry e = stack[--top];
    if (e.lb > visitor.bound()) continue;
    while (true) {
      auto const node = tree.node(e.node);
      if (node.is_leaf()) {
        if (team_visit_bucket(member, tree, queries, q, node.begin, node.end, margin, visitor)) return;
        break;
      }
      T ll, lr;
      team_box_distances(member, tree, queries, q, node.left, node.right, margin, ll, lr);
      bool const left_first = ll <= lr;
      Entry const near{left_first ? node.left : node.right, left_first ? ll : lr};
      Entry const far{left_first ? node.right : node.left, left_first ? lr : ll};
      if (far.lb <= visitor.bound()) stack[top++] = far;
      if (near.lb > visitor.bound()) break;
      e = near;
    }
  }
}

} // namespace kdforge::kernels
