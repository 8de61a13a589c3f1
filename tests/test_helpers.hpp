#pragma once
// Shared helpers of the test suite: the execution spaces under test, seeded
// random data, and copies to the host.
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>
#include <kdforge/base/types.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kdforge::test {

// Every test runs on the configured default space and, where it differs, on
// Kokkos::Serial, so one binary compares the build's backend to the serial one.
#if defined(KOKKOS_ENABLE_SERIAL) && \
    (defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_OPENMP) || defined(KOKKOS_ENABLE_THREADS))
#define KDFORGE_TEST_SPACES Kokkos::DefaultExecutionSpace, Kokkos::Serial
#else
#define KDFORGE_TEST_SPACES Kokkos::DefaultExecutionSpace
#endif

template <class Exec, class T>
Kokkos::View<T*, typename Exec::memory_space> to_device(std::vector<T> const& v, char const* label = "test") {
  Kokkos::View<T*, typename Exec::memory_space> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), v.size());
  Kokkos::View<T const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(v.data(), v.size());
  Kokkos::deep_copy(d, h);
  return d;
}

template <class View>
std::vector<typename View::non_const_value_type> to_host(View const& d) {
  std::vector<typename View::non_const_value_type> v(d.extent(0));
  Kokkos::View<typename View::non_const_value_type*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      v.data(), v.size());
  Kokkos::fence();
  Kokkos::deep_copy(h, d);
  return v;
}

enum class Distribution { uniform, clustered, duplicates, line, plane, sphere };

template <class T, int D>
std::vector<Point<T, D>> make_points(std::size_t n, Distribution dist, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 0.01);
  std::vector<Point<T, D>> pts(n);
  std::vector<Point<T, D>> centers(8);
  for (auto& c : centers)
    for (int d = 0; d < D; ++d) c[d] = T(u(rng));
  for (std::size_t i = 0; i < n; ++i) {
    auto& p = pts[i];
    switch (dist) {
    case Distribution::uniform:
      for (int d = 0; d < D; ++d) p[d] = T(u(rng));
      break;
    case Distribution::clustered: {
      auto const& c = centers[rng() % centers.size()];
      for (int d = 0; d < D; ++d) p[d] = T(c[d] + g(rng));
      break;
    }
    case Distribution::duplicates: // only 7 distinct points, on a grid
      for (int d = 0; d < D; ++d) p[d] = T(double(rng() % 7) / 7.0 * (d + 1));
      break;
    case Distribution::line: { // all on one line: every coordinate equal
      T const t = T(u(rng));
      for (int d = 0; d < D; ++d) p[d] = t;
      break;
    }
    case Distribution::plane: // degenerate: last coordinate constant
      for (int d = 0; d < D; ++d) p[d] = d == D - 1 ? T(0.5) : T(u(rng));
      break;
    case Distribution::sphere: {
      double s = 0;
      for (int d = 0; d < D; ++d) {
        p[d] = T(std::normal_distribution<double>(0, 1)(rng));
        s += double(p[d]) * double(p[d]);
      }
      for (int d = 0; d < D; ++d) p[d] = T(double(p[d]) / std::sqrt(s));
      break;
    }
    }
  }
  return pts;
}

} // namespace kdforge::test
