#pragma once
// The primitive interface of kdforge: the few operations whose fastest form
// differs per target. Kernels call these functions only; overload resolution
// on the execution-space type picks the implementation:
//   Kokkos::Cuda             -> backends/cuda   (CUB)
//   Kokkos::OpenMP           -> backends/openmp (OpenMP itself: see there why not oneTBB)
//   Kokkos::Threads          -> backends/tbb    (oneTBB)
//   any other host space     -> backends/serial (standard library)
// All sorts are stable, so every backend produces the same permutation.
#include <kdforge/base/config.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/memory.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kdforge/backends/host/memory.hpp>

#define KDFORGE_BACKENDS_PRIMITIVES_INCLUDED
#include <kdforge/backends/serial/primitives.hpp>
#if KDFORGE_USE_TBB
#include <kdforge/backends/tbb/primitives.hpp>
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
#include <kdforge/backends/openmp/primitives.hpp>
#endif
#if defined(KOKKOS_ENABLE_CUDA)
#include <kdforge/backends/cuda/primitives.hpp>
#endif
#include <kdforge/backends/gemm_support.hpp>
#if KDFORGE_USE_BLAS
#include <kdforge/backends/host/blas.hpp>
#endif
#if defined(KOKKOS_ENABLE_CUDA) && KDFORGE_USE_CUBLAS
#include <kdforge/backends/cuda/blas.hpp>
#endif
#undef KDFORGE_BACKENDS_PRIMITIVES_INCLUDED

namespace kdforge::backend {

namespace detail {
template <class Exec, class View>
void check_view(View const& v, char const* what, char const* part = "") {
  static_assert(View::rank == 1, "kdforge primitives take rank-1 Views");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename View::memory_space>::accessible,
                "kdforge primitives: the View's memory space is not accessible from the execution space");
  KDFORGE_REQUIRE(v.span_is_contiguous(), "backend", what, part, " must be contiguous");
}
} // namespace detail

/// Stable sort of (keys, values) by bits [begin_bit, end_bit) of the unsigned
/// keys, in place. Keys: std::uint32_t or std::uint64_t.
template <class Exec, class KeyView, class ValueView>
void sort_by_key(Exec const& exec, KeyView const& keys, ValueView const& values, int begin_bit = 0,
                 int end_bit = int(8 * sizeof(typename KeyView::value_type))) {
  using K = typename KeyView::value_type;
  static_assert(std::is_same<K, std::uint32_t>::value || std::is_same<K, std::uint64_t>::value,
                "kdforge::backend::sort_by_key: keys must be std::uint32_t or std::uint64_t");
  detail::check_view<Exec>(keys, "sort_by_key: keys");
  detail::check_view<Exec>(values, "sort_by_key: values");
  KDFORGE_REQUIRE(keys.extent(0) == values.extent(0), "backend::sort_by_key", "keys (", keys.extent(0),
                  ") and values (", values.extent(0), ") differ in length");
  KDFORGE_REQUIRE(0 <= begin_bit && begin_bit <= end_bit && end_bit <= int(8 * sizeof(K)), "backend::sort_by_key",
                  "bit range [", begin_bit, ", ", end_bit, ") is not within the key");
  kdforge::detail::Region region("kdforge::backend::sort_by_key");
  detail::sort_by_key_impl(exec, keys.data(), values.data(), keys.extent(0), begin_bit, end_bit);
}

namespace detail {
// Host backends sort synchronously; their workspace stays unused.
template <class Exec, class K, class V, class W>
void sort_by_key_async_impl(Exec const& exec, K* keys, V* vals, std::size_t n, int begin_bit, int end_bit, W&) {
  sort_by_key_impl(exec, keys, vals, n, begin_bit, end_bit);
}
} // namespace detail

/// sort_by_key without a fence: `workspace` holds the vendor sort's double
/// buffers and scratch, grows as needed, and must stay alive (and untouched)
/// until the sort has run, e.g. across several sorts on one instance.
template <class Exec, class KeyView, class ValueView>
void sort_by_key_async(Exec const& exec, KeyView const& keys, ValueView const& values,
                       Kokkos::View<char*, typename Exec::memory_space>& workspace, int begin_bit = 0,
                       int end_bit = int(8 * sizeof(typename KeyView::value_type))) {
  using K = typename KeyView::value_type;
  static_assert(std::is_same<K, std::uint32_t>::value || std::is_same<K, std::uint64_t>::value,
                "kdforge::backend::sort_by_key_async: keys must be std::uint32_t or std::uint64_t");
  detail::check_view<Exec>(keys, "sort_by_key_async: keys");
  detail::check_view<Exec>(values, "sort_by_key_async: values");
  KDFORGE_REQUIRE(keys.extent(0) == values.extent(0), "backend::sort_by_key_async", "keys (", keys.extent(0),
                  ") and values (", values.extent(0), ") differ in length");
  KDFORGE_REQUIRE(0 <= begin_bit && begin_bit <= end_bit && end_bit <= int(8 * sizeof(K)), "backend::sort_by_key_async",
                  "bit range [", begin_bit, ", ", end_bit, ") is not within the key");
  kdforge::detail::Region region("kdforge::backend::sort_by_key_async");
  detail::sort_by_key_async_impl(exec, keys.data(), values.data(), keys.extent(0), begin_bit, end_bit, workspace);
}

