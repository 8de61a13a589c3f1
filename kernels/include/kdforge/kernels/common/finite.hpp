#pragma once
// NaN, infinite and out-of-range coordinates at the boundary: found (the
// first offending index, for the error message) or, for NaN and infinity,
// left out with the input indices of the points kept
// (NonFinitePolicy::drop). Out of range is beyond +-sqrt(max_sq_coordinate)
// (base/types.hpp): there squared distances overflow to infinity and
// distinct neighbours would tie or go missing, so such coordinates are
// refused under either policy.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace kdforge::detail {

/// The largest coordinate magnitude accepted in `dim` dimensions (host).
template <class T>
double coordinate_limit(int dim) {
  return std::sqrt(double(max_sq_coordinate<T>(dim)));
}

/// What is wrong with the coordinates x[0..dim) of a point or query that
/// failed is_usable, as the end of "point 7 has ...", with the fix.
template <class T>
std::string unusable_coordinates(T const* x, int dim) {
  std::ostringstream os;
  for (int d = 0; d < dim; ++d)
    if (!is_finite(x[d])) return "a NaN or infinite coordinate";
  for (int d = 0; d < dim; ++d)
    if (!is_usable(x[d], max_sq_coordinate<T>(dim))) {
      os << "the coordinate " << double(x[d]) << " (axis " << d << "), beyond +-" << coordinate_limit<T>(dim)
         << ", the largest magnitude whose squared distances " << (std::is_same<T, float>::value ? "float" : "double")
         << " holds in " << dim << " dimensions; scale or shift the coordinates into that range"
         << (std::is_same<T, float>::value ? " (or use double)" : "");
      return os.str();
    }
  return "a usable coordinate"; // not reached: the caller found a bad one
}

// Kernels are named functors (common/points.hpp says why: no extended lambdas).
template <class PV>
KOKKOS_FORCEINLINE_FUNCTION bool point_is_finite(PV const& pts, std::int64_t i) {
  using P = typename PV::value_type;
  bool ok = true;
  for (int d = 0; d < int(sizeof(P::coords) / sizeof(P::coords[0])); ++d) ok = ok && is_finite(pts(i)[d]);
  return ok;
}
/// Finite and within the range whose squared distances T holds.
template <class PV>
KOKKOS_FORCEINLINE_FUNCTION bool point_is_usable(PV const& pts, std::int64_t i) {
  using P = typename PV::value_type;
  constexpr int D = int(sizeof(P::coords) / sizeof(P::coords[0]));
  using T = std::remove_cv_t<std::remove_reference_t<decltype(P::coords[0])>>;
  bool ok = true;
  for (int d = 0; d < D; ++d) ok = ok && is_usable(pts(i)[d], max_sq_coordinate<T>(D));
  return ok;
}
template <class PV>
struct FirstUnusable {
  PV pts;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    if (!point_is_usable(pts, i) && i < m) m = i;
  }
};
/// Finite but out of range (refused under NonFinitePolicy::drop too).
template <class PV>
struct FirstOutOfRange {
  PV pts;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& m) const {
    if (point_is_finite(pts, i) && !point_is_usable(pts, i) && i < m) m = i;
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
/// The first point with a NaN, infinite or out-of-range coordinate
/// (int64 max: none).
template <class Exec, class T, int D>
std::int64_t first_unusable(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce("kdforge::build::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, pts.extent(0)),
                          FirstUnusable<Kokkos::View<Point<T, D>*, typename Exec::memory_space>>{pts},
                          Kokkos::Min<std::int64_t>(first));
  return first;
}

/// Point i of pts, copied to the host (for an error message).
template <class Exec, class PV>
typename PV::non_const_value_type point_on_host(Exec const& exec, PV const& pts, std::int64_t i) {
  using P = typename PV::non_const_value_type;
  P p;
  Kokkos::deep_copy(exec, Kokkos::View<P, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&p),
                    Kokkos::subview(pts, i));
  exec.fence();
  return p;
}

template <class Rows, class Out>
struct CopyRow {
  Rows rows;
  std::int64_t i;
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t d) const { out(d) = rows(i, d); }
};

