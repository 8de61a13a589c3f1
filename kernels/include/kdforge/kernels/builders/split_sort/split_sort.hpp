#pragma once
// Adaptive split-and-sort k-d tree construction (Wehr & Radkowski 2018,
// "Parallel kd-Tree Construction on the GPU with an Adaptive Split and Sort
// Strategy", section III, Algorithms 1-5 and the appendix).
//
// Per level l (root 0) the chunks of that level are sorted, stably, by the
// coordinate of dimension l mod D; the element at each chunk's median position
// becomes the level's node. How a level sorts depends on the chunk width
// w = N / 2^l (Algorithm 2):
//   w >= cutoff       segmented parallel radix sort over the whole array
//                     (Algorithm 3): block-local histograms with atomics in
//                     shared memory (Algorithm 4; a block overlaps at most two
//                     chunks because cutoff >= TPB), a column-major global
//                     histogram and one exclusive scan, then a stable
//                     distribution with one thread per block histogram
//                     (Algorithm 5; on CUDA one thread per element with a
//                     warp-ranked stable position instead, see
//                     backends/cuda/split_sort.hpp);
//   16 <= w < cutoff  one sequential LSD radix sort per chunk, one thread each;
//   w < 16            one insertion sort per chunk, one thread each.
// The naive strategies (the paper's baseline of section IV-B, Fig. 8 and
// Table I) use the sequential sort for every level.
//
// What differs from the paper, and why:
// - Quantization: the paper scales coordinates by a factor F into integers
//   [0, F]. A finite F merges coordinates closer than range / F, and a tree
//   whose sort order disagrees with the real coordinates breaks the exact
//   queries' pruning. We use the order-preserving integer image of the IEEE
//   bits, offset by the dimension's minimum: F is the number of representable
//   values between min and max, nothing is lost, and the maximum still bounds
//   the number of radix passes (Algorithm 3's loop). For float the keys are
//   32-bit; for double 64-bit (more passes).
// - Alignment of the other dimensions (Algorithm 1, step 3): instead of
//   permuting all D coordinate arrays after every sort, the index array is
//   sorted and the next level gathers the one dimension it sorts by; the
//   result is the same, with one gather per level instead of D - 1.
// - Node creation (section III-D) writes the level's nodes into the second
//   buffer of the double-buffered sort, so both buffers agree on every fixed
//   position; the tree is then the final array itself (median positions are
//   computed, see median_tree.hpp) instead of a copy into a separate array.
// - Algorithm 5 walks each block histogram backwards decrementing inclusive
//   offsets; walking forwards with exclusive offsets is the same stable order.
// - The median test uses exact integer boundaries (split_sort_math.hpp).
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/kernels/builders/left_balanced/common.hpp>
#include <kdforge/kernels/builders/split_sort/math.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdint>
#include <type_traits>
#include <utility>

#if defined(KOKKOS_ENABLE_CUDA)
#include <kdforge/backends/cuda/chunk_radix.hpp>
#endif

namespace kdforge::split_sort {

/// Sort strategy of the builder.
enum class Strategy {
  adaptive,        ///< the paper's method (Algorithm 2)
  naive_radix,     ///< baseline: one sequential radix sort per chunk on every level
  naive_insertion, ///< baseline: one insertion sort per chunk on every level (O(N^2) at the root)
};

struct Params {
  int threads_per_block = 128; ///< TPB, a multiple of 32 in [32, 1024]
  int radix_bits = 5;          ///< log2 of the radix base (base 32 = 5 bits)
  std::int64_t cutoff = 128;   ///< chunk width from which the parallel sort is used (>= TPB)
  Strategy strategy = Strategy::adaptive;
  bool vendor_histogram = true; ///< use the CUDA kernels (histogram, warp-ranked distribution) where available
};

/// Time per phase (fenced; only collected when asked for).
struct Stats {
  double parallel_radix_ms = 0, sequential_radix_ms = 0, insertion_ms = 0, other_ms = 0;
  int parallel_levels = 0, sequential_levels = 0, insertion_levels = 0;
};

template <class T>
using key_type = std::conditional_t<std::is_same<T, float>::value, std::uint32_t, std::uint64_t>;

// Kernels are named functors, not extended lambdas (see points.hpp).

/// Algorithm 1, "split, scale and quantize": q(d, i) = bits(p_i[d]) - bits(min_d).
template <class PV, class QV, class T, int D>
struct Quantize {
  PV pts;
  QV q;
  Box<T, D> box;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    for (int d = 0; d < D; ++d) q(d, i) = kernels::ordered_bits(pts(i)[d]) - kernels::ordered_bits(box.lo[d]);
  }
};

