// kdforge-huge: one tree over billions of points on one device, and kNN on
// it, each answer sampled checked against brute force; or any builder at a
// smaller size for its peak memory per point (docs/performance.md, "Memory
// per point").
//
//   kdforge-huge --n 4500000000 --index 64 --m 1000000 --k 8 --verify 64   # the H200 run
//   kdforge-huge --n 4000000 --builder split_sort --index 32 --ops build    # peak bytes per point
//   kdforge-huge --n 4500000000 --plan                                      # the memory plan, then exit
//
// The points are uniform in the unit cube, each made on the device from its
// index by a hash (nothing is staged through host memory; the same index
// gives the same point on every backend), so a neighbour's coordinates are
// known from its index alone. The queries likewise, from another seed.
// Before anything is allocated the driver compares what the run needs
// with what the device has free and refuses, naming both, when it cannot
// fit. Peak memory: Kokkos Tools' allocation callbacks (every View kdforge
// makes; MemoryTracker), and on CUDA also the device's own count
// (cudaMemGetInfo) at the end of each phase.
//
// Verification: for each sampled query, its k-th returned neighbour
// (d_k, i_k) and the returned rows are checked by one pass over all points
// on the device: exactly k - 1 points come before (d_k, i_k) in (squared
// distance, index) order, and every returned distance is the distance to the
// point of the returned index (recomputed on the host from the index), in
// ascending order without repeats. Together: the row is the exact answer.
#include "memory_tracker.hpp"

#include <kdforge/kdforge.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace kdforge_huge {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using P3 = kdforge::Point<float, 3>;
using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;

struct Args {
  std::int64_t n = 1000000;
  int index = 64;
  std::int64_t m = 1000000;
  int k = 8;
  int verify = 32;
  int reps = 3;
  std::uint64_t seed = 1;
  std::int64_t finish_size = 0;
  std::string builder = "in_place";
  std::string ops = "build,knn";
  std::string json;
  bool plan = false;
};

KOKKOS_INLINE_FUNCTION std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
/// Point i of the set made with `seed`: three 24-bit fractions, exact floats in [0, 1).
KOKKOS_INLINE_FUNCTION P3 generated_point(std::uint64_t seed, std::int64_t i) {
  std::uint64_t h = splitmix64(seed * 0x2545f4914f6cdd1dull + std::uint64_t(i));
  P3 p;
  for (int d = 0; d < 3; ++d) {
    h = splitmix64(h);
    p[d] = float(h >> 40) * (1.0f / 16777216.0f);
  }
  return p;
}

struct Generate {
  Kokkos::View<P3*, MS> pts;
  std::uint64_t seed;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { pts(i) = generated_point(seed, i); }
};
struct GenerateRows {
  Kokkos::View<float**, Kokkos::LayoutRight, MS> rows;
  std::uint64_t seed;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    P3 const p = generated_point(seed, i);
    for (int d = 0; d < 3; ++d) rows(i, d) = p[d];
  }
};

