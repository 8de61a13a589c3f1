#pragma once
// kNN by iterative range search on VVH photon trees (Zhou et al. 2008,
// section 5.2, Algorithm 6; r0 by Appendix A): each query narrows a radius
// r_k around its k-th nearest point with histograms of distances, then
// gathers the points within r_k. The algorithm is in
// kernels/query/range_knn.hpp.
//
//   auto tree = kdforge::build_vvh_tree(exec, photons);
//   auto g = kdforge::range_knn_rows(exec, tree, gather_points, 50);  // CSR: every photon within r_k (>= 50)
//   auto nn = kdforge::range_knn(exec, tree, gather_points, 50);      // M x 50: exactly the 50 nearest, sorted
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/build_vvh_tree.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/query/radius.hpp>
#include <kdforge/kernels/query/range_knn.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace kdforge {

/// Options of range_knn and range_knn_rows (the paper's values by default).
struct RangeKnnOptions {
  /// niter: histogram passes; each narrows [rmin, rmax] to one bin. 0 keeps r0.
  int iterations = 2;
  /// nhist: bins per histogram (1 to 128), in per-team scratch memory.
  int histogram_bins = 32;
  /// r0 of every query when > 0; 0: estimated per query (Appendix A).
  double initial_radius = 0.0;
  /// Appendix A: the nodes whose box radius is below alpha R ...
  double alpha = 0.5;
  /// ... and this many levels of them (nlevel) get a kNN radius at their centre.
  int estimate_levels = 3;
};

/// range_knn_rows' results: for query q, rows' row q holds every point
/// within radii(q) = r_k (inclusive), sorted by distance (ties by index);
/// at least k of them unless the tree holds fewer.
template <class MemorySpace, class T, class Index>
struct RangeKnnResult {
  RadiusResult<MemorySpace, T, Index> rows;
  Kokkos::View<T*, MemorySpace> radii;
};

