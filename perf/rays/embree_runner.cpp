// Embree 3 baseline (see embree_runner.hpp). Built only where Embree is
// found; elsewhere embree_available() is false and the benchmark says so.
#include "embree_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#if KDFORGE_HAVE_EMBREE
#include <embree3/rtcore.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#endif

namespace kdforge_rays {

#if KDFORGE_HAVE_EMBREE
namespace {
constexpr std::int64_t chunk = 1024;
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

struct EmbreeScene::Impl {
  int threads;
  RTCBuildQuality quality;
  RTCDevice device = nullptr;
  RTCScene scene = nullptr;
  std::unique_ptr<tbb::global_control> control;
};

bool embree_available() { return true; }

EmbreeScene::EmbreeScene(int threads, std::string const& build_quality) : impl_(new Impl) {
  impl_->threads = threads > 0 ? threads : int(std::thread::hardware_concurrency());
  impl_->quality = build_quality == "low" ? RTC_BUILD_QUALITY_LOW : RTC_BUILD_QUALITY_MEDIUM;
  // Embree's builders and our trace loops both run on TBB: one cap for both
  impl_->control.reset(new tbb::global_control(tbb::global_control::max_allowed_parallelism, std::size_t(impl_->threads)));
  std::string const config = "threads=" + std::to_string(impl_->threads);
  impl_->device = rtcNewDevice(config.c_str());
  if (!impl_->device) throw std::runtime_error("Embree: rtcNewDevice failed");
}

EmbreeScene::~EmbreeScene() {
  if (impl_->scene) rtcReleaseScene(impl_->scene);
  if (impl_->device) rtcReleaseDevice(impl_->device);
}

int EmbreeScene::threads() const { return impl_->threads; }

double EmbreeScene::build(float const* vertices, std::int64_t nv, std::int32_t const* triangles, std::int64_t nf) {
  auto const t0 = std::chrono::steady_clock::now();
  if (impl_->scene) rtcReleaseScene(impl_->scene);
  impl_->scene = rtcNewScene(impl_->device);
  if (impl_->quality == RTC_BUILD_QUALITY_LOW) rtcSetSceneFlags(impl_->scene, RTC_SCENE_FLAG_DYNAMIC);
  rtcSetSceneBuildQuality(impl_->scene, impl_->quality);
  RTCGeometry g = rtcNewGeometry(impl_->device, RTC_GEOMETRY_TYPE_TRIANGLE);
  rtcSetGeometryBuildQuality(g, impl_->quality);
  // shared buffers: Embree reads the caller's arrays (it may read 16 bytes
  // past the last vertex; the caller's vector holds 3 floats per vertex, so
  // the copy below pads it)
  auto* v = static_cast<float*>(rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_VERTEX, 0, RTC_FORMAT_FLOAT3,
                                                        3 * sizeof(float), std::size_t(nv)));
  auto* f = static_cast<std::uint32_t*>(rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_INDEX, 0, RTC_FORMAT_UINT3,
                                                                3 * sizeof(std::uint32_t), std::size_t(nf)));
  std::copy(vertices, vertices + 3 * nv, v);
  for (std::int64_t i = 0; i < 3 * nf; ++i) f[i] = std::uint32_t(triangles[i]);
  rtcCommitGeometry(g);
  rtcAttachGeometry(impl_->scene, g);
  rtcReleaseGeometry(g);
  rtcCommitScene(impl_->scene);
  return ms_since(t0);
}

