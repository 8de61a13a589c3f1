#pragma once
// A Whitted-style ray tracer on kdforge's SAH trees: Zhou, Hou, Wang & Guo
// 2008, section 4. Every frame deforms the mesh, rebuilds the tree from
// scratch and traces in passes, as the paper's GPU ray tracer does:
//   1. eye rays, closest hit;
//   2. per hit, shadow rays to every light (any hit) and the direct light
//      they would bring; the hits on mirror and glass surfaces spawn one
//      secondary ray each (refraction for glass, total internal reflection
//      where Snell's law has no answer; reflection for mirrors), compacted
//      by a scan into the next pass's ray list;
//   3. repeat 2 on the secondary rays for each bounce.
// Differences from the paper: shadow rays are traced once per bounce right
// after its hits (the paper traces them all at the end; the work is the
// same), and glass spawns only its refracted ray, not a reflected one too,
// so every pass has at most one ray per pixel: contributions are added to
// the pixel without atomics, in an order fixed by the passes, and the image
// is the same on every backend up to the floating point of each target's
// math functions. Shading is Blinn-Phong with vertex normals interpolated
// at the hit (the geometric normal decides sides and ray offsets).
//
// Caustics (section 5.3), in scenes that ask for them: each frame shoots
// photons from the first light into the cone around the mirror and glass
// objects (the projection map reduced to their bounding sphere), follows
// them through mirrors and glass in passes like the eye rays', stores them
// where they first land on a diffuse surface after at least one such
// bounce, builds a VVH photon tree (kdforge::build_vvh_tree) and adds to
// every diffuse eye hit the radiance estimate of its k nearest photons
// under a cone filter (Jensen 2001), found by the exact kNN walk of the VVH
// tree or, as the paper does, by range kNN (Algorithm 6; --gather range):
// on an H100 the walk takes a fifth of range kNN's time (docs/performance.md).
// Photons and gathers are compacted by scans, so the image stays the same
// on every backend.
#include "scenes.hpp"

#include <kdforge/kdforge.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kdforge_rays {

struct FrameStats {
  double deform_ms = 0, build_ms = 0, trace_ms = 0, frame_ms = 0;
  std::int64_t eye_rays = 0, shadow_rays = 0, secondary_rays = 0;
  // caustics: photon tracing, the photon tree's build, the gathers (within trace_ms)
  double photon_ms = 0, photon_tree_ms = 0, gather_ms = 0;
  std::int64_t photons_stored = 0, gathers = 0;
};

// The ray batches of one frame, on the host, for tracing the same rays with
// another library: closest-hit batches (eye and secondary rays) and any-hit
// batches (shadow rays), in the order the frame traced them.
struct RayBatches {
  std::vector<std::vector<kdforge::Ray<float>>> closest, any;
};

