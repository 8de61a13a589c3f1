#pragma once
// knn: the k nearest neighbours of a batch of queries, exact. Entry points
// take the execution space instance first; results live in its memory
// space. Distances are squared (sq_*); missing neighbours are (-1, +inf).
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
/// knn into `out`; `bounds` (level-order trees only; empty for none): a
/// squared bound per query, within which its neighbours are looked for
/// (the distributed kNN's second phase).
template <class Exec, class Tree, class Queries>
void knn_impl(Exec const& exec, Tree const& tree, Queries const& queries, int k, KnnResultFor<Exec, Tree>& out,
              QueryOptions const& options, QueryWorkspace<typename Exec::memory_space>& workspace,
              Kokkos::View<typename Tree::coordinate_type const*, typename Exec::memory_space> const& bounds = {}) {
  using T = typename Tree::coordinate_type;
  detail::check_tree_space<Exec, Tree>("knn");
  KDFORGE_REQUIRE(k >= 1, "knn", "k must be >= 1 (got ", k, ")");
  T const sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, "knn", "QueryOptions::cutoff_radius");
  if constexpr (kernels::is_bucket_tree<Tree>::value) { // run-time dimension: queries M x D
    KDFORGE_REQUIRE(!bounds.extent(0), "knn", "internal: per-query bounds on a bucket tree");
    detail::check_bucket_queries(exec, tree, queries, "knn");
    std::int64_t const m = std::int64_t(queries.extent(0));
    detail::ensure_extents(out.indices, "kdforge::knn::indices", m, k);
    detail::ensure_extents(out.sq_distances, "kdforge::knn::sq_distances", m, k);
    detail::check_self_queries(tree, queries, options.exclude_self, "knn");
    Traversal const walk = detail::bucket_traversal<Exec>(options.traversal, tree.dim(), k);
    if (detail::use_brute_force(exec, tree, queries, k, options, walk))
      detail::run_bucket_brute_knn(exec, tree, queries, k, out, sq_cutoff, options.exclude_self,
                                   options.brute_force_method, "knn");
    else
      detail::run_bucket_knn(exec, tree, queries, k, out, sq_cutoff, options.exclude_self, walk, options.order,
                             &workspace);
  } else {
    detail::refuse_bucket_only_options(options, "knn");
    auto const walk = detail::make_walk<Exec>(options, "knn");
    auto q = detail::query_points<Exec, Tree>(exec, queries);
    std::int64_t const m = std::int64_t(q.extent(0));
    KDFORGE_REQUIRE(!bounds.extent(0) || std::int64_t(bounds.extent(0)) == m, "knn", "internal: ", bounds.extent(0),
                    " bounds for ", m, " queries");
    detail::ensure_extents(out.indices, "kdforge::knn::indices", m, k);
    detail::ensure_extents(out.sq_distances, "kdforge::knn::sq_distances", m, k);
    int const regroup = detail::regroup_iterations<Exec>(options, walk, std::int64_t(tree.node_count()), m, k, "knn");
    detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
      detail::run_knn(exec, t, q, k, out, sq_cutoff, walk, options.order, regroup, workspace,
                      options.check_queries, "knn", bounds);
    });
  }
}
} // namespace detail

/// The k nearest neighbours of each query (k >= 1), sorted by (squared
/// distance, index), written into `out`. Slots beyond the number of points,
/// or beyond options.cutoff_radius, are (-1, +inf). out's Views are kept
/// when they already are M x k and replaced otherwise; with the same
/// `workspace` too, a loop of same-sized queries allocates nothing.
/// Asynchronous: fence `exec` before reading the results on the host. On a
/// BucketTree the queries are an M x D View (see build_bucket_tree.hpp),
/// answered by a walk or by brute force (QueryOptions::strategy), and
/// self-queries may leave each point out of its own row
/// (QueryOptions::exclude_self).
template <class Exec, class Tree, class Queries>
void knn(Exec const& exec, Tree const& tree, Queries const& queries, int k, KnnResultFor<Exec, Tree>& out,
         QueryOptions const& options, QueryWorkspace<typename Exec::memory_space>& workspace) {
  return detail::api_call<typename Exec::memory_space>("knn", [&] {
    auto res = out; // filled, then assigned to out once every allocation has succeeded
    detail::knn_impl(exec, tree, queries, k, res, options, workspace);
    out = res;
  });
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void knn(Exec const& exec, Tree const& tree, Queries const& queries, int k, KnnResultFor<Exec, Tree>& out,
         QueryOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  knn(exec, tree, queries, k, out, options, workspace);
}

/// As above, into newly allocated results.
template <class Exec, class Tree, class Queries>
KnnResultFor<Exec, Tree> knn(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                             QueryOptions const& options = {}) {
  KnnResultFor<Exec, Tree> res;
  knn(exec, tree, queries, k, res, options);
  return res;
}

} // namespace kdforge