namespace detail {

template <class Tree, class = void>
struct is_vvh_tree : std::false_type {};
template <class Tree>
struct is_vvh_tree<Tree, std::void_t<decltype(std::declval<Tree const&>().query_radius())>>
    : std::integral_constant<bool, kernels::is_bucket_tree<Tree>::value> {};

template <class R, class Sq>
struct SquareRadiiRn {
  R radii;
  Sq sq;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { sq(i) = backend::mul_rn(radii(i), radii(i)); }
};

template <class Rows, class Out>
struct RowsToKnn {
  Rows rows;
  Out out;
  int k;
  KOKKOS_FUNCTION void operator()(std::int64_t q) const {
    using Index = typename decltype(out.indices)::non_const_value_type;
    using T = typename decltype(out.sq_distances)::non_const_value_type;
    std::int64_t const b = rows.offsets(q);
    std::int64_t const len = rows.offsets(q + 1) - b;
    for (int j = 0; j < k; ++j) {
      out.indices(q, j) = j < len ? rows.indices(b + j) : Index(-1);
      out.sq_distances(q, j) = j < len ? rows.sq_distances(b + j) : infinity<T>();
    }
  }
};

/// r_k of every query (Algorithm 6, r0 by Appendix A or the option).
template <class Exec, class Tree, class Queries>
Kokkos::View<typename Tree::coordinate_type*, typename Exec::memory_space>
range_knn_radii(Exec const& exec, Tree const& tree, Queries const& queries, int k, RangeKnnOptions const& o,
                char const* where) {
  static_assert(is_vvh_tree<Tree>::value,
                "kdforge: range_knn and range_knn_rows answer on VVH photon trees (build_vvh_tree)");
  using T = typename Tree::coordinate_type;
  using MS = typename Exec::memory_space;
  check_tree_space<Exec, Tree>(where);
  KDFORGE_REQUIRE(k >= 1, where, "k must be >= 1 (got ", k, ")");
  KDFORGE_REQUIRE(o.iterations >= 0 && o.iterations <= 64, where, "RangeKnnOptions::iterations must be in [0, 64] (got ",
                  o.iterations, ")");
  KDFORGE_REQUIRE(o.histogram_bins >= 1 && o.histogram_bins <= 128, where,
                  "RangeKnnOptions::histogram_bins must be in [1, 128] (got ", o.histogram_bins, ")");
  KDFORGE_REQUIRE(std::isfinite(o.initial_radius) && o.initial_radius >= 0.0, where,
                  "RangeKnnOptions::initial_radius must be finite and >= 0 (0: estimated; got ", o.initial_radius, ")");
  KDFORGE_REQUIRE(std::isfinite(o.alpha) && o.alpha > 0.0, where, "RangeKnnOptions::alpha must be finite and > 0 (got ",
                  o.alpha, ")");
  KDFORGE_REQUIRE(o.estimate_levels >= 1, where, "RangeKnnOptions::estimate_levels must be >= 1 (got ",
                  o.estimate_levels, ")");
  check_bucket_queries(exec, tree, queries, where);
  std::int64_t const m = std::int64_t(queries.extent(0));
  auto radii = backend::allocate<Kokkos::View<T*, MS>>("kdforge::range_knn::radii", m);
  if (m == 0 || tree.size() == 0) return radii;
  Region region("kdforge::range_knn::radii");
  Kokkos::View<T*, MS> none;
  if (o.initial_radius > 0.0) {
    run_histogram_search(exec, tree, queries, none, T(o.initial_radius), radii, k, o.histogram_bins, o.iterations);
    return radii;
  }
  // Appendix A, PRECOMPUTERADIUS: kNN radii at the centres of the chosen nodes
  T const big_r = T(tree.query_radius());
  std::int64_t const nodes = std::int64_t(tree.node_count());
  auto parent = backend::allocate<Kokkos::View<std::int64_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::parents"), nodes);
  Kokkos::parallel_for("kdforge::range_knn::parents", Kokkos::RangePolicy<Exec>(exec, 0, nodes),
                       Parents<Tree, decltype(parent)>{tree, parent});
  auto flags = backend::allocate<Kokkos::View<std::int64_t*, MS>>("kdforge::range_knn::flags", nodes);
  auto scan = backend::allocate<Kokkos::View<std::int64_t*, MS>>("kdforge::range_knn::scan", nodes);
  Kokkos::parallel_for("kdforge::range_knn::select", Kokkos::RangePolicy<Exec>(exec, 0, nodes),
                       SelectNodes<Tree, decltype(parent), decltype(flags)>{tree, parent, flags,
                                                                            o.alpha * tree.query_radius(),
                                                                            o.estimate_levels});
  std::int64_t const chosen = backend::exclusive_scan(exec, flags, scan);
  auto node_r = backend::allocate<Kokkos::View<T*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::node_radii"), nodes);
  Kokkos::deep_copy(exec, node_r, infinity<T>());
  if (chosen > 0) {
    auto centres = backend::allocate<Kokkos::View<T**, Kokkos::LayoutRight, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::centres"),
                                                       chosen, 3);
    auto ids = backend::allocate<Kokkos::View<std::int64_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::ids"), chosen);
    Kokkos::parallel_for("kdforge::range_knn::centres", Kokkos::RangePolicy<Exec>(exec, 0, nodes),
                         GatherCentres<Tree, decltype(flags), decltype(centres), decltype(ids)>{tree, flags, scan, centres, ids});
    auto cr = backend::allocate<Kokkos::View<T*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::centre_radii"), chosen);
    run_histogram_search(exec, tree, centres, none, big_r, cr, k, o.histogram_bins, o.iterations);
    Kokkos::parallel_for("kdforge::range_knn::node_radii", Kokkos::RangePolicy<Exec>(exec, 0, chosen),
                         ScatterNodeRadii<decltype(ids), decltype(cr), decltype(node_r)>{ids, cr, node_r});
  }
  // ESTIMATERADIUS per query, then Algorithm 6 from it
  auto r0 = backend::allocate<Kokkos::View<T*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::r0"), m);
  Kokkos::parallel_for("kdforge::range_knn::estimate", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       EstimateRadius<Tree, Queries, decltype(node_r), decltype(r0)>{tree, queries, node_r, big_r, r0});
  run_histogram_search(exec, tree, queries, r0, T(0), radii, k, o.histogram_bins, o.iterations);
  return radii;
}

} // namespace detail

