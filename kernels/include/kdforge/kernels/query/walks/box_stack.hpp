#pragma once
// The walk of bucket trees (kernels/trees/bucket_tree.hpp): depth first,
// the nearer child by bounding-box distance first, the farther one waiting
// on a stack with its box distance; a popped node whose box is out of the
// visitor's reach by then is skipped, and a leaf's points are all shown to
// the visitor. Hu, Nooshabadi & Ahmadi 2015 (section III, Algorithm 3) keep
// the waiting nodes in a priority queue keyed by box distance; a stack in
// nearest-first order visits the same leaves of a kNN query where the queue
// would (both start from the query's nearest leaf and prune by the same
// boxes), needs no heap operations and has a size bounded by the tree's
// height, which the builder bounds (bfs_buckets/build.hpp), so no query ever
// runs out of room and every search is exact.
//
// The dimension is a run-time value (or a compile-time one through
// FixedDimBucketTree, below; the same sums): distances are loops over it, summed in
// dimension order with the rounding of the brute-force reference (no fused
// multiply-add), and box distances with the same rounding, so a box's bound
// never exceeds the computed distance of a point in it. CPUs, from 17
// dimensions on, stop sums that have passed the visitor's bound
// (abandon_block): a visitor is shown the same points within its bound,
// with the same distances, in the same order (those beyond it it would turn
// away). For exact kNN and closest point they also
// sum boxes in vector lanes under a margin (host_box_distances): the order
// of leaves may then differ where two boxes are about as near, and the
// answer, which does not depend on it, does not.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/kernels/query/walks/common.hpp>
#include <kdforge/kernels/trees/packed_node.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge::kernels {

/// The deepest stack a bucket-tree walk needs: the builder's height bound
/// (32 midpoint levels and at most 32 median levels) plus one.
inline constexpr int box_stack_capacity = 66;

/// A bucket tree whose dimension D is a compile-time constant: the same
/// tree, but the walks' loops over dimensions unroll and their bounds
/// fold, and with_query_row keeps a query's coordinates in registers.
/// The answers are those of the run-time walk (same sums, same order);
/// only the instructions differ (GPUs: kernels/query/bucket.hpp).
template <class Tree, int D>
struct FixedDimBucketTree : Tree {
  static_assert(D > 0, "kdforge: a fixed dimension is positive");
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  FixedDimBucketTree() = default;
  explicit FixedDimBucketTree(Tree const& tree) : Tree(tree) {}
  KOKKOS_FORCEINLINE_FUNCTION static constexpr int dim() { return D; }
  KOKKOS_FORCEINLINE_FUNCTION T hi(Index s, int d) const { return Tree::lo(s, D + d); }
};

/// The fixed dimension of a tree (FixedDimBucketTree), 0 for run-time.
template <class Tree>
struct fixed_bucket_dim : std::integral_constant<int, 0> {};
template <class Tree, int D>
struct fixed_bucket_dim<FixedDimBucketTree<Tree, D>> : std::integral_constant<int, D> {};

/// One query's coordinates in registers, read as queries(q, d) are.
template <class T, int D>
struct QueryRow {
  T x[D];
  KOKKOS_FORCEINLINE_FUNCTION T operator()(std::int64_t, int d) const { return x[d]; }
};

/// f(rows): rows the queries themselves, or where the tree's dimension is
/// fixed, query q's coordinates copied into registers (a QueryRow, read at
/// any row index as row q). A walk reads the query once per box and
/// point; from registers that is no load at all.
template <class Tree, class QV, class F>
KOKKOS_FORCEINLINE_FUNCTION void with_query_row(Tree const&, QV const& queries, std::int64_t q, F const& f) {
  constexpr int D = fixed_bucket_dim<Tree>::value;
  if constexpr (D > 0) {
    QueryRow<typename Tree::coordinate_type, D> row;
    KDFORGE_UNROLL
    for (int d = 0; d < D; ++d) row.x[d] = queries(q, d);
    f(row);
  } else {
    f(queries);
  }
}

/// Squared distance from row q of `queries` to the point at position i of
/// the tree.
template <class Tree, class QV>
KOKKOS_FORCEINLINE_FUNCTION typename Tree::coordinate_type
bucket_sq_distance(Tree const& tree, QV const& queries, std::int64_t q, typename Tree::index_type i) {
  using T = typename Tree::coordinate_type;
  int const dim = tree.dim();
  T s = T(0);
  for (int d = 0; d < dim; ++d) {
    T const t = T(queries(q, d)) - tree.coord(i, d);
    s = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(s, backend::mul_rn(t, t));
  }
  return s;
}

