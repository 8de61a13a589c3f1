#pragma once
// Pieces shared by the left-balanced builders (Wald 2022):
//  - the per-dimension presort that defines the order "by coordinate, ties by
//    input index" every builder uses, which is what makes their trees identical;
//  - per-node split dimensions (round robin, or split-widest-dimension of
//    section 6 with the node's domain box obtained by clipping the scene box
//    with the planes of its ancestors, walking up from the node).
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/kernels/trees/level_order.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kdforge::kernels {

/// Order-preserving map of a float/double to an unsigned integer of its
/// width (-0.0 is first turned into +0.0 so equal values get equal keys).
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t ordered_bits(float x) {
  if (x == 0.0f) x = 0.0f;
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t ordered_bits(double x) {
  if (x == 0.0) x = 0.0;
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}

// Kernels are named functors, not extended lambdas (see points.hpp).
template <class PV, class Keys, class Row>
struct PresortKeys {
  PV pts;
  Keys keys;
  Row row;
  int d;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    keys(i) = ordered_bits(pts(i)[d]);
    row(i) = typename Row::value_type(i);
  }
};

/// perm(d, r): the point of rank r in dimension d, ranks ordered by
/// (coordinate, point index). One stable radix sort per dimension.
template <class Exec, class T, int D, class Index>
Kokkos::View<Index**, Kokkos::LayoutRight, typename Exec::memory_space>
presort_dimensions(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts) {
  using MS = typename Exec::memory_space;
  using Key = std::conditional_t<std::is_same<T, float>::value, std::uint32_t, std::uint64_t>;
  kdforge::detail::Region region("kdforge::build::presort");
  Index const n = Index(pts.extent(0));
  auto perm = backend::allocate<Kokkos::View<Index**, Kokkos::LayoutRight, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::presort::perm"), D, n);
  auto keys = backend::allocate<Kokkos::View<Key*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::presort::keys"), n);
  Kokkos::View<char*, MS> workspace; // one sort scratch for all D sorts, no fence between them
  for (int d = 0; d < D; ++d) {
    auto row = Kokkos::subview(perm, d, Kokkos::ALL);
    Kokkos::parallel_for("kdforge::presort::keys", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         PresortKeys<std::decay_t<decltype(pts)>, decltype(keys), decltype(row)>{pts, keys, row, d});
    backend::sort_by_key_async(exec, keys, row, workspace);
  }
  exec.fence(); // keys and workspace are freed on return
  return perm;
}

/// Widest side of a domain box; ties keep the lower dimension (section 6).
template <class T, int D>
KOKKOS_FUNCTION int widest_box_dim(Box<T, D> const& box) {
  int best = 0;
  T best_extent = box.hi[0] - box.lo[0];
  for (int d = 1; d < D; ++d) {
    T const e = box.hi[d] - box.lo[d];
    if (e > best_extent) {
      best = d;
      best_extent = e;
    }
  }
  return best;
}

/// Split dimension of node s, given its ancestors' points and dimensions.
template <class T, int D, class Index, class PointsView, class NodePointView, class DimView>
KOKKOS_FUNCTION int widest_split_dim(std::int64_t s, Box<T, D> box, PointsView const& pts, NodePointView const& node_point,
                                     DimView const& dims) {
  for (std::int64_t c = s; c > 0;) {
    std::int64_t const a = lb::parent(c);
    int const da = dims(a);
    T const v = pts(node_point(a))[da];
    if (c == lb::left_child(a)) box.hi[da] = v < box.hi[da] ? v : box.hi[da];
    else box.lo[da] = v > box.lo[da] ? v : box.lo[da];
    c = a;
  }
  return widest_box_dim(box);
}

template <class Dims>
struct FillDims {
  Dims dims;
  std::uint8_t d;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const { dims(s) = d; }
};
template <class T, int D, class Index, class PV, class NP, class Dims>
struct WidestDims {
  Box<T, D> bounds;
  PV pts;
  NP node_point;
  Dims dims;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    dims(s) = std::uint8_t(widest_split_dim<T, D, Index>(s, bounds, pts, node_point, dims));
  }
};

/// Fills dims(s) for the nodes s of level l (both policies store dims here
/// during the build; only widest_dimension keeps them in the tree).
template <class Exec, class T, int D, class Index, class MS>
void compute_level_split_dims(Exec const& exec, int l, std::int64_t n, SplitPolicy policy, Box<T, D> const& bounds,
                              Kokkos::View<Point<T, D>*, MS> const& pts, Kokkos::View<Index*, MS> const& node_point,
                              Kokkos::View<std::uint8_t*, MS> const& dims) {
  std::int64_t const first = lb::full(l);
  std::int64_t const last = lb::min64(lb::full(l + 1), n);
  if (policy == SplitPolicy::round_robin) {
    Kokkos::parallel_for("kdforge::build::round_robin_dims", Kokkos::RangePolicy<Exec>(exec, first, last),
                         FillDims<Kokkos::View<std::uint8_t*, MS>>{dims, std::uint8_t(l % D)});
  } else {
    Kokkos::parallel_for("kdforge::build::widest_dims", Kokkos::RangePolicy<Exec>(exec, first, last),
                         WidestDims<T, D, Index, Kokkos::View<Point<T, D>*, MS>, Kokkos::View<Index*, MS>,
                                    Kokkos::View<std::uint8_t*, MS>>{bounds, pts, node_point, dims});
  }
}

/// Number of bits needed to store values 0 .. n-1 (at least 1).
inline int bits_for(std::int64_t n) {
  int b = 1;
  while (b < 63 && (std::int64_t(1) << b) < n) ++b;
  return b;
}

} // namespace kdforge::kernels
