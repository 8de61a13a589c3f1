#pragma once
// Bucket k-d trees with bounding boxes (Hu, Nooshabadi & Ahmadi 2015), for
// points whose dimension is known at run time, up to thousands (descriptor
// matching: SIFT's 128, learned features' 256 to 1024). The algorithm is in
// kernels/builders/bfs_buckets/build.hpp; the tree answers knn,
// closest_point, radius_count and radius_search like the other trees, with
// queries as an M x D View.
//
//   Kokkos::View<float**, MemorySpace> points("p", n, 128);   // any layout
//   auto tree = kdforge::build_bucket_tree(exec, points);       // buckets of <= 8 points
//   auto nn = kdforge::knn(exec, tree, queries, 4);             // queries: M x 128
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/build_left_balanced.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/kernels/builders/bfs_buckets/build.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace kdforge {

/// Build options of bucket trees.
struct BucketOptions {
  /// The most points a leaf holds (>= 1; the paper's variant is 1). Larger
  /// buckets make fewer, cheaper nodes and scan more points per leaf.
  std::int64_t bucket_size = 8;
  /// Bytes the build may use at its peak; 0: what the execution space's
  /// memory has free. A build that needs more is refused before it starts.
  std::size_t memory_limit = 0;
};

namespace detail {
template <class Index = std::int32_t, class Exec, class Points>
BucketTree<typename Exec::memory_space, typename Points::non_const_value_type, Index>
build_bucket_tree_impl(Exec const& exec, Points const& points, BucketOptions const& options = {}) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::build_bucket_tree: the first argument must be a Kokkos execution space instance");
  static_assert(Kokkos::is_view<Points>::value && Points::rank == 2,
                "kdforge::build_bucket_tree: points must be a rank-2 Kokkos::View (N x D)");
  using T = typename Points::non_const_value_type;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::build_bucket_tree: coordinates must be float or double");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename Points::memory_space>::accessible,
                "kdforge::build_bucket_tree: the points must be in memory the execution space can read");
  using MS = typename Exec::memory_space;
  std::int64_t const n = std::int64_t(points.extent(0));
  std::int64_t const dim = std::int64_t(points.extent(1));
  KDFORGE_REQUIRE(dim >= 1, "build_bucket_tree", "the points have no coordinates (D = 0)");
  KDFORGE_REQUIRE(dim <= std::numeric_limits<std::int32_t>::max() / 2, "build_bucket_tree", "D = ", dim, " is too large");
  KDFORGE_REQUIRE(options.bucket_size >= 1, "build_bucket_tree", "BucketOptions::bucket_size must be >= 1 (got ",
                  options.bucket_size, ")");
  detail::check_point_count<Index, Exec>(std::size_t(n), "build_bucket_tree");
  KDFORGE_REQUIRE(n * dim < (std::int64_t(1) << 31), "build_bucket_tree", n, " points x ", dim,
                  " dimensions: the sorted lists hold N x D < 2^31 entries");
  std::int64_t const needed = kernels::bfs::build_peak_bytes<T, Index, MS>(n, dim, options.bucket_size);
  std::size_t available = backend::available_bytes(exec); // within kdforge::set_memory_limit
  if (options.memory_limit > 0 && options.memory_limit < available) available = options.memory_limit;
  if (std::size_t(needed) > available)
    detail::throw_out_of_memory("build_bucket_tree",
                                "the build over " + std::to_string(n) + " points in " + std::to_string(dim) +
                                    " dimensions (its peak, estimated)",
                                MS::name(), std::size_t(needed), available,
                                "available: within BucketOptions::memory_limit too; build over fewer points, or split "
                                "the set into several trees");
  // NaN, infinity and coordinates whose squares overflow: refused with the
  // first offending point
  if (n > 0) {
    std::int64_t bad = std::numeric_limits<std::int64_t>::max();
    Kokkos::parallel_reduce("kdforge::build_bucket_tree::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, n),
                            detail::FirstUnusableRow<Points>{points, int(dim)}, Kokkos::Min<std::int64_t>(bad));
    if (bad != std::numeric_limits<std::int64_t>::max())
      detail::refuse_row(exec, points, bad, "point", "build_bucket_tree", "remove it or replace it by a finite one");
  }
  using Right = Kokkos::View<T**, Kokkos::LayoutRight, MS>;
  Right input;
  if constexpr (std::is_same<typename Points::array_layout, Kokkos::LayoutRight>::value &&
                std::is_same<typename Points::memory_space, MS>::value) {
    input = Right(points);
  } else {
    input = backend::allocate<Right>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bucket_tree::input"), n, dim);
    Kokkos::deep_copy(exec, input, points);
  }
  return kernels::bfs::build<Index>(exec, input, options.bucket_size);
}
} // namespace detail

/// Builds a bucket k-d tree over `points`, a rank-2 View (N x D, any layout,
/// float or double) that `exec` can read; D is read from the View. The
/// caller's points are copied, never modified. Errors (kdforge::Error): D
/// of 0, bucket_size < 1, NaN or infinite coordinates or ones whose squares
/// overflow (beyond +-sqrt(max_sq_coordinate<T>(D)), base/types.hpp; the
/// first offending point named), more points than Index holds, N x D beyond 2^31 - 1
/// (the sorts' limit); kdforge::OutOfMemoryError (the bytes needed and
/// available named) when the build would need more memory than the
/// execution space has free, refused before it starts, or when an
/// allocation fails all the same.
template <class Index = std::int32_t, class Exec, class Points>
BucketTree<typename Exec::memory_space, typename Points::non_const_value_type, Index>
build_bucket_tree(Exec const& exec, Points const& points, BucketOptions const& options = {}) {
  return detail::api_call<typename Exec::memory_space>("build_bucket_tree", [&]() -> decltype(auto) {
    return detail::build_bucket_tree_impl<Index>(exec, points, options);
  });
}

} // namespace kdforge
