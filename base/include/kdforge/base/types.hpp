#pragma once
#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge {

namespace detail {
// Own numeric constants: Kokkos' numeric traits moved between 3.x and 4.x,
// and std::numeric_limits is not device-callable without relaxed constexpr.
template <class T> KOKKOS_FORCEINLINE_FUNCTION constexpr T max_value() {
  return std::is_same<T, float>::value ? T(FLT_MAX) : T(DBL_MAX);
}
template <class T> KOKKOS_FORCEINLINE_FUNCTION constexpr T infinity() {
  return std::is_same<T, float>::value ? T(HUGE_VALF) : T(HUGE_VAL);
}
/// True for finite values; written with comparisons only so it works the same
/// on host and device (NaN fails every comparison).
template <class T> KOKKOS_FORCEINLINE_FUNCTION bool is_finite(T x) {
  return x >= -max_value<T>() && x <= max_value<T>();
}
/// The largest square a coordinate of a point or query in `dim` dimensions
/// may have: the squared distance between two such points is then at most
/// a quarter of the largest finite T (4 dim x this), so no distance, box
/// distance or sum of them overflows to infinity, which would make distinct
/// neighbours equal and drop them as missing. For float in 3-D the
/// coordinates are bounded by +-2.66e18, for double by +-1.9e153.
template <class T> KOKKOS_FORCEINLINE_FUNCTION constexpr T max_sq_coordinate(int dim) {
  return max_value<T>() / T(16) / T(dim);
}
/// True for a coordinate a tree or query accepts: finite and within
/// +-sqrt(max_sq) (NaN and infinity fail, their square is not <= anything).
template <class T> KOKKOS_FORCEINLINE_FUNCTION bool is_usable(T x, T max_sq) {
  return x * x <= max_sq;
}
} // namespace detail

/// A point of D coordinates of type T; the storage of trees and the simplest
/// input format (`Kokkos::View<Point<T, D>*>`).
template <class T, int D>
struct Point {
  static_assert(std::is_floating_point<T>::value,
                "kdforge::Point: coordinates must be float or double");
  static_assert(D >= 1, "kdforge::Point: the dimension must be at least 1");
  T coords[D];
  KOKKOS_FORCEINLINE_FUNCTION T& operator[](int d) { return coords[d]; }
  KOKKOS_FORCEINLINE_FUNCTION T const& operator[](int d) const { return coords[d]; }
};

namespace detail {
/// Every coordinate usable (see max_sq_coordinate).
template <class T, int D>
KOKKOS_FORCEINLINE_FUNCTION bool is_usable(Point<T, D> const& p) {
  bool ok = true;
  for (int d = 0; d < D; ++d) ok = ok && is_usable(p[d], max_sq_coordinate<T>(D));
  return ok;
}
} // namespace detail

/// Axis-aligned box; `lo > hi` in a dimension means empty.
template <class T, int D>
struct Box {
  T lo[D];
  T hi[D];
  KOKKOS_FUNCTION static Box empty() {
    Box b;
    for (int d = 0; d < D; ++d) {
      b.lo[d] = detail::infinity<T>();
      b.hi[d] = -detail::infinity<T>();
    }
    return b;
  }
  KOKKOS_FUNCTION void extend(Point<T, D> const& p) {
    for (int d = 0; d < D; ++d) {
      lo[d] = p[d] < lo[d] ? p[d] : lo[d];
      hi[d] = p[d] > hi[d] ? p[d] : hi[d];
    }
  }
  KOKKOS_FUNCTION void extend(Box const& o) {
    for (int d = 0; d < D; ++d) {
      lo[d] = o.lo[d] < lo[d] ? o.lo[d] : lo[d];
      hi[d] = o.hi[d] > hi[d] ? o.hi[d] : hi[d];
    }
  }
};

/// A neighbour: (squared distance, original index), ordered by distance and
/// then by smaller index so that ties are broken the same way everywhere.
template <class T, class Index>
struct Neighbor {
  T sq_dist;
  Index index;
  KOKKOS_FORCEINLINE_FUNCTION bool operator<(Neighbor const& o) const {
    return sq_dist < o.sq_dist || (sq_dist == o.sq_dist && index < o.index);
  }
};

/// The index value that marks a missing neighbour.
template <class Index>
KOKKOS_INLINE_FUNCTION constexpr Index invalid_index() { return Index(-1); }

} // namespace kdforge
