#pragma once
// closest_point: the nearest point of each query, optionally within a
// cutoff radius (knn's k = 1 case, written into two 1-D Views).
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/query/knn.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge {

namespace detail {
template <class Exec, class Tree, class Queries>
void closest_point_impl(Exec const& exec, Tree const& tree, Queries const& queries, ClosestResultFor<Exec, Tree>& out,
                   QueryOptions const& options, QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  detail::check_tree_space<Exec, Tree>("closest_point");
  T const sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, "closest_point", "QueryOptions::cutoff_radius");
  if constexpr (kernels::is_bucket_tree<Tree>::value) { // run-time dimension: queries M x D
    detail::check_bucket_queries(exec, tree, queries, "closest_point");
    std::int64_t const m = std::int64_t(queries.extent(0));
    detail::ensure_extents(out.indices, "kdforge::closest::indices", m);
    detail::ensure_extents(out.sq_distances, "kdforge::closest::sq_distances", m);
    using R = detail::ColumnResult<decltype(out.indices), decltype(out.sq_distances)>;
    detail::check_self_queries(tree, queries, options.exclude_self, "closest_point");
    Traversal const walk = detail::bucket_traversal<Exec>(options.traversal, tree.dim(), 1);
    if (detail::use_brute_force(exec, tree, queries, 1, options, walk)) {
      KnnResultFor<Exec, Tree> rows{backend::allocate<decltype(KnnResultFor<Exec, Tree>::indices)>(
                                        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::closest::rows"), m, 1),
                                    backend::allocate<decltype(KnnResultFor<Exec, Tree>::sq_distances)>(
                                        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::closest::rows"), m, 1)};
      detail::run_bucket_brute_knn(exec, tree, queries, 1, rows, sq_cutoff, options.exclude_self,
                                   options.brute_force_method, "closest_point");
      Kokkos::deep_copy(exec, out.indices, Kokkos::subview(rows.indices, Kokkos::ALL, 0));
      Kokkos::deep_copy(exec, out.sq_distances, Kokkos::subview(rows.sq_distances, Kokkos::ALL, 0));
    } else {
      detail::run_bucket_knn(exec, tree, queries, 1, R{{out.indices}, {out.sq_distances}}, sq_cutoff,
                             options.exclude_self, walk, options.order, &workspace);
    }
  } else {
    detail::refuse_bucket_only_options(options, "closest_point");
    auto const walk = detail::make_walk<Exec>(options, "closest_point");
    auto q = detail::query_points<Exec, Tree>(exec, queries);
    std::int64_t const m = std::int64_t(q.extent(0));
    detail::ensure_extents(out.indices, "kdforge::closest::indices", m);
    detail::ensure_extents(out.sq_distances, "kdforge::closest::sq_distances", m);
    using R = detail::ColumnResult<decltype(out.indices), decltype(out.sq_distances)>;
    int const regroup = detail::regroup_iterations<Exec>(options, walk, std::int64_t(tree.node_count()), m, 1, "closest_point");
    detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
      detail::run_knn(exec, t, q, 1, R{{out.indices}, {out.sq_distances}}, sq_cutoff, walk, options.order, regroup, workspace,
                      options.check_queries, "closest_point");
    });
  }
}
} // namespace detail

/// The closest point of each query, or (-1, +inf) when the tree is empty or
/// nothing lies within options.cutoff_radius, written into `out` (kept when
/// its Views have extent M, replaced otherwise). `workspace`: as for knn.
template <class Exec, class Tree, class Queries>
void closest_point(Exec const& exec, Tree const& tree, Queries const& queries, ClosestResultFor<Exec, Tree>& out,
                   QueryOptions const& options, QueryWorkspace<typename Exec::memory_space>& workspace) {
  return detail::api_call<typename Exec::memory_space>("closest_point", [&] {
    auto res = out; // filled, then assigned to out once every allocation has succeeded
    detail::closest_point_impl(exec, tree, queries, res, options, workspace);
    out = res;
  });
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void closest_point(Exec const& exec, Tree const& tree, Queries const& queries, ClosestResultFor<Exec, Tree>& out,
                   QueryOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  closest_point(exec, tree, queries, out, options, workspace);
}

/// As above, into newly allocated results.
template <class Exec, class Tree, class Queries>
ClosestResultFor<Exec, Tree> closest_point(Exec const& exec, Tree const& tree, Queries const& queries,
                                           QueryOptions const& options = {}) {
  ClosestResultFor<Exec, Tree> res;
  closest_point(exec, tree, queries, res, options);
  return res;
}

} // namespace kdforge
