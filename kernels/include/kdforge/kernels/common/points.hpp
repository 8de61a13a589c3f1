#pragma once
// Copies of the caller's points into the internal form, a View<Point<T, D>*>
// in the execution space's memory.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/access.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace kdforge {

namespace detail {
// Kernels are named functors, not KOKKOS_LAMBDAs: nvcc's extended lambdas in
// templates instantiated in several translation units of a Cuda build crash
// when run on a host space (their host-side helper is per translation unit).
template <class C, class Out>
struct CopyPointsFunctor {
  C container;
  Out out;
  KOKKOS_FUNCTION void operator()(std::size_t i) const {
    for (int d = 0; d < AccessTraits<C>::dimension; ++d) out(i)[d] = AccessTraits<C>::coordinate(container, i, d);
  }
};

template <class Exec, class C, class T, int D>
Kokkos::View<Point<T, D>*, typename Exec::memory_space> copy_points(Exec const& exec, C const& container,
                                                                    char const* label) {
  using A = AccessTraits<C>;
  std::size_t const n = A::size(container);
  auto out = backend::allocate<Kokkos::View<Point<T, D>*, typename Exec::memory_space>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
  Kokkos::parallel_for("kdforge::to_points", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       CopyPointsFunctor<C, decltype(out)>{container, out});
  return out;
}
} // namespace detail

/// Copies any supported container into a View<Point<T, D>*> in the execution
/// space's memory (the internal form; the caller's data is never modified).
template <class Exec, class C>
auto to_points(Exec const& exec, C const& container, char const* label = "kdforge::points") {
  static_assert(detail::check_points_container<C, Exec>());
  using A = AccessTraits<C>;
  return detail::copy_points<Exec, C, typename A::coordinate_type, A::dimension>(exec, container, label);
}

} // namespace kdforge
