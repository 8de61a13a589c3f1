// kdforge-bench: builds left-balanced k-d trees and runs queries over uniform
// random float3 points, timing each phase (fenced, warm-up + repetitions,
// min/median/max) and verifying a sample of queries against brute force, so
// no time is reported for wrong answers.
//
//   kdforge-bench [--n N] [--m M] [--k K[,K...]] [--neighbors T] [--reps R]
//                 [--builder partition|tags|all] [--split round_robin|widest]
//                 [--traversal auto|stack|stack_free] [--seed S]
#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using P = kdforge::Point<float, 3>;

struct Args {
  long n = 1000000, m = 1000000;
  std::vector<int> ks{1, 8, 16};
  double neighbors = 8; // target mean neighbour count of the radius search
  int reps = 5;
  std::string builder = "all", split = "round_robin", traversal = "auto";
  unsigned seed = 1;
};

[[noreturn]] void usage(char const* msg) {
  std::fprintf(stderr,
               "kdforge-bench: %s\n"
               "usage: kdforge-bench [--n N] [--m M] [--k K[,K...]] [--neighbors T] [--reps R]\n"
               "                     [--builder partition|tags|all] [--split round_robin|widest]\n"
               "                     [--traversal auto|stack|stack_free] [--seed S]\n",
               msg);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string const f = argv[i];
    if (f == "--help" || f == "-h") usage("benchmark of kdforge's left-balanced trees");
    if (f.rfind("--kokkos", 0) == 0) continue;
    if (i + 1 >= argc) usage(("missing value after " + f).c_str());
    std::string const v = argv[++i];
    char* end = nullptr;
    auto num = [&](double lo) {
      double const x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != 0 || !(x >= lo)) usage(("bad value for " + f + ": " + v).c_str());
      return x;
    };
    if (f == "--n") a.n = long(num(1));
    else if (f == "--m") a.m = long(num(1));
    else if (f == "--reps") a.reps = int(num(1));
    else if (f == "--neighbors") a.neighbors = num(1);
    else if (f == "--seed") a.seed = unsigned(num(0));
    else if (f == "--k") {
      a.ks.clear();
      std::stringstream ss(v);
      std::string t;
      while (std::getline(ss, t, ',')) {
        int const k = std::atoi(t.c_str());
        if (k < 1) usage(("bad k: " + t).c_str());
        a.ks.push_back(k);
      }
    } else if (f == "--builder") a.builder = v;
    else if (f == "--split") a.split = v;
    else if (f == "--traversal") a.traversal = v;
    else usage(("unknown flag " + f).c_str());
  }
  if (a.builder != "all" && a.builder != "partition" && a.builder != "tags") usage("--builder: partition, tags or all");
  if (a.split != "round_robin" && a.split != "widest") usage("--split: round_robin or widest");
  if (a.traversal != "auto" && a.traversal != "stack" && a.traversal != "stack_free") usage("--traversal: auto, stack or stack_free");
  return a;
}

struct Stats {
  double min, median, max;
};
Stats time_it(int reps, std::function<void()> const& f) {
  f(); // warm-up
  Kokkos::fence();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    Kokkos::Timer timer;
    f();
    Kokkos::fence();
    t.push_back(timer.seconds() * 1e3);
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2], t.back()};
}