/// Per sampled query j: how many points come before its k-th neighbour
/// (d_k(j), i_k(j)) in (squared distance, index) order.
template <class PointAt, class IndexAt>
struct CountBefore {
  using value_type = std::int64_t[];
  using size_type = std::size_t;
  size_type value_count;
  PointAt point_at;
  IndexAt index_at;
  Kokkos::View<P3*, MS> q;
  Kokkos::View<float*, MS> kth_d;
  Kokkos::View<std::int64_t*, MS> kth_i;
  KOKKOS_FUNCTION void operator()(std::int64_t t, value_type counts) const {
    P3 const p = point_at(t);
    std::int64_t const i = index_at(t);
    for (size_type j = 0; j < value_count; ++j) {
      float const d = kdforge::sq_distance(q(j), p);
      counts[j] += (d < kth_d(j) || (d == kth_d(j) && i < kth_i(j))) ? 1 : 0;
    }
  }
  KOKKOS_FUNCTION void init(value_type counts) const {
    for (size_type j = 0; j < value_count; ++j) counts[j] = 0;
  }
  KOKKOS_FUNCTION void join(value_type dst, value_type const src) const {
    for (size_type j = 0; j < value_count; ++j) dst[j] += src[j];
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_FUNCTION void join(volatile std::int64_t dst[], volatile std::int64_t const src[]) const {
    for (size_type j = 0; j < value_count; ++j) dst[j] += src[j];
  }
#endif
};

/// Positions of a level-order tree: its points in tree order.
template <class Tree>
struct TreePoint {
  Kokkos::View<P3*, MS> pts;
  KOKKOS_FUNCTION P3 operator()(std::int64_t t) const { return pts(t); }
};
template <class IV>
struct TreeIndex {
  IV idx;
  KOKKOS_FUNCTION std::int64_t operator()(std::int64_t t) const { return std::int64_t(idx(t)); }
};
struct RowPoint {
  Kokkos::View<float**, Kokkos::LayoutRight, MS> rows;
  KOKKOS_FUNCTION P3 operator()(std::int64_t t) const {
    P3 p;
    for (int d = 0; d < 3; ++d) p[d] = rows(t, d);
    return p;
  }
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::int64_t device_used() {
#if defined(KOKKOS_ENABLE_CUDA)
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) return std::int64_t(total_b - free_b);
#endif
  return -1;
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(std::int64_t(1) << 30));
  return buf;
}

struct Plan {
  std::int64_t points, indices, lists_min, lists_expected, tables, queries, results, workspace;
  std::int64_t minimum() const { return points + indices + lists_min + tables + queries + results + workspace; }
  std::int64_t expected() const { return points + indices + lists_expected + tables + queries + results + workspace; }
};

/// What the in-place run needs: the points, one index each, the misplaced
/// lists (at least 2^20 pairs per round; a quarter of the points in random
/// order), the level tables, the queries, their results and scratch.
Plan plan_in_place(Args const& a) {
  std::int64_t const ib = a.index == 64 ? 8 : 4;
  std::int64_t const m = a.ops.find("knn") != std::string::npos ? a.m : 0;
  Plan p;
  p.points = a.n * std::int64_t(sizeof(P3));
  p.indices = a.n * ib;
  p.lists_min = std::min<std::int64_t>(a.n / 2, std::int64_t(1) << 20) * 16;
  p.lists_expected = (a.n / 4) * 16;
  p.tables = std::min<std::int64_t>(std::int64_t(1) << 19, std::max<std::int64_t>(1, a.n / 2048)) * (256 * 8 + 64);
  p.queries = m * std::int64_t(sizeof(P3));
  p.results = m * a.k * (ib + 4);
  p.workspace = m * (4 + 2 * ib + 16) + (std::int64_t(64) << 20);
  return p;
}

