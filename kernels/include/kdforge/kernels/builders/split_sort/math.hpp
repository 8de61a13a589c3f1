#pragma once
// Chunk arithmetic of the adaptive split-and-sort builder (Wehr & Radkowski
// 2018, appendix, after Garrett et al. 2016).
//
// The paper treats the chunk width of level l as the real number
// w = N / 2^l, puts chunk c at [c w, (c+1) w) and tests "is i a splitting
// element" with ceil(i/w) < (i+1)/w. We use the same boundaries in exact
// integer form, b_l(m) = floor(m N / 2^l), so no floating-point rounding can
// move an element across a boundary, for any N < 2^62 (m N is taken in
// 128 bits where it passes 64: trees of more than 2^32 points):
//
//   splitting elements before level l:  positions b_l(m), m = 1 .. 2^l - 1
//                                        (the nodes of levels 0 .. l-1)
//   chunk c of level l:                  [b_l(c) + 1, b_l(c+1)), chunk 0 = [0, b_l(1))
//   node (median) of chunk c, level l:   b_{l+1}(2c + 1)
//
// Element 0 is never a splitting element (the appendix's "i != 0"). Levels
// 0 .. Lm-1 with Lm = floor(log2 N) create internal nodes (w_{l+1} >= 1
// keeps the boundaries distinct, so every median lies strictly inside its
// chunk); the chunks of level Lm hold zero or one element each: the leaves.
#include <kdforge/kernels/trees/level_order.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::split_sort {

/// Lm = floor(log2 N): the number of levels with internal nodes (0 for N <= 1).
KOKKOS_FORCEINLINE_FUNCTION int internal_levels(std::int64_t n) { return n <= 1 ? 0 : 63 - lb::clz64(std::uint64_t(n)); }

/// floor(a b / 2^l) for a b < 2^(64 + l): the product in 128 bits from
/// 32-bit halves (the same on every target; no __int128 in device code).
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t mul_shift(std::uint64_t a, std::uint64_t b, int l) {
  std::uint64_t const a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
  std::uint64_t const p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
  std::uint64_t const mid = (p0 >> 32) + (p1 & 0xffffffffu) + (p2 & 0xffffffffu);
  std::uint64_t const lo = (p0 & 0xffffffffu) | (mid << 32);
  std::uint64_t const hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
  return l == 0 ? lo : (hi << (64 - l)) | (lo >> l);
}

/// b_l(m) = floor(m N / 2^l) for m <= 2^l; exact for N < 2^62 (one 64-bit
/// multiply where m and N are below 2^32, as everywhere in trees of fewer
/// than 2^32 points).
KOKKOS_FORCEINLINE_FUNCTION std::int64_t boundary(std::int64_t n, int l, std::int64_t m) {
  std::uint64_t const um = std::uint64_t(m), un = std::uint64_t(n);
  if (((um | un) >> 32) == 0) return std::int64_t((um * un) >> l);
  return std::int64_t(mul_shift(um, un, l));
}

/// The chunk of level l whose range, counted with its leading splitting
/// element, contains position i: the largest c with b_l(c) <= i, which is
/// floor(((i + 1) 2^l - 1) / N). Past 64 bits, estimated in double (off by
/// at most one for N < 2^52) and corrected against the exact boundaries.
KOKKOS_FORCEINLINE_FUNCTION std::int64_t chunk_of(std::int64_t n, int l, std::int64_t i) {
  std::uint64_t const ui = std::uint64_t(i) + 1;
  if ((ui >> (63 - l)) == 0) return std::int64_t(((ui << l) - 1) / std::uint64_t(n));
  std::int64_t c = std::int64_t(double(ui) * double(std::uint64_t(1) << l) / double(n));
  std::int64_t const last = (std::int64_t(1) << l) - 1;
  c = c < 0 ? 0 : (c > last ? last : c);
  while (c < last && boundary(n, l, c + 1) <= i) ++c;
  while (c > 0 && boundary(n, l, c) > i) --c;
  return c;
}

/// Whether position i holds a node of a level above l.
KOKKOS_FORCEINLINE_FUNCTION bool is_splitting(std::int64_t n, int l, std::int64_t i) {
  std::int64_t const c = chunk_of(n, l, i);
  return c > 0 && boundary(n, l, c) == i;
}

