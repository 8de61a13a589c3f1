#pragma once
// Primitives of the OpenMP backend, written with OpenMP itself rather than
// oneTBB. Kokkos' OpenMP backend asks for OMP_PROC_BIND, which pins the
// calling thread to one core; oneTBB sizes its thread pool from that
// thread's affinity mask and its workers inherit it, so TBB work started
// from a bound master thread runs on that one core (measured on a 16-core
// host: the recursive builder's TBB tasks took 249 ms instead of 44, and
// Morton-ordered queries lost their gain to a one-core sort). OpenMP
// parallel regions run on the team Kokkos uses, bound or not.
//   fork_join:      OpenMP tasks
//   sort_by_key:    the LSD radix sort of serial/radix_sort.hpp, its
//                   histogram and scatter passes over OpenMP threads
//   exclusive_scan: two passes over per-thread blocks
//   bounding_box:   per-thread boxes, merged
// The Threads backend keeps oneTBB (backends/tbb).
#ifndef KDFORGE_BACKENDS_PRIMITIVES_INCLUDED
#error "include <kdforge/backends/primitives.hpp> instead"
#endif
#include <kdforge/backends/serial/radix_sort.hpp>

#include <Kokkos_Core.hpp>

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace kdforge::backend::detail {

template <class F, class G>
void fork_join_impl(Kokkos::OpenMP const& exec, F const& f, G const& g) {
  // One thread: nothing to fork, no region or tasks to pay for.
  if (exec.concurrency() <= 1) {
    f();
    g();
    return;
  }
  // Inside any region of ours (or the caller's), fork as tasks of that team.
  // omp_get_level, not omp_in_parallel: a team of one thread is an inactive
  // region, for which omp_in_parallel() is false, and the fork would open a
  // region inside the region forever.
  if (omp_get_level() > 0) {
#pragma omp task default(shared)
    f();
    g();
#pragma omp taskwait
  } else {
    // The first fork opens the team; nested forks become tasks of it.
#pragma omp parallel num_threads(exec.concurrency())
#pragma omp single
    fork_join_impl(exec, f, g);
  }
}

/// Runs f(b) for b in [0, nblocks) on the OpenMP threads (serially when
/// already inside a parallel region).
struct OmpBlocks {
  int threads;
  template <class F>
  void operator()(std::size_t nblocks, F&& f) const {
    std::int64_t const nb = std::int64_t(nblocks);
#pragma omp parallel for schedule(static) num_threads(threads) if (!omp_in_parallel() && nb > 1)
    for (std::int64_t b = 0; b < nb; ++b) f(std::size_t(b));
  }
};

inline std::size_t omp_num_blocks(std::size_t n, int threads) {
  // Blocks of at least 16K elements, one per thread (static schedule: the
  // passes are uniform).
  return std::max<std::size_t>(1, std::min(n / 16384, std::size_t(threads)));
}

template <class K, class V>
void sort_by_key_impl(Kokkos::OpenMP const& exec, K* keys, V* vals, std::size_t n, int begin_bit, int end_bit) {
  int const threads = exec.concurrency();
  lsd_radix_sort_pairs(keys, vals, n, begin_bit, end_bit, omp_num_blocks(n, threads), OmpBlocks{threads});
}

template <class K, class V, class O>
void segmented_sort_by_key_impl(Kokkos::OpenMP const& exec, K* keys, V* vals, std::size_t n, O const* offsets,
                                std::size_t num_segments, int begin_bit, int end_bit) {
  int const threads = exec.concurrency();
  // Segments big enough to share out get the parallel sort, one after the
  // other; the rest are sorted whole, one per thread at a time.
  std::size_t const big = std::max<std::size_t>(std::size_t(1) << 16, n / std::size_t(4 * threads) + 1);
  for (std::size_t s = 0; s < num_segments; ++s) {
    std::size_t const b = std::size_t(offsets[s]), e = std::size_t(offsets[s + 1]);
    if (e - b >= big) sort_by_key_impl(exec, keys + b, vals + b, e - b, begin_bit, end_bit);
  }
  std::int64_t const ns = std::int64_t(num_segments);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) if (!omp_in_parallel())
  for (std::int64_t s = 0; s < ns; ++s) {
    std::size_t const b = std::size_t(offsets[s]), e = std::size_t(offsets[s + 1]);
    if (e - b < big) lsd_radix_sort_pairs(keys + b, vals + b, e - b, begin_bit, end_bit, 1, SerialBlocks{});
  }
}

template <class T>
T exclusive_scan_impl(Kokkos::OpenMP const& exec, T const* in, T* out, std::size_t n) {
  int const threads = exec.concurrency();
  std::size_t const nb = omp_num_blocks(n, threads);
  if (nb <= 1) return sequential_exclusive_scan(in, out, n);
  std::size_t const bs = (n + nb - 1) / nb;
  std::vector<T> partial(nb + 1, T(0));
  OmpBlocks const blocks{threads};
  blocks(nb, [&](std::size_t b) {
    T s = 0;
    for (std::size_t i = b * bs, e = std::min(n, (b + 1) * bs); i < e; ++i) s += in[i];
    partial[b + 1] = s;
  });
  for (std::size_t b = 0; b < nb; ++b) partial[b + 1] += partial[b];
  blocks(nb, [&](std::size_t b) {
    T s = partial[b];
    for (std::size_t i = b * bs, e = std::min(n, (b + 1) * bs); i < e; ++i) {
      T const v = in[i];
      out[i] = s;
      s += v;
    }
  });
  return partial[nb];
}

template <class T, int D>
Box<T, D> bounding_box_impl(Kokkos::OpenMP const& exec, Point<T, D> const* pts, std::size_t n) {
  int const threads = exec.concurrency();
  std::size_t const nb = omp_num_blocks(n, threads);
  std::size_t const bs = (n + nb - 1) / nb;
  std::vector<Box<T, D>> boxes(nb, Box<T, D>::empty());
  OmpBlocks{threads}(nb, [&](std::size_t b) {
    for (std::size_t i = b * bs, e = std::min(n, (b + 1) * bs); i < e; ++i) boxes[b].extend(pts[i]);
  });
  Box<T, D> box = Box<T, D>::empty();
  for (auto const& b : boxes) box.extend(b);
  return box;
}

} // namespace kdforge::backend::detail
