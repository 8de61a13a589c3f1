// kdforge-bench: the nanoflann baseline (see nanoflann_runner.hpp). Host code
// only; OpenMP-parallel queries when compiled with OpenMP, else std::threads.
#include "nanoflann_runner.hpp"

#include <nanoflann.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace kdforge_bench {

namespace {

template <class T, int D>
struct Cloud {
  std::vector<HostPoint<T, D>> const* pts;
  std::size_t kdtree_get_point_count() const { return pts->size(); }
  T kdtree_get_pt(std::size_t i, std::size_t d) const { return (*pts)[i][d]; }
  template <class BBox>
  bool kdtree_get_bbox(BBox&) const { return false; }
};

/// Counts points strictly inside the radius (nanoflann's radius convention).
template <class T>
struct CountResultSet {
  T radius;
  std::size_t count = 0;
  std::size_t size() const { return count; }
  bool full() const { return true; }
  bool addPoint(T d, std::uint32_t) {
    count += d < radius;
    return true;
  }
  T worstDist() const { return radius; }
};

int query_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return int(std::max(1u, std::thread::hardware_concurrency()));
#endif
}

/// for q in [0, m): f(q), in parallel.
template <class F>
void parallel_queries(std::int64_t m, F const& f) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t q = 0; q < m; ++q) f(q);
#else
  parallel_chunks(m, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t q = b; q < e; ++q) f(q);
  });
#endif
}

template <class F>
std::vector<double> time_host(Options const& o, F const& f) {
  std::vector<double> t;
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    auto const start = std::chrono::steady_clock::now();
    f();
    double const ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r >= o.warmup) t.push_back(ms);
  }
  return t;
}

} // namespace