void row(char const* what, std::string const& detail, Stats s, long items, std::string const& verified) {
  std::printf("%-14s %-28s %10.3f %10.3f %10.3f %12.1f  %s\n", what, detail.c_str(), s.min, s.median, s.max,
              items / (s.median * 1e-3) / 1e6, verified.c_str());
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  Args const a = parse(argc, argv);
  std::printf("kdforge %s bench on %s (host %s, concurrency %d): N=%ld M=%ld float3 uniform, reps=%d\n",
              kdforge::version(), Exec::name(), Kokkos::DefaultHostExecutionSpace::name(),
              int(Exec().concurrency()), a.n, a.m, a.reps);

  std::mt19937 rng(a.seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<P> hp(a.n), hq(a.m);
  for (auto& p : hp) p = P{{u(rng), u(rng), u(rng)}};
  for (auto& q : hq) q = P{{u(rng), u(rng), u(rng)}};
  Kokkos::View<P*, MS> pts("points", a.n), qs("queries", a.m);
  Kokkos::deep_copy(pts, Kokkos::View<P*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(hp.data(), a.n));
  Kokkos::deep_copy(qs, Kokkos::View<P*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(hq.data(), a.m));

  kdforge::BuildOptions bo;
  bo.split = a.split == "widest" ? kdforge::SplitPolicy::widest_dimension : kdforge::SplitPolicy::round_robin;
  std::printf("%-14s %-28s %10s %10s %10s %12s  %s\n", "phase", "variant", "min ms", "median ms", "max ms", "Mitems/s",
              "check");
  std::vector<std::pair<std::string, kdforge::Builder>> builders;
  if (a.builder != "tags") builders.push_back({"presorted_partition", kdforge::Builder::presorted_partition});
  if (a.builder != "partition") builders.push_back({"wald_tags", kdforge::Builder::wald_tags});
  std::vector<int> reference;
  int failures = 0;
  kdforge::LeftBalancedTree<MS, float, 3> tree;
  for (auto const& [name, b] : builders) {
    bo.builder = b;
    auto s = time_it(a.reps, [&] { tree = kdforge::build_left_balanced(Exec{}, pts, bo); });
    auto idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.original_indices());
    std::vector<int> v(idx.data(), idx.data() + idx.extent(0));
    std::string check = "same tree";
    if (reference.empty()) reference = v, check = "first";
    else if (v != reference) check = "DIFFERENT TREE", ++failures;
    row("build", name, s, a.n, check);
  }

  kdforge::QueryOptions qo;
  qo.traversal = a.traversal == "stack" ? kdforge::Traversal::stack
                 : a.traversal == "stack_free" ? kdforge::Traversal::stack_free : kdforge::Traversal::automatic;
  // brute force costs N per sampled query: keep the check to ~2e9 distance evaluations
  int const sample = int(std::min<long>(a.m, std::max<long>(10, std::min<long>(1000, 2000000000L / a.n))));
  auto verify_knn = [&](auto const& r, int k) {
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
    int ok = 0;
    for (int s = 0; s < sample; ++s) {
      long const q = long(s) * a.m / sample;
      std::vector<kdforge::Neighbor<float, long>> all(a.n);
      for (long i = 0; i < a.n; ++i) all[i] = {kdforge::sq_distance(hq[q], hp[i]), i};
      int const kk = int(std::min<long>(k, a.n));
      std::partial_sort(all.begin(), all.begin() + kk, all.end());
      bool good = true;
      for (int j = 0; j < kk; ++j) good = good && hi(q, j) == all[j].index && hd(q, j) == all[j].sq_dist;
      ok += good;
    }
    if (ok != sample) ++failures;
    return "verified " + std::to_string(ok) + "/" + std::to_string(sample);
  };
  for (int k : a.ks) {
    kdforge::KnnResult<MS, float, int> r;
    auto s = time_it(a.reps, [&] { r = kdforge::knn(Exec{}, tree, qs, k, qo); });
    row("knn", "k=" + std::to_string(k), s, a.m, verify_knn(r, k));
  }
  {
    kdforge::ClosestResult<MS, float, int> r;
    auto s = time_it(a.reps, [&] { r = kdforge::closest_point(Exec{}, tree, qs, qo); });
    kdforge::KnnResult<MS, float, int> as_knn;
    as_knn.indices = Kokkos::View<int**, Kokkos::LayoutRight, MS>("i", a.m, 1);
    as_knn.sq_distances = Kokkos::View<float**, Kokkos::LayoutRight, MS>("d", a.m, 1);
    Kokkos::deep_copy(Kokkos::subview(as_knn.indices, Kokkos::ALL, 0), r.indices);
    Kokkos::deep_copy(Kokkos::subview(as_knn.sq_distances, Kokkos::ALL, 0), r.sq_distances);
    row("closest_point", "", s, a.m, verify_knn(as_knn, 1));
  }
  {
    // radius with `neighbors` expected points in the unit cube: 4/3 pi r^3 N = T
    double const radius = std::cbrt(a.neighbors / (a.n * 4.0 / 3.0 * M_PI));
    kdforge::RadiusOptions ro;
    ro.traversal = qo.traversal;
    kdforge::RadiusResult<MS, float, int> r;
    auto s = time_it(a.reps, [&] { r = kdforge::radius_search(Exec{}, tree, qs, radius, ro); });
    auto off = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.offsets);
    int ok = 0;
    float const sq_r = float(radius) * float(radius);
    for (int smp = 0; smp < sample; ++smp) {
      long const q = long(smp) * a.m / sample;
      long c = 0;
      for (long i = 0; i < a.n; ++i) c += kdforge::sq_distance(hq[q], hp[i]) <= sq_r;
      ok += c == off(q + 1) - off(q);
    }
    if (ok != sample) ++failures;
    char buf[64];
    std::snprintf(buf, sizeof buf, "r=%.5f mean=%.2f", radius, double(off(a.m)) / a.m);
    row("radius_search", buf, s, a.m, "verified " + std::to_string(ok) + "/" + std::to_string(sample));
  }
  if (failures) std::printf("FAILED: %d checks\n", failures);
  return failures ? 1 : 0;
}
