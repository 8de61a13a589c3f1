#pragma once
// Distances, evaluated in the same order with separately rounded multiplies
// and adds on every backend (backend::mul_rn/add_rn), so every backend
// computes the same bits and ties are broken the same way everywhere.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

namespace kdforge {

/// Squared distance between two points, bit-identical on every backend.
/// Summed from the first square, not from 0: the same bits (a square is
/// never -0, and 0 + x is x otherwise), one add fewer.
template <class T, int D>
KOKKOS_FORCEINLINE_FUNCTION T sq_distance(Point<T, D> const& a, Point<T, D> const& b) {
  T const d0 = a[0] - b[0];
  T s = backend::mul_rn(d0, d0);
  for (int d = 1; d < D; ++d) {
    T const diff = a[d] - b[d];
    s = backend::add_rn(s, backend::mul_rn(diff, diff));
  }
  return s;
}

} // namespace kdforge