namespace detail {
KOKKOS_INLINE_FUNCTION float dot3(float const* a, float const* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

// Where a ray meets a triangle: the point, the unit direction, the geometric
// normal turned to face the ray (up where the triangle has no area), whether
// the ray came from behind it, and the shading normal (the vertex normals
// interpolated at the hit, on the ray's side; the geometric one where they
// disagree, as on a coarse mesh's silhouette, or vanish).
struct Surface {
  float p[3], dir[3], nrm[3], sn[3];
  bool inside;
  bool flat; // zero area: nrm is a stand-in
};

template <class Vertices, class Normals, class Triangles>
KOKKOS_INLINE_FUNCTION Surface surface_at(Vertices const& vertices, Normals const& normals, Triangles const& triangles,
                                          kdforge::Ray<float> const& r, kdforge::Hit<float> const& h) {
  Surface s;
  float e1[3], e2[3];
  for (int d = 0; d < 3; ++d) {
    float const a = vertices(triangles(h.triangle, 0), d);
    e1[d] = vertices(triangles(h.triangle, 1), d) - a;
    e2[d] = vertices(triangles(h.triangle, 2), d) - a;
    s.p[d] = r.origin[d] + h.t * r.direction[d];
  }
  s.nrm[0] = e1[1] * e2[2] - e1[2] * e2[1];
  s.nrm[1] = e1[2] * e2[0] - e1[0] * e2[2];
  s.nrm[2] = e1[0] * e2[1] - e1[1] * e2[0];
  float const nl = ::sqrtf(dot3(s.nrm, s.nrm));
  float const dl = ::sqrtf(dot3(r.direction, r.direction));
  s.flat = !(nl > 0);
  for (int d = 0; d < 3; ++d) {
    s.nrm[d] = nl > 0 ? s.nrm[d] / nl : (d == 1 ? 1.f : 0.f);
    s.dir[d] = r.direction[d] / dl;
  }
  s.inside = dot3(s.nrm, s.dir) > 0;
  if (s.inside)
    for (int d = 0; d < 3; ++d) s.nrm[d] = -s.nrm[d];
  float const w0 = 1 - h.u - h.v;
  for (int d = 0; d < 3; ++d)
    s.sn[d] = w0 * normals(triangles(h.triangle, 0), d) + h.u * normals(triangles(h.triangle, 1), d) +
              h.v * normals(triangles(h.triangle, 2), d);
  float const snl = ::sqrtf(dot3(s.sn, s.sn));
  float const side = dot3(s.sn, s.nrm) < 0 ? -1.f : 1.f;
  for (int d = 0; d < 3; ++d) s.sn[d] = snl > 0 ? side * s.sn[d] / snl : s.nrm[d];
  if (dot3(s.sn, s.dir) >= 0)
    for (int d = 0; d < 3; ++d) s.sn[d] = s.nrm[d];
  return s;
}

// The one ray a mirror or glass surface sends on (glass refracts, or
// reflects where Snell's law has no answer; a mirror reflects), starting
// eps off the surface on its side; returns the share of light it carries.
KOKKOS_INLINE_FUNCTION float bounce(Surface const& s, Material const& m, float eps, kdforge::Ray<float>& next) {
  float const cosi = -dot3(s.sn, s.dir);
  float out[3];
  float share = m.reflect;
  float sign = 1; // the new origin's side of the surface: +1 in front, -1 behind
  bool reflect = m.transmit <= 0;
  if (!reflect) {
    float const eta = s.inside ? m.ior : 1.f / m.ior;
    float const k = 1 - eta * eta * (1 - cosi * cosi);
    share = m.transmit;
    if (k < 0) {
      reflect = true; // total internal reflection
    } else {
      for (int d = 0; d < 3; ++d) out[d] = eta * s.dir[d] + (eta * cosi - ::sqrtf(k)) * s.sn[d];
      sign = -1;
    }
  }
  if (reflect)
    for (int d = 0; d < 3; ++d) out[d] = s.dir[d] + 2 * cosi * s.sn[d];
  for (int d = 0; d < 3; ++d) {
    next.origin[d] = s.p[d] + sign * eps * s.nrm[d];
    next.direction[d] = out[d];
  }
  next.tmin = 0;
  next.tmax = kdforge::detail::infinity<float>();
  return share;
}
} // namespace detail

template <class Exec>
class Renderer {
public:
  using MS = typename Exec::memory_space;
  using Rays = Kokkos::View<kdforge::Ray<float>*, MS>;
  using Hits = Kokkos::View<kdforge::Hit<float>*, MS>;

  Renderer(Exec const& exec, Scene const& scene, int width, int height, kdforge::SahOptions const& options = {})
      : exec_(exec), width_(width), height_(height), bounces_(scene.bounces), options_(options),
        lights_count_(int(scene.lights.size())) {
    auto const nv = scene.mesh.vertex_count();
    auto const nf = scene.mesh.triangle_count();
    base_ = upload<float* [3]>(scene.mesh.vertices, nv, "base");
    motion_ = upload<float* [3]>(scene.motion, nv, "motion");
    normals_ = upload<float* [3]>(scene.normals, nv, "normals");
    vertices_ = Kokkos::View<float* [3], MS>("kdforge_rays::vertices", nv);
    triangles_ = upload<std::int32_t* [3]>(scene.mesh.triangles, nf, "triangles");
    material_ = upload<std::uint8_t*>(scene.mesh.material, nf, "material");
    materials_ = upload<Material*>(scene.materials, std::int64_t(scene.materials.size()), "materials");
    lights_ = upload<Light*>(scene.lights, std::int64_t(scene.lights.size()), "lights");
    camera_ = scene.camera;
    float lo[3] = {1e30f, 1e30f, 1e30f}, hi[3] = {-1e30f, -1e30f, -1e30f};
    for (std::int64_t v = 0; v < nv; ++v)
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::fmin(lo[d], scene.mesh.vertices[std::size_t(3 * v + d)]);
        hi[d] = std::fmax(hi[d], scene.mesh.vertices[std::size_t(3 * v + d)]);
      }
    float ext = 0;
    for (int d = 0; d < 3; ++d) ext = std::fmax(ext, hi[d] - lo[d]);
    epsilon_ = 1e-4f * (ext > 0 ? ext : 1.f);
    std::int64_t const n = std::int64_t(width) * height;
    image_ = Kokkos::View<float* [3], MS>("kdforge_rays::image", n);
    rays_ = Rays("kdforge_rays::rays", n);
    next_ = Rays("kdforge_rays::next", n);
    pixel_ = Kokkos::View<std::int32_t*, MS>("kdforge_rays::pixel", n);
    next_pixel_ = Kokkos::View<std::int32_t*, MS>("kdforge_rays::next_pixel", n);
    weight_ = Kokkos::View<float* [3], MS>("kdforge_rays::weight", n);
    next_weight_ = Kokkos::View<float* [3], MS>("kdforge_rays::next_weight", n);
    spawn_ = Kokkos::View<std::int32_t*, MS>("kdforge_rays::spawn", n);
    hits_ = Hits("kdforge_rays::hits", n);
    std::int64_t const ns = n * (lights_count_ > 0 ? lights_count_ : 1);
    shadow_ = Rays("kdforge_rays::shadow", ns);
    light_ = Kokkos::View<float* [3], MS>("kdforge_rays::light", ns);
    occluded_ = Kokkos::View<bool*, MS>("kdforge_rays::occluded", ns);
    gather_k_ = scene.gather_k;
    caustic_scale_ = scene.caustic_scale;
    if (scene.caustic_photons > 0 && !scene.lights.empty()) setup_caustics(scene);
  }

