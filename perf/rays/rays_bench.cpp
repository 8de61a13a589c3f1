// kdforge-rays-bench: Zhou, Hou, Wang & Guo 2008's Table 2 (tree build time,
// trace time of 1024 x 1024 eye rays, SAH cost) and Table 4 (frames per
// second with the tree rebuilt every frame) on the procedural scenes of
// scenes.hpp, with the paper's numbers beside (GeForce 8800 Ultra) and
// Embree 3 on the same triangles and rays in the same process.
#include "embree_runner.hpp"
#include "renderer.hpp"
#include "scenes.hpp"

#include <kdforge/kdforge.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using RayF = kdforge::Ray<float>;
static_assert(sizeof(RayF) == 8 * sizeof(float), "the Embree runner reads rays as 8 floats");

struct Paper { // Table 2 (GPU builder) and Table 4, GeForce 8800 Ultra
  double tree_s, trace_s, sah, fps;
};
std::map<std::string, Paper> const paper = {{"Toys", {0.012, 0.018, 67.9, 32.0}},    {"Museum", {0.017, 0.108, 38.3, 8.00}},
                                            {"Robots", {0.039, 0.157, 59.7, 4.96}},  {"Kitchen", {0.053, 0.207, 77.8, 4.84}},
                                            {"Fairy Forest", {0.077, 0.078, 94.6, 6.40}}, {"Dragon", {0.093, 0.025, 193.9, 8.85}}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

template <class F>
double time_ms(F&& f) {
  Exec().fence();
  auto const t0 = std::chrono::steady_clock::now();
  f();
  Exec().fence();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The renderer's current mesh as x, y, z and three indices per entry, in
// that order whatever the device Views' layout (LayoutLeft on GPUs).
void host_mesh(kdforge_rays::Renderer<Exec> const& r, std::vector<float>& v, std::vector<std::int32_t>& tri) {
  auto const vh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.vertices());
  auto const fh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.triangles());
  v.resize(3 * vh.extent(0));
  tri.resize(3 * fh.extent(0));
  for (std::size_t i = 0; i < vh.extent(0); ++i)
    for (int d = 0; d < 3; ++d) v[3 * i + std::size_t(d)] = vh(i, d);
  for (std::size_t i = 0; i < fh.extent(0); ++i)
    for (int c = 0; c < 3; ++c) tri[3 * i + std::size_t(c)] = fh(i, c);
}