template <class IV>
struct Iota {
  IV idx;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { idx(i) = typename IV::value_type(i); }
};

/// Keys of the level's dimension in the current order (Algorithm 1, step 3).
template <class QV, class KV, class IV>
struct GatherKeys {
  QV q;
  KV keys;
  IV idx;
  int d;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { keys(i) = q(d, idx(i)); }
};

/// Algorithm 4 written with Kokkos teams: one team per block of TPB
/// positions, the two block histograms h0/h1 in team scratch (shared memory
/// on GPUs), atomic increments, then the block's 2 * base counts stored in
/// the global histogram.
template <class Exec, class KV, class HV>
struct HistogramTeams {
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  LevelGeometry geo;
  KV keys;
  HV hist;
  int shift;

  KOKKOS_FUNCTION void operator()(member_type const& m) const {
    int const base = geo.base;
    std::int64_t const b = m.league_rank();
    Scratch h(m.team_scratch(0), 2 * base);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, 2 * base), [&](int t) { h(t) = 0; });
    m.team_barrier();
    BlockEntries const e = geo.entries(b);
    BlockChunks const& bc = e.bc;
    std::int64_t const first = b * geo.tpb;
    std::int64_t const count = (first + geo.tpb < geo.n ? geo.tpb : geo.n - first);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, int(count)), [&](int t) {
      std::int64_t const i = first + t;
      if (i == bc.lead || i == bc.split) return; // splitting elements stay where they are
      int const digit = int((keys(i) >> shift) & typename KV::value_type(base - 1));
      Kokkos::atomic_add(&h((i > bc.split ? base : 0) + digit), std::uint32_t(1)); // atomic_increment: deprecated in Kokkos 4
    });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, 2 * base), [&](int t) {
      int const s = t / base, digit = t % base;
      hist(geo.slot(2 * b + s, digit, e.begin(s), e.end(s))) = h(t);
    });
  }
};

/// Algorithm 5: one thread per block histogram distributes that block's
/// elements of one chunk, in order (stable), to their places in the other
/// buffer. The scanned histogram counts only non-splitting elements; the c
/// splitting elements before chunk c are added back.
template <class KV, class IV, class HV>
struct Distribute {
  LevelGeometry geo;
  KV keys, keys_out;
  IV idx, idx_out;
  HV hist;
  int shift;
  KOKKOS_FUNCTION void operator()(std::int64_t g) const {
    std::int64_t const b = g >> 1;
    int const s = int(g & 1);
    BlockEntries const e = geo.entries(b);
    if (s == 1 && !e.bc.two) return;
    std::int64_t const c = e.chunk(s);
    std::int64_t const gs = e.begin(s), ge = e.end(s);
    std::int64_t const first = b * geo.tpb;
    std::int64_t const end = first + geo.tpb < geo.n ? first + geo.tpb : geo.n;
    std::int64_t const cb = chunk_begin(geo.n, geo.l, c), ce = chunk_end(geo.n, geo.l, c);
    std::int64_t const lo = cb > first ? cb : first, hi = ce < end ? ce : end;
    using K = typename KV::value_type;
    for (std::int64_t i = lo; i < hi; ++i) {
      K const key = keys(i);
      int const digit = int((key >> shift) & K(geo.base - 1));
      auto& offset = hist(geo.slot(g, digit, gs, ge));
      std::int64_t const out = std::int64_t(offset) + c;
      ++offset;
      keys_out(out) = key;
      idx_out(out) = idx(i);
    }
  }
};

