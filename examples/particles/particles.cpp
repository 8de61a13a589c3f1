// A particle time loop: every step rebuilds the k-d tree over the moved
// particles, lists each particle's neighbours within the interaction radius
// (kdforge::radius_search, rows in CSR form), pushes close particles apart
// and moves them. The search writes into the same result object with the
// same workspace every step, so memory whose size stays the same is reused,
// not allocated again; the program checks and reports what was kept.
#include <kdforge/kdforge.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using P = kdforge::Point<float, 3>;

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int const n = 50000, steps = 20, samples = 100;
  float const radius = 0.03f;    // about 5.6 other particles within it at this density
  float const dt = 0.002f;       // a particle moves about 1/30 of the radius per step
  float const stiffness = 50.0f; // repulsion at zero distance, falling linearly to 0 at the radius

  // Particles in the unit box; its walls reflect them (no periodic images, so
  // a plain search over the particles finds every neighbour).
  Kokkos::View<P*, MS> x("positions", n), v("velocities", n);
  auto hx = Kokkos::create_mirror_view(x);
  auto hv = Kokkos::create_mirror_view(v);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> unit(0, 1), speed(-0.5f, 0.5f);
  for (int i = 0; i < n; ++i) {
    hx(i) = P{{unit(rng), unit(rng), unit(rng)}};
    hv(i) = P{{speed(rng), speed(rng), speed(rng)}};
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(v, hv);

  using Tree = decltype(kdforge::build_left_balanced(Exec{}, x));
  kdforge::RadiusResultFor<Exec, Tree> nb;     // empty: the first search sizes it
  kdforge::QueryWorkspace<MS> workspace;       // the searches' scratch, kept between steps
  void const *offsets0 = nullptr, *indices0 = nullptr, *distances0 = nullptr;
  std::int64_t total0 = -1;
  std::size_t workspace0 = 0;
  int kept = 0, reallocated = 0, total_changed = 0, failures = 0;
  Kokkos::Timer timer;
  double check_s = 0; // time spent in the brute-force checks, left out of the time reported
  for (int step = 0; step < steps; ++step) {
    auto tree = kdforge::build_left_balanced(Exec{}, x); // the particles moved: a new tree
    kdforge::radius_search(Exec{}, tree, x, radius, nb, {}, workspace);
    std::int64_t const total = std::int64_t(nb.indices.extent(0)); // neighbour pairs, each particle itself included

    // Memory: the offsets (one per particle, plus one) and the workspace keep
    // their allocations every step. The indices and distances are sized
    // exactly, so they keep theirs when the total is the same as last step's.
    if (step > 0) {
      bool const rows_kept = nb.indices.data() == indices0 && nb.sq_distances.data() == distances0;
      if (nb.offsets.data() != offsets0 || workspace.bytes() != workspace0 || (total == total0 && !rows_kept)) {
        std::printf("step %d: a result View or the workspace was reallocated although its size did not change\n", step);
        ++failures;
      }
      rows_kept ? ++kept : ++reallocated;
      total_changed += total != total0;
    }
    offsets0 = nb.offsets.data(), indices0 = nb.indices.data(), distances0 = nb.sq_distances.data();
    total0 = total, workspace0 = workspace.bytes();

    // Check: the row lengths of a sample of particles against brute force.
    // Pairs at the radius within float rounding may go either way.
    if (step == 0 || step == steps - 1) {
      Kokkos::Timer check_timer;
      Kokkos::deep_copy(hx, x);
      auto offsets = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nb.offsets);
      float const r2 = radius * radius;
      for (int s = 0; s < samples; ++s) {
        int const i = int(std::int64_t(s) * n / samples), found = int(offsets(i + 1) - offsets(i));
        int surely = 0, maybe = 0;
        for (int j = 0; j < n; ++j) {
          float d2 = 0;
          for (int c = 0; c < 3; ++c) d2 += (hx(i)[c] - hx(j)[c]) * (hx(i)[c] - hx(j)[c]);
          surely += d2 < r2 * (1 - 1e-5f), maybe += d2 <= r2 * (1 + 1e-5f);
        }
        if (found < surely || found > maybe) {
          std::printf("step %d, particle %d: %d neighbours, brute force %d to %d\n", step, i, found, surely, maybe);
          ++failures;
        }
      }
      check_s += check_timer.seconds();
    }

    // Repulsion from every neighbour in the particle's CSR row, then the move.
    // Two kernels: a particle's force reads the others' positions, so no
    // position may change while forces are computed.
    auto offsets = nb.offsets;
    auto indices = nb.indices;
    auto sq_distances = nb.sq_distances;
    Kokkos::parallel_for("repulsion", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(int i) {
      float f[3] = {0, 0, 0};
      for (std::int64_t e = offsets(i); e < offsets(i + 1); ++e) {
        int const j = indices(e);
        float const d = sqrtf(sq_distances(e));
        if (j == i || d == 0) continue; // itself, or a particle at the same place: no direction
        for (int c = 0; c < 3; ++c) f[c] += stiffness * (1 - d / radius) * (x(i)[c] - x(j)[c]) / d;
      }
      for (int c = 0; c < 3; ++c) v(i)[c] += dt * f[c];
    });
    Kokkos::parallel_for("move", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(int i) {
      for (int c = 0; c < 3; ++c) {
        float p = x(i)[c] + dt * v(i)[c];
        if (p < 0 || p > 1) p = p < 0 ? -p : 2 - p, v(i)[c] = -v(i)[c]; // reflect at the wall
        x(i)[c] = p;
      }
    });
    if (step == 0 || step == steps - 1) { // the repulsion turns overlap into motion: fewer neighbours, more energy
      double energy = 0;
      Kokkos::parallel_reduce("kinetic energy", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(int i, double& sum) {
        sum += 0.5 * (v(i)[0] * v(i)[0] + v(i)[1] * v(i)[1] + v(i)[2] * v(i)[2]);
      }, energy);
      std::printf("step %2d: %lld CSR entries (%.2f neighbours per particle, itself included), kinetic energy %.1f\n",
                  step, (long long)total, double(total) / n, energy);
    }
  }
  std::printf("particles on %s: %d particles, radius %g, %d steps in %.1f ms (tree, search, forces, moves)\n",
              Exec::name(), n, radius, steps, (timer.seconds() - check_s) * 1e3);
  std::printf("memory after step 0: offsets and workspace (%zu bytes) kept every step; indices and distances "
              "kept in %d steps, reallocated in %d (the neighbour total changed in %d)\n",
              workspace0, kept, reallocated, total_changed);
  std::printf("radius counts of %d particles at steps 0 and %d against brute force: %s\n", samples, steps - 1,
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
