#pragma once
// Builder "wald_tags" of left-balanced k-d trees: the algorithm of Wald 2022,
// sections 3-4 (tag = level-l ancestor; per level one sort by (tag,
// coordinate) and one tag-update kernel using sb(s, l) and ss(s)), with the
// split-widest-dimension extension of section 6 (split dimensions are kept
// per node instead of in the tag's low bits; the domain box comes from
// walking up the ancestors).
//
// What differs and why:
//  - The sort is the backend's radix key-value sort on a 64-bit key
//    (tag << b | coordinate code), as section 7.1 suggests. The coordinate
//    code is the point's rank in a once-per-dimension presort (by coordinate,
//    ties by input index): an order-preserving encoding that fits float and
//    double alike in b = ceil(log2 N) bits (so the sort passes only 2b bits)
//    and that breaks ties the same way on every backend.
//  - Each iteration sorts only the suffix after the fixed prefix (7.1): at
//    iteration l that is [F(l-1), N), because the nodes of level l-1 reach
//    their final slots in this very sort.
#include <kdforge/backends/memory.hpp>
#include <kdforge/kernels/builders/left_balanced/common.hpp>

namespace kdforge::kernels {

namespace tags_detail {
// Kernels are named functors, not extended lambdas (see points.hpp).
template <class Perm, class Rank>
struct Ranks {
  Perm perm;
  Rank rank;
  int dims;
  KOKKOS_FUNCTION void operator()(std::int64_t r) const {
    for (int d = 0; d < dims; ++d) rank(d, perm(d, r)) = typename Rank::value_type(r);
  }
};
template <class IV>
struct Iota {
  IV v;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { v(i) = typename IV::value_type(i); }
};
template <class Keys, class Rank, class Dims, class IV>
struct MakeKeys { // (tag << bits) | rank of the point in its sub-tree's split dimension
  Keys key;
  Rank rank;
  Dims dims;
  IV point;
  int bits;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::uint64_t const tag = key(j) >> bits;
    key(j) = (tag << bits) | std::uint64_t(rank(dims(tag), point(j)));
  }
};
template <class Keys, class IV>
struct UpdateTags { // section 3.2, with sb(s, l) and ss(s) of section 4
  Keys key;
  IV point, node_point;
  std::int64_t n;
  int bits;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    std::int64_t const s = std::int64_t(key(j) >> bits);
    std::int64_t const pivot = lb::segment_begin(s, n) + lb::subtree_size(lb::left_child(s), n);
    std::int64_t t = s;
    if (j < pivot) t = lb::left_child(s);
    else if (j > pivot) t = lb::right_child(s);
    else node_point(s) = point(j);
    key(j) = std::uint64_t(t) << bits;
  }
};
} // namespace tags_detail

template <class Exec, class T, int D, class Index>
Kokkos::View<Index*, typename Exec::memory_space>
build_left_balanced_tags(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts,
                         SplitPolicy policy, Box<T, D> const& bounds,
                         Kokkos::View<std::uint8_t*, typename Exec::memory_space> const& dims) {
  using MS = typename Exec::memory_space;
  std::int64_t const n = std::int64_t(pts.extent(0));
  auto node_point = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::node_point"), n);
  if (n == 0) return node_point;

  // rank(d, p): position of point p in the dimension-d presort
  auto perm = presort_dimensions<Exec, T, D, Index>(exec, pts);
  auto rank = backend::allocate<Kokkos::View<Index**, Kokkos::LayoutRight, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::rank"), D, n);
  Kokkos::parallel_for("kdforge::build::tags::rank", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       tags_detail::Ranks<decltype(perm), decltype(rank)>{perm, rank, D});
  perm = {};

  int const bits = bits_for(n);
  auto point = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::tags::point"), n);
  auto key = backend::allocate<Kokkos::View<std::uint64_t*, MS>>("kdforge::build::tags::key", n); // tag = key >> bits; all tags start at 0
  Kokkos::parallel_for("kdforge::build::tags::init", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       tags_detail::Iota<decltype(point)>{point});

  int const L = lb::num_levels(n);
  for (int l = 0; l < L; ++l) {
    compute_level_split_dims<Exec, T, D, Index>(exec, l, n, policy, bounds, pts, node_point, dims);
    std::int64_t const begin = l == 0 ? 0 : lb::full(l - 1);
    Kokkos::parallel_for("kdforge::build::tags::keys", Kokkos::RangePolicy<Exec>(exec, begin, n),
                         tags_detail::MakeKeys<decltype(key), decltype(rank), std::decay_t<decltype(dims)>, decltype(point)>{
                             key, rank, dims, point, bits});
    auto range = Kokkos::make_pair(begin, n);
    backend::sort_by_key(exec, Kokkos::subview(key, range), Kokkos::subview(point, range), 0, 2 * bits);
    if (l == L - 1) break; // the last level's sub-trees are single nodes, now in place

    // updateTags (section 3.2): pivot of sub-tree s at sb(s, l) + ss(lChild(s))
    std::int64_t const fixed = lb::full(l);
    Kokkos::parallel_for("kdforge::build::tags::update", Kokkos::RangePolicy<Exec>(exec, fixed, n),
                         tags_detail::UpdateTags<decltype(key), decltype(point)>{key, point, node_point, n, bits});
  }
  // After the last sort every point sits at its node.
  Kokkos::deep_copy(exec, node_point, point);
  return node_point;
}

} // namespace kdforge::kernels