/// Sequential LSD radix sort of each chunk, one thread per chunk, using the
/// chunk's range of the second buffer as scratch; the result ends in the
/// first buffer.
template <class KV, class IV>
struct SequentialRadix {
  std::int64_t n;
  int l;
  int radix_bits;
  int passes;
  KV keys, keys_tmp;
  IV idx, idx_tmp;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    using K = typename KV::value_type;
    std::int64_t const a = chunk_begin(n, l, c), e = chunk_end(n, l, c);
    if (e - a < 2 || passes == 0) return;
    int const base = 1 << radix_bits;
    std::uint32_t count[256];
    KV src = keys, dst = keys_tmp;
    IV isrc = idx, idst = idx_tmp;
    for (int p = 0; p < passes; ++p) {
      int const shift = p * radix_bits;
      for (int d = 0; d < base; ++d) count[d] = 0;
      for (std::int64_t i = a; i < e; ++i) ++count[int((src(i) >> shift) & K(base - 1))];
      std::uint32_t sum = 0;
      for (int d = 0; d < base; ++d) {
        std::uint32_t const x = count[d];
        count[d] = sum;
        sum += x;
      }
      for (std::int64_t i = a; i < e; ++i) {
        K const key = src(i);
        std::int64_t const out = a + count[int((key >> shift) & K(base - 1))]++;
        dst(out) = key;
        idst(out) = isrc(i);
      }
      KV const t = src; src = dst; dst = t;
      IV const ti = isrc; isrc = idst; idst = ti;
    }
    if (passes % 2 == 1) {
      for (std::int64_t i = a; i < e; ++i) {
        keys(i) = keys_tmp(i);
        idx(i) = idx_tmp(i);
      }
    }
  }
};

/// Stable insertion sort of each chunk, one thread per chunk.
template <class KV, class IV>
struct Insertion {
  std::int64_t n;
  int l;
  KV keys;
  IV idx;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    std::int64_t const a = chunk_begin(n, l, c), e = chunk_end(n, l, c);
    for (std::int64_t i = a + 1; i < e; ++i) {
      auto const key = keys(i);
      auto const v = idx(i);
      std::int64_t j = i;
      while (j > a && keys(j - 1) > key) {
        keys(j) = keys(j - 1);
        idx(j) = idx(j - 1);
        --j;
      }
      keys(j) = key;
      idx(j) = v;
    }
  }
};

/// Section III-D, one thread per new node: the level's medians become fixed;
/// both buffers get them so later passes, which write only the free
/// positions, never lose them.
template <class IV>
struct CreateNodes {
  std::int64_t n;
  int l;
  IV idx, idx_other;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    std::int64_t const p = median(n, l, c);
    idx_other(p) = idx(p);
  }
};

/// Number of radix passes of `radix_bits` each for keys up to `max_key`
/// (Algorithm 3's loop while floor(max / magnitude) > 0).
template <class K>
int radix_passes(K max_key, int radix_bits) {
  int bits = 0;
  while (bits < int(8 * sizeof(K)) && (max_key >> bits) != 0) ++bits;
  return (bits + radix_bits - 1) / radix_bits;
}

namespace detail {

template <class Exec, class KV, class HV>
void histogram(Exec const& exec, LevelGeometry const& geo, KV const& keys, HV const& hist, int shift, bool vendor) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    if (vendor) {
      backend::cuda::split_sort_histogram(exec, geo, keys.data(), hist.data(), shift);
      return;
    }
  }
#endif
  (void)vendor;
  bool const gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
  int const team = gpu ? int(geo.tpb) : 1;
  std::size_t const bytes = std::size_t(2 * geo.base) * sizeof(std::uint32_t);
  Kokkos::TeamPolicy<Exec> policy(exec, int(geo.blocks), team);
  Kokkos::parallel_for("kdforge::split_sort::histogram", policy.set_scratch_size(0, Kokkos::PerTeam(bytes)),
                       HistogramTeams<Exec, KV, HV>{geo, keys, hist, shift});
}

