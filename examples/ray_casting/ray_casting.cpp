// Ray casting with shadows over a moving mesh: a sphere bobbing above a
// floor, tessellated into triangles. Every frame moves the sphere, rebuilds
// the SAH k-d tree (kdforge::build_sah_tree), casts one eye ray per pixel
// (kdforge::intersect_closest) and one shadow ray from each hit towards the
// light (kdforge::intersect_any), and shades by the cosine to the light.
// The last frame is written as shadows.pgm (a grey-scale image any viewer
// opens). A full renderer with mirrors, glass and per-frame timings is
// kdforge-render (perf/rays).
#include <kdforge/kdforge.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int const w = 320, h = 240, frames = 5, rings = 48, segs = 96;
  float const pi = 3.14159265f;

  // the mesh: a floor of two triangles, then a UV sphere of radius 1
  int const nv = 4 + (rings + 1) * (segs + 1), nf = 2 + 2 * rings * segs;
  Kokkos::View<float* [3], MS> vertices("vertices", nv);
  Kokkos::View<std::int32_t* [3], MS> triangles("triangles", nf);
  auto hf = Kokkos::create_mirror_view(triangles);
  int const floor_tris[2][3] = {{0, 2, 1}, {0, 3, 2}};
  for (int t = 0; t < 2; ++t)
    for (int c = 0; c < 3; ++c) hf(t, c) = floor_tris[t][c];
  for (int j = 0, t = 2; j < rings; ++j)
    for (int i = 0; i < segs; ++i, t += 2) {
      int const a = 4 + j * (segs + 1) + i, b = a + 1, c = a + segs + 1, d = c + 1;
      hf(t, 0) = a, hf(t, 1) = b, hf(t, 2) = d;
      hf(t + 1, 0) = a, hf(t + 1, 1) = d, hf(t + 1, 2) = c;
    }
  Kokkos::deep_copy(triangles, hf);
  auto hv = Kokkos::create_mirror_view(vertices);

  Kokkos::View<kdforge::Ray<float>*, MS> rays("eye", w * h), shadow("shadow", w * h);
  Kokkos::View<kdforge::Hit<float>*, MS> hits;
  Kokkos::View<bool*, MS> occluded;
  Kokkos::View<float*, MS> image("image", w * h);
  for (int frame = 0; frame < frames; ++frame) {
    float const lift = 1.2f + 0.3f * std::sin(float(frame)); // the sphere's centre height
    float const floor_v[4][3] = {{-4, 0, -4}, {4, 0, -4}, {4, 0, 4}, {-4, 0, 4}};
    for (int v = 0; v < 4; ++v)
      for (int d = 0; d < 3; ++d) hv(v, d) = floor_v[v][d];
    for (int j = 0; j <= rings; ++j)
      for (int i = 0; i <= segs; ++i) {
        float const th = pi * float(j) / float(rings), ph = 2 * pi * float(i) / float(segs);
        int const v = 4 + j * (segs + 1) + i;
        hv(v, 0) = std::sin(th) * std::cos(ph);
        hv(v, 1) = lift + std::cos(th);
        hv(v, 2) = std::sin(th) * std::sin(ph);
      }
    Kokkos::deep_copy(vertices, hv);

    auto const t0 = std::chrono::steady_clock::now();
    auto tree = kdforge::build_sah_tree(Exec{}, vertices, triangles);
    // eye rays from (0, 2, 6) towards (0, 1, 0), a 45-degree field of view
    Kokkos::parallel_for(
        "eye_rays", Kokkos::RangePolicy<Exec>(0, w * h), KOKKOS_LAMBDA(int p) {
          float const x = (2 * (float(p % w) + 0.5f) / float(w) - 1) * 0.414f * float(w) / float(h);
          float const y = (1 - 2 * (float(p / w) + 0.5f) / float(h)) * 0.414f;
          kdforge::Ray<float> r{{0, 2, 6}, {x, y - 0.164f, -0.986f}, 0, 1e30f};
          rays(p) = r;
        });
    kdforge::intersect_closest(Exec{}, tree, rays, hits);
    // shadow rays: from just in front of each hit to the light; misses get an empty interval
    Kokkos::parallel_for(
        "shadow_rays", Kokkos::RangePolicy<Exec>(0, w * h), KOKKOS_LAMBDA(int p) {
          kdforge::Ray<float> s{{0, 0, 0}, {0, 1, 0}, 1, 0};
          if (hits(p).triangle >= 0) {
            float const t = hits(p).t * 0.9999f;
            for (int d = 0; d < 3; ++d) s.origin[d] = rays(p).origin[d] + t * rays(p).direction[d];
            float const light[3] = {3, 6, 4};
            for (int d = 0; d < 3; ++d) s.direction[d] = light[d] - s.origin[d];
            s.tmin = 0;
            s.tmax = 1;
          }
          shadow(p) = s;
        });
    kdforge::intersect_any(Exec{}, tree, shadow, occluded);
    // shade: the cosine between the triangle's normal and the light, halved in shadow
    Kokkos::parallel_for(
        "shade", Kokkos::RangePolicy<Exec>(0, w * h), KOKKOS_LAMBDA(int p) {
          auto const hit = hits(p);
          if (hit.triangle < 0) {
            image(p) = 0.15f;
            return;
          }
          float e1[3], e2[3];
          for (int d = 0; d < 3; ++d) {
            e1[d] = vertices(triangles(hit.triangle, 1), d) - vertices(triangles(hit.triangle, 0), d);
            e2[d] = vertices(triangles(hit.triangle, 2), d) - vertices(triangles(hit.triangle, 0), d);
          }
          float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
          float const nl = ::sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
          float const* l = shadow(p).direction;
          float const ll = ::sqrtf(l[0] * l[0] + l[1] * l[1] + l[2] * l[2]);
          float const c = ::fabsf(n[0] * l[0] + n[1] * l[1] + n[2] * l[2]) / (nl * ll);
          image(p) = 0.1f + 0.9f * c * (occluded(p) ? 0.35f : 1.f);
        });
    Kokkos::fence();
    double const ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("frame %d: %d triangles, tree SAH cost %.1f, build + %d eye and shadow rays + shading %.2f ms\n", frame,
                nf, kdforge::sah_cost(tree), w * h, ms);
  }

  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, image);
  auto hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, hits);
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, occluded);
  int on_sphere = 0, in_shadow = 0;
  for (int p = 0; p < w * h; ++p) {
    on_sphere += hh(p).triangle >= 2;
    in_shadow += hh(p).triangle >= 0 && hh(p).triangle < 2 && ho(p);
  }
  std::FILE* f = std::fopen("shadows.pgm", "wb");
  if (!f) return 1;
  std::fprintf(f, "P5\n%d %d\n255\n", w, h);
  for (int p = 0; p < w * h; ++p) std::fputc(int(255 * std::fmin(1.f, hi(p))), f);
  std::fclose(f);
  std::printf("wrote shadows.pgm: %d pixels see the sphere, %d the floor in its shadow\n", on_sphere, in_shadow);
  // the sphere fills part of the view and casts a shadow on the floor
  return on_sphere > 0 && in_shadow > 0 ? 0 : 1;
}
