#pragma once
// radius_count and radius_search: the points within a radius of each query,
// counted or listed in CSR form. Radii are given unsquared, distances come
// back squared.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/query/radius.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge {

namespace detail {

template <class R>
struct FirstBadRadius {
  R radii;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    double const r = double(radii(i));
    if (!(r >= 0) && i < m) m = i; // negative or NaN
  }
};

template <class T, class R, class Out>
struct SquareRadii {
  R radii;
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    double const r = double(radii(i));
    out(i) = r == double(infinity<T>()) ? infinity<T>() : T(r) * T(r);
  }
};

/// Per-query radii checked as the scalar radius is (each >= 0, not NaN;
/// +inf finds every point) and squared in the tree's coordinate type: as
/// checked_sq_radius does for one.
template <class Exec, class Tree, class Radii>
SqRadiiFor<Tree> checked_sq_radii(Exec const& exec, Radii const& radii, std::int64_t m, char const* where) {
  static_assert(Kokkos::is_view<Radii>::value && Radii::rank == 1,
                "kdforge: per-query radii must be a rank-1 Kokkos::View (one radius per query)");
  static_assert(std::is_arithmetic<typename Radii::non_const_value_type>::value,
                "kdforge: per-query radii must be a View of float or double");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename Radii::memory_space>::accessible,
                "kdforge: the radii must be in memory the execution space can read");
  using T = typename Tree::coordinate_type;
  KDFORGE_REQUIRE(std::int64_t(radii.extent(0)) == m, where, "radii has ", radii.extent(0),
                  " entries for ", m, " queries; pass one radius per query");
  auto sq = backend::allocate<Kokkos::View<T*, typename Exec::memory_space>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::sq_radii"), m);
  if (m > 0) {
    std::int64_t bad = std::numeric_limits<std::int64_t>::max();
    Kokkos::parallel_reduce("kdforge::radius::check_radii", Kokkos::RangePolicy<Exec>(exec, 0, m),
                            FirstBadRadius<Radii>{radii}, Kokkos::Min<std::int64_t>(bad));
    if (bad != std::numeric_limits<std::int64_t>::max()) {
      typename Radii::non_const_value_type v{};
      Kokkos::deep_copy(exec, Kokkos::View<typename Radii::non_const_value_type, Kokkos::HostSpace,
                                           Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&v),
                        Kokkos::subview(radii, bad));
      exec.fence();
      fail(where, "radii(", bad, ") must be >= 0 (got ", double(v), "); pass a non-negative radius per query (+inf: every point)");
    }
    Kokkos::parallel_for("kdforge::radius::square_radii", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         SquareRadii<T, Radii, decltype(sq)>{radii, sq});
  }
  return SqRadiiFor<Tree>{T(0), sq};
}

template <class Queries>
std::int64_t query_count(Queries const& queries) {
  if constexpr (Kokkos::is_view<Queries>::value) return std::int64_t(queries.extent(0));
  else return std::int64_t(AccessTraits<Queries>::size(queries));
}

template <class Exec, class Tree, class Queries>
void radius_count_impl(Exec const& exec, Tree const& tree, Queries const& queries, SqRadiiFor<Tree> const& sq_r,
                       Kokkos::View<std::int64_t*, typename Exec::memory_space>& counts, RadiusOptions const& options,
                       QueryWorkspace<typename Exec::memory_space>& workspace) {
  KDFORGE_REQUIRE(options.max_neighbors >= -1, "radius_count", "RadiusOptions::max_neighbors must be >= 0, or -1 for no limit");
  if constexpr (kernels::is_bucket_tree<Tree>::value) { // run-time dimension: queries M x D
    check_bucket_queries(exec, tree, queries, "radius_count");
    ensure_extents(counts, "kdforge::radius::counts", std::int64_t(queries.extent(0)));
    run_bucket_radius_count(exec, tree, queries, sq_r, counts, options.max_neighbors);
    (void)workspace;
  } else {
    auto const walk = make_walk<Exec>(options, "radius_count");
    auto q = query_points<Exec, Tree>(exec, queries);
    std::int64_t const m = std::int64_t(q.extent(0));
    ensure_extents(counts, "kdforge::radius::counts", m);
    run_radius_count(exec, tree, q, sq_r, counts, options.max_neighbors, options.order, options.check_queries, walk,
                     workspace);
  }
}

} // namespace detail

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
  detail::api_call<typename Exec::memory_space>("radius_count", [&] {
    auto res = counts; // filled, then assigned to counts once every allocation has succeeded
    detail::radius_count_impl(exec, tree, queries, detail::SqRadiiFor<Tree>{sq_r, {}}, res, options, workspace);
    counts = res;
  });
}

