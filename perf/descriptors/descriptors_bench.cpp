// kdforge-descriptors-bench: Hu, Nooshabadi & Ahmadi 2015's experiments
// (Table I: D = 3, Table II: D = 512; N = 3,200 ... 102,400 points, k = 4,
// the queries are the points) on kdforge's bucket trees, with the paper's
// GTX 660 numbers beside ours, and the data descriptor matching has:
//   uniform      uniform in [0, 1]^D, the worst case: no tree prunes there
//   manifold     an 8-dimensional manifold embedded in D dimensions, with noise
//   descriptors  clustered non-negative vectors normalised like SIFT's
// Per size: the build (time, peak memory), exact kNN by the tree walk, by
// brute force and by the automatic strategy (all three checked identical),
// approximate kNN with leaf budgets (time and recall@k), and in the same
// run FLANN's single k-d tree (exact) and randomized forest (approximate)
// and faiss's IndexFlatL2 on the CPU, where CMake found them. --no-brute
// leaves the timed brute force out (minutes of it from ~10^5 points on
// CPUs; the automatic strategy may still choose it): the exact walk is then
// the reference, checked against the automatic strategy, the walk with the
// queries as given (--as-given) and FLANN's exact search (--flann: recall 1).
//
//   kdforge-descriptors-bench --table 2 --dist manifold --flann --faiss
#include "baselines.hpp"

#include <kdforge/kdforge.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using Rows = Kokkos::View<float**, Kokkos::LayoutRight, MS>;

// Hu et al. 2015, GeForce GTX 660 (T_gcnst, T_gnns in ms; Table I: D = 3, Table II: D = 512)
struct PaperRow {
  std::int64_t n;
  double build_ms, knn_ms;
};
constexpr PaperRow paper_table1[] = {{3200, 4.6, 1.4},    {6400, 7.2, 2.5},    {12800, 8.2, 4.7},
                                     {25600, 8.8, 8.0},   {51200, 12.4, 15.3}, {102400, 20.2, 30.3}};
constexpr PaperRow paper_table2[] = {{3200, 247.9, 3.9},   {6400, 315.5, 6.7},   {12800, 405.8, 13.9},
                                     {25600, 519.4, 20.8}, {51200, 760.1, 41.1}, {102400, 876.3, 72.8}};

std::vector<float> generate(std::string const& dist, std::int64_t n, int dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<float> x(std::size_t(n) * std::size_t(dim));
  if (dist == "uniform") {
    for (auto& v : x) v = float(u(rng));
  } else if (dist == "manifold") {
    int const m = 8; // intrinsic dimension
    std::mt19937_64 frng(7); // the same embedding for every size
    std::vector<double> a(std::size_t(dim) * m), phase(static_cast<std::size_t>(dim));
    for (auto& v : a) v = g(frng) / std::sqrt(double(m));
    for (auto& v : phase) v = 6.2831853 * u(frng);
    std::vector<double> t(m);
    for (std::int64_t i = 0; i < n; ++i) {
      for (auto& v : t) v = u(rng);
      for (int d = 0; d < dim; ++d) {
        double s = 0.1 * std::sin(3.0 * t[std::size_t(d % m)] + phase[std::size_t(d)]); // curved, not flat
        for (int j = 0; j < m; ++j) s += a[std::size_t(d) * m + j] * t[std::size_t(j)];
        x[std::size_t(i) * dim + d] = float(s + 0.002 * g(rng));
      }
    }
  } else if (dist == "descriptors") {
    int const clusters = 256;
    std::mt19937_64 frng(11);
    std::exponential_distribution<double> e(4.0);
    std::vector<double> c(std::size_t(clusters) * dim);
    for (auto& v : c) v = u(frng) < 0.3 ? e(frng) : 0.0; // sparse, non-negative
    std::vector<double> v(static_cast<std::size_t>(dim));
    for (std::int64_t i = 0; i < n; ++i) {
      std::size_t const k = std::size_t(rng() % clusters);
      double len = 0;
      for (int d = 0; d < dim; ++d) {
        v[std::size_t(d)] = std::max(0.0, c[k * dim + d] + 0.05 * g(rng));
        len += v[std::size_t(d)] * v[std::size_t(d)];
      }
      // SIFT's normalisation: unit length, clipped at 0.2, unit length, x 512
      len = std::sqrt(len) + 1e-12;
      double len2 = 0;
      for (auto& y : v) y = std::min(0.2, y / len), len2 += y * y;
      len2 = std::sqrt(len2) + 1e-12;
      for (int d = 0; d < dim; ++d) x[std::size_t(i) * dim + d] = float(std::round(512.0 * v[std::size_t(d)] / len2));
    }
  } else {
    throw CLI::ValidationError("--dist", "expected uniform, manifold or descriptors, got " + dist);
  }
  return x;
}