double EmbreeScene::closest(float const* rays, std::int64_t m, std::vector<std::int32_t>& triangle, std::vector<float>& t) {
  std::vector<RTCRayHit> rh(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) { // packing is not timed
    float const* r = rays + 8 * i;
    RTCRayHit& x = rh[std::size_t(i)];
    x.ray.org_x = r[0]; x.ray.org_y = r[1]; x.ray.org_z = r[2];
    x.ray.dir_x = r[3]; x.ray.dir_y = r[4]; x.ray.dir_z = r[5];
    x.ray.tnear = r[6]; x.ray.tfar = r[7];
    x.ray.time = 0; x.ray.mask = ~0u; x.ray.id = 0; x.ray.flags = 0;
    x.hit.geomID = RTC_INVALID_GEOMETRY_ID; x.hit.primID = RTC_INVALID_GEOMETRY_ID;
    x.hit.instID[0] = RTC_INVALID_GEOMETRY_ID;
  }
  RTCScene scene = impl_->scene;
  auto const t0 = std::chrono::steady_clock::now();
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, (m + chunk - 1) / chunk), [&](auto const& range) {
    RTCIntersectContext ctx;
    rtcInitIntersectContext(&ctx);
    ctx.flags = RTC_INTERSECT_CONTEXT_FLAG_COHERENT;
    for (std::int64_t c = range.begin(); c < range.end(); ++c) {
      std::int64_t const b = c * chunk, e = std::min(m, b + chunk);
      rtcIntersect1M(scene, &ctx, rh.data() + b, unsigned(e - b), sizeof(RTCRayHit));
    }
  });
  double const ms = ms_since(t0);
  triangle.resize(std::size_t(m));
  t.resize(std::size_t(m));
  for (std::int64_t i = 0; i < m; ++i) {
    bool const hit = rh[std::size_t(i)].hit.geomID != RTC_INVALID_GEOMETRY_ID;
    triangle[std::size_t(i)] = hit ? std::int32_t(rh[std::size_t(i)].hit.primID) : -1;
    t[std::size_t(i)] = hit ? rh[std::size_t(i)].ray.tfar : std::numeric_limits<float>::infinity();
  }
  return ms;
}

double EmbreeScene::any(float const* rays, std::int64_t m, std::vector<char>& occluded) {
  std::vector<RTCRay> rr(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) {
    float const* r = rays + 8 * i;
    RTCRay& x = rr[std::size_t(i)];
    x.org_x = r[0]; x.org_y = r[1]; x.org_z = r[2];
    x.dir_x = r[3]; x.dir_y = r[4]; x.dir_z = r[5];
    x.tnear = r[6]; x.tfar = r[7];
    x.time = 0; x.mask = ~0u; x.id = 0; x.flags = 0;
  }
  RTCScene scene = impl_->scene;
  auto const t0 = std::chrono::steady_clock::now();
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, (m + chunk - 1) / chunk), [&](auto const& range) {
    RTCIntersectContext ctx;
    rtcInitIntersectContext(&ctx);
    for (std::int64_t c = range.begin(); c < range.end(); ++c) {
      std::int64_t const b = c * chunk, e = std::min(m, b + chunk);
      rtcOccluded1M(scene, &ctx, rr.data() + b, unsigned(e - b), sizeof(RTCRay));
    }
  });
  double const ms = ms_since(t0);
  occluded.resize(std::size_t(m));
  for (std::int64_t i = 0; i < m; ++i) // Embree marks an occluded ray with tfar = -inf
    occluded[std::size_t(i)] = rr[std::size_t(i)].tfar < 0 && std::isinf(rr[std::size_t(i)].tfar);
  return ms;
}

#else

struct EmbreeScene::Impl {};
bool embree_available() { return false; }
EmbreeScene::EmbreeScene(int, std::string const&) { throw std::runtime_error("built without Embree"); }
EmbreeScene::~EmbreeScene() = default;
int EmbreeScene::threads() const { return 0; }
double EmbreeScene::build(float const*, std::int64_t, std::int32_t const*, std::int64_t) { return 0; }
double EmbreeScene::closest(float const*, std::int64_t, std::vector<std::int32_t>&, std::vector<float>&) { return 0; }
double EmbreeScene::any(float const*, std::int64_t, std::vector<char>&) { return 0; }

#endif

} // namespace kdforge_rays