template <class Exec, class KV, class IV, class HV>
void distribute(Exec const& exec, LevelGeometry const& geo, KV const& keys, KV const& keys_out, IV const& idx,
                IV const& idx_out, HV const& hist, int shift, bool vendor) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    if (vendor && backend::cuda::split_sort_distribute_shared(geo) <= 48 * 1024) {
      backend::cuda::split_sort_distribute(exec, geo, keys.data(), keys_out.data(), idx.data(), idx_out.data(),
                                           hist.data(), shift);
      return;
    }
  }
#endif
  (void)vendor;
  Kokkos::parallel_for("kdforge::split_sort::distribute", Kokkos::RangePolicy<Exec>(exec, 0, 2 * geo.blocks),
                       Distribute<KV, IV, HV>{geo, keys, keys_out, idx, idx_out, hist, shift});
}

class Timer {
public:
  explicit Timer(bool on) : m_on(on) { reset(); }
  void reset() { m_t = std::chrono::steady_clock::now(); }
  template <class Exec>
  double lap(Exec const& exec) {
    if (!m_on) return 0;
    exec.fence();
    auto const now = std::chrono::steady_clock::now();
    double const ms = std::chrono::duration<double, std::milli>(now - m_t).count();
    m_t = now;
    return ms;
  }

private:
  bool m_on;
  std::chrono::steady_clock::time_point m_t;
};

} // namespace detail

/// How one level sorts its chunks (Algorithm 2).
enum class LevelSort { parallel_radix, sequential_radix, insertion };

/// Sorts every chunk of level l stably by `keys` (carrying `idx`), leaving
/// the splitting elements of the levels above in place. The result is in
/// (keys, idx) on return; the parallel sort swaps the View handles with the
/// second buffer, which is scratch for all three. `hist` must hold
/// 2 * ceil(n / tpb) * 2^radix_bits entries for the parallel sort.
template <class Exec, class KV, class IV, class HV>
void sort_level(Exec const& exec, LevelSort how, Params const& prm, int l, int passes, KV& keys, KV& keys_tmp, IV& idx,
                IV& idx_tmp, HV const& hist, Kokkos::View<char*, typename Exec::memory_space>& scan_workspace) {
  std::int64_t const n = std::int64_t(keys.extent(0));
  std::int64_t const chunks = std::int64_t(1) << l;
  int const base = 1 << prm.radix_bits;
  switch (how) {
  case LevelSort::parallel_radix: {
    std::int64_t const blocks = (n + prm.threads_per_block - 1) / prm.threads_per_block;
    LevelGeometry const geo{n, l, prm.threads_per_block, base, blocks};
    for (int p = 0; p < passes; ++p) {
      int const shift = p * prm.radix_bits;
      detail::histogram(exec, geo, keys, hist, shift, prm.vendor_histogram);
      backend::exclusive_scan_async(exec, hist, hist, scan_workspace);
      detail::distribute(exec, geo, keys, keys_tmp, idx, idx_tmp, hist, shift, prm.vendor_histogram);
      std::swap(keys, keys_tmp);
      std::swap(idx, idx_tmp);
    }
    break;
  }
  case LevelSort::sequential_radix:
    Kokkos::parallel_for("kdforge::split_sort::sequential_radix", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
                         SequentialRadix<KV, IV>{n, l, prm.radix_bits, passes, keys, keys_tmp, idx, idx_tmp});
    break;
  case LevelSort::insertion:
    Kokkos::parallel_for("kdforge::split_sort::insertion", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
                         Insertion<KV, IV>{n, l, keys, idx});
    break;
  }
}

/// Algorithm 2: the sort a level uses, from its chunk width w = N / 2^l.
inline LevelSort level_sort(Params const& prm, std::int64_t n, int l) {
  double const w = double(n) / double(std::int64_t(1) << l); // Eq. 1
  switch (prm.strategy) {
  case Strategy::naive_radix: return LevelSort::sequential_radix;
  case Strategy::naive_insertion: return LevelSort::insertion;
  default: break;
  }
  if (w >= double(prm.cutoff)) return LevelSort::parallel_radix;
  if (w >= 16) return LevelSort::sequential_radix;
  return LevelSort::insertion;
}

