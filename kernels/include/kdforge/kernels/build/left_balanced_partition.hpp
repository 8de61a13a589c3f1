#pragma once
// Builder "presorted_partition" of left-balanced k-d trees.
//
// Paper: Wald 2022 (left-balanced trees, sections 2, 4 and 6) gives the tree,
// ss(s) and the pivot rule of observation 2.1: in a sub-tree's points sorted
// along its split dimension, the first ss(lChild(s)) go left, the next one is
// node s. What differs from the paper's tag algorithm, and why: instead of one
// full sort of (tag, coordinate) per level (~log2 N sorts), every dimension is
// sorted once (ties by input index) and each level only *partitions* the
// per-dimension orders stably, which keeps every segment sorted in every
// dimension. A level then costs, per dimension, one flag pass, one exclusive
// scan and one scatter, and the dimension being split moves nothing at all.
// Segments are kept in in-order layout: sub-tree s owns positions
// [begin(s), begin(s) + ss(s)) in all D orders, its pivot sits at
// begin(s) + ss(lChild(s)), the left child's segment starts at begin(s) and
// the right child's right after the pivot. Produces exactly the tree of the
// tag builder (checked by a test).
#include <kdforge/kernels/build/left_balanced_common.hpp>

#include <utility>

namespace kdforge::kernels {

namespace partition_detail {
// Kernels are named functors, not extended lambdas (see points.hpp).
template <class IV, class Perm, class Dims, class Side>
struct Sides { // which side of its node each point goes; the pivot becomes the node
  IV tag, node_begin, node_point;
  Perm perm;
  Dims dims;
  Side side;
  std::int64_t n, fixed;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const s = tag(j);
    if (s < fixed) return;
    std::int64_t const pivot = node_begin(s) + lb::subtree_size(lb::left_child(s), n);
    auto const p = perm(dims(s), j);
    side(p) = j < pivot ? 0 : (j == pivot ? 1 : 2);
    if (j == pivot) node_point(s) = p;
  }
};
template <class IV, class Perm, class Dims, class Side, class Scan>
struct Flags { // left count in the low 32 bits, pivot count in the high 32
  IV tag;
  Perm perm;
  Dims dims;
  Side side;
  Scan scan;
  std::int64_t fixed;
  int e;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const s = tag(j);
    std::uint64_t f = 0;
    if (s >= fixed && dims(s) != e) {
      std::uint8_t const sd = side(perm(e, j));
      f = sd == 0 ? 1u : (sd == 1 ? (std::uint64_t(1) << 32) : 0u);
    }
    scan(j) = f;
  }
};
template <class IV, class Perm, class Dims, class Side, class Scan>
struct Scatter { // stable three-way partition (left | pivot | right) per segment
  IV tag, node_begin;
  Perm perm, perm_next;
  Dims dims;
  Side side;
  Scan scan;
  std::int64_t n, fixed;
  int e;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const s = tag(j);
    auto const p = perm(e, j);
    if (s < fixed || dims(s) == e) {
      perm_next(e, j) = p;
      return;
    }
    std::int64_t const begin = node_begin(s);
    std::int64_t const pivot = begin + lb::subtree_size(lb::left_child(s), n);
    std::uint64_t const before = scan(j) - scan(begin);
    std::int64_t const left_before = std::int64_t(before & 0xffffffffu);
    std::int64_t const pivot_before = std::int64_t(before >> 32);
    std::uint8_t const sd = side(p);
    std::int64_t dest;
    if (sd == 0) dest = begin + left_before;
    else if (sd == 1) dest = pivot;
    else dest = pivot + 1 + (j - begin - left_before - pivot_before);
    perm_next(e, dest) = p;
  }
};
template <class IV>
struct NextTags { // left of a pivot: left child; right of it: right child
  IV tag, node_begin;
  std::int64_t n, fixed;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    using Index = typename IV::value_type;
    std::int64_t const s = tag(j);
    if (s < fixed) return;
    std::int64_t const begin = node_begin(s);
    std::int64_t const pivot = begin + lb::subtree_size(lb::left_child(s), n);
    if (j < pivot) tag(j) = Index(lb::left_child(s));
    else if (j > pivot) tag(j) = Index(lb::right_child(s));
    else {
      if (lb::left_child(s) < n) node_begin(lb::left_child(s)) = Index(begin);
      if (lb::right_child(s) < n) node_begin(lb::right_child(s)) = Index(pivot + 1);
    }
  }
};
} // namespace partition_detail

