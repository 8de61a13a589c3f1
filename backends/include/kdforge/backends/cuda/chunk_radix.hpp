#pragma once
// CUDA form of Algorithm 4 of Wehr & Radkowski 2018 (parallel histogram
// creation of the segmented radix sort): one thread per position, the block's
// two histograms h0/h1 in __shared__ memory, counted with shared-memory
// atomicAdd (fast since Maxwell, which the paper names as crucial), then
// stored into the column-major global histogram by the whole block. Launched
// on the Kokkos instance's stream with TPB threads per block. The portable
// Kokkos-team form is in kernels/builders/split_sort/split_sort.hpp and
// gives identical counts.
//
// The chunk geometry of a level (which chunks a block overlaps, where each
// block histogram's column lies) is the builder's: it comes in as the
// template parameter Geo (split_sort::LevelGeometry), with entries(b),
// slot(...), n, tpb and base, so this file depends on no kernel header.
//
// The distribution (Algorithm 5) differs here: the paper gives each block
// histogram to one thread, which walks the block's TPB elements in order;
// that loop is the step the paper finds slower for larger TPB, and on a GPU
// with 100k+ resident threads it leaves most of them idle. Here every element
// has its own thread and computes its stable rank among the block's elements
// of the same (chunk, digit) from a warp match (__match_any_sync: equal
// digits in the warp, counted below the lane) plus the counts of the warps
// before it in shared memory. Same output positions, fully parallel.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::backend::cuda {

template <class Geo, class K>
__global__ void split_sort_histogram_kernel(Geo geo, K const* __restrict__ keys,
                                            std::uint32_t* __restrict__ hist, int shift) {
  extern __shared__ std::uint32_t h[]; // h0 = h[0, base), h1 = h[base, 2 base)
  int const base = geo.base;
  std::int64_t const b = blockIdx.x;
  for (int t = threadIdx.x; t < 2 * base; t += blockDim.x) h[t] = 0;
  __shared__ decltype(geo.entries(0)) e;
  if (threadIdx.x == 0) e = geo.entries(b);
  __syncthreads();
  auto const& bc = e.bc;
  std::int64_t const i = b * geo.tpb + threadIdx.x;
  if (i < geo.n && i != bc.lead && i != bc.split) {
    int const digit = int((keys[i] >> shift) & K(base - 1));
    atomicAdd(&h[(i > bc.split ? base : 0) + digit], 1u);
  }
  __syncthreads();
  for (int t = threadIdx.x; t < 2 * base; t += blockDim.x) {
    int const s = t / base, digit = t % base;
    hist[geo.slot(2 * b + s, digit, e.begin(s), e.end(s))] = h[t];
  }
}

template <class Geo, class K>
void split_sort_histogram(Kokkos::Cuda const& exec, Geo const& geo, K const* keys,
                          std::uint32_t* hist, int shift) {
  if (geo.blocks == 0) return;
  KDFORGE_REQUIRE(geo.blocks <= 0x7fffffff, "split_sort", "too many blocks");
  std::size_t const shared = std::size_t(2 * geo.base) * sizeof(std::uint32_t);
  split_sort_histogram_kernel<Geo, K><<<unsigned(geo.blocks), unsigned(geo.tpb), shared, exec.cuda_stream()>>>(geo, keys, hist, shift);
  cudaError_t const err = cudaGetLastError();
  if (err != cudaSuccess) ::kdforge::detail::fail("split_sort", "histogram kernel launch failed: ", cudaGetErrorString(err));
}

template <class Geo, class K, class I>
__global__ void split_sort_distribute_kernel(Geo geo, K const* __restrict__ keys,
                                             K* __restrict__ keys_out, I const* __restrict__ idx, I* __restrict__ idx_out,
                                             std::uint32_t const* __restrict__ hist, int shift) {
  extern __shared__ std::uint32_t cnt[]; // [warp][slot * base + digit]
  int const base = geo.base;
  int const row = 2 * base;
  int const warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  std::int64_t const b = blockIdx.x;
  for (int t = threadIdx.x; t < warps * row; t += blockDim.x) cnt[t] = 0;
  __shared__ decltype(geo.entries(0)) e;
  if (threadIdx.x == 0) e = geo.entries(b);
  __syncthreads();
  auto const& bc = e.bc;
  std::int64_t const i = b * geo.tpb + threadIdx.x;
  bool const active = i < geo.n && i != bc.lead && i != bc.split;
  K key{};
  int sd = -1 - lane; // inactive lanes match nobody
  if (active) {
    key = keys[i];
    sd = (i > bc.split ? base : 0) + int((key >> shift) & K(base - 1));
  }
  unsigned const same = __match_any_sync(0xffffffffu, sd);
  unsigned const below = same & ((1u << lane) - 1u);
  if (active && below == 0) cnt[warp * row + sd] = __popc(same);
  __syncthreads();
  if (!active) return;
  std::uint32_t rank = __popc(below);
  for (int w = 0; w < warp; ++w) rank += cnt[w * row + sd];
  int const s = sd >= base ? 1 : 0, digit = sd - s * base;
  std::int64_t const out = std::int64_t(hist[geo.slot(2 * b + s, digit, e.begin(s), e.end(s))]) + rank + e.chunk(s);
  keys_out[out] = key;
  idx_out[out] = idx[i];
}

/// Shared memory the distribution kernel needs; above 48 KiB the portable
/// distribution is used instead.
template <class Geo>
std::size_t split_sort_distribute_shared(Geo const& geo) {
  return std::size_t(geo.tpb / 32) * std::size_t(2 * geo.base) * sizeof(std::uint32_t);
}

template <class Geo, class K, class I>
void split_sort_distribute(Kokkos::Cuda const& exec, Geo const& geo, K const* keys, K* keys_out,
                           I const* idx, I* idx_out, std::uint32_t const* hist, int shift) {
  if (geo.blocks == 0) return;
  split_sort_distribute_kernel<Geo, K, I><<<unsigned(geo.blocks), unsigned(geo.tpb), split_sort_distribute_shared(geo),
                                       exec.cuda_stream()>>>(geo, keys, keys_out, idx, idx_out, hist, shift);
  cudaError_t const err = cudaGetLastError();
  if (err != cudaSuccess) ::kdforge::detail::fail("split_sort", "distribution kernel launch failed: ", cudaGetErrorString(err));
}

} // namespace kdforge::backend::cuda