namespace detail {
template <class Exec, class Tree, class Queries>
RangeKnnResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>
range_knn_rows_impl(Exec const& exec, Tree const& tree, Queries const& queries, int k, RangeKnnOptions const& options = {}) {
  using T = typename Tree::coordinate_type;
  using MS = typename Exec::memory_space;
  RangeKnnResult<MS, T, typename Tree::index_type> out;
  out.radii = detail::range_knn_radii(exec, tree, queries, k, options, "range_knn_rows");
  std::int64_t const m = std::int64_t(queries.extent(0));
  auto sq = backend::allocate<Kokkos::View<T*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::sq_radii"), m);
  if (m > 0)
    Kokkos::parallel_for("kdforge::range_knn::square", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         detail::SquareRadiiRn<decltype(out.radii), decltype(sq)>{out.radii, sq});
  RadiusOptions ro;
  ro.sort = true;
  detail::run_bucket_radius_search(exec, tree, queries, detail::SqRadiiFor<Tree>{T(0), sq}, out.rows, ro);
  exec.fence();
  return out;
}
} // namespace detail

/// kNN by iterative range search (Algorithm 6) on a VVH tree: r_k of each
/// query (radii) and every point within it (rows, CSR, sorted by distance,
/// ties by index): the k nearest and those up to one histogram bin beyond
/// the k-th (rows hold at least k points unless the tree has fewer).
/// `queries`: an M x 3 View. Errors (kdforge::Error): k < 1, options out of
/// range, queries not finite.
template <class Exec, class Tree, class Queries>
RangeKnnResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>
range_knn_rows(Exec const& exec, Tree const& tree, Queries const& queries, int k, RangeKnnOptions const& options = {}) {
  return detail::api_call<typename Exec::memory_space>("range_knn_rows", [&]() -> decltype(auto) {
    return detail::range_knn_rows_impl(exec, tree, queries, k, options);
  });
}

namespace detail {
template <class Exec, class Tree, class Queries>
KnnResultFor<Exec, Tree> range_knn_impl(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                                   RangeKnnOptions const& options = {}) {
  using T = typename Tree::coordinate_type;
  using MS = typename Exec::memory_space;
  auto const radii = detail::range_knn_radii(exec, tree, queries, k, options, "range_knn");
  std::int64_t const m = std::int64_t(queries.extent(0));
  KnnResultFor<Exec, Tree> out;
  detail::ensure_extents(out.indices, "kdforge::range_knn::indices", m, k);
  detail::ensure_extents(out.sq_distances, "kdforge::range_knn::sq_distances", m, k);
  if (m == 0) return out;
  auto sq = backend::allocate<Kokkos::View<T*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::range_knn::sq_radii"), m);
  Kokkos::parallel_for("kdforge::range_knn::square", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       detail::SquareRadiiRn<decltype(radii), decltype(sq)>{radii, sq});
  RadiusOptions ro;
  ro.sort = true;
  ro.max_neighbors = k; // the nearest k within r_k
  RadiusResultFor<Exec, Tree> rows;
  detail::run_bucket_radius_search(exec, tree, queries, detail::SqRadiiFor<Tree>{T(0), sq}, rows, ro);
  Kokkos::parallel_for("kdforge::range_knn::rows_to_knn", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       detail::RowsToKnn<decltype(rows), KnnResultFor<Exec, Tree>>{rows, out, k});
  exec.fence();
  return out;
}
} // namespace detail

/// Exactly the k nearest points of each query, sorted (ties by index), as
/// knn returns them (M x k; (-1, +inf) where the tree has fewer than k), found
/// by iterative range search: the nearest k within each query's r_k.
template <class Exec, class Tree, class Queries>
KnnResultFor<Exec, Tree> range_knn(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                                   RangeKnnOptions const& options = {}) {
  return detail::api_call<typename Exec::memory_space>("range_knn", [&]() -> decltype(auto) {
    return detail::range_knn_impl(exec, tree, queries, k, options);
  });
}

} // namespace kdforge
