#pragma once
// oneTBB backend: the primitives of the Threads build. The sorts
// are the stable LSD radix sort of serial/radix_sort.hpp with its histogram
// and scatter passes spread over tbb::parallel_for; scans and reductions are
// tbb::parallel_scan / tbb::parallel_reduce.
#ifndef KDFORGE_BACKENDS_PRIMITIVES_INCLUDED
static_assert(false, "Include <kdforge/backends/primitives.hpp>, not a backend's file.");
#endif
#include <kdforge/backends/serial/radix_sort.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_scan.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>

namespace kdforge::backend::detail {

struct TbbBlocks {
  template <class F>
  void operator()(std::size_t nblocks, F&& f) const {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, nblocks, 1),
                      [&](tbb::blocked_range<std::size_t> const& r) {
                        for (std::size_t b = r.begin(); b != r.end(); ++b) f(b);
                      });
  }
};

inline std::size_t tbb_num_blocks(std::size_t n) {
  // Blocks of at least 16K elements, a few per worker for load balance.
  std::size_t const workers = std::size_t(tbb::this_task_arena::max_concurrency());
  return std::max<std::size_t>(1, std::min(n / 16384, 4 * workers));
}

template <class K, class V>
void tbb_sort_pairs(K* keys, V* vals, std::size_t n, int begin_bit, int end_bit) {
  std::size_t const nb = tbb_num_blocks(n);
  if (nb == 1) lsd_radix_sort_pairs(keys, vals, n, begin_bit, end_bit, 1, SerialBlocks{});
  else lsd_radix_sort_pairs(keys, vals, n, begin_bit, end_bit, nb, TbbBlocks{});
}

template <class T>
T tbb_exclusive_scan(T const* in, T* out, std::size_t n) {
  if (n == 0) return T(0);
  return tbb::parallel_scan(
      tbb::blocked_range<std::size_t>(0, n, 8192), T(0),
      [=](tbb::blocked_range<std::size_t> const& r, T sum, bool is_final) {
        for (std::size_t i = r.begin(); i != r.end(); ++i) {
          T const v = in[i]; // in may alias out: read before the write
          if (is_final) out[i] = sum;
          sum += v;
        }
        return sum;
      },
      [](T a, T b) { return a + b; });
}

template <class T, int D>
Box<T, D> tbb_bounding_box(Point<T, D> const* pts, std::size_t n) {
  return tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, n, 8192), Box<T, D>::empty(),
      [=](tbb::blocked_range<std::size_t> const& r, Box<T, D> box) {
        for (std::size_t i = r.begin(); i != r.end(); ++i) box.extend(pts[i]);
        return box;
      },
      [](Box<T, D> a, Box<T, D> const& b) {
        a.extend(b);
        return a;
      });
}

template <class K, class V, class O>
void tbb_segmented_sort_pairs(K* keys, V* vals, O const* offsets, std::size_t num_segments,
                              int begin_bit, int end_bit) {
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_segments, 1),
                    [&](tbb::blocked_range<std::size_t> const& r) {
                      for (std::size_t s = r.begin(); s != r.end(); ++s) {
                        std::size_t const b = std::size_t(offsets[s]), e = std::size_t(offsets[s + 1]);
                        // a large segment gets the parallel sort itself (nested TBB is fine)
                        tbb_sort_pairs(keys + b, vals + b, e - b, begin_bit, end_bit);
                      }
                    });
}

#define KDFORGE_TBB_PRIMITIVES_FOR(EXEC)                                                     \
  template <class K, class V>                                                                \
  void sort_by_key_impl(EXEC const&, K* keys, V* vals, std::size_t n, int begin_bit,         \
                        int end_bit) {                                                       \
    tbb_sort_pairs(keys, vals, n, begin_bit, end_bit);                                       \
  }                                                                                          \
  template <class K, class V, class O>                                                       \
  void segmented_sort_by_key_impl(EXEC const&, K* keys, V* vals, std::size_t, O const* off,  \
                                  std::size_t nseg, int begin_bit, int end_bit) {            \
    tbb_segmented_sort_pairs(keys, vals, off, nseg, begin_bit, end_bit);                     \
  }                                                                                          \
  template <class T>                                                                         \
  T exclusive_scan_impl(EXEC const&, T const* in, T* out, std::size_t n) {                   \
    return tbb_exclusive_scan(in, out, n);                                                   \
  }                                                                                          \
  template <class T, int D>                                                                  \
  Box<T, D> bounding_box_impl(EXEC const&, Point<T, D> const* pts, std::size_t n) {          \
    return tbb_bounding_box(pts, n);                                                         \
  }

// (The OpenMP backend has its own primitives, written with OpenMP:
// backends/openmp/primitives.hpp says why.)
#if defined(KOKKOS_ENABLE_THREADS)
KDFORGE_TBB_PRIMITIVES_FOR(Kokkos::Threads)
// (The OpenMP backend forks with OpenMP tasks instead: backends/openmp.)
template <class F, class G>
void fork_join_impl(Kokkos::Threads const&, F const& f, G const& g) {
  tbb::parallel_invoke(f, g);
}
#endif
#undef KDFORGE_TBB_PRIMITIVES_FOR

} // namespace kdforge::backend::detail