Rows to_device(std::vector<float> const& x, std::int64_t n, int dim) {
  Rows v(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rows"), n, dim);
  auto h = Kokkos::create_mirror_view(v);
  std::copy(x.begin(), x.end(), h.data());
  Kokkos::deep_copy(v, h);
  return v;
}

double median_ms(int reps, std::function<void()> const& f) {
  f(); // warm-up: first-touch allocations, kernel loading
  Kokkos::fence();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto const t0 = std::chrono::steady_clock::now();
    f();
    Kokkos::fence();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct HostKnn {
  std::vector<std::int64_t> idx;
  std::vector<float> d2;
};
template <class R>
HostKnn to_host(R const& r) {
  auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
  auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
  HostKnn h;
  h.idx.assign(hi.data(), hi.data() + hi.size());
  h.d2.assign(hd.data(), hd.data() + hd.size());
  return h;
}

// recall@k by distance (ties count): the share of reported neighbours no
// farther than the true k-th
double recall(std::vector<float> const& d2, std::vector<float> const& exact, std::int64_t m, int k) {
  std::int64_t hit = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    float const kth = exact[std::size_t(i * k + k - 1)];
    for (int j = 0; j < k; ++j) {
      float const d = d2[std::size_t(i * k + j)];
      hit += d <= kth * (1.0f + 1e-5f) ? 1 : 0;
    }
  }
  return double(hit) / double(m * k);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"kdforge-descriptors-bench: Hu, Nooshabadi & Ahmadi 2015's Tables I and II on bucket trees, with FLANN "
               "and faiss beside"};
  int table = 2;
  std::string dist = "uniform";
  std::vector<std::int64_t> sizes{3200, 6400, 12800, 25600, 51200, 102400};
  int k = 4, reps = 3, dim = 0;
  std::int64_t bucket = 8;
  std::vector<std::int64_t> leaves{1, 4, 16, 64, 256};
  std::vector<int> checks{32, 128, 512, 2048};
  bool flann = false, faiss = false, stack_walk = false, no_brute = false, as_given = false;
  app.add_option("--table", table, "1: D = 3 (Table I), 2: D = 512 (Table II)")->check(CLI::Range(1, 2));
  app.add_option("--dim", dim, "dimension instead of the table's");
  app.add_option("--dist", dist, "uniform | manifold | descriptors");
  app.add_option("--n", sizes, "sizes (points = queries)")->delimiter(',');
  app.add_option("--k", k, "neighbours per query")->check(CLI::Range(1, 1024));
  app.add_option("--reps", reps, "timed repetitions (median)")->check(CLI::Range(1, 1000));
  app.add_option("--bucket", bucket, "BucketOptions::bucket_size")->check(CLI::Range(1, 1 << 20));
  app.add_option("--leaves", leaves, "approximate kNN: ApproximateOptions::max_leaves values (0: none)")->delimiter(',');
  app.add_option("--checks", checks, "FLANN forest: checks values")->delimiter(',');
  app.add_flag("--flann", flann, "FLANN beside kdforge (single tree exact, 4-tree forest)");
  app.add_flag("--faiss", faiss, "faiss IndexFlatL2 beside kdforge");
  app.add_flag("--stack-walk", stack_walk,
               "also time the walk with a thread per query (Traversal::stack) where the tree walk's automatic "
               "choice is a team per query");
  app.add_flag("--no-brute", no_brute,
               "leave the timed brute force out (the automatic strategy may still choose it): the exact walk is the "
               "reference; with --flann, FLANN's exact search must find the same distances (recall 1)");
  app.add_flag("--as-given", as_given,
               "also time the tree walk with the queries as given (QueryOptions::order = as_given; CPUs otherwise "
               "take them in Morton order from 4,096 on)");
  CLI11_PARSE(app, argc, argv);
  // a line at a time into pipes and files too: a run stopped by a time limit keeps the rows it printed
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (dim == 0) dim = table == 1 ? 3 : 512;
  if (flann && !descriptors::have_flann()) return std::fprintf(stderr, "built without FLANN (Debian: libflann-dev)\n"), 2;
  if (faiss && !descriptors::have_faiss()) return std::fprintf(stderr, "built without faiss (Debian: libfaiss-dev)\n"), 2;

  Kokkos::ScopeGuard guard(argc, argv);
  Exec exec;
  std::printf("# kdforge-descriptors-bench: %s, D = %d, %s, k = %d, queries = points, bucket %lld, median of %d\n",
              Exec::name(), dim, dist.c_str(), k, (long long)bucket, reps);
  PaperRow const* paper = table == 1 ? paper_table1 : paper_table2;
  bool const paper_dim = (table == 1 && dim == 3) || (table == 2 && dim == 512);
  bool failed = false;
  for (std::int64_t n : sizes) {
    auto const x = generate(dist, n, dim, 1000 + std::uint64_t(n));
    Rows const p = to_device(x, n, dim);
    kdforge::BucketOptions bo;
    bo.bucket_size = bucket;
    kdforge::BucketTree<MS, float> tree;
    double const build = median_ms(reps, [&] { tree = kdforge::build_bucket_tree(exec, p, bo); });
    kdforge::QueryOptions walk, brute, automatic;
    walk.strategy = kdforge::KnnStrategy::tree;
    brute.strategy = kdforge::KnnStrategy::brute_force;
    kdforge::KnnResult<MS, float, std::int32_t> r;
    double const t_walk = median_ms(reps, [&] { kdforge::knn(exec, tree, p, k, r, walk); });
    HostKnn const rw = to_host(r);
    double t_brute = -1;
    HostKnn rb = rw; // the reference: brute force, or with --no-brute the exact walk
    if (!no_brute) {
      t_brute = median_ms(reps, [&] { kdforge::knn(exec, tree, p, k, r, brute); });
      rb = to_host(r);
    }
    double t_given = -1;
    bool given_same = true;
    if (as_given) {
      kdforge::QueryOptions g = walk;
      g.order = kdforge::QueryOrder::as_given;
      t_given = median_ms(reps, [&] { kdforge::knn(exec, tree, p, k, r, g); });
      HostKnn const rg = to_host(r);
      given_same = rg.idx == rw.idx && rg.d2 == rw.d2;
    }
    kdforge::Traversal const resolved = kdforge::detail::bucket_traversal<Exec>(walk.traversal, dim, k);
    bool const team = resolved == kdforge::Traversal::team;
    double t_stack = -1;
    bool stack_same = true;
    if (stack_walk && team) {
      kdforge::QueryOptions s = walk;
      s.traversal = kdforge::Traversal::stack;
      t_stack = median_ms(reps, [&] { kdforge::knn(exec, tree, p, k, r, s); });
      HostKnn const rs = to_host(r);
      stack_same = rs.idx == rb.idx && rs.d2 == rb.d2;
    }
    // brute force by each method (BruteForceMethod), where the build has a GEMM
    double t_tiles = -1, t_gemm = -1;
    bool methods_same = true;
    if constexpr (kdforge::backend::has_gemm<Exec>) {
      if (!no_brute) {
        kdforge::QueryOptions m = brute;
        m.brute_force_method = kdforge::BruteForceMethod::tiles;
        t_tiles = median_ms(reps, [&] { kdforge::knn(exec, tree, p, k, r, m); });
        HostKnn const rt = to_host(r);
        m.brute_force_method = kdforge::BruteForceMethod::gemm;
        t_gemm = median_ms(reps, [&] { kdforge::knn(exec, tree, p, k, r, m); });
        HostKnn const rg = to_host(r);
        methods_same = rt.idx == rb.idx && rt.d2 == rb.d2 && rg.idx == rb.idx && rg.d2 == rb.d2;
      }
    }
    double const t_auto = median_ms(reps, [&] { kdforge::knn(exec, tree, p, k, r, automatic); });
    HostKnn const ra = to_host(r);
    double const share = kdforge::detail::sampled_visit_share(exec, tree, p, k);
    bool const picks_brute =
        kdforge::detail::choose_brute_force(exec, tree, p, k, kdforge::BruteForceMethod::automatic, resolved);
    bool const same =
        rw.idx == rb.idx && rw.d2 == rb.d2 && ra.idx == rb.idx && methods_same && stack_same && given_same;
    failed = failed || !same;
    std::printf("\nN = %lld: build %.3f ms (peak %.1f MiB, %lld nodes, height %d)\n", (long long)n, build,
                double(tree.build_peak_bytes()) / (1 << 20), (long long)tree.node_count(), tree.height());
    char brute_ms[32] = "not run";
    if (t_brute >= 0) std::snprintf(brute_ms, sizeof brute_ms, "%.3f ms", t_brute);
    std::printf("  exact kNN: tree walk (%s) %.3f ms (looks at %.1f%% of the points), brute force %s, automatic "
                "%.3f ms (%s); answers %s\n",
                team ? "a team per query" : "a thread per query", t_walk, 100.0 * share, brute_ms, t_auto,
                picks_brute ? "brute force" : "tree",
                same ? (no_brute ? "identical (no brute force: the walk against the others)" : "identical")
                     : "DIFFER: CHECK FAILED");
    if (t_given >= 0) std::printf("  tree walk with the queries as given: %.3f ms\n", t_given);
    if (t_stack >= 0) std::printf("  tree walk with a thread per query: %.3f ms\n", t_stack);
    if (t_tiles >= 0)
      std::printf("  brute force by method: tiles %.3f ms, GEMM %.3f ms (%.1fx)\n", t_tiles, t_gemm, t_tiles / t_gemm);
    if (paper_dim)
      for (int i = 0; i < 6; ++i)
        if (paper[i].n == n)
          std::printf("  from the paper (Table %s, GeForce GTX 660): build %.1f ms, kNN k = 4 %.1f ms\n",
                      table == 1 ? "I" : "II", paper[i].build_ms, paper[i].knn_ms);
    for (std::int64_t l : leaves) {
      kdforge::ApproximateOptions ao;
      ao.max_leaves = l;
      decltype(kdforge::knn_approximate(exec, tree, p, k, ao)) a;
      double const t = median_ms(reps, [&] { a = kdforge::knn_approximate(exec, tree, p, k, ao); });
      std::printf("  approximate kNN, max_leaves %5lld: %9.3f ms, recall@%d %.4f\n", (long long)l, t, k,
                  recall(to_host(a).d2, rb.d2, n, k));
    }
    if (flann || faiss) {
      auto const report = [&](descriptors::BaselineRun const& b) {
        double const rc = recall(b.sq_distances, rb.d2, n, k);
        std::printf("  %-42s build %9.3f ms, search %10.3f ms, recall@%d %.4f\n", b.name.c_str(), b.build_ms,
                    b.search_ms, k, rc);
        return rc;
      };
      if (flann) {
        // without brute force, FLANN's exact search is the check of the walk's distances
        if (report(descriptors::flann_single_exact(x, n, dim, x, n, k)) < 1.0 && no_brute) {
          std::printf("  FLANN's exact search and the walk DIFFER: CHECK FAILED\n");
          failed = true;
        }
        for (int c : checks) report(descriptors::flann_forest(x, n, dim, x, n, k, 4, c));
      }
      if (faiss) report(descriptors::faiss_flat(x, n, dim, x, n, k));
    }
  }
  if (failed) std::printf("\nCHECK FAILED: the strategies' answers differ\n");
  return failed ? 1 : 0;
}