/// max(v, 0), for a box distance at a query coordinate x (finite). On
/// CPUs clamped at 0 * x, a zero the compiler cannot see: clamped at the
/// constant, g++ turned the clamp and the square after it into a branch
/// around the multiplication, taken or not as the query lies outside the
/// box along d or not, and mispredicted so often that in 512 dimensions the
/// box distances took 80% of the walk. (0 * x is -0 for negative x; its
/// square is +0, so every sum is unchanged.) GPUs select without a branch
/// either way.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T positive_part(T v, T x) {
  if constexpr (backend::device_code) {
    (void)x;
    return v > T(0) ? v : T(0);
  } else {
    T const zero = T(0) * x;
    return v > zero ? v : zero;
  }
}

/// Squared distance from row q of `queries` to node s's box (0 inside).
template <class Tree, class QV>
KOKKOS_FORCEINLINE_FUNCTION typename Tree::coordinate_type
bucket_box_distance(Tree const& tree, QV const& queries, std::int64_t q, typename Tree::index_type s) {
  using T = typename Tree::coordinate_type;
  int const dim = tree.dim();
  T r = T(0);
  for (int d = 0; d < dim; ++d) {
    T const x = T(queries(q, d));
    T const lo = tree.lo(s, d), hi = tree.hi(s, d);
    T const u = lo - x, v = x - hi;
    T const t = positive_part(u > v ? u : v, x);
    r = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(r, backend::mul_rn(t, t));
  }
  return r;
}

/// Dimensions summed between two tests of partial sums against the
/// visitor's bound. CPUs stop summing a bucket's point distances
/// (visit_bucket) and a node's two box distances (bucket_box_distances)
/// once all the sums made side by side exceed it (FLANN's trees stop per
/// point the same way). Exact: every term is >= +0 and an addition rounded
/// to nearest is never below its larger operand, so a partial sum never
/// exceeds the whole, and what lies beyond the bound changes no visitor
/// (walks/common.hpp). GPUs sum whole distances (the same stop in the team
/// walk, a warp reduction per chunk, was slower: docs/performance.md).
inline constexpr int abandon_block = 16;

/// The margins of bounds summed in another order than the dimension order
/// (the team walk's lanes, walks/box_team.hpp; host_box_distances' partial
/// sums), for dimension `dim`: lower(s) never exceeds the dimension-order
/// sum of the terms whose sum in the other order is s.
template <class T>
struct TeamBoundMargin {
  // Constants, so device code reads values and calls no host function.
  static constexpr T eps = std::numeric_limits<T>::epsilon();
  static constexpr T smallest_normal = std::numeric_limits<T>::min();
  T shrink; // 1 - 2 (D + 2) eps
  T slack;  // (D + 2) x 4 x the smallest normal value
  KOKKOS_INLINE_FUNCTION explicit TeamBoundMargin(int dim)
      : shrink(T(1) - T(2) * (T(dim) + T(2)) * eps), slack(T(4) * (T(dim) + T(2)) * smallest_normal) {}
  /// A lower bound of every dimension-order sum of the terms whose sum in
  /// some other order is `s`.
  KOKKOS_FORCEINLINE_FUNCTION T lower(T s) const {
    T const b = s * shrink - slack;
    return b > T(0) ? b : T(0);
  }
};

/// Partial sums per box in host_box_distances.
inline constexpr int box_lanes = 8;