std::vector<std::string> split(std::string const& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"kdforge-rays-bench: SAH k-d trees over triangles and ray queries (Zhou et al. 2008, Tables 2-4)"};
  std::string scenes = "toys,museum,robots,kitchen,forest,dragon", quality = "low";
  int width = 1024, height = 1024, reps = 5, frames = 6, embree_threads = 0;
  bool embree = false, build_only = false;
  app.add_option("--scenes", scenes, "comma-separated procedural scenes or mesh files");
  app.add_option("--width", width)->check(CLI::Range(1, 8192));
  app.add_option("--height", height)->check(CLI::Range(1, 8192));
  app.add_option("--reps", reps, "timed repetitions of the build and of each ray batch (median)")->check(CLI::Range(1, 1000));
  app.add_option("--frames", frames, "frames of the deforming scene (the first one is not counted)")
      ->check(CLI::Range(2, 1000));
  app.add_flag("--embree", embree, "Embree 3 on the same triangles and rays");
  app.add_flag("--build-only", build_only, "time the tree builds only (the scaling question of the paper's Table 3)");
  app.add_option("--embree-threads", embree_threads, "Embree's threads (0: all cores)");
  app.add_option("--embree-quality", quality, "Embree's build quality: low (dynamic scenes) or medium")
      ->check(CLI::IsMember({"low", "medium"}));
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (embree && !kdforge_rays::embree_available()) {
    std::fprintf(stderr, "error: --embree: this build has no Embree (Debian: libembree-dev)\n");
    return 2;
  }
  Kokkos::ScopeGuard guard(argc, argv);
  int failed = 0;
  try {
    std::printf("kdforge %s (concurrency %d), %d x %d rays, median of %d\n", Exec::name(), int(Exec().concurrency()), width,
                height, reps);
    if (!build_only)
      std::printf("| scene | triangles | build ms | SAH | eye Mrays/s | shadow Mrays/s | frame ms (bounces) | fps | frame ms (2 "
                "bounces) | paper build ms | paper trace ms | paper SAH | paper fps |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::string> embree_rows;
    for (auto const& name : split(scenes)) {
      auto const scene = kdforge_rays::make_scene(name);
      kdforge_rays::Renderer<Exec> r(Exec{}, scene, width, height);
      r.deform(0);
      kdforge::TriangleTree<MS, float> tree;
      std::vector<double> tb;
      for (int i = 0; i <= reps; ++i) {
        double const ms = time_ms([&] { tree = kdforge::build_sah_tree(Exec{}, r.vertices(), r.triangles()); });
        if (i > 0) tb.push_back(ms);
      }
      double const sah = kdforge::sah_cost(tree);
      if (build_only) {
        double eb = 0;
        if (embree) {
          kdforge_rays::EmbreeScene es(embree_threads, quality);
          std::vector<float> v;
          std::vector<std::int32_t> tri;
          host_mesh(r, v, tri);
          std::vector<double> t;
          for (int i = 0; i <= reps; ++i) {
            double const ms = es.build(v.data(), std::int64_t(v.size() / 3), tri.data(), std::int64_t(tri.size() / 3));
            if (i > 0) t.push_back(ms);
          }
          eb = median(t);
        }
        std::printf("build-only %s: %lld triangles, kdforge %.3f ms (SAH %.1f)", name.c_str(),
                    (long long)scene.mesh.triangle_count(), median(tb), sah);
        if (embree) std::printf(", Embree %.3f ms (%d threads)", eb, kdforge_rays::EmbreeScene(embree_threads, quality).threads());
        std::printf("\n");
        continue;
      }
      std::int64_t const m = std::int64_t(width) * height;
      Kokkos::View<RayF*, MS> eye("eye", m);
      r.eye_rays(eye);
      Kokkos::View<kdforge::Hit<float>*, MS> hits;
      std::vector<double> te;
      for (int i = 0; i <= reps; ++i) {
        double const ms = time_ms([&] { kdforge::intersect_closest(Exec{}, tree, eye, hits); });
        if (i > 0) te.push_back(ms);
      }
      // shadow rays from every eye hit to the first light (from just in front
      // of the surface: 1e-4 of the way back to the eye)
      auto eye_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, eye);
      auto hits_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, hits);
      std::vector<RayF> shadow_h;
      auto const& light = scene.lights.at(0);
      for (std::int64_t i = 0; i < m; ++i) {
        if (hits_h(i).triangle < 0) continue;
        RayF s;
        for (int d = 0; d < 3; ++d) {
          s.origin[d] = eye_h(i).origin[d] + eye_h(i).direction[d] * hits_h(i).t * (1 - 1e-4f);
          s.direction[d] = light.position[d] - s.origin[d];
        }
        s.tmin = 0;
        s.tmax = 0.9999f;
        shadow_h.push_back(s);
      }
      std::int64_t const ms_count = std::int64_t(shadow_h.size());
      Kokkos::View<RayF*, MS> shadow("shadow", ms_count);
      Kokkos::deep_copy(shadow, Kokkos::View<RayF*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(shadow_h.data(), shadow_h.size()));
      Kokkos::View<bool*, MS> occluded;
      std::vector<double> ts;
      for (int i = 0; i <= reps; ++i) {
        double const ms = time_ms([&] { kdforge::intersect_any(Exec{}, tree, shadow, occluded); });
        if (i > 0) ts.push_back(ms);
      }
      // the t = 0 mesh, copied now (on a host backend the mirror would be the View itself, which the frames deform)
      std::vector<float> v;
      std::vector<std::int32_t> tri;
      host_mesh(r, v, tri);
      // frames: deform, rebuild, trace at the scene's bounces, then at 2
      std::vector<double> fs, f2;
      kdforge_rays::RayBatches batches;
      for (int f = 0; f < frames; ++f) {
        auto const st = r.frame(0.1f * float(f), scene.bounces, f == 1 && embree ? &batches : nullptr);
        if (f > 0) fs.push_back(st.frame_ms);
      }
      for (int f = 0; f < frames; ++f) {
        auto const st = r.frame(0.1f * float(f), 2);
        if (f > 0) f2.push_back(st.frame_ms);
      }
      double const build = median(tb), trace_eye = median(te), trace_shadow = median(ts), frame = median(fs);
      char paper_cols[200] = "| | | |";
      auto const p = paper.find(scene.paper_scene);
      if (p != paper.end())
        std::snprintf(paper_cols, sizeof paper_cols, "%.0f | %.0f | %.1f | %.2f |", 1e3 * p->second.tree_s,
                      1e3 * p->second.trace_s, p->second.sah, p->second.fps);
      std::printf("| %s | %lld | %.2f | %.1f | %.3g | %.3g | %.2f (%d) | %.1f | %.2f | %s\n", name.c_str(),
                  (long long)scene.mesh.triangle_count(), build, sah, 1e-3 * double(m) / trace_eye,
                  1e-3 * double(ms_count) / trace_shadow, frame, scene.bounces, 1000.0 / frame, median(f2), paper_cols);
      std::fflush(stdout);
      if (embree) {
        kdforge_rays::EmbreeScene es(embree_threads, quality);
        std::int64_t const nv = std::int64_t(v.size() / 3), nf = std::int64_t(tri.size() / 3);
        std::vector<double> eb, ee, esd;
        std::vector<std::int32_t> etri;
        std::vector<float> et;
        std::vector<char> eocc;
        for (int i = 0; i <= reps; ++i) {
          double const ms = es.build(v.data(), nv, tri.data(), nf);
          if (i > 0) eb.push_back(ms);
        }
        for (int i = 0; i <= reps; ++i) {
          double const ms = es.closest(reinterpret_cast<float const*>(eye_h.data()), m, etri, et);
          if (i > 0) ee.push_back(ms);
        }
        for (int i = 0; i <= reps; ++i) {
          double const ms = es.any(reinterpret_cast<float const*>(shadow_h.data()), ms_count, eocc);
          if (i > 0) esd.push_back(ms);
        }
        // the same hits? a different triangle counts only where t differs too (ties on shared edges)
        std::int64_t disagree = 0, odis = 0;
        for (std::int64_t i = 0; i < m; ++i) {
          bool const same = etri[std::size_t(i)] == hits_h(i).triangle ||
                            (etri[std::size_t(i)] >= 0 && hits_h(i).triangle >= 0 &&
                             std::abs(et[std::size_t(i)] - hits_h(i).t) <= 1e-4f * hits_h(i).t);
          disagree += !same;
          if (!same && disagree < 4)
            std::printf("ray %lld: kdforge %d t %.6g, Embree %d t %.6g\n", (long long)i, hits_h(i).triangle, hits_h(i).t,
                        etri[std::size_t(i)], et[std::size_t(i)]);
        }
        auto occ_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, occluded);
        for (std::int64_t i = 0; i < ms_count; ++i) odis += bool(eocc[std::size_t(i)]) != occ_h(i);
        // Embree's frame: a rebuild and the frame's ray batches (shading not
        // counted; the mesh of t = 0, not the frame's: the build time barely differs)
        double eframe = es.build(v.data(), nv, tri.data(), nf);
        for (auto const& bt : batches.closest)
          eframe += es.closest(reinterpret_cast<float const*>(bt.data()), std::int64_t(bt.size()), etri, et);
        for (auto const& bt : batches.any)
          eframe += es.any(reinterpret_cast<float const*>(bt.data()), std::int64_t(bt.size()), eocc);
        char row[400];
        std::snprintf(row, sizeof row,
                      "| %s | %.2f | %.3g | %.3g | %.2f | %.2fx | %.2fx | %.2fx | %lld / %lld |", name.c_str(), median(eb),
                      1e-3 * double(m) / median(ee), 1e-3 * double(ms_count) / median(esd), eframe, median(eb) / build,
                      median(ee) / trace_eye, eframe / frame, (long long)disagree, (long long)odis);
        embree_rows.push_back(row);
        if (disagree > m / 1000 || odis > ms_count / 1000) {
          std::printf("CHECK FAILED: %s: %lld eye hits and %lld shadow answers differ from Embree's\n", name.c_str(),
                      (long long)disagree, (long long)odis);
          failed = 1;
        }
      }
    }
    if (!embree_rows.empty()) {
      std::printf("\nEmbree 3 (%s quality, %d threads) on the same triangles and rays; kdforge's speedup = Embree time / "
                  "kdforge time; frame = rebuild + the frame's ray batches, shading not counted\n",
                  quality.c_str(), kdforge_rays::EmbreeScene(embree_threads, quality).threads());
      std::printf("| scene | Embree build ms | eye Mrays/s | shadow Mrays/s | frame ms | build speedup | eye trace speedup | "
                  "frame speedup | eye hits / shadow answers that differ |\n|---|---|---|---|---|---|---|---|---|\n");
      for (auto const& row : embree_rows) std::printf("%s\n", row.c_str());
    }
  } catch (kdforge::Error const& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return failed;
}
