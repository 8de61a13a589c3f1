#pragma once
// radius_count and radius_search: the points within a radius of each query,
// counted or listed in CSR form. Radii are given unsquared, distances come
// back squared.
#include <kdforge/base/options.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/query/radius.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge {

/// Number of points within `radius` (inclusive) of each query, capped at
/// options.max_neighbors when that is >= 0, written into `counts` (kept when
/// it has extent M, replaced otherwise). `workspace`: as for knn.
template <class Exec, class Tree, class Queries>
void radius_count(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                  Kokkos::View<std::int64_t*, typename Exec::memory_space>& counts, RadiusOptions const& options,
                  QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  detail::check_tree_space<Exec, Tree>("radius_count");
  T const sq_r = detail::checked_sq_radius<T>(radius, "radius_count", "radius");
  KDFORGE_REQUIRE(options.max_neighbors >= -1, "radius_count", "RadiusOptions::max_neighbors must be >= 0, or -1 for no limit");
  if constexpr (kernels::is_bucket_tree<Tree>::value) { // run-time dimension: queries M x D
    detail::check_bucket_queries(exec, tree, queries, "radius_count");
    detail::ensure_extents(counts, "kdforge::radius::counts", std::int64_t(queries.extent(0)));
    detail::run_bucket_radius_count(exec, tree, queries, sq_r, counts, options.max_neighbors);
    (void)workspace;
  } else {
    auto const walk = detail::make_walk<Exec>(options, "radius_count");
    auto q = detail::query_points<Exec, Tree>(exec, queries);
    std::int64_t const m = std::int64_t(q.extent(0));
    detail::ensure_extents(counts, "kdforge::radius::counts", m);
    detail::run_radius_count(exec, tree, q, sq_r, counts, options.max_neighbors, options.order, options.check_queries, walk,
                             workspace);
  }
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void radius_count(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                  Kokkos::View<std::int64_t*, typename Exec::memory_space>& counts, RadiusOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  radius_count(exec, tree, queries, radius, counts, options, workspace);
}

/// As above, into a newly allocated View.
template <class Exec, class Tree, class Queries>
Kokkos::View<std::int64_t*, typename Exec::memory_space>
radius_count(Exec const& exec, Tree const& tree, Queries const& queries, double radius, RadiusOptions const& options = {}) {
  Kokkos::View<std::int64_t*, typename Exec::memory_space> counts;
  radius_count(exec, tree, queries, radius, counts, options);
  return counts;
}

/// All points within `radius` (inclusive) of each query, in CSR form, built
/// in two passes (count, then fill) so no buffer size is guessed. With
/// max_neighbors >= 0 each row keeps the nearest ones only (sorted). Written
/// into `out`: offsets is kept when it has extent M + 1, and indices and
/// sq_distances are the first offsets(M) entries of out's row storage, kept
/// while it holds enough (see RadiusResult). Returns with the results complete (the neighbour count
/// is read back on the way). `workspace`: as for knn. Running out of memory
/// for the rows throws kdforge::Error (`out` is then left with unspecified,
/// valid contents).
template <class Exec, class Tree, class Queries>
void radius_search(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                   RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options,
                   QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using MS = typename Exec::memory_space;
  detail::check_tree_space<Exec, Tree>("radius_search");
  T const sq_r = detail::checked_sq_radius<T>(radius, "radius_search", "radius");
  KDFORGE_REQUIRE(options.max_neighbors >= -1, "radius_search", "RadiusOptions::max_neighbors must be >= 0, or -1 for no limit");
  KDFORGE_REQUIRE(options.max_neighbors <= std::int64_t(1) << 30, "radius_search", "RadiusOptions::max_neighbors too large");
  KDFORGE_REQUIRE(options.buffer_size >= -1 && options.buffer_size <= std::int64_t(1) << 20, "radius_search",
                  "RadiusOptions::buffer_size must be -1 (automatic) or in [0, 2^20] (got ", options.buffer_size, ")");
  if constexpr (kernels::is_bucket_tree<Tree>::value) { // run-time dimension: queries M x D
    detail::check_bucket_queries(exec, tree, queries, "radius_search");
    detail::run_bucket_radius_search(exec, tree, queries, sq_r, out, options);
    (void)workspace;
  } else {
    auto const walk = detail::make_walk<Exec>(options, "radius_search");
    auto q = detail::query_points<Exec, Tree>(exec, queries);
    detail::run_radius_search(exec, tree, q, sq_r, out, options, walk, workspace);
  }
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void radius_search(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                   RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  radius_search(exec, tree, queries, radius, out, options, workspace);
}

/// As above, into newly allocated results.
template <class Exec, class Tree, class Queries>
RadiusResultFor<Exec, Tree> radius_search(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                                          RadiusOptions const& options = {}) {
  RadiusResultFor<Exec, Tree> res;
  radius_search(exec, tree, queries, radius, res, options);
  return res;
}

} // namespace kdforge