/// bucket_box_distances on CPUs, from abandon_block + 1 dimensions on: each
/// box's squared distance summed in box_lanes partial sums (dimension d
/// into sum d mod box_lanes; the compiler makes them vector lanes), not in
/// dimension order, then bounded below by TeamBoundMargin, so that it never
/// exceeds the dimension-order distance of a point in the box. Once both
/// bounds exceed `bound` (tested every abandon_block dimensions), the sums
/// stop there: both boxes are then out of reach, and the walks only compare
/// them with a bound at most `bound` (times a scale >= 1), which the partial
/// sums' bounds exceed as the whole ones' would.
template <class Tree, class QV>
KOKKOS_INLINE_FUNCTION void host_box_distances(Tree const& tree, QV const& queries, std::int64_t q,
                                               typename Tree::index_type a, typename Tree::index_type b,
                                               typename Tree::coordinate_type& da,
                                               typename Tree::coordinate_type& db,
                                               typename Tree::coordinate_type bound) {
  using T = typename Tree::coordinate_type;
  constexpr int L = box_lanes;
  static_assert(abandon_block % L == 0, "kdforge: a block is whole lanes");
  int const dim = tree.dim();
  TeamBoundMargin<T> const margin(dim);
  T ra[L], rb[L];
  for (int j = 0; j < L; ++j) ra[j] = rb[j] = T(0);
  T sa = T(0), sb = T(0);
  for (int d0 = 0; d0 < dim; d0 += abandon_block) {
    int const d1 = dim - d0 > abandon_block ? d0 + abandon_block : dim;
    int d = d0;
    for (; d + L <= d1; d += L) {
      for (int j = 0; j < L; ++j) {
        T const x = T(queries(q, d + j));
        T const ua = tree.lo(a, d + j) - x, va = x - tree.hi(a, d + j);
        T const ub = tree.lo(b, d + j) - x, vb = x - tree.hi(b, d + j);
        T const ta = positive_part(ua > va ? ua : va, x), tb = positive_part(ub > vb ? ub : vb, x);
        ra[j] += ta * ta;
        rb[j] += tb * tb;
      }
    }
    for (int j = 0; d < d1; ++d, ++j) { // the last block's rest
      T const x = T(queries(q, d));
      T const ua = tree.lo(a, d) - x, va = x - tree.hi(a, d);
      T const ub = tree.lo(b, d) - x, vb = x - tree.hi(b, d);
      T const ta = positive_part(ua > va ? ua : va, x), tb = positive_part(ub > vb ? ub : vb, x);
      ra[j] += ta * ta;
      rb[j] += tb * tb;
    }
    sa = T(0);
    sb = T(0);
    for (int j = 0; j < L; ++j) {
      sa += ra[j];
      sb += rb[j];
    }
    sa = margin.lower(sa);
    sb = margin.lower(sb);
    if (sa > bound && sb > bound) break;
  }
  da = sa;
  db = sb;
}

/// The squared distances from row q of `queries` to both children's boxes,
/// summed side by side: two independent chains of additions, where one
/// after the other would wait on each addition's latency. On CPUs, from
/// abandon_block + 1 dimensions on, the sums stop once both exceed `bound`
/// (both boxes are then out of reach, and the walks only compare them with
/// a bound at most `bound`, times a scale >= 1, which the partial sums
/// exceed as the whole ones would); with `Lanes`, they are
/// host_box_distances' instead. Lanes change which child looks nearer
/// where the two are close, so only walks whose answer does not depend on
/// the order they visit leaves ask for them (exact kNN and closest point):
/// radius rows left unsorted and the best-first walk's leaf budget keep the
/// dimension-order sums every backend shares.
template <bool Lanes, class Tree, class QV>
KOKKOS_FORCEINLINE_FUNCTION void bucket_box_distances(Tree const& tree, QV const& queries, std::int64_t q,
                                                      typename Tree::index_type a, typename Tree::index_type b,
                                                      typename Tree::coordinate_type& da,
                                                      typename Tree::coordinate_type& db,
                                                      typename Tree::coordinate_type bound) {
  using T = typename Tree::coordinate_type;
  int const dim = tree.dim();
  if constexpr (Lanes && !backend::device_code) {
    if (dim > abandon_block) {
      host_box_distances(tree, queries, q, a, b, da, db, bound);
      return;
    }
  }
  int const block = !backend::device_code && dim > abandon_block ? abandon_block : dim;
  T ra = T(0), rb = T(0);
  for (int d0 = 0; d0 < dim; d0 += block) {
    int const d1 = dim - d0 > block ? d0 + block : dim;
    for (int d = d0; d < d1; ++d) {
      T const x = T(queries(q, d));
      T const alo = tree.lo(a, d), ahi = tree.hi(a, d), blo = tree.lo(b, d), bhi = tree.hi(b, d);
      // max(lo - x, x - hi, 0): the distance outside the box, without a
      // branch per dimension (its sign does not matter once squared)
      T const ua = alo - x, va = x - ahi, ub = blo - x, vb = x - bhi;
      T const ta = positive_part(ua > va ? ua : va, x), tb = positive_part(ub > vb ? ub : vb, x);
      ra = d == 0 ? backend::mul_rn(ta, ta) : backend::add_rn(ra, backend::mul_rn(ta, ta));
      rb = d == 0 ? backend::mul_rn(tb, tb) : backend::add_rn(rb, backend::mul_rn(tb, tb));
    }
    if constexpr (!backend::device_code)
      if (ra > bound && rb > bound) break;
  }
  da = ra;
  db = rb;
}