/// Stable sort of (keys, values) within each segment [offsets(s), offsets(s+1)).
/// The segments must tile the arrays: offsets(0) == 0, offsets(last) == n.
template <class Exec, class KeyView, class ValueView, class OffsetView>
void segmented_sort_by_key(Exec const& exec, KeyView const& keys, ValueView const& values,
                           OffsetView const& offsets, int begin_bit = 0,
                           int end_bit = int(8 * sizeof(typename KeyView::value_type))) {
  using K = typename KeyView::value_type;
  static_assert(std::is_same<K, std::uint32_t>::value || std::is_same<K, std::uint64_t>::value,
                "kdforge::backend::segmented_sort_by_key: keys must be std::uint32_t or std::uint64_t");
  detail::check_view<Exec>(keys, "segmented_sort_by_key: keys");
  detail::check_view<Exec>(values, "segmented_sort_by_key: values");
  detail::check_view<Exec>(offsets, "segmented_sort_by_key: offsets");
  KDFORGE_REQUIRE(keys.extent(0) == values.extent(0), "backend::segmented_sort_by_key", "keys and values differ in length");
  KDFORGE_REQUIRE(offsets.extent(0) >= 1, "backend::segmented_sort_by_key", "offsets needs at least one entry");
  KDFORGE_REQUIRE(0 <= begin_bit && begin_bit <= end_bit && end_bit <= int(8 * sizeof(K)),
                  "backend::segmented_sort_by_key", "bit range [", begin_bit, ", ", end_bit, ") is not within the key");
  kdforge::detail::Region region("kdforge::backend::segmented_sort_by_key");
  detail::segmented_sort_by_key_impl(exec, keys.data(), values.data(), keys.extent(0), offsets.data(),
                                     offsets.extent(0) - 1, begin_bit, end_bit);
}

namespace detail {
// The checks the scans share; `what` names the caller in messages.
template <class Exec, class InView, class OutView>
void check_scan(InView const& in, OutView const& out, char const* what) {
  using T = typename OutView::value_type;
  static_assert(std::is_same<typename InView::non_const_value_type, T>::value,
                "kdforge::backend::exclusive_scan: in and out must hold the same type");
  static_assert(std::is_arithmetic<T>::value, "kdforge::backend::exclusive_scan: arithmetic values only");
  check_view<Exec>(in, what, ": in");
  check_view<Exec>(out, what, ": out");
  KDFORGE_REQUIRE(in.extent(0) == out.extent(0), "backend", what, ": in and out differ in length");
}

// Host backends scan synchronously; their workspace stays unused.
template <class Exec, class T, class W>
void exclusive_scan_async_impl(Exec const& exec, T const* in, T* out, std::size_t n, W&) {
  exclusive_scan_impl(exec, in, out, n);
}
template <class Exec, class T, class W>
T exclusive_scan_impl(Exec const& exec, T const* in, T* out, std::size_t n, W&) {
  return exclusive_scan_impl(exec, in, out, n);
}
} // namespace detail

/// exclusive_scan with the vendor scan's temporary storage in `workspace`
/// (grown as needed, kept by the caller), so that repeated scans allocate
/// nothing. Fences `exec` and returns the total, as exclusive_scan does.
template <class Exec, class InView, class OutView>
typename OutView::value_type exclusive_scan(Exec const& exec, InView const& in, OutView const& out,
                                            Kokkos::View<char*, typename Exec::memory_space>& workspace) {
  detail::check_scan<Exec>(in, out, "exclusive_scan");
  kdforge::detail::Region region("kdforge::backend::exclusive_scan");
  return detail::exclusive_scan_impl(exec, in.data(), out.data(), in.extent(0), workspace);
}

/// out(i) = in(0) + ... + in(i-1); returns the sum of all of in. `out` may be
/// `in`. Fences `exec` (the total is returned to the host).
template <class Exec, class InView, class OutView>
typename OutView::value_type exclusive_scan(Exec const& exec, InView const& in, OutView const& out) {
  Kokkos::View<char*, typename Exec::memory_space> workspace; // freed after the fence
  return exclusive_scan(exec, in, out, workspace);
}