/// Row i of an N x dim View, copied to the host (for an error message). A
/// kernel gathers it first: a row of a LayoutLeft View (a GPU's default) is
/// strided, and Kokkos copies no strided View between memory spaces.
template <class Exec, class Rows>
std::vector<typename Rows::non_const_value_type> row_on_host(Exec const& exec, Rows const& rows, std::int64_t i) {
  using V = Kokkos::View<typename Rows::non_const_value_type*, typename Rows::memory_space>;
  V row(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::row"), rows.extent(1));
  Kokkos::parallel_for("kdforge::row_on_host", Kokkos::RangePolicy<Exec>(exec, 0, std::int64_t(rows.extent(1))),
                       CopyRow<Rows, V>{rows, i, row});
  auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, row);
  exec.fence();
  std::vector<typename Rows::non_const_value_type> v(h.extent(0));
  for (std::size_t d = 0; d < v.size(); ++d) v[d] = h(d);
  return v;
}

/// Throws kdforge::Error for point `bad` of pts (found by first_unusable):
/// "<where>: point 7 has a NaN or infinite coordinate; <fix>" or the range
/// it leaves.
template <class Exec, class T, int D>
[[noreturn]] void refuse_point(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts,
                               std::int64_t bad, char const* where, char const* non_finite_fix) {
  Point<T, D> const p = point_on_host(exec, pts, bad);
  bool finite = true;
  for (int d = 0; d < D; ++d) finite = finite && is_finite(p[d]);
  if (finite) fail(where, "point ", bad, " has ", unusable_coordinates(p.coords, D));
  fail(where, "point ", bad, " has a NaN or infinite coordinate; ", non_finite_fix);
}

/// The same for row `bad` of an N x dim View.
template <class Exec, class Rows>
[[noreturn]] void refuse_row(Exec const& exec, Rows const& rows, std::int64_t bad, char const* what, char const* where,
                             char const* non_finite_fix) {
  auto const x = row_on_host(exec, rows, bad);
  bool finite = true;
  for (auto v : x) finite = finite && is_finite(v);
  if (finite) fail(where, what, " ", bad, " has ", unusable_coordinates(x.data(), int(x.size())));
  fail(where, what, " ", bad, " has a NaN or infinite coordinate; ", non_finite_fix);
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
  std::int64_t const none = std::numeric_limits<std::int64_t>::max();
  std::int64_t const bad = first_unusable(exec, pts);
  if (bad == none) return r;
  char const* fix = "fix the input or set non_finite = NonFinitePolicy::drop in the build options to leave such points out";
  if (policy == NonFinitePolicy::reject) refuse_point(exec, pts, bad, where, fix);
  // Drop leaves out NaN and infinity only: a finite point out of range is
  // refused, not silently left out.
  std::int64_t huge = none;
  Kokkos::parallel_reduce("kdforge::build::check_range", Kokkos::RangePolicy<Exec>(exec, 0, pts.extent(0)),
                          FirstOutOfRange<decltype(pts)>{pts}, Kokkos::Min<std::int64_t>(huge));
  if (huge != none) refuse_point(exec, pts, huge, where, fix);
  // Drop: compact the finite points, remembering their input indices.
  std::int64_t const n = std::int64_t(pts.extent(0));
  auto pos = backend::allocate<Kokkos::View<std::int64_t*, MS>>("kdforge::build::drop_pos", n);
  Kokkos::parallel_for("kdforge::build::drop_flags", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       FiniteFlags<decltype(pts), decltype(pos)>{pts, pos});
  std::int64_t const kept = backend::exclusive_scan(exec, pos, pos);
  r.dropped = n - kept;
  r.pts = backend::allocate<Kokkos::View<Point<T, D>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::points_input"), kept);
  r.input_index = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::input_index"), kept);
  Kokkos::parallel_for("kdforge::build::drop_scatter", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       CompactFinite<decltype(pts), decltype(pos), decltype(r.input_index)>{pts, pos, r.pts, r.input_index});
  return r;
}

} // namespace kdforge::detail
