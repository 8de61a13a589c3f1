#pragma once
// NaN and infinite coordinates at the boundary: found (the first offending
// index, for the error message) or left out with the input indices of the
// points kept (NonFinitePolicy::drop).
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>

namespace kdforge::detail {

// Kernels are named functors (common/points.hpp says why: no extended lambdas).
template <class PV>
KOKKOS_FORCEINLINE_FUNCTION bool point_is_finite(PV const& pts, std::int64_t i) {
  using P = typename PV::value_type;
  bool ok = true;
  for (int d = 0; d < int(sizeof(P::coords) / sizeof(P::coords[0])); ++d) ok = ok && is_finite(pts(i)[d]);
  return ok;
}
template <class PV>
struct FirstNonFinite {
  PV pts;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    if (!point_is_finite(pts, i) && i < m) m = i;
  }
};
template <class PV, class Pos>
struct FiniteFlags {
  PV pts;
  Pos pos;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { pos(i) = point_is_finite(pts, i) ? 1 : 0; }
};
template <class PV, class Pos, class IV>
struct CompactFinite {
  PV in;
  Pos pos;
  PV out;
  IV input_index;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if (point_is_finite(in, i)) {
      out(pos(i)) = in(i);
      input_index(pos(i)) = typename IV::value_type(i);
    }
  }
};
template <class Exec, class T, int D>
std::int64_t first_non_finite(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce("kdforge::build::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, pts.extent(0)),
                          FirstNonFinite<Kokkos::View<Point<T, D>*, typename Exec::memory_space>>{pts},
                          Kokkos::Min<std::int64_t>(first));
  return first;
}

/// The points a builder works on: the caller's, or only the finite ones
/// (with their input indices) under NonFinitePolicy::drop.
template <class Index, class Exec, class T, int D>
struct FiniteInput {
  Kokkos::View<Point<T, D>*, typename Exec::memory_space> pts;
  Kokkos::View<Index*, typename Exec::memory_space> input_index; ///< empty unless points were dropped
  std::int64_t dropped = 0;
};

template <class Index, class Exec, class T, int D>
FiniteInput<Index, Exec, T, D> finite_input(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> pts,
                                            NonFinitePolicy policy, char const* where) {
  using MS = typename Exec::memory_space;
  FiniteInput<Index, Exec, T, D> r{pts, {}, 0};
  std::int64_t const bad = first_non_finite(exec, pts);
  if (bad == std::numeric_limits<std::int64_t>::max()) return r;
  if (policy == NonFinitePolicy::reject) {
    fail(where, "point ", bad,
         " has a NaN or infinite coordinate; fix the input or set "
         "non_finite = NonFinitePolicy::drop in the build options to leave such points out");
  }
  // Drop: compact the finite points, remembering their input indices.
  std::int64_t const n = std::int64_t(pts.extent(0));
  Kokkos::View<std::int64_t*, MS> pos("kdforge::build::drop_pos", n);
  Kokkos::parallel_for("kdforge::build::drop_flags", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       FiniteFlags<decltype(pts), decltype(pos)>{pts, pos});
  std::int64_t const kept = backend::exclusive_scan(exec, pos, pos);
  r.dropped = n - kept;
  r.pts = Kokkos::View<Point<T, D>*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points_input"), kept);
  r.input_index = Kokkos::View<Index*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::input_index"), kept);
  Kokkos::parallel_for("kdforge::build::drop_scatter", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       CompactFinite<decltype(pts), decltype(pos), decltype(r.input_index)>{pts, pos, r.pts, r.input_index});
  return r;
}

} // namespace kdforge::detail
