#pragma once
// Shared helpers of the test suite: the execution spaces under test, seeded
// random data, and copies to the host.
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>
#include <kdforge/base/memory.hpp>
#include <kdforge/base/types.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kdforge::test {

/// Restores the memory limit and disarms the failure injection when a test
/// ends, however it ends.
struct MemoryGuard {
  MemoryGuard() { detail::fail_allocation_after(-1); }
  ~MemoryGuard() {
    set_memory_limit(0);
    detail::fail_allocation_after(-1);
  }
};

/// An empty team functor: asks a TeamPolicy how large its teams may be, for
/// the tests that run the GPU's team code on teams of CPU threads.
struct NoWork {
  template <class Member>
  KOKKOS_FUNCTION void operator()(Member const&) const {}
};

// Every test runs on the configured default space and, where it differs, on
// Kokkos::Serial, so one binary compares the build's backend to the serial one;
// KDFORGE_TEST_DEFAULT_SPACE_ONLY (tests/CMakeLists.txt,
// KDFORGE_TEST_SERIAL_ELSEWHERE) leaves Serial out of a file whose features
// another build of the test command runs on Serial.
#if defined(KOKKOS_ENABLE_SERIAL) && !defined(KDFORGE_TEST_DEFAULT_SPACE_ONLY) && \
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

enum class Distribution {
  uniform,
  clustered,
  duplicates,   // 7 distinct points on a grid
  line,         // all coordinates equal: the cube's diagonal
  plane,        // last coordinate constant
  sphere,       // unit sphere surface
  tilted_plane, // sum of coordinates = D / 2
  scan,         // rings of a spinning scanner over a ground plane with boxes (D = 3; other D: plane)
  half_copies,  // every second point a copy of an earlier one
  identical,    // every point the same
  anisotropic,  // first coordinate in [0, 1000], the others in [0, 1]
};

inline char const* name(Distribution d) {
  switch (d) {
  case Distribution::uniform: return "uniform";
  case Distribution::clustered: return "clustered";
  case Distribution::duplicates: return "duplicates";
  case Distribution::line: return "line";
  case Distribution::plane: return "plane";
  case Distribution::sphere: return "sphere";
  case Distribution::tilted_plane: return "tilted_plane";
  case Distribution::scan: return "scan";
  case Distribution::half_copies: return "half_copies";
  case Distribution::identical: return "identical";
  case Distribution::anisotropic: return "anisotropic";
  }
  return "?";
}

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
    case Distribution::tilted_plane: { // uniform in the first D - 1, the last fixes the sum
      double sum = 0;
      for (int d = 0; d + 1 < D; ++d) {
        p[d] = T(u(rng));
        sum += double(p[d]);
      }
      p[D - 1] = T(0.5 * D - sum);
      break;
    }
    case Distribution::scan: {
      if (D != 3) {
        for (int d = 0; d < D; ++d) p[d] = d == D - 1 ? T(0) : T(u(rng));
        break;
      }
      // a ring of the scanner at (0.5, 0.5, 0.2): 16 elevations, the ray
      // meets the ground z = 0, or the side of a box [0.6, 0.7]^2 x [0, 0.15]
      double const elev = -0.05 - 0.5 * double(rng() % 16) / 16.0;
      double const az = 6.283185307179586 * u(rng);
      double const dx = std::cos(az) * std::cos(elev), dy = std::sin(az) * std::cos(elev), dz = std::sin(elev);
      double t = -0.2 / dz;
      double x = 0.5 + t * dx, y = 0.5 + t * dy, z = 0.0;
      if (x > 0.6 && x < 0.7 && y > 0.6 && y < 0.7) z = 0.15 * u(rng); // on the box: a wall point
      p[0] = T(x);
      p[1] = T(y);
      p[2] = T(z);
      break;
    }
    case Distribution::half_copies:
      if (i % 2 == 1) {
        p = pts[rng() % i];
        break;
      }
      for (int d = 0; d < D; ++d) p[d] = T(u(rng));
      break;
    case Distribution::identical:
      for (int d = 0; d < D; ++d) p[d] = T(0.25 + 0.1 * d);
      break;
    case Distribution::anisotropic:
      for (int d = 0; d < D; ++d) p[d] = T(d == 0 ? 1000.0 * u(rng) : u(rng));
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
