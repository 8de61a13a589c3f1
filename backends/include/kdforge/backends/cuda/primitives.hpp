#pragma once
// CUDA backend: kdforge's primitives as CUB calls on the Kokkos::Cuda
// instance's stream, with CUB's temporary storage allocated as Kokkos Views
// (so Kokkos' memory tools see it). No sort is hand-rolled on the GPU.
#ifndef KDFORGE_BACKENDS_PRIMITIVES_INCLUDED
static_assert(false, "Include <kdforge/backends/primitives.hpp>, not a backend's file.");
#endif
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace kdforge::backend::detail {

inline void cuda_check(cudaError_t err, char const* what) {
  if (err != cudaSuccess)
    ::kdforge::detail::fail("backend::cuda", what, " failed: ", cudaGetErrorString(err));
}

/// Free memory of the device the instance runs on (cudaMemGetInfo).
inline std::size_t available_bytes_impl(Kokkos::Cuda const& exec) {
  int current = 0;
  cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  int const device = exec.cuda_device();
  if (device != current) cuda_check(cudaSetDevice(device), "cudaSetDevice");
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaError_t const e = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (device != current) cuda_check(cudaSetDevice(current), "cudaSetDevice");
  cuda_check(e, "cudaMemGetInfo");
  return free_bytes;
}

inline Kokkos::View<char*, Kokkos::CudaSpace> cuda_temp_storage(std::size_t bytes) {
  return backend::allocate<Kokkos::View<char*, Kokkos::CudaSpace>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::cub_temp_storage"), bytes);
}

inline int cuda_num_items(std::size_t n) {
  KDFORGE_REQUIRE(n <= std::size_t(INT_MAX), "backend::cuda", "arrays of more than 2^31-1 elements are not supported (got ", n, ")");
  return int(n);
}

// CCCL 3 (CUDA 13) sorts, scans and reduces 64-bit item counts
// (DeviceRadixSort, DeviceScan and DeviceReduce take NumItemsT and pick
// 64-bit offsets for it); older CUB takes int. DeviceSegmentedRadixSort
// still takes int (cuda_num_items above).
#if CUB_VERSION >= 300000
using CubItems = std::int64_t;
#else
using CubItems = int;
#endif
inline std::size_t max_sort_items_impl(Kokkos::Cuda const*) { return std::size_t(std::numeric_limits<CubItems>::max()); }
inline std::size_t max_segmented_sort_items_impl(Kokkos::Cuda const*) { return std::size_t(INT_MAX); }

inline CubItems cub_num_items(std::size_t n) {
  KDFORGE_REQUIRE(n <= std::size_t(std::numeric_limits<CubItems>::max()), "backend::cuda", "this CUB sorts, scans and "
                  "reduces at most ", std::numeric_limits<CubItems>::max(), " elements (got ", n, "); CUDA 13 (CCCL 3) "
                  "takes 64-bit counts");
  return CubItems(n);
}

template <class K, class V>
void sort_by_key_async_impl(Kokkos::Cuda const& exec, K* keys, V* vals, std::size_t n, int begin_bit, int end_bit,
                            Kokkos::View<char*, Kokkos::CudaSpace>& workspace) {
  if (n < 2 || begin_bit >= end_bit) return;
  CubItems const num = cub_num_items(n);
  auto const round = [](std::size_t b) { return (b + 255) / 256 * 256; };
  std::size_t const key_bytes = round(n * sizeof(K)), val_bytes = round(n * sizeof(V));
  std::size_t bytes = 0;
  cub::DoubleBuffer<K> kq(keys, keys);
  cub::DoubleBuffer<V> vq(vals, vals);
  cuda_check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kq, vq, num, begin_bit, end_bit, exec.cuda_stream()),
             "cub::DeviceRadixSort::SortPairs (size query)");
  if (workspace.extent(0) < key_bytes + val_bytes + bytes) workspace = cuda_temp_storage(key_bytes + val_bytes + bytes);
  char* const base = workspace.data();
  cub::DoubleBuffer<K> kb(keys, reinterpret_cast<K*>(base));
  cub::DoubleBuffer<V> vb(vals, reinterpret_cast<V*>(base + key_bytes));
  cuda_check(cub::DeviceRadixSort::SortPairs(base + key_bytes + val_bytes, bytes, kb, vb, num, begin_bit, end_bit,
                                             exec.cuda_stream()),
             "cub::DeviceRadixSort::SortPairs");
  if (kb.Current() != keys) {
    cuda_check(cudaMemcpyAsync(keys, kb.Current(), n * sizeof(K), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
    cuda_check(cudaMemcpyAsync(vals, vb.Current(), n * sizeof(V), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
  }
}

template <class K, class V>
void sort_by_key_impl(Kokkos::Cuda const& exec, K* keys, V* vals, std::size_t n, int begin_bit, int end_bit) {
  Kokkos::View<char*, Kokkos::CudaSpace> workspace;
  sort_by_key_async_impl(exec, keys, vals, n, begin_bit, end_bit, workspace);
  exec.fence(); // the workspace dies with this scope
}

// Few long segments (the builders' presorts: the VVH tree's 3 lists of N
// coordinates, the bucket tree's D at small D) are sorted as one array:
// cub::DeviceSegmentedRadixSort gives each segment one thread block, so 3
// segments of 1M keys sorted on 3 of an H200's 132 multiprocessors in
// 6.2 ms. One device-wide radix sort of (segment, key bits) composite keys
// with the positions as values, then a gather, orders every segment the
// same way (CUB's radix sorts are stable) on the whole GPU. Many short
// segments stay with the segmented sort, which suits them, and so does any
// call whose segment and key bits do not fit 64 bits together, and any
// for which free memory (within kdforge::set_memory_limit) holds less than
// twice the composite path's buffers: 24 bytes and a key and a value per
// element where the segmented sort needs a key and a value, so the
// builders' memory estimates, made for the segmented sort, stay safe.
inline constexpr std::size_t composite_sort_max_segments = 64;
inline constexpr std::size_t composite_sort_min_items = std::size_t(1) << 16;

template <class K, class O>
struct CompositeSortKeys {
  K const* keys;
  O const* offsets;
  int num_segments, begin_bit, width;
  std::uint64_t* composite;
  std::uint32_t* position;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    // the segment holding i: the number of segment ends at or before i
    int lo = 0, hi = num_segments;
    while (lo < hi) {
      int const mid = (lo + hi) / 2;
      if (std::int64_t(offsets[mid + 1]) <= i) lo = mid + 1;
      else hi = mid;
    }
    std::uint64_t const bits = std::uint64_t(keys[i]) >> begin_bit;
    std::uint64_t const mask = width >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << width) - 1;
    composite[i] = (width >= 64 ? 0 : std::uint64_t(lo) << width) | (bits & mask);
    position[i] = std::uint32_t(i);
  }
};

template <class K, class V>
struct GatherSorted {
  std::uint32_t const* position;
  K const* keys;
  V const* vals;
  K* keys_out;
  V* vals_out;
  KOKKOS_FUNCTION void operator()(std::int64_t j) const {
    keys_out[j] = keys[position[j]];
    vals_out[j] = vals[position[j]];
  }
};

template <class K, class V, class O>
void segmented_sort_by_key_impl(Kokkos::Cuda const& exec, K* keys, V* vals, std::size_t n, O const* offsets,
                                std::size_t num_segments, int begin_bit, int end_bit) {
  if (n < 2 || num_segments == 0 || begin_bit >= end_bit) return;
  int const num = cuda_num_items(n);
  int const nseg = cuda_num_items(num_segments);
  int const width = end_bit - begin_bit;
  int seg_bits = 0;
  while ((std::size_t(1) << seg_bits) < num_segments) ++seg_bits;
  std::size_t const composite_bytes = n * (2 * sizeof(std::uint64_t) + 2 * sizeof(std::uint32_t) + sizeof(K) + sizeof(V));
  if (num_segments <= composite_sort_max_segments && n >= composite_sort_min_items && width + seg_bits <= 64 &&
      backend::available_bytes_in<Kokkos::CudaSpace>() / 2 >= composite_bytes) {
    auto comp = backend::allocate<Kokkos::View<std::uint64_t*, Kokkos::CudaSpace>>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::segsort::composite"), n);
    auto pos = backend::allocate<Kokkos::View<std::uint32_t*, Kokkos::CudaSpace>>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::segsort::positions"), n);
    Kokkos::parallel_for("kdforge::backend::segsort::composite", Kokkos::RangePolicy<Kokkos::Cuda>(exec, 0, std::int64_t(n)),
                         CompositeSortKeys<K, O>{keys, offsets, nseg, begin_bit, width, comp.data(), pos.data()});
    Kokkos::View<char*, Kokkos::CudaSpace> workspace; // the sort's alternate buffers and CUB's storage
    sort_by_key_async_impl(exec, comp.data(), pos.data(), n, 0, width + seg_bits, workspace);
    auto key_out = backend::allocate<Kokkos::View<K*, Kokkos::CudaSpace>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::segsort::keys_alt"), n);
    auto val_out = backend::allocate<Kokkos::View<V*, Kokkos::CudaSpace>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::segsort::values_alt"), n);
    Kokkos::parallel_for("kdforge::backend::segsort::gather", Kokkos::RangePolicy<Kokkos::Cuda>(exec, 0, std::int64_t(n)),
                         GatherSorted<K, V>{pos.data(), keys, vals, key_out.data(), val_out.data()});
    cuda_check(cudaMemcpyAsync(keys, key_out.data(), n * sizeof(K), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
    cuda_check(cudaMemcpyAsync(vals, val_out.data(), n * sizeof(V), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
    exec.fence(); // the buffers die with this scope
    return;
  }
  auto key_alt = backend::allocate<Kokkos::View<K*, Kokkos::CudaSpace>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::segsort::keys_alt"), n);
  auto val_alt = backend::allocate<Kokkos::View<V*, Kokkos::CudaSpace>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::segsort::values_alt"), n);
  cub::DoubleBuffer<K> kb(keys, key_alt.data());
  cub::DoubleBuffer<V> vb(vals, val_alt.data());
  std::size_t bytes = 0;
  cuda_check(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, bytes, kb, vb, num, nseg, offsets, offsets + 1,
                                                      begin_bit, end_bit, exec.cuda_stream()),
             "cub::DeviceSegmentedRadixSort::SortPairs (size query)");
  auto temp = cuda_temp_storage(bytes);
  cuda_check(cub::DeviceSegmentedRadixSort::SortPairs(temp.data(), bytes, kb, vb, num, nseg, offsets, offsets + 1,
                                                      begin_bit, end_bit, exec.cuda_stream()),
             "cub::DeviceSegmentedRadixSort::SortPairs");
  if (kb.Current() != keys) {
    // Callers pass segments that tile the array (the interface's contract),
    // so CUB wrote every element and one copy brings the result back.
    cuda_check(cudaMemcpyAsync(keys, kb.Current(), n * sizeof(K), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
    cuda_check(cudaMemcpyAsync(vals, vb.Current(), n * sizeof(V), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
  }
  exec.fence();
}

template <class T>
T exclusive_scan_impl(Kokkos::Cuda const& exec, T const* in, T* out, std::size_t n,
                      Kokkos::View<char*, Kokkos::CudaSpace>& workspace) {
  if (n == 0) return T(0);
  CubItems const num = cub_num_items(n);
  std::size_t bytes = 0;
  cuda_check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, num, exec.cuda_stream()), "cub::DeviceScan::ExclusiveSum (size query)");
  // in's last value and out's, side by side after CUB's storage, come back
  // in one copy: one wait for the device per scan instead of two (a copy to
  // pageable host memory waits for the stream)
  std::size_t const tail_at = (bytes + 15) / 16 * 16;
  if (workspace.extent(0) < tail_at + 2 * sizeof(T)) workspace = cuda_temp_storage(tail_at + 2 * sizeof(T));
  T* const tail = reinterpret_cast<T*>(workspace.data() + tail_at);
  // before the scan: `out` may be `in`
  cuda_check(cudaMemcpyAsync(tail, in + (n - 1), sizeof(T), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
  cuda_check(cub::DeviceScan::ExclusiveSum(workspace.data(), bytes, in, out, num, exec.cuda_stream()), "cub::DeviceScan::ExclusiveSum");
  cuda_check(cudaMemcpyAsync(tail + 1, out + (n - 1), sizeof(T), cudaMemcpyDeviceToDevice, exec.cuda_stream()), "cudaMemcpyAsync");
  T last[2] = {};
  cuda_check(cudaMemcpyAsync(last, tail, 2 * sizeof(T), cudaMemcpyDeviceToHost, exec.cuda_stream()), "cudaMemcpyAsync");
  exec.fence();
  return last[1] + last[0];
}

template <class T>
void exclusive_scan_async_impl(Kokkos::Cuda const& exec, T const* in, T* out, std::size_t n,
                               Kokkos::View<char*, Kokkos::CudaSpace>& workspace) {
  if (n == 0) return;
  CubItems const num = cub_num_items(n);
  std::size_t bytes = 0;
  cuda_check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, num, exec.cuda_stream()), "cub::DeviceScan::ExclusiveSum (size query)");
  if (workspace.extent(0) < bytes) workspace = cuda_temp_storage(bytes);
  cuda_check(cub::DeviceScan::ExclusiveSum(workspace.data(), bytes, in, out, num, exec.cuda_stream()), "cub::DeviceScan::ExclusiveSum");
}

template <class T, int D>
struct PointToBox {
  KOKKOS_FUNCTION Box<T, D> operator()(Point<T, D> const& p) const {
    Box<T, D> b;
    for (int d = 0; d < D; ++d) b.lo[d] = b.hi[d] = p[d];
    return b;
  }
};
template <class T, int D>
struct BoxUnion {
  KOKKOS_FUNCTION Box<T, D> operator()(Box<T, D> a, Box<T, D> const& b) const {
    a.extend(b);
    return a;
  }
};

template <class T, int D>
Box<T, D> bounding_box_impl(Kokkos::Cuda const& exec, Point<T, D> const* pts, std::size_t n) {
  Box<T, D> result = Box<T, D>::empty();
  if (n == 0) return result;
  CubItems const num = cub_num_items(n);
  auto it = thrust::make_transform_iterator(pts, PointToBox<T, D>{});
  auto d_box = backend::allocate<Kokkos::View<Box<T, D>*, Kokkos::CudaSpace>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::bbox"), 1);
  std::size_t bytes = 0;
  cuda_check(cub::DeviceReduce::Reduce(nullptr, bytes, it, d_box.data(), num, BoxUnion<T, D>{}, result, exec.cuda_stream()),
             "cub::DeviceReduce::Reduce (size query)");
  auto temp = cuda_temp_storage(bytes);
  cuda_check(cub::DeviceReduce::Reduce(temp.data(), bytes, it, d_box.data(), num, BoxUnion<T, D>{}, result, exec.cuda_stream()),
             "cub::DeviceReduce::Reduce");
  cuda_check(cudaMemcpyAsync(&result, d_box.data(), sizeof(result), cudaMemcpyDeviceToHost, exec.cuda_stream()), "cudaMemcpyAsync");
  exec.fence();
  return result;
}

} // namespace kdforge::backend::detail