template <class Tree, class PointAt, class IndexAt, class Queries>
int run_queries(Args const& a, Exec const& exec, Tree const& tree, PointAt point_at, IndexAt index_at, Queries const& q,
                Kokkos::View<P3*, MS> const& q_points, nlohmann::json& out) {
  using Index = typename Tree::index_type;
  kdforge::KnnResultFor<Exec, Tree> nn;
  kdforge::QueryWorkspace<MS> ws;
  std::vector<double> times;
  MemoryTracker::reset_peaks();
  for (int r = 0; r < a.reps + 1; ++r) { // the first call sizes the results and the workspace
    exec.fence();
    auto const t0 = std::chrono::steady_clock::now();
    kdforge::knn(exec, tree, q, a.k, nn, {}, ws);
    exec.fence();
    if (r > 0 || a.reps == 0) times.push_back(ms_since(t0));
  }
  std::sort(times.begin(), times.end());
  double const med = times[times.size() / 2];
  auto const peak = MemoryTracker::snapshot();
  std::printf("knn k=%d, %lld queries: %.3f ms (median of %zu), %.3g queries/s\n", a.k, (long long)a.m, med,
              times.size(), double(a.m) / (med * 1e-3));
  out["knn_ms"] = med;
  out["knn_queries_per_s"] = double(a.m) / (med * 1e-3);
  for (auto const& s : peak) out["knn_peak_bytes"][s.first] = s.second.peak;

  // verification of a sample of rows
  int const v = int(std::min<std::int64_t>(a.verify, a.m));
  if (v <= 0) return 0;
  int const k = a.k;
  auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.indices);
  auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.sq_distances);
  auto const hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, q_points);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(v));
  for (int j = 0; j < v; ++j) rows[std::size_t(j)] = std::int64_t(j) * (a.m / v); // spread over the queries
  int bad = 0;
  auto const t0 = std::chrono::steady_clock::now();
  for (int first = 0; first < v; first += 64) {
    int const batch = std::min(64, v - first);
    Kokkos::View<P3*, MS> sq("verify::queries", batch);
    Kokkos::View<float*, MS> kd("verify::kth_d", batch);
    Kokkos::View<std::int64_t*, MS> ki("verify::kth_i", batch);
    auto const hsq = Kokkos::create_mirror_view(sq);
    auto const hkd = Kokkos::create_mirror_view(kd);
    auto const hki = Kokkos::create_mirror_view(ki);
    for (int j = 0; j < batch; ++j) {
      std::int64_t const row = rows[std::size_t(first + j)];
      hsq(j) = hq(row);
      hkd(j) = hd(row, k - 1);
      hki(j) = std::int64_t(hi(row, k - 1));
      // the row itself: real distances, ascending, no repeats
      for (int s = 0; s < k; ++s) {
        std::int64_t const idx = std::int64_t(hi(row, s));
        bool ok = idx >= 0 && idx < a.n;
        if (ok) {
          float const d = kdforge::sq_distance(hq(row), generated_point(a.seed, idx));
          ok = d == hd(row, s);
        }
        if (ok && s > 0)
          ok = hd(row, s - 1) < hd(row, s) || (hd(row, s - 1) == hd(row, s) && Index(hi(row, s - 1)) < Index(idx));
        if (!ok) {
          ++bad;
          std::printf("CHECK FAILED: query %lld, neighbour %d: index %lld, sq_distance %.9g\n", (long long)row, s,
                      (long long)idx, double(hd(row, s)));
        }
      }
    }
    Kokkos::deep_copy(sq, hsq);
    Kokkos::deep_copy(kd, hkd);
    Kokkos::deep_copy(ki, hki);
    std::vector<std::int64_t> before(std::size_t(batch), 0);
    Kokkos::View<std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> result(before.data(), batch);
    Kokkos::parallel_reduce("kdforge_huge::verify", Policy(exec, 0, std::int64_t(tree.size())),
                            CountBefore<PointAt, IndexAt>{std::size_t(batch), point_at, index_at, sq, kd, ki}, result);
    exec.fence();
    for (int j = 0; j < batch; ++j)
      if (before[std::size_t(j)] != k - 1) {
        ++bad;
        std::printf("CHECK FAILED: query %lld: %lld points come before its %d-th neighbour (expected %d)\n",
                    (long long)rows[std::size_t(first + j)], (long long)before[std::size_t(j)], k, k - 1);
      }
  }
  std::printf("verified %d/%d sampled rows against brute force on the device (%.1f ms)\n", v - std::min(bad, v), v,
              ms_since(t0));
  out["verified_rows"] = v;
  out["failed_checks"] = bad;
  return bad == 0 ? 0 : 1;
}