  // the cone from the first light around the bounding sphere of the mirror
  // and glass triangles
  void setup_caustics(Scene const& scene) {
    float lo[3] = {1e30f, 1e30f, 1e30f}, hi[3] = {-1e30f, -1e30f, -1e30f};
    bool any = false;
    for (std::int64_t f = 0; f < scene.mesh.triangle_count(); ++f) {
      Material const& m = scene.materials[scene.mesh.material[std::size_t(f)]];
      if (m.reflect <= 0 && m.transmit <= 0) continue;
      any = true;
      for (int c = 0; c < 3; ++c)
        for (int d = 0; d < 3; ++d) {
          float const v = scene.mesh.vertices[3 * std::size_t(scene.mesh.triangles[std::size_t(3 * f + c)]) + std::size_t(d)];
          lo[d] = std::fmin(lo[d], v);
          hi[d] = std::fmax(hi[d], v);
        }
    }
    if (!any) return;
    float centre[3], radius = 0, dist = 0;
    for (int d = 0; d < 3; ++d) {
      centre[d] = 0.5f * (lo[d] + hi[d]);
      radius += 0.25f * (hi[d] - lo[d]) * (hi[d] - lo[d]);
      light_pos_[d] = scene.lights[0].position[d];
      light_color_[d] = scene.lights[0].color[d];
      emit_axis_[d] = centre[d] - light_pos_[d];
      dist += emit_axis_[d] * emit_axis_[d];
    }
    radius = 1.05f * std::sqrt(radius); // a little margin for the objects' motion
    dist = std::sqrt(dist);
    for (int d = 0; d < 3; ++d) emit_axis_[d] /= dist;
    emit_cos_ = dist > radius ? std::sqrt(1 - (radius / dist) * (radius / dist)) : -1.f;
    // direct light here does not fall off with distance, photons' flux
    // does (spread over the cone): scale by the squared distance to the
    // objects so the two agree there
    caustic_scale_ = scene.caustic_scale * dist * dist;
    photons_ = scene.caustic_photons;
    photon_rays_ = Rays("kdforge_rays::photon_rays", photons_);
    photon_next_ = Rays("kdforge_rays::photon_next", photons_);
    photon_power_ = Kokkos::View<float* [3], MS>("kdforge_rays::photon_power", photons_);
    photon_next_power_ = Kokkos::View<float* [3], MS>("kdforge_rays::photon_next_power", photons_);
    photon_hits_ = Hits("kdforge_rays::photon_hits", photons_);
    photon_alive_ = Kokkos::View<std::int32_t*, MS>("kdforge_rays::photon_alive", photons_);
    photon_store_ = Kokkos::View<std::int32_t*, MS>("kdforge_rays::photon_store", photons_);
    stored_pos_ = Kokkos::View<float* [3], MS>("kdforge_rays::stored_pos", photons_);
    stored_power_ = Kokkos::View<float* [3], MS>("kdforge_rays::stored_power", photons_);
  }

  /// Deforms the mesh to time t, rebuilds the tree and traces the image
  /// with `bounces` reflection/refraction bounces (-1: the scene's own).
  FrameStats frame(float t, int bounces = -1, RayBatches* capture = nullptr) {
    using clock = std::chrono::steady_clock;
    FrameStats st;
    auto const t0 = clock::now();
    deform(t);
    exec_.fence();
    auto const t1 = clock::now();
    tree_ = kdforge::build_sah_tree(exec_, vertices_, triangles_, options_);
    exec_.fence();
    auto const t2 = clock::now();
    if (photons_ > 0) trace_photons(st);
    trace(bounces < 0 ? bounces_ : bounces, st, capture);
    exec_.fence();
    auto const t3 = clock::now();
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    st.deform_ms = ms(t0, t1);
    st.build_ms = ms(t1, t2);
    st.trace_ms = ms(t2, t3);
    st.frame_ms = ms(t0, t3);
    return st;
  }

  kdforge::TriangleTree<MS, float> const& tree() const { return tree_; }
  Kokkos::View<float* [3], MS> const& vertices() const { return vertices_; }
  Kokkos::View<std::int32_t* [3], MS> const& triangles() const { return triangles_; }

