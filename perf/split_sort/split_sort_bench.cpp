// kdforge-split-sort-bench: the evidence of Wehr & Radkowski 2018 on this
// machine, for kdforge's adaptive split-and-sort builder.
//   - build time per size and threads-per-block (the paper's Table II, Fig. 5),
//   - the naive baseline: one sequential sort per chunk per thread on every
//     level (Table I / Fig. 8),
//   - the share of time in parallel radix / sequential radix / insertion sort
//     (the paper: 96.5 / 0.86 / 2.64 %),
//   - approximate kNN with the bounded min-max queue: recall@k and time per Q,
//     against exact kNN on the same tree, per tree size and query count (the
//     grid of Table III with --queries 100,10000,50000,100000),
//   - the threads-per-block autotuning table (section III-C).
// Points (--points): uniform random (the paper's column R), a simulated
// range-camera scan of the work scene of perf/icp (the paper's WB: a scan
// of a work environment, which we do not have), or the surface of that
// scene's piston-like object (standing in for the paper's B, the Stanford
// bunny, another closed scanned surface we do not have).
// Every tree is checked: exact kNN of a query sample against brute force.
// Timings: warm-up, fenced, median/mean/std over --reps. One JSON line per
// measurement with --json.
#include "range_camera.hpp"

#include <kdforge/kdforge.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using P = kdforge::Point<float, 3>;
using PV = Kokkos::View<P*, MS>;

struct Summary {
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
};
Summary summarize(std::vector<double> t) {
  Summary s;
  std::sort(t.begin(), t.end());
  s.min = t.front();
  s.max = t.back();
  s.median = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  s.mean = std::accumulate(t.begin(), t.end(), 0.0) / double(t.size());
  double v = 0;
  for (double x : t) v += (x - s.mean) * (x - s.mean);
  s.stddev = t.size() > 1 ? std::sqrt(v / double(t.size() - 1)) : 0;
  return s;
}

template <class F>
Summary time_it(int warmup, int reps, F&& f) {
  Exec exec;
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    exec.fence();
    auto const a = std::chrono::steady_clock::now();
    f();
    exec.fence();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  return summarize(t);
}

std::vector<P> uniform(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<P> v(n);
  for (auto& p : v) p = P{{u(rng), u(rng), u(rng)}};
  return v;
}

// A scan of perf/icp's work scene (640 x 480, or finer where n needs more
// points), n of its points chosen at random, kept in scan order.
std::vector<P> scene_points(std::int64_t n, std::uint64_t seed) {
  using namespace kdforge_icp;
  WorkScene const scene = WorkScene::make(2.0);
  double const eye[3] = {0.3, -1.4, 1.5}, at[3] = {-0.1, 0.1, 0.8};
  int w = 640, h = 480;
  Scan s;
  while (true) {
    Camera cam = Camera::of_resolution(w, h);
    cam.look_at(eye, at);
    s = render(scene, scene.object_pose(0), cam, seed);
    if (s.size() >= n) break;
    double const f = std::sqrt(1.1 * double(n) / double(std::max<std::int64_t>(s.size(), 1)));
    w = int(w * f) + 1;
    h = int(h * f) + 1;
  }
  std::vector<std::int64_t> pick(s.size());
  std::iota(pick.begin(), pick.end(), std::int64_t(0));
  std::mt19937_64 rng(seed);
  std::shuffle(pick.begin(), pick.end(), rng);
  pick.resize(n);
  std::sort(pick.begin(), pick.end());
  std::vector<P> v(n);
  for (std::int64_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) v[i][d] = s.xyz[3 * pick[i] + d];
  return v;
}

// n points of the piston-like object's surface (object frame).
std::vector<P> object_points(std::int64_t n, std::uint64_t seed) {
  using namespace kdforge_icp;
  Model const m = object_model(WorkScene::make(2.0), n, seed);
  std::vector<P> v(m.size());
  for (std::int64_t i = 0; i < m.size(); ++i)
    for (int d = 0; d < 3; ++d) v[i][d] = m.xyz[3 * i + d];
  return v;
}

std::vector<P> make_points(std::string const& kind, std::int64_t n, std::uint64_t seed) {
  if (kind == "scene") return scene_points(n, seed);
  if (kind == "object") return object_points(n, seed);
  return uniform(n, seed);
}