template <class Index>
int run(Args const& a) {
  Exec exec;
  nlohmann::json out;
  out["n"] = a.n;
  out["index_bits"] = a.index;
  out["builder"] = a.builder;
  out["m"] = a.m;
  out["k"] = a.k;
  out["device"] = Exec::name();
  std::size_t const free_b = kdforge::backend::available_bytes(exec);
  std::printf("kdforge-huge on %s: %s available\n", Exec::name(), gib(double(free_b)).c_str());
  if (a.builder == "in_place") {
    Plan const p = plan_in_place(a);
    std::printf("plan for %lld points (%d-bit indices): points %s, indices %s, misplaced lists %s (at least %s), "
                "tables %s, queries and results %s, query scratch %s: %s expected, %s at least\n",
                (long long)a.n, a.index, gib(double(p.points)).c_str(), gib(double(p.indices)).c_str(),
                gib(double(p.lists_expected)).c_str(), gib(double(p.lists_min)).c_str(), gib(double(p.tables)).c_str(),
                gib(double(p.queries + p.results)).c_str(), gib(double(p.workspace)).c_str(),
                gib(double(p.expected())).c_str(), gib(double(p.minimum())).c_str());
    out["plan_bytes_expected"] = p.expected();
    out["plan_bytes_minimum"] = p.minimum();
    if (std::size_t(p.minimum()) > free_b) {
      std::fprintf(stderr,
                   "kdforge-huge: cannot fit: %lld points need at least %lld bytes (%s), %zu bytes (%s) are available; "
                   "use fewer points, 32-bit indices where they suffice, or a device with more memory\n",
                   (long long)a.n, (long long)p.minimum(), gib(double(p.minimum())).c_str(), free_b,
                   gib(double(free_b)).c_str());
      return 3;
    }
    if (std::size_t(p.expected()) > free_b)
      std::printf("note: the misplaced lists will be made in rounds (the expected peak exceeds the memory)\n");
  }
  if (a.plan) return 0;

  MemoryTracker::start();
  bool const rows_input = a.builder == "bucket" || a.builder == "vvh";
  Kokkos::View<P3*, MS> pts;
  Kokkos::View<float**, Kokkos::LayoutRight, MS> rows;
  auto t0 = std::chrono::steady_clock::now();
  if (rows_input) {
    rows = decltype(rows)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "huge::points"), a.n, 3);
    Kokkos::parallel_for("kdforge_huge::generate", Policy(exec, 0, a.n), GenerateRows{rows, a.seed});
  } else {
    pts = decltype(pts)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "huge::points"), a.n);
    Kokkos::parallel_for("kdforge_huge::generate", Policy(exec, 0, a.n), Generate{pts, a.seed});
  }
  exec.fence();
  std::int64_t const input_bytes = a.n * std::int64_t(sizeof(P3));
  std::printf("generated %lld points on the device: %.1f ms\n", (long long)a.n, ms_since(t0));
  out["generate_ms"] = ms_since(t0);

  bool const knn_too = a.ops.find("knn") != std::string::npos;
  Kokkos::View<P3*, MS> qp;
  Kokkos::View<float**, Kokkos::LayoutRight, MS> qrows;
  auto build_and_query = [&](auto build) -> int {
    MemoryTracker::reset_peaks();
    std::int64_t const used_before = device_used();
    exec.fence();
    t0 = std::chrono::steady_clock::now();
    auto tree = build();
    exec.fence();
    double const build_ms = ms_since(t0);
    auto const mem = MemoryTracker::snapshot();
    std::int64_t peak = 0, held = 0;
    for (auto const& s : mem) {
      peak = std::max(peak, s.second.peak);
      held = std::max(held, s.second.now);
    }
    std::printf("build (%s, %d-bit indices): %.1f ms; peak %lld bytes = %.2f bytes per point (the %.0f of the input "
                "points included); held after it (tree and input): %.2f bytes per point",
                a.builder.c_str(), a.index, build_ms, (long long)peak, double(peak) / double(a.n),
                double(input_bytes) / double(a.n), double(held) / double(a.n));
    out["held_bytes_per_point"] = double(held) / double(a.n);
    if (used_before >= 0) std::printf("; device memory in use after the build: %s", gib(double(device_used())).c_str());
    std::printf("\n");
    out["build_ms"] = build_ms;
    out["build_peak_bytes"] = peak;
    out["build_peak_bytes_per_point"] = double(peak) / double(a.n);
    out["input_bytes_per_point"] = double(input_bytes) / double(a.n);
    if (!knn_too) return 0;
    // queries made now: the build's peak is the build's own
    qp = decltype(qp)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "huge::queries"), a.m);
    Kokkos::parallel_for("kdforge_huge::queries", Policy(exec, 0, a.m), Generate{qp, a.seed + 1000003});
    using Tree = decltype(tree);
    if constexpr (Tree::dimension == 0 || std::is_base_of<kdforge::BucketTree<MS, float, Index>, Tree>::value) {
      qrows = decltype(qrows)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "huge::query_rows"), a.m, 3);
      Kokkos::parallel_for("kdforge_huge::query_rows", Policy(exec, 0, a.m), GenerateRows{qrows, a.seed + 1000003});
      return run_queries(a, exec, tree, RowPoint{tree.points()}, TreeIndex<decltype(tree.original_indices())>{tree.original_indices()},
                         qrows, qp, out);
    } else {
      return run_queries(a, exec, tree, TreePoint<Tree>{tree.points()},
                         TreeIndex<decltype(tree.original_indices())>{tree.original_indices()}, qp, qp, out);
    }
  };
  int rc = 0;
  try {
    if (a.builder == "in_place") {
      kdforge::InPlaceOptions io;
      io.finish_size = a.finish_size;
      io.node_boxes = kdforge::NodeBoxPolicy::never; // uniform points: no boxes (and no room for them at this size)
      rc = build_and_query([&] { return kdforge::build_median_in_place<Index>(exec, pts, io); });
    } else if (a.builder == "split_sort") {
      rc = build_and_query([&] { return kdforge::build_split_sort<Index>(exec, pts); });
    } else if (a.builder == "left_balanced" || a.builder == "partition" || a.builder == "tags" || a.builder == "recursive") {
      kdforge::BuildOptions bo;
      bo.builder = a.builder == "partition" ? kdforge::Builder::presorted_partition
                   : a.builder == "tags"    ? kdforge::Builder::wald_tags
                   : a.builder == "recursive" ? kdforge::Builder::recursive_select
                                              : kdforge::Builder::automatic;
      rc = build_and_query([&] { return kdforge::build_left_balanced<Index>(exec, pts, bo); });
    } else if (a.builder == "bucket") {
      rc = build_and_query([&] { return kdforge::build_bucket_tree<Index>(exec, rows); });
    } else if (a.builder == "vvh") {
      rc = build_and_query([&] { return kdforge::build_vvh_tree<Index>(exec, rows); });
    } else {
      std::fprintf(stderr, "kdforge-huge: unknown --builder %s\n", a.builder.c_str());
      return 2;
    }
  } catch (kdforge::OutOfMemoryError const& e) {
    std::fprintf(stderr, "kdforge-huge: %s\n", e.what());
    return 3;
  }
  MemoryTracker::stop();
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << out.dump(2) << "\n";
  }
  return rc;
}

} // namespace kdforge_huge

