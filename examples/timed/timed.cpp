// One program for every backend: build it against an OpenMP install and a
// Cuda install of kdforge and compare the times the two print. It builds a
// left-balanced k-d tree over N uniform random float points and finds the 8
// nearest neighbours of N queries, 5 times each, and prints the medians.
// Usage: timed [N] (default 1,000,000).
#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>

using Exec = Kokkos::DefaultExecutionSpace;
using P = kdforge::Point<float, 3>;

// Median, min and max of a few timings, in milliseconds.
void report(char const* what, std::vector<double> t) {
  std::sort(t.begin(), t.end());
  std::printf("%-6s median %9.3f ms (min %.3f, max %.3f)\n", what, t[t.size() / 2] * 1e3, t.front() * 1e3,
              t.back() * 1e3);
}

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  long const n = argc > 1 ? std::atol(argv[1]) : 1000000;
  if (n < 1 || n > 100000000) {
    std::fprintf(stderr, "usage: timed [N], 1 <= N <= 10^8 points and queries (default 1000000)\n");
    return 2;
  }
  int const k = 8, reps = 5, checks = 100;

  Kokkos::View<P*, Exec::memory_space> points("points", n), queries("queries", n);
  auto hp = Kokkos::create_mirror_view(points);
  auto hq = Kokkos::create_mirror_view(queries);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0, 1);
  for (long i = 0; i < n; ++i) hp(i) = P{{u(rng), u(rng), u(rng)}}, hq(i) = P{{u(rng), u(rng), u(rng)}};
  Kokkos::deep_copy(points, hp);
  Kokkos::deep_copy(queries, hq);

  // The results and the workspace are reused, so the query times measure the
  // search, not memory allocation (as in a time loop). Kokkos launches are
  // asynchronous: fence before reading the clock. Repetition 0 warms up
  // (first touch of memory, GPU memory pool) and is not counted.
  using Tree = decltype(kdforge::build_left_balanced(Exec{}, points));
  kdforge::KnnResultFor<Exec, Tree> nn;
  kdforge::QueryWorkspace<Exec::memory_space> workspace;
  std::vector<double> build_s, query_s;
  for (int rep = 0; rep <= reps; ++rep) {
    Exec().fence();
    Kokkos::Timer timer;
    auto tree = kdforge::build_left_balanced(Exec{}, points);
    Exec().fence();
    double const b = timer.seconds();
    timer.reset();
    kdforge::knn(Exec{}, tree, queries, k, nn, {}, workspace);
    Exec().fence();
    double const q = timer.seconds();
    if (rep > 0) build_s.push_back(b), query_s.push_back(q);
  }
  std::printf("timed on %s", Exec::name());
  if (std::is_same<Exec::memory_space, Kokkos::HostSpace>::value) std::printf(" with %d threads", Exec().concurrency());
  std::printf(": %ld points, %ld queries, k = %d, %d repetitions\n", n, n, k, reps);
  report("build", build_s);
  report("knn", query_s);
  std::sort(query_s.begin(), query_s.end());
  std::printf("       %.1f million queries per second\n", n / query_s[reps / 2] * 1e-6);

  // Check a spread of queries against brute force on the host. Distances are
  // compared, not indices: points at the same distance may come in any order.
  // float rounding may differ between host and device, hence the tolerance.
  auto idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.indices);
  auto dist = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.sq_distances);
  int good = 0, wanted = int(std::min<long>(checks, n));
  std::vector<float> d(n);
  for (int c = 0; c < wanted; ++c) {
    long const q = c * (n / wanted);
    for (long i = 0; i < n; ++i) d[i] = kdforge::sq_distance(hq(q), hp(i));
    int const kk = int(std::min<long>(k, n)); // fewer points than k: the slots beyond are (-1, +inf)
    std::partial_sort(d.begin(), d.begin() + kk, d.end());
    bool ok = true;
    for (int j = 0; j < kk; ++j) {
      float const tol = 1e-5f * d[j] + 1e-12f;
      ok = ok && idx(q, j) >= 0 && std::fabs(dist(q, j) - d[j]) <= tol &&
           std::fabs(kdforge::sq_distance(hq(q), hp(idx(q, j))) - dist(q, j)) <= tol;
    }
    good += ok;
  }
  std::printf("verified %d/%d queries against brute force\n", good, wanted);
  return good == wanted ? 0 : 1;
}