// m queries: uniform in the unit cube for uniform points (as before), else
// uniform in the points' bounding box.
std::vector<P> make_queries(std::string const& kind, std::vector<P> const& pts, std::int64_t m, std::uint64_t seed) {
  std::vector<P> q = uniform(m, seed);
  if (kind == "uniform" || pts.empty()) return q;
  P lo = pts[0], hi = pts[0];
  for (auto const& p : pts)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], p[d]);
      hi[d] = std::max(hi[d], p[d]);
    }
  for (auto& x : q)
    for (int d = 0; d < 3; ++d) x[d] = lo[d] + x[d] * (hi[d] - lo[d]);
  return q;
}

PV to_device(std::vector<P> const& v) {
  PV d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::points"), v.size());
  Kokkos::deep_copy(d, Kokkos::View<P const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
  return d;
}

// Exact kNN (k = 4) of up to `sample` queries against brute force.
template <class Tree>
std::pair<int, int> verify(Tree const& tree, std::vector<P> const& pts, std::vector<P> const& queries, int sample) {
  int const m = std::min<int>(sample, int(queries.size()));
  std::vector<P> q(queries.begin(), queries.begin() + m);
  auto r = kdforge::knn(Exec{}, tree, to_device(q), 4);
  auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
  int ok = 0;
  for (int i = 0; i < m; ++i) {
    std::vector<float> d(pts.size());
    for (std::size_t j = 0; j < pts.size(); ++j) d[j] = kdforge::sq_distance(q[i], pts[j]);
    std::partial_sort(d.begin(), d.begin() + std::min<std::size_t>(4, d.size()), d.end());
    bool good = true;
    for (int j = 0; j < 4; ++j) good = good && (j < int(d.size()) ? hd(i, j) == d[j] : std::isinf(hd(i, j)));
    ok += good;
  }
  return {ok, m};
}

std::string device_name() { return kdforge::detail::device_name(Exec{}); }

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"kdforge-split-sort-bench: Wehr & Radkowski 2018's experiments for kdforge's split-and-sort builder"};
  std::vector<std::int64_t> sizes{2000, 50000, 100000, 300000, 400000, 500000};
  std::vector<int> tpbs{32, 64, 128, 256};
  std::vector<std::string> baselines;
  std::vector<int> queues;
  std::vector<int> ks{1, 8};
  int reps = 25, warmup = 2, verify_n = 1000, radix_base = 32;
  std::int64_t naive_max = 200000;
  std::vector<std::int64_t> query_counts{100000};
  bool shares = false;
  std::string json_file, tune_file, points = "uniform";
  std::uint64_t seed = 1;
  app.add_option("--sizes", sizes, "numbers of uniform random float3 points")->delimiter(',');
  app.add_option("--tpb", tpbs, "threads per block to measure (multiples of 32 up to 1024)")->delimiter(',');
  app.add_option("--radix-base", radix_base, "radix base (power of two, 2..256)");
  app.add_option("--reps", reps, "timed repetitions per measurement")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::NonNegativeNumber);
  app.add_option("--baseline", baselines, "naive_radix and/or naive_insertion: the paper's naive per-chunk strategy")
      ->delimiter(',')
      ->check(CLI::IsMember({"naive_radix", "naive_insertion"}));
  app.add_option("--baseline-max", naive_max, "skip the baselines above this many points (insertion is O(N^2))");
  app.add_flag("--shares", shares, "report the share of time per sort kind (fenced per level)");
  app.add_option("--approx", queues, "approximate kNN: queue capacities Q to measure")->delimiter(',');
  app.add_option("--k", ks, "k of the approximate kNN runs")->delimiter(',');
  app.add_option("--queries", query_counts,
                 "numbers of queries (fresh uniform points) of the approximate runs, e.g. 100,10000,50000,100000 "
                 "(Table III's columns)")
      ->delimiter(',');
  app.add_option("--points", points,
                 "uniform (the paper's R), scene (a simulated range scan of a work scene: the paper's WB) or object "
                 "(a piston-like object's surface, standing in for the paper's B)")
      ->check(CLI::IsMember({"uniform", "scene", "object"}));
  app.add_option("--verify", verify_n, "exact kNN queries checked against brute force per tree");
  app.add_option("--tune", tune_file, "run the TPB autotuning over --sizes and --tpb, write the table here");
  app.add_option("--json", json_file, "append one JSON line per measurement to this file");
  app.add_option("--seed", seed, "random seed");
  app.allow_extras(); // Kokkos' own --kokkos-* flags
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return app.exit(e);
  }
  for (auto const& x : app.remaining())
    if (x.rfind("--kokkos", 0) != 0) {
      std::cerr << "kdforge-split-sort-bench: unknown argument " << x << " (see --help)\n";
      return 2;
    }
  Kokkos::ScopeGuard guard(argc, argv);
  std::ofstream json;
  if (!json_file.empty()) {
    json.open(json_file, std::ios::app);
    if (!json) {
      std::cerr << "kdforge-split-sort-bench: cannot write " << json_file << "\n";
      return 2;
    }
  }
  int failures = 0;
  try {
    std::string const dev = device_name();
    std::printf("# kdforge-split-sort-bench on %s (%s), %s points, radix base %d, %d reps, median [mean +- std] ms\n",
                dev.c_str(), Exec::name(), points.c_str(), radix_base, reps);
    auto record = [&](nlohmann::json j) {
      j["device"] = dev;
      j["points"] = points;
      j["backend"] = Exec::name();
      j["radix_base"] = radix_base;
      j["reps"] = reps;
      if (json) json << j.dump() << "\n";
    };
    if (!tune_file.empty()) {
      kdforge::SplitSortTuneOptions t;
      t.file = tune_file;
      t.sizes = sizes;
      t.threads_per_block = tpbs;
      t.repetitions = std::max(3, std::min(reps, 9));
      t.radix_base = radix_base;
      std::fprintf(stderr, "[tune] %zu sizes x %zu candidates ...\n", sizes.size(), tpbs.size());
      auto rows = kdforge::tune_split_sort(Exec{}, t);
      std::printf("\n## tuning table written to %s\n%10s %6s %10s\n", tune_file.c_str(), "points", "TPB", "ms");
      for (auto const& r : rows) std::printf("%10lld %6d %10.3f\n", (long long)r.n, r.threads_per_block, r.ms);
    }
    auto const t_start = std::chrono::steady_clock::now();
    std::printf("\n## build time (adaptive split and sort)\n%10s", "points");
    for (int tpb : tpbs) std::printf("   TPB=%-4d              ", tpb);
    for (auto const& b : baselines) std::printf("   %-22s", b.c_str());
    std::printf("  verified\n");
    for (std::int64_t n : sizes) {
      auto pts = make_points(points, n, seed + std::uint64_t(n));
      auto queries = make_queries(points, pts, std::max<std::int64_t>(verify_n, 1), seed + 7 * std::uint64_t(n) + 1);
      PV d = to_device(pts);
      std::printf("%10lld", (long long)n);
      std::fflush(stdout);
      std::pair<int, int> ver{0, 0};
      std::vector<std::int32_t> first_order;
      for (int tpb : tpbs) {
        kdforge::SplitSortOptions o;
        o.threads_per_block = tpb;
        o.radix_base = radix_base;
        auto s = time_it(warmup, reps, [&] { kdforge::build_split_sort(Exec{}, d, o); });
        auto tree = kdforge::build_split_sort(Exec{}, d, o);
        // every TPB must give the same tree: brute force once, equality after
        auto order = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.original_indices());
        std::vector<std::int32_t> ord(order.data(), order.data() + order.extent(0));
        std::pair<int, int> v{0, 0};
        if (first_order.empty()) {
          v = verify(tree, pts, queries, verify_n);
          first_order = ord;
        } else {
          v = {ord == first_order ? 1 : 0, 1};
        }
        ver.first += v.first;
        ver.second += v.second;
        std::printf("   %8.3f [%7.3f+-%6.3f]", s.median, s.mean, s.stddev);
        std::fflush(stdout);
        nlohmann::json j{{"what", "build"}, {"strategy", "adaptive"}, {"n", n}, {"tpb", tpb}, {"median_ms", s.median},
                         {"mean_ms", s.mean}, {"std_ms", s.stddev}, {"min_ms", s.min}, {"max_ms", s.max},
                         {"verified", v.first}, {"checked", v.second}};
        if (shares) {
          kdforge::SplitSortStats st;
          o.stats = &st;
          kdforge::build_split_sort(Exec{}, d, o);
          double const sum = st.parallel_radix_ms + st.sequential_radix_ms + st.insertion_ms;
          j["share_parallel_radix"] = st.parallel_radix_ms / sum;
          j["share_sequential_radix"] = st.sequential_radix_ms / sum;
          j["share_insertion"] = st.insertion_ms / sum;
          j["levels"] = {st.parallel_levels, st.sequential_levels, st.insertion_levels};
          j["stats_total_ms"] = st.total_ms;
          j["stats_other_ms"] = st.other_ms;
        }
        record(j);
      }
      for (auto const& b : baselines) {
        if (n > naive_max) {
          std::printf("   %-22s", "(skipped)");
          continue;
        }
        kdforge::SplitSortOptions o;
        o.strategy = b == "naive_radix" ? kdforge::SplitSortStrategy::naive_radix : kdforge::SplitSortStrategy::naive_insertion;
        int const r = std::max(1, std::min(reps, 3));
        auto s = time_it(1, r, [&] { kdforge::build_split_sort(Exec{}, d, o); });
        std::printf("   %10.3f             ", s.median);
        record({{"what", "build"}, {"strategy", b}, {"n", n}, {"median_ms", s.median}, {"mean_ms", s.mean},
                {"std_ms", s.stddev}, {"reps_used", r}});
      }
      std::printf("  %d/%d\n", ver.first, ver.second);
      failures += ver.second - ver.first;
      std::fprintf(stderr, "[bench] %lld points done, %.1f s elapsed\n", (long long)n,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
    }
    if (shares) {
      std::printf("\n## share of sort time (fenced per level; TPB from the tuning default)\n%10s %10s %10s %10s %8s\n",
                  "points", "par.radix", "seq.radix", "insertion", "levels");
      for (std::int64_t n : sizes) {
        auto d = to_device(make_points(points, n, seed + std::uint64_t(n)));
        kdforge::SplitSortStats st;
        kdforge::SplitSortOptions o;
        o.radix_base = radix_base;
        o.stats = &st;
        kdforge::build_split_sort(Exec{}, d, o);
        st = {};
        kdforge::build_split_sort(Exec{}, d, o);
        double const sum = st.parallel_radix_ms + st.sequential_radix_ms + st.insertion_ms;
        std::printf("%10lld %9.2f%% %9.2f%% %9.2f%% %2d/%d/%d (TPB %d)\n", (long long)n, 100 * st.parallel_radix_ms / sum,
                    100 * st.sequential_radix_ms / sum, 100 * st.insertion_ms / sum, st.parallel_levels,
                    st.sequential_levels, st.insertion_levels, st.threads_per_block);
      }
    }
    if (!queues.empty()) {
      std::printf("\n## approximate kNN (bounded min-max queue), fresh queries\n%10s %8s %4s %6s %10s %10s %10s\n",
                  "points", "queries", "k", "Q", "time ms", "exact ms", "recall@k");
      for (std::int64_t n : sizes) {
        auto pts = make_points(points, n, seed + std::uint64_t(n));
        auto d = to_device(pts);
        auto tree = kdforge::build_split_sort(Exec{}, d);
        for (std::int64_t queries_m : query_counts) {
          auto qh = make_queries(points, pts, queries_m, seed + 99 * std::uint64_t(n)); // nested sets
          auto q = to_device(qh);
          for (int k : ks) {
            auto exact = kdforge::knn(Exec{}, tree, q, k);
            auto te = time_it(1, reps, [&] { kdforge::knn(Exec{}, tree, q, k); });
            auto ei = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, exact.indices);
            for (int Q : queues) {
              kdforge::ApproximateOptions o;
              o.queue_capacity = Q;
              auto ta = time_it(1, reps, [&] { kdforge::knn_approximate(Exec{}, tree, q, k, o); });
              auto r = kdforge::knn_approximate(Exec{}, tree, q, k, o);
              auto ai = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
              std::int64_t hits = 0;
              for (std::int64_t i = 0; i < queries_m; ++i)
                for (int j = 0; j < k; ++j)
                  for (int jj = 0; jj < k; ++jj) hits += ai(i, j) >= 0 && ai(i, j) == ei(i, jj);
              double const recall = double(hits) / double(queries_m * k);
              std::printf("%10lld %8lld %4d %6d %10.3f %10.3f %10.4f\n", (long long)n, (long long)queries_m, k, Q,
                          ta.median, te.median, recall);
              record({{"what", "knn_approximate"}, {"n", n}, {"m", queries_m}, {"k", k}, {"queue", Q},
                      {"median_ms", ta.median}, {"mean_ms", ta.mean}, {"std_ms", ta.stddev},
                      {"exact_median_ms", te.median}, {"recall", recall}});
            }
          }
        }
      }
    }
  } catch (std::exception const& e) {
    std::cerr << "kdforge-split-sort-bench: " << e.what() << "\n";
    return 2;
  }
  if (failures) {
    std::cerr << "kdforge-split-sort-bench: " << failures << " verification failures\n";
    return 1;
  }
  return 0;
}