/// Whether a visitor must be shown every point a walk reaches, those beyond
/// its bound too (a visitor that counts them: `counts_every_point`).
template <class V, class = void>
struct counts_every_point : std::false_type {};
template <class V>
struct counts_every_point<V, std::void_t<decltype(V::counts_every_point)>>
    : std::integral_constant<bool, V::counts_every_point> {};

/// Shows the visitor every point of bucket [begin, end), four at a time:
/// each distance is still summed in dimension order (the same value as
/// bucket_sq_distance), the four side by side as independent chains. On
/// CPUs, from abandon_block + 1 dimensions on, points beyond the visitor's
/// bound may be left out (abandon_block).
template <class Tree, class QV, class Visitor>
KOKKOS_FORCEINLINE_FUNCTION bool visit_bucket(Tree const& tree, QV const& queries, std::int64_t q,
                                              typename Tree::index_type begin, typename Tree::index_type end,
                                              Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr bool may_abandon = !backend::device_code && !counts_every_point<Visitor>::value;
  int const dim = tree.dim();
  int const block = may_abandon && dim > abandon_block ? abandon_block : dim;
  Index i = begin;
  for (; i + 4 <= end; i += 4) {
    T s[4] = {T(0), T(0), T(0), T(0)};
    T const bound = visitor.bound();
    bool out = false;
    for (int d0 = 0; d0 < dim && !out; d0 += block) {
      int const d1 = dim - d0 > block ? d0 + block : dim;
      for (int d = d0; d < d1; ++d) {
        T const x = T(queries(q, d));
        KDFORGE_UNROLL
        for (int j = 0; j < 4; ++j) {
          T const t = x - tree.coord(i + j, d);
          s[j] = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(s[j], backend::mul_rn(t, t));
        }
      }
      if constexpr (may_abandon) out = s[0] > bound && s[1] > bound && s[2] > bound && s[3] > bound;
    }
    if (out) continue;
    KDFORGE_UNROLL
    for (int j = 0; j < 4; ++j) {
      visitor.visit(tree.original_index(i + j), s[j]);
      if (visitor.done()) return true;
    }
  }
  for (; i < end; ++i) {
    T s = T(0);
    T const bound = visitor.bound();
    bool out = false;
    for (int d0 = 0; d0 < dim && !out; d0 += block) {
      int const d1 = dim - d0 > block ? d0 + block : dim;
      for (int d = d0; d < d1; ++d) {
        T const t = T(queries(q, d)) - tree.coord(i, d);
        s = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(s, backend::mul_rn(t, t));
      }
      if constexpr (may_abandon) out = s > bound;
    }
    if (out) continue;
    visitor.visit(tree.original_index(i), s);
    if (visitor.done()) return true;
  }
  return false;
}

/// Walks `tree` for row q of `queries`, showing the visitor (see
/// walks/common.hpp) every point of every leaf within its reach.
template <class Tree, class QV, class Visitor>
KOKKOS_FUNCTION void traverse_box_stack(Tree const& tree, QV const& queries, std::int64_t q, Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  if (tree.node_count() == 0) return;
  struct Entry {
    Index node;
    T lb;
  } stack[box_stack_capacity];
  int top = 0;
  stack[top++] = Entry{Index(0), bucket_box_distance(tree, queries, q, Index(0))};
  while (top > 0) {
    Entry e = stack[--top];
    if (e.lb > visitor.bound()) continue;
    while (true) {
      auto const node = tree.node(e.node);
      if (node.is_leaf()) {
        if (visit_bucket(tree, queries, q, node.begin, node.end, visitor)) return;
        break;
      }
      T ll, lr;
      bucket_box_distances<!has_fixed_bound<Visitor>::value>(tree, queries, q, node.left, node.right, ll, lr,
                                                               visitor.bound());
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