/// Builds the split-and-sort order of `pts`: idx(i) is the input point at
/// position i of the finished tree (median_tree.hpp gives each node's
/// position). `box` is the points' bounding box (all coordinates finite).
template <class Exec, class T, int D, class Index>
Kokkos::View<Index*, typename Exec::memory_space> build(Exec const& exec,
                                                        Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts,
                                                        Box<T, D> const& box, Params const& prm, Stats* stats = nullptr) {
  using MS = typename Exec::memory_space;
  using K = key_type<T>;
  using KV = Kokkos::View<K*, MS>;
  using IV = Kokkos::View<Index*, MS>;
  using HV = Kokkos::View<std::uint32_t*, MS>;
  std::int64_t const n = std::int64_t(pts.extent(0));
  int const levels = internal_levels(n);
  detail::Timer timer(stats != nullptr);

  auto idx = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::split_sort::idx"), n);
  Kokkos::parallel_for("kdforge::split_sort::iota", Kokkos::RangePolicy<Exec>(exec, 0, n), Iota<IV>{idx});
  if (levels == 0) {
    if (stats) stats->other_ms += timer.lap(exec);
    return idx;
  }

  // Algorithm 1: per-dimension quantized arrays and their maxima.
  auto q = backend::allocate<Kokkos::View<K**, Kokkos::LayoutRight, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::split_sort::quantized"), D, n);
  Kokkos::parallel_for("kdforge::split_sort::quantize", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       Quantize<Kokkos::View<Point<T, D>*, MS>, decltype(q), T, D>{pts, q, box});
  int passes[D];
  for (int d = 0; d < D; ++d)
    passes[d] = radix_passes<K>(kernels::ordered_bits(box.hi[d]) - kernels::ordered_bits(box.lo[d]), prm.radix_bits);

  auto keys = backend::allocate<KV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::split_sort::keys"), n);
  auto keys_tmp = backend::allocate<KV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::split_sort::keys_tmp"), n);
  auto idx_tmp = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::split_sort::idx_tmp"), n);
  int const base = 1 << prm.radix_bits;
  std::int64_t const blocks = (n + prm.threads_per_block - 1) / prm.threads_per_block;
  bool const any_parallel = level_sort(prm, n, 0) == LevelSort::parallel_radix;
  HV hist;
  Kokkos::View<char*, MS> scan_workspace;
  if (any_parallel) hist = backend::allocate<HV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::split_sort::histogram"), 2 * blocks * base);
  if (stats) stats->other_ms += timer.lap(exec);

  for (int l = 0; l < levels; ++l) {
    int const d = l % D;
    Kokkos::parallel_for("kdforge::split_sort::gather_keys", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         GatherKeys<decltype(q), KV, IV>{q, keys, idx, d});
    if (stats) stats->other_ms += timer.lap(exec);
    LevelSort const how = level_sort(prm, n, l);
    sort_level(exec, how, prm, l, passes[d], keys, keys_tmp, idx, idx_tmp, hist, scan_workspace);
    if (stats) {
      double const ms = timer.lap(exec);
      switch (how) {
      case LevelSort::parallel_radix: stats->parallel_radix_ms += ms; ++stats->parallel_levels; break;
      case LevelSort::sequential_radix: stats->sequential_radix_ms += ms; ++stats->sequential_levels; break;
      case LevelSort::insertion: stats->insertion_ms += ms; ++stats->insertion_levels; break;
      }
    }
    Kokkos::parallel_for("kdforge::split_sort::create_nodes", Kokkos::RangePolicy<Exec>(exec, 0, std::int64_t(1) << l),
                         CreateNodes<IV>{n, l, idx, idx_tmp});
    if (stats) stats->other_ms += timer.lap(exec);
  }
  return idx;
}

} // namespace kdforge::split_sort