template <class T, int D>
void run_nanoflann(Workload const& w, Sink& sink, std::vector<HostPoint<T, D>> const& pts,
                   std::vector<HostPoint<T, D>> const& queries, Reference const& ref) {
  using Adaptor = Cloud<T, D>;
  using Tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<T, Adaptor>, Adaptor, D, std::uint32_t>;
  Options const& o = *w.opt;
  std::int64_t const m = std::int64_t(queries.size());
  double const tol = nanoflann_tolerance<T>();
  Adaptor cloud{&pts};
  nanoflann::KDTreeSingleIndexAdaptorParams const params(10); // nanoflann's default leaf size
  auto where = [&](std::string const& what) { return "N=" + std::to_string(w.n) + " nanoflann: " + what; };
  auto base = [&](char const* op, std::int64_t items, int threads) {
    Row row;
    row.impl = "nanoflann";
    row.builder = "nanoflann";
    row.op = op;
    row.items = items;
    row.threads = threads;
    row.note = "leaf size 10";
    return row;
  };
  auto report = [&](Row& row, CheckResult const& check, std::string const& what) {
    row.verified = check.ok;
    row.sample = check.total;
    row.ok = check.ok == check.total;
    for (auto const& f : check.failures) sink.failure(where(what) + ": " + f);
    sink.row(w, row);
  };

  sink.progress(where("build (single thread)"));
  std::unique_ptr<Tree> tree;
  Row build = base("build", w.n, 1);
  build.times_ms = time_host(o, [&] {
    tree.reset();
    tree = std::make_unique<Tree>(D, cloud, params);
  });
  { // checked like kdforge's trees: nearest point of each sampled query
    std::vector<std::uint32_t> idx(ref.queries.size());
    std::vector<T> dist(ref.queries.size());
    for (std::size_t s = 0; s < ref.queries.size(); ++s)
      tree->knnSearch(queries[std::size_t(ref.queries[s])].data(), 1, &idx[s], &dist[s]);
    auto check = check_knn<T, D>(
        ref, pts, queries, 1, tol, [&](std::size_t s, int) { return idx[s]; }, [&](std::size_t s, int) { return dist[s]; });
    report(build, check, "build");
  }
  int const threads = query_threads();

  auto knn_row = [&](char const* op, int k) {
    sink.progress(where(std::string(op) + (std::string(op) == "knn" ? " k=" + std::to_string(k) : "")));
    Row row = base(op, m, threads);
    row.k = std::string(op) == "knn" ? k : 0;
    std::vector<std::uint32_t> idx(std::size_t(m) * k);
    std::vector<T> dist(std::size_t(m) * k);
    row.times_ms = time_host(o, [&] {
      parallel_queries(m, [&](std::int64_t q) {
        nanoflann::KNNResultSet<T, std::uint32_t> rs(static_cast<std::size_t>(k));
        rs.init(&idx[std::size_t(q) * k], &dist[std::size_t(q) * k]);
        tree->findNeighbors(rs, queries[std::size_t(q)].data(), nanoflann::SearchParams());
        for (std::size_t j = rs.size(); j < std::size_t(k); ++j) { // fewer points than k
          idx[std::size_t(q) * k + j] = std::numeric_limits<std::uint32_t>::max();
          dist[std::size_t(q) * k + j] = std::numeric_limits<T>::infinity();
        }
      });
    });
    auto check = check_knn<T, D>(
        ref, pts, queries, k, tol,
        [&](std::size_t s, int j) {
          auto const i = idx[std::size_t(ref.queries[s]) * k + j];
          return i == std::numeric_limits<std::uint32_t>::max() ? std::int64_t(-1) : std::int64_t(i);
        },
        [&](std::size_t s, int j) { return dist[std::size_t(ref.queries[s]) * k + j]; });
    report(row, check, std::string(op) + " k=" + std::to_string(k));
  };
  if (o.has_op("knn"))
    for (int k : o.ks) knn_row("knn", k);
  if (o.has_op("closest")) knn_row("closest", 1);

  T const sq_r = T(w.radius) * T(w.radius);
  if (o.has_op("radius_count")) {
    sink.progress(where("radius_count"));
    Row row = base("radius_count", m, threads);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(m));
    row.times_ms = time_host(o, [&] {
      parallel_queries(m, [&](std::int64_t q) {
        CountResultSet<T> rs{sq_r};
        tree->findNeighbors(rs, queries[std::size_t(q)].data(), nanoflann::SearchParams());
        counts[std::size_t(q)] = std::int64_t(rs.count);
      });
    });
    double total = 0;
    for (auto c : counts) total += double(c);
    row.mean_neighbors = m ? total / double(m) : 0;
    auto check = check_radius_count(ref, tol, [&](std::size_t s) { return counts[std::size_t(ref.queries[s])]; });
    report(row, check, "radius_count");
  }
  if (o.has_op("radius")) {
    sink.progress(where("radius"));
    Row row = base("radius", m, threads);
    std::vector<std::vector<std::pair<std::uint32_t, T>>> found(static_cast<std::size_t>(m));
    row.times_ms = time_host(o, [&] {
      parallel_queries(m, [&](std::int64_t q) {
        tree->radiusSearch(queries[std::size_t(q)].data(), sq_r, found[std::size_t(q)],
                           nanoflann::SearchParams(32, 0.f, false)); // unsorted rows, like kdforge's default
      });
    });
    double total = 0;
    for (auto const& f : found) total += double(f.size());
    row.mean_neighbors = m ? total / double(m) : 0;
    auto row_of = [&](std::size_t s) -> auto const& { return found[std::size_t(ref.queries[s])]; };
    auto check = check_radius_rows<T, D>(
        ref, pts, queries, tol, [&](std::size_t s) { return std::int64_t(row_of(s).size()); },
        [&](std::size_t s, std::int64_t p) { return std::int64_t(row_of(s)[std::size_t(p)].first); },
        [&](std::size_t s, std::int64_t p) { return row_of(s)[std::size_t(p)].second; });
    report(row, check, "radius");
  }
}

#define KDFORGE_BENCH_NANOFLANN_INSTANTIATE(T, D)                                                                  \
  template void run_nanoflann<T, D>(Workload const&, Sink&, std::vector<HostPoint<T, D>> const&,                    \
                                    std::vector<HostPoint<T, D>> const&, Reference const&);
KDFORGE_BENCH_CASES(KDFORGE_BENCH_NANOFLANN_INSTANTIATE)

} // namespace kdforge_bench
