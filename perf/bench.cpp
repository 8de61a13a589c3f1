// kdforge-bench: builds kdforge's k-d trees and runs its queries on this
// build's Kokkos backend, timing each phase (fenced, warm-up + repetitions,
// min/median/max; result copy-back separately; peak device memory of the
// build) and checking every row against brute force on a sample of queries,
// so no time is reported for wrong answers. Optionally runs the nanoflann CPU
// baseline on the same points. Prints a table and appends JSON lines.
//
//   kdforge-bench --help          (every flag, bench/cli.cpp)
//
// Layout: bench/cli.cpp (flags), bench/pointset.cpp (distributions),
// bench/point_files.cpp (point files), bench/builders.hpp (the builder
// registry), bench/kdforge_runner.hpp (timed kdforge runs, compiled per
// (dtype, dim) case by bench/kdforge_case.cpp), bench/nanoflann_runner.cpp (baseline),
// bench/verify.hpp (brute force and checks), bench/env.cpp (device facts).
// Exit status: 0 all rows verified, 1 a check failed, 2 bad flags or input
// files, 3 any other error.
#include "bench/cli.hpp"
#include "bench/options.hpp"
#include "bench/pointset.hpp"
#include "kdforge_bench_build_info.hpp"

#include <Kokkos_Core.hpp>
#include <kdforge/base/version.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace kdforge_bench {
namespace {

struct Stats {
  double min = NAN, median = NAN, max = NAN;
};
Stats stats(std::vector<double> t) {
  Stats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  s.min = t.front();
  s.max = t.back();
  s.median = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  return s;
}

nlohmann::json stats_json(std::vector<double> const& t) {
  if (t.empty()) return nullptr;
  Stats const s = stats(t);
  return {{"min", s.min}, {"median", s.median}, {"max", s.max}, {"samples", t}};
}

std::string utc_now() {
  std::time_t const t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string human_bytes(std::int64_t b) {
  if (b < 0) return "-";
  char buf[32];
  if (b >= (std::int64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / double(1 << 30));
  else if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1 << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024.0);
  return buf;
}

/// Prints the table, writes JSON lines, shows progress, counts failures.
class Output : public Sink {
public:
  Output(Options const& o, Environment const& env, std::ofstream* json)
      : m_opt(o), m_env(env), m_json(json), m_start(std::chrono::steady_clock::now()) {}

  void header() {
    std::printf("%-10s %-20s %-13s %-24s %10s %10s %10s %9s %10s  %s\n", "N", "impl:builder", "op", "variant",
                "min ms", "median ms", "max ms", "copy ms", "Mitems/s", "check");
    std::fflush(stdout);
  }

  void row(Workload const& w, Row const& r) override {
    Stats const t = stats(r.times_ms), c = stats(r.copy_ms);
    std::string variant;
    char buf[96];
    if (r.op == "build") {
      variant = r.impl == "kdforge" ? m_opt.split + ", peak " + human_bytes(r.peak_bytes) : "single thread";
    } else if (r.op == "knn") {
      variant = "k=" + std::to_string(r.k);
    } else if (r.op == "radius" || r.op == "radius_count") {
      std::snprintf(buf, sizeof buf, "r=%.4g mean=%.2f", w.radius, r.mean_neighbors);
      variant = buf;
      if (r.op == "radius" && r.impl == "kdforge" && m_opt.radius_buffer > 0)
        variant += " buf=" + std::to_string(m_opt.radius_buffer);
    }
    if (r.op != "build" && r.impl == "kdforge" && m_opt.results == "fresh") variant += " fresh";
    std::string check = "verified " + std::to_string(r.verified) + "/" + std::to_string(r.sample);
    if (!r.note.empty()) check += ", " + r.note;
    if (!r.ok) check += "  FAILED";
    char copy[32] = "-";
    if (!r.copy_ms.empty()) std::snprintf(copy, sizeof copy, "%.3f", c.median);
    std::printf("%-10lld %-20s %-13s %-24s %10.3f %10.3f %10.3f %9s %10.2f  %s\n", static_cast<long long>(w.n),
                (r.impl + ":" + r.builder).substr(0, 20).c_str(), r.op.c_str(), variant.c_str(), t.min, t.median,
                t.max, copy, double(r.items) / (t.median * 1e-3) / 1e6, check.c_str());
    std::fflush(stdout);
    ++m_rows;
    if (!r.ok) ++m_failed_rows;
    if (m_json) write_json(w, r);
  }

  void progress(std::string const& what) override {
    if (m_opt.quiet) return;
    double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    std::fprintf(stderr, "[kdforge-bench %7.1fs] %s\n", s, what.c_str());
    std::fflush(stderr);
  }

  void failure(std::string const& what) override {
    std::fprintf(stderr, "kdforge-bench: CHECK FAILED: %s\n", what.c_str());
    std::fflush(stderr);
  }

  int rows() const { return m_rows; }
  int failed_rows() const { return m_failed_rows; }

private:
  void write_json(Workload const& w, Row const& r) {
    Options const& o = m_opt;
    Stats const t = stats(r.times_ms);
    nlohmann::json j;
    j["schema"] = "kdforge-bench/1";
    j["time"] = utc_now();
    j["label"] = o.label;
    j["git"] = KDFORGE_BENCH_GIT;
    j["kdforge_version"] = kdforge::version();
    j["build_type"] = KDFORGE_BENCH_BUILD_TYPE;
    j["compiler"] = KDFORGE_BENCH_COMPILER;
    j["backend"] = m_env.backend;
    j["host_backend"] = m_env.host_backend;
    j["kokkos_version"] = m_env.kokkos_version;
    j["device"] = m_env.device;
    j["cpu_model"] = m_env.cpu_model;
    j["concurrency"] = m_env.concurrency;
    j["hardware_threads"] = m_env.hardware_threads;
    j["impl"] = r.impl;
    j["builder"] = r.builder;
    j["op"] = r.op;
    j["k"] = r.op == "knn" ? nlohmann::json(r.k) : nlohmann::json(nullptr);
    j["n"] = w.n;
    j["m"] = w.m;
    j["dim"] = o.dim;
    j["dtype"] = o.dtype;
    j["dist"] = o.points_file.empty() ? o.dist : "file";
    j["points_file"] = o.points_file;
    j["queries"] = w.queries_kind;
    j["queries_file"] = w.queries_kind == "file" ? o.queries : "";
    j["seed"] = o.seed;
    j["split"] = o.split;
    j["traversal"] = o.traversal;
    j["bucket_levels"] = o.bucket_levels;
    j["results"] = o.results;
    bool const radius_op = r.op == "radius" || r.op == "radius_count";
    j["radius"] = radius_op ? nlohmann::json(w.radius) : nlohmann::json(nullptr);
    j["radius_source"] = radius_op ? w.radius_source : "";
    j["target_neighbors"] = radius_op && o.radius < 0 ? nlohmann::json(o.neighbors) : nlohmann::json(nullptr);
    j["mean_neighbors"] = radius_op ? nlohmann::json(r.mean_neighbors) : nlohmann::json(nullptr);
    j["reps"] = o.reps;
    j["warmup"] = o.warmup;
    j["threads"] = r.threads;
    j["time_ms"] = stats_json(r.times_ms);
    j["copy_ms"] = stats_json(r.copy_ms);
    j["items"] = r.items;
    j["items_per_s"] = double(r.items) / (t.median * 1e-3);
    j["build_peak_bytes"] = r.peak_bytes >= 0 ? nlohmann::json(r.peak_bytes) : nlohmann::json(nullptr);
    j["tree_bytes"] = r.tree_bytes >= 0 ? nlohmann::json(r.tree_bytes) : nlohmann::json(nullptr);
    j["verified"] = r.verified;
    j["verify_sample"] = r.sample;
    j["ok"] = r.ok;
    j["note"] = r.note;
    (*m_json) << j.dump() << '\n';
    m_json->flush();
  }

  Options const& m_opt;
  Environment const& m_env;
  std::ofstream* m_json;
  std::chrono::steady_clock::time_point m_start;
  int m_rows = 0, m_failed_rows = 0;
};

/// Calls run_workload<T, D> for the run's dtype and dimension.
void dispatch(Workload const& w, Sink& sink) {
  Options const& o = *w.opt;
  bool const is_float = o.dtype == "float";
#define KDFORGE_BENCH_DISPATCH(T, D)                                                                               \
  if (is_float == std::is_same<T, float>::value && o.dim == D) return run_workload<T, D>(w, sink);
  KDFORGE_BENCH_CASES(KDFORGE_BENCH_DISPATCH)
#undef KDFORGE_BENCH_DISPATCH
  throw UsageError("no compiled case for --dtype " + o.dtype + " --dim " + std::to_string(o.dim));
}

int run(Options const& o, int argc, char** argv) {
  // Input files first: a bad file fails before Kokkos starts.
  PointSet file_points, file_queries;
  if (!o.points_file.empty()) file_points = read_points(o.points_file, o.dim);
  QueryKind const query_kind = parse_queries(o.queries);
  bool const queries_from_file = query_kind.kind == "file";
  if (queries_from_file) {
    try {
      file_queries = read_points(o.queries, o.dim);
    } catch (UsageError const& e) {
      throw UsageError("--queries " + o.queries + ": expected same, self, uniform, jitter:SIGMA, far or a point file; " +
                       e.what());
    }
  }
  // the files are read in double: a coordinate float cannot hold would
  // become infinite in a float run
  auto check_float = [&](PointSet const& ps) {
    if (o.dtype != "float") return;
    for (std::size_t i = 0; i < ps.coords.size(); ++i)
      if (std::abs(ps.coords[i]) > double(std::numeric_limits<float>::max())) {
        char v[32];
        std::snprintf(v, sizeof v, "%g", ps.coords[i]);
        throw UsageError("point file '" + ps.source + "': point " + std::to_string(i / std::size_t(ps.dim)) +
                         " has the coordinate " + v + ", beyond float's range; use --dtype double");
      }
  };
  check_float(file_points);
  check_float(file_queries);
  std::vector<std::int64_t> ns = o.ns;
  if (ns.empty()) ns.push_back(file_points.size());
  for (auto n : ns)
    if (!o.points_file.empty() && n > file_points.size())
      throw UsageError("--n " + std::to_string(n) + ": the point file has only " + std::to_string(file_points.size()) +
                       " points");
  if (queries_from_file && o.m > file_queries.size())
    throw UsageError("--m " + std::to_string(o.m) + ": the query file has only " + std::to_string(file_queries.size()) +
                     " points");
  std::unique_ptr<std::ofstream> json;
  if (!o.json_file.empty()) {
    json = std::make_unique<std::ofstream>(o.json_file, std::ios::app);
    if (!*json) throw UsageError("--json " + o.json_file + ": cannot open it for appending");
  }

  Kokkos::ScopeGuard kokkos(argc, argv);
  Environment const env = environment();
  Output out(o, env, json.get());
  std::printf("kdforge %s bench (git %s) on %s, device: %s, concurrency %d; D=%d %s, %s points, %s queries, "
              "%d warm-up + %d timed repetitions\n",
              kdforge::version(), KDFORGE_BENCH_GIT, env.backend.c_str(), env.device.c_str(), env.concurrency, o.dim,
              o.dtype.c_str(), o.points_file.empty() ? o.dist.c_str() : o.points_file.c_str(),
              queries_from_file ? o.queries.c_str() : query_kind.name().c_str(),
              o.warmup, o.reps);
  out.header();

  for (std::int64_t const n : ns) {
    PointSet points;
    if (o.points_file.empty()) {
      out.progress("N=" + std::to_string(n) + ": generating " + o.dist + " points");
      points = generate_points(o.dist, n, o.dim, o.seed);
    } else {
      points = file_points;
      points.coords.resize(std::size_t(n) * std::size_t(o.dim));
    }
    Workload w;
    w.opt = &o;
    w.n = n;
    w.points = &points;
    PointSet queries;
    w.queries_kind = query_kind.name();
    if (query_kind.kind == "same") {
      w.m = o.m > 0 ? std::min(o.m, n) : n;
      w.queries = &points;
    } else if (queries_from_file) {
      w.m = o.m > 0 ? o.m : file_queries.size();
      w.queries = &file_queries;
    } else {
      w.m = o.m > 0 ? o.m : n;
      queries = generate_queries(query_kind, points, w.m, o.seed + 1000003);
      w.queries = &queries;
    }
    if (o.has_op("radius") || o.has_op("radius_count")) {
      if (o.radius > 0) {
        w.radius = o.radius;
        w.radius_source = "--radius";
      } else {
        bool const uniform_box = o.points_file.empty() && o.dist == "uniform";
        // Far queries have no neighbours at any useful radius: take the
        // points' own spacing, so the radius ops measure empty searches.
        bool const far = query_kind.kind == "far";
        double mean = 0;
        w.radius = radius_for_neighbors(points, far ? points : *w.queries, far ? n : w.m, o.neighbors, uniform_box,
                                        w.radius_source, mean);
        // Where most points coincide any radius holds nearly all of them:
        // refuse before the result rows exhaust the memory.
        if (!far && mean > 100 * o.neighbors && mean * double(w.m) > 1e9) {
          char buf[200];
          std::snprintf(buf, sizeof buf,
                        "radius ops: at radius %.3g the sampled queries find %.0f points each (--neighbors %g), "
                        "about %.2g result rows in all",
                        w.radius, mean, o.neighbors, mean * double(w.m));
          throw UsageError(std::string(buf) + "; the points are degenerate (e.g. --dist duplicates-all): leave "
                                              "radius and radius_count out of --ops, or give --radius");
        }
      }
    }
    dispatch(w, out);
  }

  if (out.failed_rows()) {
    std::printf("FAILED: %d of %d rows did not match brute force (details on stderr)\n", out.failed_rows(), out.rows());
    return exit_wrong_results;
  }
  std::printf("all %d rows verified against brute force%s\n", out.rows(),
              o.json_file.empty() ? "" : (", JSON lines appended to " + o.json_file).c_str());
  return exit_ok;
}

} // namespace
} // namespace kdforge_bench

int main(int argc, char** argv) {
  using namespace kdforge_bench;
  int code = exit_ok;
  auto const opt = parse_command_line(argc, argv, code);
  if (!opt) return code;
  // Kokkos sees only its own flags.
  std::vector<char*> kargv{argv[0]};
  for (auto const& a : opt->kokkos_args) kargv.push_back(const_cast<char*>(a.c_str()));
  int kargc = int(kargv.size());
  try {
    return run(*opt, kargc, kargv.data());
  } catch (UsageError const& e) {
    std::fprintf(stderr, "kdforge-bench: %s\n", e.what());
    return exit_usage;
  } catch (std::bad_alloc const&) {
    std::fprintf(stderr, "kdforge-bench: out of memory (try smaller --n/--m or fewer --k values)\n");
    return exit_runtime;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "kdforge-bench: error: %s\n", e.what());
    return exit_runtime;
  }
}
