#pragma once
// O(1) arithmetic on left-balanced complete binary trees stored in level
// order (Wald 2022, sections 2 and 4, with the corrected L = 32 - clz(N) of
// the paper's revision 3). Written for any unsigned-able index type; 64-bit
// variants follow the same formulas with 64-bit counts of leading zeros.
#include <kdforge/backends/intrinsics.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::lb {

using backend::clz32;
using backend::clz64;

/// Position of the highest set bit of x != 0 (32- or 64-bit).
KOKKOS_FORCEINLINE_FUNCTION int highest_bit(std::uint32_t x) { return 31 - clz32(x); }
KOKKOS_FORCEINLINE_FUNCTION int highest_bit(std::uint64_t x) { return 63 - clz64(x); }

/// level(i) = floor(log2(i + 1))                        (section 2)
KOKKOS_FORCEINLINE_FUNCTION int level(std::int64_t i) { return 63 - clz64(std::uint64_t(i) + 1); }
/// L = numLevels(N) = 32 - clz(N) (64-bit form)          (revision 3)
KOKKOS_FORCEINLINE_FUNCTION int num_levels(std::int64_t n) { return 64 - clz64(std::uint64_t(n)); }
/// F(l) = 2^l - 1: nodes in a full tree of l levels
KOKKOS_FORCEINLINE_FUNCTION std::int64_t full(int l) { return (std::int64_t(1) << l) - 1; }
KOKKOS_FORCEINLINE_FUNCTION std::int64_t left_child(std::int64_t i) { return 2 * i + 1; }
KOKKOS_FORCEINLINE_FUNCTION std::int64_t right_child(std::int64_t i) { return 2 * i + 2; }
KOKKOS_FORCEINLINE_FUNCTION std::int64_t parent(std::int64_t i) { return (i - 1) / 2; }

KOKKOS_FORCEINLINE_FUNCTION std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
KOKKOS_FORCEINLINE_FUNCTION std::int64_t max64(std::int64_t a, std::int64_t b) { return a > b ? a : b; }

/// ss(s): number of nodes in the sub-tree rooted at s, for a tree of n nodes
/// (section 4.1). 0 when s >= n.
KOKKOS_FORCEINLINE_FUNCTION std::int64_t subtree_size(std::int64_t s, std::int64_t n) {
  if (s >= n) return 0;
  int const L = num_levels(n);
  int const l = level(s);
  int const below = L - l - 1; // full levels below s, down to L-2
  // fllc(s): s with `below` one-bits appended = first lowest-level child,
  // ((s + 1) << below) - 1, on unsigned values (the paper's ~((~s) << below)
  // shifts a negative value: undefined in C++)
  std::int64_t const fllc = std::int64_t(((std::uint64_t(s) + 1) << below) - 1);
  std::int64_t const lowest = min64(max64(0, n - fllc), std::int64_t(1) << below);
  return ((std::int64_t(1) << below) - 1) + lowest;
}

/// sb(s, l): where the segment of sub-tree s (on level l) begins in the
/// array sorted by (tag, coordinate) of the tag builder (section 4.2).
KOKKOS_FORCEINLINE_FUNCTION std::int64_t segment_begin(std::int64_t s, std::int64_t n) {
  int const L = num_levels(n);
  int const l = level(s);
  std::int64_t const nls = s - full(l); // left siblings of s on level l
  return full(l) + nls * ((std::int64_t(1) << (L - l - 1)) - 1) +
         min64(nls * (std::int64_t(1) << (L - l - 1)), n - full(L - 1));
}

} // namespace kdforge::lb