  /// The last frame as 8-bit RGB, row 0 at the top.
  std::vector<std::uint8_t> image_rgb8() const {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, image_);
    std::vector<std::uint8_t> out(std::size_t(3 * h.extent(0)));
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (int c = 0; c < 3; ++c) {
        float const v = std::pow(std::fmin(std::fmax(h(i, c), 0.f), 1.f), 1.f / 2.2f); // display gamma
        out[3 * i + std::size_t(c)] = std::uint8_t(std::lround(255.f * v));
      }
    return out;
  }

  /// The eye rays of the camera (one per pixel, row 0 at the top) into `rays`.
  void eye_rays(Rays const& rays) const {
    float e[3], f[3], r[3], u[3];
    for (int d = 0; d < 3; ++d) {
      e[d] = camera_.eye[d];
      f[d] = camera_.target[d] - camera_.eye[d];
    }
    normalize(f);
    cross(f, camera_.up, r);
    normalize(r);
    cross(r, f, u);
    float const s = std::tan(0.5f * camera_.fov_degrees * 3.14159265f / 180.f);
    int const w = width_, h = height_;
    float const aspect = float(w) / float(h);
    Kokkos::parallel_for(
        "kdforge_rays::eye_rays", Kokkos::RangePolicy<Exec>(exec_, 0, std::int64_t(w) * h), KOKKOS_LAMBDA(std::int64_t i) {
          float const px = (2 * (float(i % w) + 0.5f) / float(w) - 1) * s * aspect;
          float const py = (1 - 2 * (float(i / w) + 0.5f) / float(h)) * s;
          kdforge::Ray<float> ray;
          float len = 0;
          for (int d = 0; d < 3; ++d) {
            ray.origin[d] = e[d];
            ray.direction[d] = f[d] + px * r[d] + py * u[d];
            len += ray.direction[d] * ray.direction[d];
          }
          len = ::sqrtf(len);
          for (int d = 0; d < 3; ++d) ray.direction[d] /= len;
          ray.tmin = 0;
          ray.tmax = kdforge::detail::infinity<float>();
          rays(i) = ray;
        });
  }

  void deform(float t) const {
    auto base = base_, motion = motion_, vertices = vertices_;
    Kokkos::parallel_for(
        "kdforge_rays::deform", Kokkos::RangePolicy<Exec>(exec_, 0, std::int64_t(base.extent(0))),
        KOKKOS_LAMBDA(std::int64_t v) {
          float const s = ::sinf(t + 0.7f * base(v, 0) + 1.3f * base(v, 2));
          for (int d = 0; d < 3; ++d) vertices(v, d) = base(v, d) + motion(v, d) * s;
        });
  }

private:
  template <class DT, class Vec>
  Kokkos::View<DT, MS> upload(Vec const& host, std::int64_t n, char const* name) {
    Kokkos::View<DT, MS> v(std::string("kdforge_rays::") + name, n);
    auto h = Kokkos::create_mirror_view(v);
    using H = decltype(h);
    auto const* src = reinterpret_cast<typename H::value_type const*>(host.data());
    if constexpr (H::rank == 1) {
      for (std::int64_t i = 0; i < n; ++i) h(i) = src[i];
    } else {
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t c = 0; c < std::int64_t(h.extent(1)); ++c) h(i, c) = src[i * std::int64_t(h.extent(1)) + c];
    }
    Kokkos::deep_copy(v, h);
    return v;
  }
  static void normalize(float* a) {
    float const l = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    for (int d = 0; d < 3; ++d) a[d] /= l;
  }
  static void cross(float const* a, float const* b, float* c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
  }