/// Returns node_point: node_point(s) = index (into pts) of the point at node
/// s. Fills dims(s) for every node.
template <class Exec, class T, int D, class Index>
Kokkos::View<Index*, typename Exec::memory_space>
build_left_balanced_partition(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts,
                              SplitPolicy policy, Box<T, D> const& bounds,
                              Kokkos::View<std::uint8_t*, typename Exec::memory_space> const& dims) {
  using MS = typename Exec::memory_space;
  std::int64_t const n = std::int64_t(pts.extent(0));
  Kokkos::View<Index*, MS> node_point(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::node_point"), n);
  if (n == 0) return node_point;

  auto perm = presort_dimensions<Exec, T, D, Index>(exec, pts);
  Kokkos::View<Index**, Kokkos::LayoutRight, MS> perm_next(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::perm_next"), D, n);
  Kokkos::View<Index*, MS> tag("kdforge::build::tag", n);                 // sub-tree owning each position
  Kokkos::View<Index*, MS> node_begin("kdforge::build::node_begin", n);   // segment begin of each node
  Kokkos::View<std::uint8_t*, MS> side(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::side"), n);
  Kokkos::View<std::uint64_t*, MS> scan(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::scan"), n);

  // Scans without fence or total, their vendor scratch allocated once: a
  // fenced scan with a fresh temporary per call cost ~50 us each on the H100
  // (D per level).
  Kokkos::View<char*, MS> scan_workspace;
  int const L = lb::num_levels(n);
  for (int l = 0; l < L; ++l) {
    compute_level_split_dims<Exec, T, D, Index>(exec, l, n, policy, bounds, pts, node_point, dims);
    std::int64_t const fixed = lb::full(l); // nodes of levels < l are final

    using IV = Kokkos::View<Index*, MS>;
    using PermV = Kokkos::View<Index**, Kokkos::LayoutRight, MS>;
    using DimV = Kokkos::View<std::uint8_t*, MS>;
    using ScanV = Kokkos::View<std::uint64_t*, MS>;
    Kokkos::parallel_for("kdforge::build::partition::side", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         partition_detail::Sides<IV, PermV, DimV, DimV>{tag, node_begin, node_point, perm, dims, side, n, fixed});
    if (l == L - 1) break; // every segment of the last level is a single node

    for (int e = 0; e < D; ++e) {
      // Stable partition of order e inside every segment whose split
      // dimension is not e: one flag pass, one scan, one scatter.
      Kokkos::parallel_for("kdforge::build::partition::flags", Kokkos::RangePolicy<Exec>(exec, 0, n),
                           partition_detail::Flags<IV, PermV, DimV, DimV, ScanV>{tag, perm, dims, side, scan, fixed, e});
      backend::exclusive_scan_async(exec, scan, scan, scan_workspace);
      Kokkos::parallel_for("kdforge::build::partition::scatter", Kokkos::RangePolicy<Exec>(exec, 0, n),
                           partition_detail::Scatter<IV, PermV, DimV, DimV, ScanV>{tag, node_begin, perm, perm_next, dims,
                                                                                   side, scan, n, fixed, e});
    }
    std::swap(perm, perm_next);
    Kokkos::parallel_for("kdforge::build::partition::tags", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         partition_detail::NextTags<IV>{tag, node_begin, n, fixed});
  }
  return node_point;
}

} // namespace kdforge::kernels
