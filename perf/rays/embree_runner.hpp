#pragma once
// Embree 3 (Debian: libembree-dev) as the CPU anchor of the ray benchmark:
// the same triangles and the same rays, traced with rtcIntersect1M and
// rtcOccluded1M in chunks over the threads Embree is given. Host code,
// compiled without Kokkos. Rays are 8 floats each: origin, direction,
// tmin, tmax (the layout of kdforge::Ray<float>).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kdforge_rays {

bool embree_available();

class EmbreeScene {
public:
  /// threads: Embree's worker threads (0: all cores). build_quality: "low"
  /// (Embree's choice for dynamic scenes, per-frame rebuilds) or "medium" (its default).
  EmbreeScene(int threads, std::string const& build_quality);
  ~EmbreeScene();
  EmbreeScene(EmbreeScene const&) = delete;
  EmbreeScene& operator=(EmbreeScene const&) = delete;

  /// Builds the scene over the triangles (replacing the last one); returns milliseconds.
  double build(float const* vertices, std::int64_t nv, std::int32_t const* triangles, std::int64_t nf);
  /// Closest hits: triangle (-1: none) and t per ray; returns milliseconds.
  double closest(float const* rays, std::int64_t m, std::vector<std::int32_t>& triangle, std::vector<float>& t);
  /// Whether each ray hits anything in [tmin, tmax]; returns milliseconds.
  double any(float const* rays, std::int64_t m, std::vector<char>& occluded);
  int threads() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace kdforge_rays