/// First element of chunk c of level l (after its splitting element).
KOKKOS_FORCEINLINE_FUNCTION std::int64_t chunk_begin(std::int64_t n, int l, std::int64_t c) {
  return c == 0 ? 0 : boundary(n, l, c) + 1;
}
/// One past the last element of chunk c of level l.
KOKKOS_FORCEINLINE_FUNCTION std::int64_t chunk_end(std::int64_t n, int l, std::int64_t c) {
  return boundary(n, l, c + 1);
}

/// Position of the node (median element) of chunk c of level l < Lm.
KOKKOS_FORCEINLINE_FUNCTION std::int64_t median(std::int64_t n, int l, std::int64_t c) {
  return boundary(n, l + 1, 2 * c + 1);
}

} // namespace kdforge::split_sort

namespace kdforge::split_sort {

/// What the parallel segmented radix sort of one level needs to know about
/// a block of TPB consecutive positions (Wehr & Radkowski, Algorithms 4 and
/// 5). Chunks of this level are at least TPB long, so a block overlaps at most
/// two of them: histogram slot 0 counts the first (chunk c0), slot 1 the
/// second when there is one.
struct BlockChunks {
  std::int64_t c0;    ///< chunk of the block's first position
  std::int64_t lead;  ///< splitting element at the block's first position, else -1
  std::int64_t split; ///< splitting element that opens chunk c0 + 1 inside the block, else n
  bool two;           ///< whether the block overlaps chunk c0 + 1
};

/// A block's chunks with the histogram-entry range [begin(s), end(s)) of
/// the chunk each of its two slots counts (the unused slot 1 of a block
/// inside a single chunk is attributed to that chunk and stays zero).
struct BlockEntries {
  BlockChunks bc;
  std::int64_t gs0, ge0, ge1;
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t chunk(int s) const { return bc.c0 + (s == 1 && bc.two ? 1 : 0); }
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t begin(int s) const { return s == 1 && bc.two ? ge0 : gs0; }
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t end(int s) const { return s == 1 && bc.two ? ge1 : ge0; }
};

/// Geometry of level l for blocks of `tpb` positions and `base` digits.
/// Histogram entries are numbered g = 2 * block + slot; those of one chunk
/// are consecutive in g, and the global histogram is stored per chunk in
/// column-major order (digit-major, then g), so one exclusive scan over the
/// whole histogram gives every (block, digit)'s output offset, as in the
/// paper (Fig. 3, after Satish et al.).
struct LevelGeometry {
  std::int64_t n;
  int l;
  std::int64_t tpb;
  int base;
  std::int64_t blocks; ///< ceil(n / tpb)

  KOKKOS_FUNCTION std::int64_t chunks() const { return std::int64_t(1) << l; }

  KOKKOS_FUNCTION BlockChunks block(std::int64_t b) const {
    std::int64_t const first = b * tpb;
    std::int64_t const last = (first + tpb < n ? first + tpb : n) - 1;
    BlockChunks r;
    r.c0 = chunk_of(n, l, first);
    r.lead = (r.c0 > 0 && boundary(n, l, r.c0) == first) ? first : -1;
    std::int64_t const cl = chunk_of(n, l, last);
    r.two = cl != r.c0;
    r.split = r.two ? boundary(n, l, cl) : n;
    return r;
  }

  /// First histogram entry of chunk c (2 * blocks for c == chunks()).
  KOKKOS_FUNCTION std::int64_t chunk_first_entry(std::int64_t c) const {
    if (c >= chunks()) return 2 * blocks;
    std::int64_t const f = c == 0 ? 0 : boundary(n, l, c);
    std::int64_t const bf = f / tpb;
    return chunk_of(n, l, bf * tpb) == c ? 2 * bf : 2 * bf + 1;
  }

  KOKKOS_FUNCTION BlockEntries entries(std::int64_t b) const {
    BlockEntries e;
    e.bc = block(b);
    e.gs0 = chunk_first_entry(e.bc.c0);
    e.ge0 = chunk_first_entry(e.bc.c0 + 1);
    e.ge1 = e.bc.two ? chunk_first_entry(e.bc.c0 + 2) : e.ge0;
    return e;
  }

  /// Index of entry (g, digit) in the global histogram, given the entry range
  /// [gs, ge) of g's chunk.
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t slot(std::int64_t g, int digit, std::int64_t gs, std::int64_t ge) const {
    return gs * base + std::int64_t(digit) * (ge - gs) + (g - gs);
  }
};

} // namespace kdforge::split_sort