/// out(i) = in(0) + ... + in(i-1), in place allowed, without returning the
/// total: no fence on GPUs, so repeated scans (the split-and-sort builder
/// does one per radix pass) queue up behind each other. `workspace` holds
/// the vendor scan's temporary storage and grows as needed; keep it alive
/// across calls on the same instance.
template <class Exec, class InView, class OutView>
void exclusive_scan_async(Exec const& exec, InView const& in, OutView const& out,
                          Kokkos::View<char*, typename Exec::memory_space>& workspace) {
  detail::check_scan<Exec>(in, out, "exclusive_scan_async");
  kdforge::detail::Region region("kdforge::backend::exclusive_scan_async");
  detail::exclusive_scan_async_impl(exec, in.data(), out.data(), in.extent(0), workspace);
}

/// Runs f() and g(), concurrently where the host backend has tasks (OpenMP
/// tasks on OpenMP builds, oneTBB on Threads builds), one after the other
/// elsewhere. Host execution spaces only: for recursive builders on CPUs.
template <class Exec, class F, class G>
void fork_join(Exec const& exec, F const& f, G const& g) {
  static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible,
                "kdforge::backend::fork_join: host execution spaces only");
  detail::fork_join_impl(exec, f, g);
}

/// Bounding box (per-dimension min and max) of a View of kdforge::Point.
/// An empty View gives Box::empty().
template <class Exec, class PointView>
auto bounding_box(Exec const& exec, PointView const& points) {
  detail::check_view<Exec>(points, "bounding_box: points");
  kdforge::detail::Region region("kdforge::backend::bounding_box");
  return detail::bounding_box_impl(exec, points.data(), points.extent(0));
}

namespace detail {
// Host backends: no limit below the address space's.
template <class Exec>
std::size_t max_sort_items_impl(Exec const*) {
  return std::size_t(-1);
}
template <class Exec>
std::size_t max_segmented_sort_items_impl(Exec const*) {
  return std::size_t(-1);
}
} // namespace detail

/// The most elements sort_by_key, exclusive_scan and bounding_box take on
/// `Exec` (CUB before CCCL 3: 2^31 - 1; CCCL 3 and the host backends: no
/// practical limit), and the most segmented_sort_by_key takes (CUB: 2^31 -
/// 1 in every version): the builders refuse larger inputs up front.
template <class Exec>
std::size_t max_sort_items() {
  return detail::max_sort_items_impl(static_cast<Exec const*>(nullptr));
}
template <class Exec>
std::size_t max_segmented_sort_items() {
  return detail::max_segmented_sort_items_impl(static_cast<Exec const*>(nullptr));
}

namespace detail {
// Host spaces: the machine's available memory (the Cuda overload asks the device).
template <class Exec>
std::size_t available_bytes_impl(Exec const&) {
  return host_available_bytes();
}
} // namespace detail

/// Bytes the execution space's memory can still allocate, as its owner
/// reports them (free device memory; MemAvailable on Linux hosts; the
/// largest size_t where unknown), within kdforge::set_memory_limit: for
/// refusing a build that cannot fit with a clear error instead of failing
/// half-way.
template <class Exec>
std::size_t available_bytes(Exec const& exec) {
  std::size_t const free_b = detail::available_bytes_impl(exec);
  std::size_t const limit = memory_limit();
  return limit > 0 && limit < free_b ? limit : free_b;
}

/// Whether gemm_abt has a vendor GEMM for Exec: cuBLAS for Kokkos::Cuda
/// (KDFORGE_USE_CUBLAS), the BLAS found at configure time for host spaces
/// (KDFORGE_USE_BLAS).
template <class Exec>
inline constexpr bool has_gemm = detail::has_gemm_impl<Exec>::value;

/// C = A B^T for row-major matrices: A is ra x depth (row stride lda), B is
/// rb x depth (ldb), C is ra x rb (ldc), all in memory `exec` can read.
/// Asynchronous on GPUs; host BLAS calls fence `exec` first and return when
/// done. Only where has_gemm<Exec>. The vendor's summation order and fused
/// multiply-adds apply: each entry is within depth * u * sum |a_d b_d| of
/// the exact dot product (u: the unit roundoff of T).
template <class Exec, class T>
void gemm_abt(Exec const& exec, std::int64_t ra, std::int64_t rb, std::int64_t depth, T const* a, std::int64_t lda,
              T const* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  static_assert(has_gemm<Exec>, "kdforge::backend::gemm_abt: no GEMM for this execution space (check has_gemm first)");
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::backend::gemm_abt: float or double");
  if (ra == 0 || rb == 0) return;
  kdforge::detail::Region region("kdforge::backend::gemm");
  detail::gemm_abt_impl(exec, ra, rb, depth, a, lda, b, ldb, c, ldc);
}

} // namespace kdforge::backend
