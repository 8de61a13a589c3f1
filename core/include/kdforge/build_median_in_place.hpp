#pragma once
// Balanced median k-d trees built in the caller's memory, for point sets
// too large for a builder that copies them (kernels/builders/
// median_in_place/build.hpp has the algorithm): the caller's View of points
// is permuted into the tree's order and becomes the tree's storage, so the
// build needs, besides the points, one index per point and a transient
// list of positions (at most 8 bytes per point; about 4 for points in
// random order). More than 2^32 points with std::int64_t indices.
//
//   Kokkos::View<kdforge::Point<float, 3>*, MemorySpace> pts("p", n);    // filled by the caller
//   auto tree = kdforge::build_median_in_place<std::int64_t>(exec, pts);  // pts now in tree order
//   auto nn = kdforge::knn(exec, tree, queries, 8);                       // caller's indices, as always
//
// The tree is a MedianTree, the type build_split_sort returns: it answers
// every query the same way; with distinct coordinates it is the same tree.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/kernels/builders/median_in_place/build.hpp>
#include <kdforge/kernels/common/finite.hpp>
#include <kdforge/kernels/trees/median_tree.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge {

struct InPlaceOptions {
  /// Boxes of the inner nodes' sub-trees for the queries (see
  /// BuildOptions::node_boxes). They take 96 bytes per two points (float,
  /// 3-D): for sets that barely fit, NodeBoxPolicy::never.
  NodeBoxPolicy node_boxes = NodeBoxPolicy::automatic;
  /// Chunks of at most this many points are finished by one thread each
  /// (all their levels); wider ones by passes over all points. 0: automatic
  /// (2048 on GPUs, 65536 on CPUs, more where a level pass would need over
  /// 2^19 per-chunk tables). The tree does not depend on it.
  std::int64_t finish_size = 0;
};

namespace detail {

template <class T, int D>
struct InPlaceBounds {
  using value_type = Box<T, D>;
  Point<T, D> const* pts;
  KOKKOS_FUNCTION void init(value_type& b) const { b = Box<T, D>::empty(); }
  KOKKOS_FUNCTION void join(value_type& a, value_type const& b) const { a.extend(b); }
#if KOKKOS_VERSION < 40000
  KOKKOS_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    for (int d = 0; d < D; ++d) {
      a.lo[d] = b.lo[d] < a.lo[d] ? b.lo[d] : a.lo[d];
      a.hi[d] = b.hi[d] > a.hi[d] ? b.hi[d] : a.hi[d];
    }
  }
#endif
  KOKKOS_FUNCTION void operator()(std::int64_t i, value_type& b) const { b.extend(pts[i]); }
};

template <class T, int D>
struct InPlaceFirstBad {
  Point<T, D> const* pts;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    bool ok = true;
    for (int d = 0; d < D; ++d) ok = ok && is_finite(pts[i][d]);
    if (!ok && i < m) m = i;
  }
};

} // namespace detail

/// Builds a balanced median k-d tree (the layout of build_split_sort's)
/// over `points` in place: the View is permuted into the tree's order and
/// the tree keeps it as its points() (nothing else is copied); the caller's
/// index of the point now at position i is tree.original_indices()(i), and
/// queries answer with the caller's indices as for every tree. `points`
/// must be a contiguous View in `exec`'s memory space. Index std::int32_t
/// or std::int64_t (more than 2^31 - 1 points need the latter; it has no
/// 2^32 limit). Errors (kdforge::Error): a NaN or infinite coordinate (the
/// first point named; the points are then still in the caller's order),
/// more points than Index holds; kdforge::OutOfMemoryError when the index
/// array does not fit (the points are then untouched) or a later
/// allocation fails (the points are then a permutation of the caller's:
/// the same set, in another order).
template <class Index = std::int32_t, class Exec, class T, int D, class... P>
MedianTree<typename Exec::memory_space, T, D, Index>
build_median_in_place(Exec const& exec, Kokkos::View<Point<T, D>*, P...> const& points, InPlaceOptions const& options = {}) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::build_median_in_place: the first argument must be a Kokkos execution space instance");
  using MS = typename Exec::memory_space;
  using PV = Kokkos::View<Point<T, D>*, MS>;
  static_assert(std::is_convertible<Kokkos::View<Point<T, D>*, P...>, PV>::value,
                "kdforge::build_median_in_place: the points must be a non-const, contiguous View in the execution "
                "space's memory space (they are permuted in place)");
  static_assert(std::is_same<Index, std::int32_t>::value || std::is_same<Index, std::int64_t>::value,
                "kdforge::build_median_in_place: the index type must be std::int32_t or std::int64_t");
  PV const pts = points;
  std::int64_t const n = std::int64_t(pts.extent(0));
  char const* where = "build_median_in_place";
  KDFORGE_REQUIRE(n <= std::int64_t(std::numeric_limits<Index>::max()) - 1, where, n,
                  " points do not fit the index type (", sizeof(Index) * 8,
                  "-bit); build with kdforge::build_median_in_place<std::int64_t>(...)");
  KDFORGE_REQUIRE(options.finish_size >= 0, where, "InPlaceOptions::finish_size must be >= 0 (0: automatic; got ",
                  options.finish_size, ")");
  return detail::api_call<MS>(where, [&] {
    kernels::in_place::Policy<Exec> const all(exec, 0, n);
    Box<T, D> bounds = Box<T, D>::empty();
    if (n > 0) {
      std::int64_t bad = std::numeric_limits<std::int64_t>::max();
      Kokkos::parallel_reduce("kdforge::build_median_in_place::check_finite", all,
                              detail::InPlaceFirstBad<T, D>{pts.data()}, Kokkos::Min<std::int64_t>(bad));
      KDFORGE_REQUIRE(bad == std::numeric_limits<std::int64_t>::max(), where, "point ", bad,
                      " has a NaN or infinite coordinate; remove it or replace it by a finite one");
      Kokkos::parallel_reduce("kdforge::build_median_in_place::bounds", all, detail::InPlaceBounds<T, D>{pts.data()},
                              bounds);
    }
    auto const idx = kernels::in_place::build<Exec, T, D, Index>(exec, pts, options.finish_size);
    MedianTree<MS, T, D, Index> tree(pts, idx, bounds, 0);
    kernels::attach_node_boxes(exec, tree, options.node_boxes);
    exec.fence();
    return tree;
  });
}

} // namespace kdforge
