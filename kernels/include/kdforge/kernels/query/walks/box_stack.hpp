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
// never exceeds the computed distance of a point in it.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/kernels/query/walks/common.hpp>
#include <kdforge/kernels/trees/packed_node.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
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
    T const t = x < lo ? x - lo : x > hi ? x - hi : T(0);
    r = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(r, backend::mul_rn(t, t));
  }
  return r;
}

/// The squared distances from row q of `queries` to both children's boxes,
/// summed side by side: two independent chains of additions, where one
/// after the other would wait on each addition's latency.
template <class Tree, class QV>
KOKKOS_FORCEINLINE_FUNCTION void bucket_box_distances(Tree const& tree, QV const& queries, std::int64_t q,
                                                      typename Tree::index_type a, typename Tree::index_type b,
                                                      typename Tree::coordinate_type& da,
                                                      typename Tree::coordinate_type& db) {
  using T = typename Tree::coordinate_type;
  int const dim = tree.dim();
  T ra = T(0), rb = T(0);
  for (int d = 0; d < dim; ++d) {
    T const x = T(queries(q, d));
    T const alo = tree.lo(a, d), ahi = tree.hi(a, d), blo = tree.lo(b, d), bhi = tree.hi(b, d);
    // max(lo - x, x - hi, 0): the distance outside the box, without a
    // branch per dimension (its sign does not matter once squared)
    T const ua = alo - x, va = x - ahi, ub = blo - x, vb = x - bhi;
    T ta = ua > va ? ua : va, tb = ub > vb ? ub : vb;
    ta = ta > T(0) ? ta : T(0);
    tb = tb > T(0) ? tb : T(0);
    ra = d == 0 ? backend::mul_rn(ta, ta) : backend::add_rn(ra, backend::mul_rn(ta, ta));
    rb = d == 0 ? backend::mul_rn(tb, tb) : backend::add_rn(rb, backend::mul_rn(tb, tb));
  }
  da = ra;
  db = rb;
}

/// Shows the visitor every point of bucket [begin, end), four at a time:
/// each distance is still summed in dimension order (the same value as
/// bucket_sq_distance), the four side by side as independent chains.
template <class Tree, class QV, class Visitor>
KOKKOS_FORCEINLINE_FUNCTION bool visit_bucket(Tree const& tree, QV const& queries, std::int64_t q,
                                              typename Tree::index_type begin, typename Tree::index_type end,
                                              Visitor& visitor) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  int const dim = tree.dim();
  Index i = begin;
  for (; i + 4 <= end; i += 4) {
    T s[4] = {T(0), T(0), T(0), T(0)};
    for (int d = 0; d < dim; ++d) {
      T const x = T(queries(q, d));
      KDFORGE_UNROLL
      for (int j = 0; j < 4; ++j) {
        T const t = x - tree.coord(i + j, d);
        s[j] = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(s[j], backend::mul_rn(t, t));
      }
    }
    KDFORGE_UNROLL
    for (int j = 0; j < 4; ++j) {
      visitor.visit(tree.original_index(i + j), s[j]);
      if (visitor.done()) return true;
    }
  }
  for (; i < end; ++i) {
    visitor.visit(tree.original_index(i), bucket_sq_distance(tree, queries, q, i));
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
      bucket_box_distances(tree, queries, q, node.left, node.right, ll, lr);
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
