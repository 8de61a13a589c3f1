#pragma once
// Stable LSD radix sort of (key, value) pairs on host memory: the std-only
// primitive of the Serial backend and the engine of the oneTBB backend, which
// runs the same passes with tbb::parallel_for over blocks. 8-bit digits; a
// pass whose digit is equal for every key is skipped (sorting tags whose high
// bits are all zero costs nothing).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace kdforge::backend::detail {

template <class K>
inline unsigned radix_digit(K key, int shift, K mask) {
  return static_cast<unsigned>((key >> shift) & mask);
}

/// out[i] = in[0] + ... + in[i-1] for i < n, one after the other (in may be
/// out); returns the sum of all.
template <class T>
T sequential_exclusive_scan(T const* in, T* out, std::size_t n) {
  T sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    T const v = in[i]; // in may alias out: read before the write
    out[i] = sum;
    sum += v;
  }
  return sum;
}

/// Runs f(b) for b in [0, nblocks) one after the other.
struct SerialBlocks {
  template <class F>
  void operator()(std::size_t nblocks, F&& f) const {
    for (std::size_t b = 0; b < nblocks; ++b) f(b);
  }
};

// Insertion sort on the masked key; stable. For tiny ranges (segments).
template <class K, class V>
void insertion_sort_pairs(K* keys, V* vals, std::size_t n, int begin_bit, int end_bit) {
  int const bits = end_bit - begin_bit;
  K const mask = bits >= int(8 * sizeof(K)) ? ~K(0) : K((K(1) << bits) - 1);
  for (std::size_t i = 1; i < n; ++i) {
    K const k = keys[i];
    V const v = vals[i];
    K const km = (k >> begin_bit) & mask;
    std::size_t j = i;
    while (j > 0 && ((keys[j - 1] >> begin_bit) & mask) > km) {
      keys[j] = keys[j - 1];
      vals[j] = vals[j - 1];
      --j;
    }
    keys[j] = k;
    vals[j] = v;
  }
}

/// Stable sort of n pairs by bits [begin_bit, end_bit) of the keys. The
/// array is cut into nblocks blocks; for_blocks runs a callable over them
/// (serially or in parallel); each block keeps a private histogram, so the
/// per-block scatters never touch the same output slot.
template <class K, class V, class ForBlocks>
void lsd_radix_sort_pairs(K* keys, V* vals, std::size_t n, int begin_bit, int end_bit,
                          std::size_t nblocks, ForBlocks const& for_blocks) {
  static_assert(std::is_unsigned<K>::value, "radix sort keys must be unsigned integers");
  if (n < 2 || begin_bit >= end_bit) return;
  if (n <= 32) {
    insertion_sort_pairs(keys, vals, n, begin_bit, end_bit);
    return;
  }
  nblocks = std::max<std::size_t>(1, std::min(nblocks, n));
  std::size_t const bs = (n + nblocks - 1) / nblocks;
  nblocks = (n + bs - 1) / bs;
  std::vector<K> key_tmp(n);
  std::vector<V> val_tmp(n);
  K* src_k = keys;
  V* src_v = vals;
  K* dst_k = key_tmp.data();
  V* dst_v = val_tmp.data();
  std::vector<std::size_t> hist(nblocks * 256);
  for (int shift = begin_bit; shift < end_bit; shift += 8) {
    int const bits = std::min(8, end_bit - shift);
    K const mask = K((1u << bits) - 1);
    for_blocks(nblocks, [&](std::size_t b) {
      std::size_t* h = &hist[b * 256];
      std::fill(h, h + 256, std::size_t(0));
      std::size_t const e = std::min(n, (b + 1) * bs);
      for (std::size_t i = b * bs; i < e; ++i) ++h[radix_digit(src_k[i], shift, mask)];
    });
    // Digit-major, block-minor exclusive offsets: one scan gives every
    // block's output position for every digit, which keeps the sort stable.
    std::size_t sum = 0;
    bool single_digit = false;
    for (unsigned d = 0; d < 256; ++d) {
      std::size_t total = 0;
      for (std::size_t b = 0; b < nblocks; ++b) {
        std::size_t const c = hist[b * 256 + d];
        hist[b * 256 + d] = sum;
        sum += c;
        total += c;
      }
      single_digit = single_digit || total == n;
    }
    if (single_digit) continue;
    for_blocks(nblocks, [&](std::size_t b) {
      std::size_t* h = &hist[b * 256];
      std::size_t const e = std::min(n, (b + 1) * bs);
      for (std::size_t i = b * bs; i < e; ++i) {
        std::size_t const pos = h[radix_digit(src_k[i], shift, mask)]++;
        dst_k[pos] = src_k[i];
        dst_v[pos] = src_v[i];
      }
    });
    std::swap(src_k, dst_k);
    std::swap(src_v, dst_v);
  }
  if (src_k != keys) {
    for_blocks(nblocks, [&](std::size_t b) {
      std::size_t const e = std::min(n, (b + 1) * bs);
      std::copy(src_k + b * bs, src_k + e, keys + b * bs);
      std::copy(src_v + b * bs, src_v + e, vals + b * bs);
    });
  }
}

} // namespace kdforge::backend::detail
