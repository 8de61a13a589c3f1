#pragma once
// What a traversal reads per visited node: the node's point and the caller's
// index of it, packed into one 16-byte-aligned record. On GPUs the query
// threads of a warp visit different nodes, so every load instruction is a
// gather touching up to 32 cache sectors; reading one 16-byte record (float,
// D = 3: x, y, z, index) is one vector load instead of three coordinate loads
// plus an index load on every candidate insertion. Profiling on an H100 (kNN,
// k = 8, 1M x 1M) showed the traversal bound by those gathers.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

namespace kdforge::kernels {

template <class T, int D, class Index>
struct alignas(16) PackedNode {
  T c[D];
  Index index;
  KOKKOS_FORCEINLINE_FUNCTION T operator[](int d) const { return c[d]; }
};

/// q - p per dimension. The traversals compute these once per visited node
/// and take both the squared distance and the split plane's offset from
/// them (one subtraction per dimension instead of selecting q's and p's
/// coordinates again for the plane: the GPU kernels are issue-bound).
template <class T, int D>
struct Offsets {
  T v[D];
  KOKKOS_FORCEINLINE_FUNCTION T operator[](int d) const { return v[d]; }
};

template <class T, int D, class Index>
KOKKOS_FORCEINLINE_FUNCTION Offsets<T, D> offsets(Point<T, D> const& q, PackedNode<T, D, Index> const& p) {
  Offsets<T, D> o;
  for (int d = 0; d < D; ++d) o.v[d] = q[d] - p.c[d];
  return o;
}

/// Squared length of q - p, summed in dimension order with explicit
/// rounding: the same bits on every backend. The sum starts from the first
/// square rather than from 0: a square is +0, positive, +inf or NaN, and
/// 0 + x is x for all of them, so the bits are those of the 0-based sum,
/// and the GPU loops lose an FADD with a zero operand that nvcc may not drop
/// (it cannot know x is not -0).
template <class T, int D>
KOKKOS_FORCEINLINE_FUNCTION T sq_norm(Offsets<T, D> const& o) {
  T s = backend::mul_rn(o.v[0], o.v[0]);
  for (int d = 1; d < D; ++d) s = backend::add_rn(s, backend::mul_rn(o.v[d], o.v[d]));
  return s;
}

/// Squared distance from q to a node's point, with the same operations (and
/// so the same bits) as sq_distance on two points.
template <class T, int D, class Index>
KOKKOS_FORCEINLINE_FUNCTION T sq_distance(Point<T, D> const& q, PackedNode<T, D, Index> const& p) {
  return sq_norm(offsets(q, p));
}

/// p[d] for a run-time d without indexing a register array by it (which
/// would move the whole point, or a query, to local memory on GPUs). On CPUs
/// too: indexing made closest point 20% slower on the 2-core test machine
/// (the point goes through the stack), while the unrolled selects compile to
/// conditional moves.
template <int D, class P>
KOKKOS_FORCEINLINE_FUNCTION auto component(P const& p, int d) {
  auto v = p[0];
  KDFORGE_UNROLL
  for (int e = 1; e < D; ++e) v = d == e ? p[e] : v;
  return v;
}

template <class T, int D, class Index>
KOKKOS_FORCEINLINE_FUNCTION PackedNode<T, D, Index> pack_node(Point<T, D> const& p, Index index) {
  PackedNode<T, D, Index> r;
  for (int d = 0; d < D; ++d) r.c[d] = p[d];
  r.index = index;
  return r;
}

} // namespace kdforge::kernels