public: // kernels (public: CUDA lambdas may not live in private member functions)
  void trace(int bounces, FrameStats& st, RayBatches* capture) {
    std::int64_t n = std::int64_t(width_) * height_;
    Kokkos::deep_copy(exec_, image_, 0.f);
    eye_rays(rays_);
    {
      auto pixel = pixel_;
      auto weight = weight_;
      Kokkos::parallel_for(
          "kdforge_rays::eye_init", Kokkos::RangePolicy<Exec>(exec_, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
            pixel(i) = std::int32_t(i);
            for (int c = 0; c < 3; ++c) weight(i, c) = 1.f;
          });
    }
    st.eye_rays = n;
    for (int b = 0; n > 0; ++b) {
      Rays rays = Kokkos::subview(rays_, std::make_pair(std::int64_t(0), n));
      Hits hits = Kokkos::subview(hits_, std::make_pair(std::int64_t(0), n));
      if (capture) capture->closest.push_back(to_host(rays));
      kdforge::intersect_closest(exec_, tree_, rays, hits);
      if (stored_count_ > 0) gather(n, st);
      std::int64_t const ns = n * lights_count_;
      shade(n, b < bounces);
      if (ns > 0) {
        Rays shadow = Kokkos::subview(shadow_, std::make_pair(std::int64_t(0), ns));
        Kokkos::View<bool*, MS> occluded = Kokkos::subview(occluded_, std::make_pair(std::int64_t(0), ns));
        if (capture) capture->any.push_back(to_host(shadow));
        kdforge::intersect_any(exec_, tree_, shadow, occluded);
        st.shadow_rays += ns;
        add_light(n);
      }
      if (b >= bounces) break;
      n = compact(n);
      st.secondary_rays += n;
      std::swap(pixel_, next_pixel_);
    }
  }

  // Shoots the photons, follows them through mirrors and glass, stores
  // those that land on a diffuse surface after a bounce, builds their tree.
  void trace_photons(FrameStats& st) {
    using clock = std::chrono::steady_clock;
    auto const t0 = clock::now();
    std::int64_t const total = photons_;
    {
      auto rays = photon_rays_;
      auto power = photon_power_;
      float const lp[3] = {light_pos_[0], light_pos_[1], light_pos_[2]};
      float const ax[3] = {emit_axis_[0], emit_axis_[1], emit_axis_[2]};
      float const cmin = emit_cos_;
      // every photon carries the light's power in the cone over their number
      float const share = 2 * 3.14159265f * (1 - cmin) / float(total);
      float const lc[3] = {light_color_[0] * share, light_color_[1] * share, light_color_[2] * share};
      Kokkos::parallel_for(
          "kdforge_rays::emit_photons", Kokkos::RangePolicy<Exec>(exec_, 0, total), KOKKOS_LAMBDA(std::int64_t i) {
            // two uniform numbers from the photon's index (splitmix64)
            auto mix = [](std::uint64_t z) {
              z += 0x9e3779b97f4a7c15ull;
              z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
              z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
              return z ^ (z >> 31);
            };
            float const u1 = float(mix(2 * std::uint64_t(i)) >> 40) / float(1u << 24);
            float const u2 = float(mix(2 * std::uint64_t(i) + 1) >> 40) / float(1u << 24);
            float const c = 1 - u1 * (1 - cmin), sn = ::sqrtf(::fmaxf(0.f, 1 - c * c)), ph = 6.2831853f * u2;
            // a basis around the axis: t = axis x up, normalised, and b = axis x t
            float t[3];
            if (ax[1] * ax[1] < 0.81f) {
              t[0] = -ax[2], t[1] = 0, t[2] = ax[0];
            } else {
              t[0] = 0, t[1] = ax[2], t[2] = -ax[1];
            }
            float const tl = ::sqrtf(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
            for (int d = 0; d < 3; ++d) t[d] /= tl;
            float const b[3] = {ax[1] * t[2] - ax[2] * t[1], ax[2] * t[0] - ax[0] * t[2], ax[0] * t[1] - ax[1] * t[0]};
            kdforge::Ray<float> r;
            for (int d = 0; d < 3; ++d) {
              r.origin[d] = lp[d];
              r.direction[d] = c * ax[d] + sn * (::cosf(ph) * t[d] + ::sinf(ph) * b[d]);
              power(i, d) = lc[d];
            }
            r.tmin = 0;
            r.tmax = kdforge::detail::infinity<float>();
            rays(i) = r;
          });
    }
    std::int64_t m = total, stored = 0;
    for (int bounce = 0; m > 0 && bounce <= 8; ++bounce) {
      Rays rays = Kokkos::subview(photon_rays_, std::make_pair(std::int64_t(0), m));
      Hits hits = Kokkos::subview(photon_hits_, std::make_pair(std::int64_t(0), m));
      kdforge::intersect_closest(exec_, tree_, rays, hits);
      scatter_photons(m, bounce);
      // the stored ones appended, the live ones moved to the front (scans: in photon order)
      auto store = photon_store_, alive = photon_alive_;
      auto next = photon_next_, nrays = photon_rays_;
      auto next_power = photon_next_power_, power = photon_power_;
      auto pos = stored_pos_, spow = stored_power_;
      std::int64_t const base = stored;
      std::int64_t added = 0, live = 0;
      Kokkos::parallel_scan(
          "kdforge_rays::store_photons", Kokkos::RangePolicy<Exec>(exec_, 0, m),
          KOKKOS_LAMBDA(std::int64_t i, std::int64_t & offset, bool final) {
            if (store(i)) {
              if (final)
                for (int d = 0; d < 3; ++d) {
                  pos(base + offset, d) = next(i).origin[d];
                  spow(base + offset, d) = next_power(i, d);
                }
              ++offset;
            }
          },
          added);
      Kokkos::parallel_scan(
          "kdforge_rays::compact_photons", Kokkos::RangePolicy<Exec>(exec_, 0, m),
          KOKKOS_LAMBDA(std::int64_t i, std::int64_t & offset, bool final) {
            if (alive(i)) {
              if (final) {
                nrays(offset) = next(i);
                for (int d = 0; d < 3; ++d) power(offset, d) = next_power(i, d);
              }
              ++offset;
            }
          },
          live);
      stored += added;
      m = live;
    }
    exec_.fence();
    auto const t1 = clock::now();
    stored_count_ = stored;
    st.photons_stored = stored;
    if (stored > 0) {
      photon_tree_points_ = Kokkos::View<float* [3], MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge_rays::photons"), stored);
      Kokkos::deep_copy(exec_, photon_tree_points_, Kokkos::subview(stored_pos_, std::make_pair(std::int64_t(0), stored), Kokkos::ALL));
      kdforge::VvhOptions vo;
      vo.expected_k = gather_k_;
      photon_tree_ = kdforge::build_vvh_tree(exec_, photon_tree_points_, vo);
    }
    exec_.fence();
    auto const t2 = clock::now();
    st.photon_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    st.photon_tree_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  }

  // One pass of the photons: mirrors reflect, glass refracts (tinted), a
  // diffuse surface after a bounce stores the photon (its position in next's
  // origin), and everything else ends.
  void scatter_photons(std::int64_t m, int bounce) {
    auto rays = photon_rays_;
    auto hits = photon_hits_;
    auto power = photon_power_, next_power = photon_next_power_;
    auto next = photon_next_;
    auto alive = photon_alive_, store = photon_store_;
    auto vertices = vertices_, normals = normals_;
    auto triangles = triangles_;
    auto material = material_;
    auto materials = materials_;
    float const eps = epsilon_;
    Kokkos::parallel_for(
        "kdforge_rays::scatter_photons", Kokkos::RangePolicy<Exec>(exec_, 0, m), KOKKOS_LAMBDA(std::int64_t i) {
          alive(i) = 0;
          store(i) = 0;
          kdforge::Hit<float> const h = hits(i);
          if (h.triangle < 0) return;
          kdforge::Ray<float> const r = rays(i);
          Material const mt = materials(material(h.triangle));
          detail::Surface const sf = detail::surface_at(vertices, normals, triangles, r, h);
          if (mt.reflect <= 0 && mt.transmit <= 0) {
            if (bounce == 0) return; // direct light: not a caustic
            kdforge::Ray<float> s;
            for (int d = 0; d < 3; ++d) {
              s.origin[d] = sf.p[d];
              s.direction[d] = r.direction[d];
              next_power(i, d) = power(i, d);
            }
            s.tmin = 0;
            s.tmax = 0;
            next(i) = s;
            store(i) = 1;
            return;
          }
          if (sf.flat) return;
          kdforge::Ray<float> s;
          float const share = detail::bounce(sf, mt, eps, s);
          for (int d = 0; d < 3; ++d) next_power(i, d) = power(i, d) * share * mt.color[d];
          next(i) = s;
          alive(i) = 1;
        });
  }

  // The caustic radiance at this pass's diffuse hits: the k nearest stored
  // photons under a cone filter (weight 1 - d / r, normalised by 1 - 2/3).
  void gather(std::int64_t n, FrameStats& st) {
    using clock = std::chrono::steady_clock;
    exec_.fence();
    auto const t0 = clock::now();
    auto rays = rays_;
    auto hits = hits_;
    auto material = material_;
    auto materials = materials_;
    // one scan lists the diffuse hits in ray order (and counts them)
    if (gather_ray_.extent(0) < std::size_t(n))
      gather_ray_ = Kokkos::View<std::int32_t*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge_rays::gather_ray"),
                                                    rays_.extent(0));
    auto ray_of = gather_ray_;
    std::int64_t count = 0;
    Kokkos::parallel_scan(
        "kdforge_rays::gather_list", Kokkos::RangePolicy<Exec>(exec_, 0, n),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t & offset, bool final) {
          std::int32_t const t = hits(i).triangle;
          if (t >= 0 && materials(material(t)).reflect <= 0 && materials(material(t)).transmit <= 0) {
            if (final) ray_of(offset) = std::int32_t(i);
            ++offset;
          }
        },
        count);
    if (count == 0) return;
    Kokkos::View<float* [3], MS> points(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge_rays::gathers"), count);
    Kokkos::parallel_for(
        "kdforge_rays::gather_points", Kokkos::RangePolicy<Exec>(exec_, 0, count), KOKKOS_LAMBDA(std::int64_t j) {
          std::int32_t const i = ray_of(j);
          kdforge::Ray<float> const r = rays(i);
          for (int d = 0; d < 3; ++d) points(j, d) = r.origin[d] + hits(i).t * r.direction[d];
        });
    auto const which = Kokkos::subview(gather_ray_, std::make_pair(std::int64_t(0), count));
    if (gather_by_range_)
      add_caustics(kdforge::range_knn(exec_, photon_tree_, points, gather_k_), which, count);
    else
      add_caustics(kdforge::knn(exec_, photon_tree_, points, gather_k_), which, count);
    exec_.fence();
    st.gathers += count;
    st.gather_ms += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  }

  // adds each gather's cone-filtered photon estimate to its pixel
  template <class Neighbours, class Which>
  void add_caustics(Neighbours const& nn, Which const& which, std::int64_t count) {
    int const k = gather_k_;
    auto pixel = pixel_;
    auto weight = weight_, image = image_;
    auto spow = stored_power_;
    auto hits = hits_;
    auto material = material_;
    auto materials = materials_;
    float const scale = caustic_scale_;
    Kokkos::parallel_for(
        "kdforge_rays::gather", Kokkos::RangePolicy<Exec>(exec_, 0, count), KOKKOS_LAMBDA(std::int64_t j) {
          float r2 = 0;
          for (int q = 0; q < k; ++q)
            if (nn.indices(j, q) >= 0) r2 = nn.sq_distances(j, q);
          if (!(r2 > 0)) return;
          float const r = ::sqrtf(r2);
          float flux[3] = {0, 0, 0};
          for (int q = 0; q < k; ++q) {
            auto const id = nn.indices(j, q);
            if (id < 0) continue;
            float const w = 1 - ::sqrtf(nn.sq_distances(j, q)) / r;
            for (int d = 0; d < 3; ++d) flux[d] += w * spow(id, d);
          }
          std::int32_t const i = which(j);
          Material const m = materials(material(hits(i).triangle));
          float const norm = scale / (3.14159265f * r2 * (1.f / 3.f));
          for (int d = 0; d < 3; ++d) image(pixel(i), d) += weight(i, d) * m.color[d] * flux[d] * norm;
        });
  }

  /// Gathers photons by range kNN (Algorithm 6, the paper's) rather than
  /// by the exact kNN walk of the same tree (the default: measured faster).
  void gather_by_range(bool on) { gather_by_range_ = on; }

  static std::vector<kdforge::Ray<float>> to_host(Rays const& r) {
    std::vector<kdforge::Ray<float>> out(r.extent(0));
    Kokkos::View<kdforge::Ray<float>*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(out.data(), out.size());
    Kokkos::deep_copy(h, r);
    return out;
  }

  // Direct light, sky for misses, and the secondary ray each mirror or glass
  // hit spawns (into next_, uncompacted, flagged in spawn_). Shadow rays are
  // stored light by light (ray i's to light l at l * n + i), so that
  // neighbouring rays share a light and start at neighbouring hits.
  void shade(std::int64_t n, bool spawn_secondary) {
    auto rays = rays_, next = next_, shadow = shadow_;
    auto hits = hits_;
    auto pixel = pixel_;
    auto weight = weight_, next_weight = next_weight_, light = light_, image = image_;
    auto spawn = spawn_;
    auto vertices = vertices_, normals = normals_;
    auto triangles = triangles_;
    auto material = material_;
    auto materials = materials_;
    auto lights = lights_;
    int const nl = lights_count_;
    float const eps = epsilon_;
    Kokkos::parallel_for(
        "kdforge_rays::shade", Kokkos::RangePolicy<Exec>(exec_, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
          using detail::dot3;
          kdforge::Ray<float> const r = rays(i);
          kdforge::Hit<float> const h = hits(i);
          std::int32_t const px = pixel(i);
          float w[3] = {weight(i, 0), weight(i, 1), weight(i, 2)};
          spawn(i) = 0;
          kdforge::Ray<float> empty;
          for (int d = 0; d < 3; ++d) {
            empty.origin[d] = 0;
            empty.direction[d] = 1;
          }
          empty.tmin = 1;
          empty.tmax = 0; // an empty interval: nothing to hit
          if (h.triangle < 0) {
            float const dl = ::sqrtf(dot3(r.direction, r.direction));
            float const up = 0.5f + 0.5f * r.direction[1] / dl;
            float const sky[3] = {0.55f + 0.25f * up, 0.65f + 0.2f * up, 0.8f + 0.15f * up};
            for (int c = 0; c < 3; ++c) image(px, c) += w[c] * sky[c];
            for (int l = 0; l < nl; ++l) {
              shadow(l * n + i) = empty;
              for (int c = 0; c < 3; ++c) light(l * n + i, c) = 0;
            }
            return;
          }
          detail::Surface const sf = detail::surface_at(vertices, normals, triangles, r, h);
          float const *p = sf.p, *nrm = sf.nrm, *sn = sf.sn, *dir = sf.dir;
          Material const m = materials(material(h.triangle));
          for (int c = 0; c < 3; ++c) image(px, c) += w[c] * 0.06f * m.color[c]; // ambient
          for (int l = 0; l < nl; ++l) {
            Light const L = lights(l);
            float to[3], half[3];
            for (int d = 0; d < 3; ++d) to[d] = L.position[d] - p[d];
            float const dist = ::sqrtf(dot3(to, to));
            float const cosl = dist > 0 ? dot3(sn, to) / dist : 0.f;
            if (!(cosl > 0) || !(dot3(nrm, to) > 0)) { // facing away, or behind the true surface
              shadow(l * n + i) = empty;
              for (int c = 0; c < 3; ++c) light(l * n + i, c) = 0;
              continue;
            }
            for (int d = 0; d < 3; ++d) half[d] = to[d] / dist - dir[d];
            float const hl = ::sqrtf(dot3(half, half));
            float const cosh = hl > 0 ? ::fmaxf(0.f, dot3(sn, half) / hl) : 0.f;
            float const spec = m.specular * ::powf(cosh, m.shininess);
            for (int c = 0; c < 3; ++c) light(l * n + i, c) = w[c] * L.color[c] * (m.color[c] * cosl + spec);
            kdforge::Ray<float> s;
            for (int d = 0; d < 3; ++d) {
              s.origin[d] = p[d] + eps * nrm[d];
              s.direction[d] = L.position[d] - s.origin[d];
            }
            s.tmin = 0;
            s.tmax = 0.9999f; // just short of the light
            shadow(l * n + i) = s;
          }
          if (!spawn_secondary || (m.transmit <= 0 && m.reflect <= 0)) return;
          kdforge::Ray<float> s;
          float const share = detail::bounce(sf, m, eps, s);
          next(i) = s;
          for (int c = 0; c < 3; ++c) next_weight(i, c) = w[c] * share * (m.transmit > 0 ? m.color[c] : 1.f);
          spawn(i) = 1;
        });
  }

  void add_light(std::int64_t n) {
    auto pixel = pixel_;
    auto light = light_, image = image_;
    auto occluded = occluded_;
    int const nl = lights_count_;
    Kokkos::parallel_for(
        "kdforge_rays::add_light", Kokkos::RangePolicy<Exec>(exec_, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
          std::int32_t const px = pixel(i);
          for (int l = 0; l < nl; ++l)
            if (!occluded(l * n + i))
              for (int c = 0; c < 3; ++c) image(px, c) += light(l * n + i, c);
        });
  }

  // The spawned secondary rays, in ray order (a scan); returns how many.
  std::int64_t compact(std::int64_t n) {
    auto spawn = spawn_;
    auto next = next_, rays = rays_;
    auto pixel = pixel_, next_pixel = next_pixel_;
    auto weight = weight_, next_weight = next_weight_;
    // the spawned rays sit in next_ at their source index; they are gathered
    // into rays_ and weight_ (whose pass is over) and their pixels into
    // next_pixel_ (the caller swaps it with pixel_)
    std::int64_t count = 0;
    Kokkos::parallel_scan(
        "kdforge_rays::compact", Kokkos::RangePolicy<Exec>(exec_, 0, n),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t & offset, bool final) {
          if (spawn(i)) {
            if (final) {
              rays(offset) = next(i);
              next_pixel(offset) = pixel(i);
              for (int c = 0; c < 3; ++c) weight(offset, c) = next_weight(i, c);
            }
            ++offset;
          }
        },
        count);
    return count;
  }