int main(int argc, char** argv) {
  using namespace kdforge_huge;
  Args a;
  CLI::App app{"kdforge-huge: one tree over billions of points, kNN, sampled rows checked by brute force"};
  app.add_option("--n", a.n, "points")->check(CLI::PositiveNumber);
  app.add_option("--index", a.index, "index width: 32 or 64")->check(CLI::IsMember({32, 64}));
  app.add_option("--m", a.m, "queries")->check(CLI::NonNegativeNumber);
  app.add_option("--k", a.k, "neighbours per query")->check(CLI::Range(1, 64));
  app.add_option("--verify", a.verify, "sampled rows checked against brute force")->check(CLI::NonNegativeNumber);
  app.add_option("--reps", a.reps, "timed kNN calls (after one that sizes the results)")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", a.seed, "seed of the points (the queries use seed + 1000003)");
  app.add_option("--finish-size", a.finish_size, "in_place: chunks finished by one thread (0: automatic)");
  app.add_option("--builder", a.builder, "in_place | split_sort | left_balanced | partition | tags | recursive | bucket | vvh");
  app.add_option("--ops", a.ops, "build or build,knn");
  app.add_option("--json", a.json, "write the results here");
  app.add_flag("--plan", a.plan, "print the memory plan and whether it fits, then exit");
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return app.exit(e);
  }
  try {
    return a.index == 64 ? run<std::int64_t>(a) : run<std::int32_t>(a);
  } catch (kdforge::Error const& e) {
    std::fprintf(stderr, "kdforge-huge: %s\n", e.what());
    return 2;
  }
}