/// As above with one radius per query: `radii`, a rank-1 View of float or
/// double with one entry per query (by the queries' index), each checked as
/// the scalar radius is (>= 0, not NaN; +inf counts every point). Query i's
/// count equals that of a call with radius radii(i) alone.
template <class Exec, class Tree, class Queries, class Radii, std::enable_if_t<Kokkos::is_view<Radii>::value, int> = 0>
void radius_count(Exec const& exec, Tree const& tree, Queries const& queries, Radii const& radii,
                  Kokkos::View<std::int64_t*, typename Exec::memory_space>& counts, RadiusOptions const& options,
                  QueryWorkspace<typename Exec::memory_space>& workspace) {
  detail::check_tree_space<Exec, Tree>("radius_count");
  detail::api_call<typename Exec::memory_space>("radius_count", [&] {
    auto const sq = detail::checked_sq_radii<Exec, Tree>(exec, radii, detail::query_count(queries), "radius_count");
    auto res = counts; // filled, then assigned to counts once every allocation has succeeded
    detail::radius_count_impl(exec, tree, queries, sq, res, options, workspace);
    counts = res;
  });
}

template <class Exec, class Tree, class Queries, class Radii, std::enable_if_t<Kokkos::is_view<Radii>::value, int> = 0>
void radius_count(Exec const& exec, Tree const& tree, Queries const& queries, Radii const& radii,
                  Kokkos::View<std::int64_t*, typename Exec::memory_space>& counts, RadiusOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  radius_count(exec, tree, queries, radii, counts, options, workspace);
}

template <class Exec, class Tree, class Queries, class Radii, std::enable_if_t<Kokkos::is_view<Radii>::value, int> = 0>
Kokkos::View<std::int64_t*, typename Exec::memory_space>
radius_count(Exec const& exec, Tree const& tree, Queries const& queries, Radii const& radii, RadiusOptions const& options = {}) {
  Kokkos::View<std::int64_t*, typename Exec::memory_space> counts;
  radius_count(exec, tree, queries, radii, counts, options);
  return counts;
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

namespace detail {
template <class Exec, class Tree, class Queries>
void radius_search_impl(Exec const& exec, Tree const& tree, Queries const& queries, SqRadiiFor<Tree> const& sq_r,
                        RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options,
                        QueryWorkspace<typename Exec::memory_space>& workspace) {
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
} // namespace detail

/// All points within `radius` (inclusive) of each query, in CSR form, built
/// in two passes (count, then fill) so no buffer size is guessed. With
/// max_neighbors >= 0 each row keeps the nearest ones only (sorted). Written
/// into `out`: offsets is kept when it has extent M + 1, and indices and
/// sq_distances are the first offsets(M) entries of out's row storage, kept
/// while it holds enough (see RadiusResult). Returns with the results complete (the neighbour count
/// is read back on the way). `workspace`: as for knn. The counts are
/// taken first and every allocation of the call is made before anything is
/// written into `out`: running out of memory (rows larger than memory,
/// however many: offsets and totals are 64-bit) throws
/// kdforge::OutOfMemoryError with the bytes the rows need and leaves `out`
/// as it was. Rows that must grow are allocated before the old ones are
/// released, so the old and the new rows are held together for a moment
/// (pass an empty result to hold only the new ones).
template <class Exec, class Tree, class Queries>
void radius_search(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                   RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options,
                   QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  detail::check_tree_space<Exec, Tree>("radius_search");
  T const sq_r = detail::checked_sq_radius<T>(radius, "radius_search", "radius");
  detail::api_call<typename Exec::memory_space>("radius_search", [&] {
    detail::radius_search_impl(exec, tree, queries, detail::SqRadiiFor<Tree>{sq_r, {}}, out, options, workspace);
  });
}

/// As above with one radius per query (`radii`, as for radius_count): row i
/// equals that of a call with radius radii(i) alone.
template <class Exec, class Tree, class Queries, class Radii, std::enable_if_t<Kokkos::is_view<Radii>::value, int> = 0>
void radius_search(Exec const& exec, Tree const& tree, Queries const& queries, Radii const& radii,
                   RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options,
                   QueryWorkspace<typename Exec::memory_space>& workspace) {
  detail::check_tree_space<Exec, Tree>("radius_search");
  detail::api_call<typename Exec::memory_space>("radius_search", [&] {
    auto const sq = detail::checked_sq_radii<Exec, Tree>(exec, radii, detail::query_count(queries), "radius_search");
    detail::radius_search_impl(exec, tree, queries, sq, out, options, workspace);
  });
}

template <class Exec, class Tree, class Queries, class Radii, std::enable_if_t<Kokkos::is_view<Radii>::value, int> = 0>
void radius_search(Exec const& exec, Tree const& tree, Queries const& queries, Radii const& radii,
                   RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  radius_search(exec, tree, queries, radii, out, options, workspace);
}

template <class Exec, class Tree, class Queries, class Radii, std::enable_if_t<Kokkos::is_view<Radii>::value, int> = 0>
RadiusResultFor<Exec, Tree> radius_search(Exec const& exec, Tree const& tree, Queries const& queries, Radii const& radii,
                                          RadiusOptions const& options = {}) {
  RadiusResultFor<Exec, Tree> res;
  radius_search(exec, tree, queries, radii, res, options);
  return res;
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