private:
  Exec exec_;
  int width_, height_, bounces_;
  kdforge::SahOptions options_;
  int lights_count_;
  float epsilon_ = 1e-4f;
  Camera camera_;
  Kokkos::View<float* [3], MS> base_, motion_, normals_, vertices_;
  Kokkos::View<std::int32_t* [3], MS> triangles_;
  Kokkos::View<std::uint8_t*, MS> material_;
  Kokkos::View<Material*, MS> materials_;
  Kokkos::View<Light*, MS> lights_;
  Kokkos::View<float* [3], MS> image_, weight_, next_weight_, light_;
  Rays rays_, next_, shadow_;
  Kokkos::View<std::int32_t*, MS> pixel_, next_pixel_, spawn_;
  Hits hits_;
  Kokkos::View<bool*, MS> occluded_;
  kdforge::TriangleTree<MS, float> tree_;
  // caustics
  int photons_ = 0, gather_k_ = 50;
  bool gather_by_range_ = false;
  float caustic_scale_ = 1.f, emit_cos_ = 1.f;
  float light_pos_[3] = {0, 0, 0}, light_color_[3] = {0, 0, 0}, emit_axis_[3] = {0, 1, 0};
  Rays photon_rays_, photon_next_;
  Hits photon_hits_;
  Kokkos::View<float* [3], MS> photon_power_, photon_next_power_, stored_pos_, stored_power_;
  Kokkos::View<std::int32_t*, MS> photon_alive_, photon_store_, gather_ray_;
  std::int64_t stored_count_ = 0;
  Kokkos::View<float* [3], MS> photon_tree_points_;
  decltype(kdforge::build_vvh_tree(std::declval<Exec const&>(), std::declval<Kokkos::View<float* [3], MS> const&>()))
      photon_tree_;
};

} // namespace kdforge_rays
