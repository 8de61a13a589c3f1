// Fuzz target: SAH triangle trees and ray queries (build_sah_tree,
// intersect_closest, intersect_any) on small meshes and rays decoded from
// the fuzz input: coordinates that include copies, zero-area and
// overlapping triangles, NaN, infinities, subnormals and huge values;
// indices outside the vertex list; rays with zero, NaN or infinite
// directions and origins and any tmin / tmax. Each hit is checked here
// against a loop over all triangles with the library's watertight test
// (the same triangle, t, u and v; ties at equal t to the smaller index). A
// kdforge::Error is the right answer exactly when the mesh or a ray is
// invalid; anything else aborts.
#include <kdforge/kdforge.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;

struct Bytes {
  std::uint8_t const* p;
  std::size_t n;
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(u8()) << (8 * i);
    return v;
  }
};

[[noreturn]] void mismatch(std::string const& what) {
  std::fprintf(stderr, "kdforge fuzz_rays: %s\n", what.c_str());
  std::abort();
}

template <class T>
T value(Bytes& b) {
  std::uint8_t const c = b.u8();
  if (c < 128) return T(int(c % 9) - 4) * T(0.5); // a coarse grid: shared corners, planes, zero areas
  if (c < 200) return T(int(c) - 164) / T(8);
  switch (c % 12) {
  case 0: return std::numeric_limits<T>::quiet_NaN();
  case 1: return std::numeric_limits<T>::infinity();
  case 2: return -std::numeric_limits<T>::infinity();
  case 3: return std::numeric_limits<T>::denorm_min() * T(1 + b.u8());
  case 4: return T(1e9) + T(b.u8() % 8);
  case 5: return T(b.u8() & 1 ? 1e30 : -1e30);
  case 6: return T(-0.0);
  case 7: {
    std::uint64_t const bits = b.u64();
    T v;
    if constexpr (sizeof(T) == 4) {
      std::uint32_t const b32 = std::uint32_t(bits);
      std::memcpy(&v, &b32, 4);
    } else {
      std::memcpy(&v, &bits, 8);
    }
    return v;
  }
  default: return T(int(c % 32) - 16);
  }
}

template <class T>
T bound(Bytes& b) {
  switch (b.u8() % 8) {
  case 0: return T(0);
  case 1: return std::numeric_limits<T>::infinity();
  case 2: return -std::numeric_limits<T>::infinity();
  case 3: return std::numeric_limits<T>::quiet_NaN();
  case 4: return T(1e-3);
  case 5: return T(-1);
  default: return T(b.u8()) / T(16);
  }
}

template <class T>
void run(Bytes& b) {
  Exec exec;
  int const nv = b.u8() % 16, nf = b.u8() % 24;
  Kokkos::View<T* [3], MS> vertices("vertices", nv);
  Kokkos::View<std::int32_t* [3], MS> triangles("triangles", nf);
  auto hv = Kokkos::create_mirror_view(vertices);
  auto ht = Kokkos::create_mirror_view(triangles);
  bool bad_mesh = false;
  for (int i = 0; i < nv; ++i)
    for (int d = 0; d < 3; ++d) {
      hv(i, d) = value<T>(b);
      bad_mesh = bad_mesh || !std::isfinite(hv(i, d));
    }
  for (int i = 0; i < nf; ++i)
    for (int c = 0; c < 3; ++c) {
      std::uint8_t const x = b.u8();
      ht(i, c) = x == 255 ? -1 : std::int32_t(x % (nv + 1)); // nv: one past the end
      bad_mesh = bad_mesh || ht(i, c) < 0 || ht(i, c) >= nv;
    }
  Kokkos::deep_copy(vertices, hv);
  Kokkos::deep_copy(triangles, ht);
  kdforge::SahOptions o;
  o.small_node_size = 1 + b.u8() % 64;
  o.max_depth = b.u8() % 4 == 0 ? 1 + b.u8() % 12 : 0;
  o.empty_space_ratio = double(b.u8() % 4) / 4;

  int const m = b.u8() % 8;
  Kokkos::View<kdforge::Ray<T>*, MS> rays("rays", m);
  auto hr = Kokkos::create_mirror_view(rays);
  bool bad_rays = false;
  for (int i = 0; i < m; ++i) {
    auto& r = hr(i);
    bool zero = true;
    for (int d = 0; d < 3; ++d) {
      r.origin[d] = value<T>(b);
      r.direction[d] = value<T>(b);
      zero = zero && r.direction[d] == T(0);
      bad_rays = bad_rays || !std::isfinite(r.origin[d]) || !std::isfinite(r.direction[d]);
    }
    r.tmin = bound<T>(b);
    r.tmax = bound<T>(b);
    bad_rays = bad_rays || zero || !(r.tmin >= 0) || std::isnan(r.tmax);
  }
  Kokkos::deep_copy(rays, hr);

  kdforge::TriangleTree<MS, T> tree;
  try {
    tree = kdforge::build_sah_tree(exec, vertices, triangles, o);
  } catch (kdforge::Error const& e) {
    if (!bad_mesh) mismatch(std::string("build_sah_tree: error on a valid mesh: ") + e.what());
    return;
  }
  if (bad_mesh) mismatch("build_sah_tree: an invalid mesh was accepted");
  Kokkos::View<kdforge::Hit<T>*, MS> hits;
  Kokkos::View<bool*, MS> occluded;
  try {
    kdforge::intersect_closest(exec, tree, rays, hits);
    kdforge::intersect_any(exec, tree, rays, occluded);
  } catch (kdforge::Error const& e) {
    if (!bad_rays) mismatch(std::string("intersect: error on valid rays: ") + e.what());
    return;
  }
  if (bad_rays) mismatch("intersect: an invalid ray was accepted");
  auto hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, hits);
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, occluded);
  for (int i = 0; i < m; ++i) {
    auto const w = kdforge::kernels::make_watertight_ray(hr(i));
    kdforge::Hit<T> best{-1, std::numeric_limits<T>::infinity(), T(0), T(0)};
    for (int f = 0; f < nf; ++f) {
      T c[3][3];
      for (int k = 0; k < 3; ++k)
        for (int d = 0; d < 3; ++d) c[k][d] = hv(ht(f, k), d);
      auto const h = kdforge::kernels::intersect_watertight(w, c[0], c[1], c[2], hr(i).tmin, hr(i).tmax);
      if (h.hit && (best.triangle < 0 || h.t < best.t)) best = kdforge::Hit<T>{f, h.t, h.u, h.v};
    }
    auto const& got = hh(i);
    bool const same = got.triangle == best.triangle &&
                      (best.triangle < 0 || (got.t == best.t && got.u == best.u && got.v == best.v));
    if (!same)
      mismatch("intersect_closest: ray " + std::to_string(i) + " hits triangle " + std::to_string(got.triangle) +
               " at t = " + std::to_string(double(got.t)) + ", brute force " + std::to_string(best.triangle) +
               " at t = " + std::to_string(double(best.t)));
    if (ho(i) != (best.triangle >= 0))
      mismatch("intersect_any: ray " + std::to_string(i) + " disagrees with brute force");
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  Bytes b{data, size};
  if (b.u8() & 1) run<double>(b);
  else run<float>(b);
  return 0;
}
