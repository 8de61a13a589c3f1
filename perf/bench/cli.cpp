// kdforge-bench: the command line (CLI11). Every flag is documented here and
// shown by --help.
#include "cli.hpp"
#include "pointset.hpp"

#include <kdforge/kernels/query/walks/common.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <set>
#include <sstream>

namespace kdforge_bench {

namespace {

std::string join(std::vector<std::string> const& v, char const* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::vector<std::string> split_list(std::vector<std::string> const& in) {
  std::vector<std::string> out;
  for (auto const& s : in) {
    std::stringstream ss(s);
    std::string t;
    while (std::getline(ss, t, ',')) if (!t.empty()) out.push_back(t);
  }
  return out;
}

/// x > 0 and finite (CLI11's PositiveNumber prints DBL_MAX in its message).
CLI::Validator const positive(
    [](std::string& s) -> std::string {
      char* end = nullptr;
      double const v = std::strtod(s.c_str(), &end);
      if (end != s.c_str() && *end == 0 && v > 0 && std::isfinite(v)) return {};
      return "expected a positive number, got '" + s + "'";
    },
    "POSITIVE");

} // namespace

std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code) {
  Options o;
  // --kokkos-* flags are Kokkos' own (e.g. --kokkos-threads=8); keep them apart.
  std::vector<char*> mine{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--kokkos", 0) == 0) o.kokkos_args.push_back(argv[i]);
    else mine.push_back(argv[i]);
  }

  std::vector<BuilderInfo> const catalog = builder_catalog();
  std::string builder_help = "kdforge builders to measure, comma separated, or all:";
  for (auto const& b : catalog) builder_help += "\n  " + b.name + ": " + b.description;

  CLI::App app{"kdforge-bench: builds kdforge's k-d trees and runs queries on this build's Kokkos backend; every\n"
               "phase is timed with fences (warm-up, then min/median/max of repetitions) and every row is checked\n"
               "against brute force on a sample of queries (exit status 1 when any check fails, 2 for bad flags or\n"
               "input files, 3 for other errors). Kokkos' own --kokkos-* flags are passed through."};
  app.option_defaults()->always_capture_default();
  app.get_formatter()->column_width(34);

  std::vector<std::string> builders{"all"}, ops{"all"};
  std::vector<std::int64_t> ns;
  app.add_option("--builder", builders, builder_help)->delimiter(',')->group("What is built");
  app.add_option("--split", o.split, "split plane of each node: auto (kdforge's choice by the points' box), round_robin (level mod D) or widest (widest side of the node's box)")
      ->check(CLI::IsMember({"auto", "round_robin", "widest"}))->group("What is built");
  app.add_option("--node-boxes", o.node_boxes, "boxes of the inner nodes' sub-trees for pruning: auto (kept where the points leave their cells empty), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))->group("What is built");
  app.add_option("--n", ns, "number(s) of points, comma separated (e.g. 1000,10000); with --points: use the first N points of the file (default: all)")
      ->delimiter(',')->check(CLI::Range(std::int64_t(1), std::int64_t(4000000000)))->default_str("100000")->group("What is built");
  app.add_option("--dim", o.dim, "dimension D of the points (compiled cases: 2, 3, 4)")
      ->check(CLI::IsMember({2, 3, 4}))->group("What is built");
  app.add_option("--dtype", o.dtype, "coordinate type")->check(CLI::IsMember({"float", "double"}))->group("What is built");
  std::vector<std::string> dist_names;
  std::string dist_help = "generated points:";
  for (auto const& d : distributions()) {
    dist_names.push_back(d.name);
    dist_help += "\n  " + std::string(d.name) + ": " + d.description;
  }
  auto* dist = app.add_option("--dist", o.dist, dist_help)->check(CLI::IsMember(dist_names))->group("What is built");
  app.add_option("--points", o.points_file,
                 "read the points from FILE instead: .ply (ascii or binary_little_endian, vertex x,y,z[,w]), .xyz/.txt/.csv/.pts "
                 "(text, D numbers per line), .bin/.f32/.raw (raw float32, D per point)")
      ->excludes(dist)->group("What is built");

  app.add_option("--ops", ops,
                 "operations, comma separated: build, knn, closest, radius_count, radius, or all (the build is always "
                 "timed; \"build\" alone measures only it)")
      ->delimiter(',')->group("Queries");
  std::string queries_help = "query set (recorded as the JSON field \"queries\"):";
  for (auto const& q : query_kinds()) queries_help += "\n  " + std::string(q.name) + ": " + q.description;
  app.add_option("--queries", o.queries, queries_help)->group("Queries");
  app.add_option("--m", o.m, "number of queries (default: as many as points; with a query file: all of it)")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(4000000000)))->default_str("N")->group("Queries");
  app.add_option("--k", o.ks, "k of the kNN queries, comma separated")->delimiter(',')->check(CLI::Range(1, 1000000))->group("Queries");
  auto* nb = app.add_option("--neighbors", o.neighbors,
                            "radius ops: target mean neighbour count; the radius follows from it (formula for --dist "
                            "uniform, else the radius at which 64 sampled queries find it on average, by brute force; "
                            "far queries: 64 sampled points)")
                 ->check(positive)->group("Queries");
  app.add_option("--radius", o.radius, "radius ops: this radius instead (not squared)")
      ->check(positive)->excludes(nb)->default_str("from --neighbors")->group("Queries");
  app.add_option("--traversal", o.traversal, "tree walk of queries: auto (trail on GPUs, stack on CPUs), stack, stack_free, trail")
      ->check(CLI::IsMember({"auto", "stack", "stack_free", "trail"}))->group("Queries");

  app.add_option("--results", o.results,
                 "query results: reuse (written into the previous repetition's Views, with one kdforge::QueryWorkspace for "
                 "the scratch: no allocation in the timed call, like the nanoflann baseline's preallocated arrays) or "
                 "fresh (results and scratch allocated by every call, timed)")
      ->check(CLI::IsMember({"reuse", "fresh"}))->group("Queries");
  app.add_option("--regroup", o.regroup_iterations,
                 "kNN / closest point: set walks still running after this many iterations aside for a second, dense "
                 "pass (QueryOptions::regroup_iterations; -1: kdforge's default, 0: off)")->check(CLI::Range(-1, 1 << 30))->group("Queries");
  app.add_option("--bucket-levels", o.bucket_levels,
                 "bottom tree levels the queries scan instead of traverse (QueryOptions::bucket_levels; -1: kdforge's "
                 "default for the target, 0: plain traversal)")->check(CLI::Range(-1, kdforge::kernels::max_bucket_levels))->group("Queries");
  app.add_option("--radius-buffer", o.radius_buffer,
                 "radius op: how rows are found (RadiusOptions::buffer_size; -1: automatic, one traversal appending "
                 "to per-chunk buffers on CPUs, count then fill on GPUs; 0: count, then fill; > 0: scratch slots per "
                 "query for a single traversal)")->check(CLI::Range(std::int64_t(-1), std::int64_t(1) << 20))->group("Queries");
  app.add_option("--order", o.order, "processing order of the queries: auto (kdforge's default), as_given, morton")
      ->check(CLI::IsMember({"auto", "as_given", "morton"}))->group("Queries");
  app.add_option("--reps", o.reps, "timed repetitions of every phase")->check(CLI::Range(1, 100000))->group("Measurement");
  app.add_option("--warmup", o.warmup, "untimed repetitions before them")->check(CLI::Range(0, 100000))->group("Measurement");
  app.add_option("--seed", o.seed, "random seed of generated points (queries use a derived seed)")->group("Measurement");
  app.add_option("--verify", o.verify, "queries sampled (evenly spaced) and checked against brute force in every row")
      ->check(CLI::Range(1, 100000000))->group("Measurement");
  app.add_flag("--nanoflann", o.nanoflann,
               "also run the nanoflann CPU baseline on the same points: single-threaded build, OpenMP-parallel queries, "
               "same checks")->group("Measurement");

  app.add_option("--json", o.json_file, "append one JSON record per table row to FILE (JSON lines)")->group("Output");
  app.add_option("--label", o.label, "free text stored in every JSON record (e.g. the workload's name)")->group("Output");
  app.add_flag("--trace", o.trace,
               "print the timeline of one extra, untimed call per row: every kernel and vendor call fenced, the gaps "
               "between them (host work: allocations, launches) shown")->group("Output");
  app.add_flag("--quiet", o.quiet, "no progress lines on stderr (the table and any failures are still printed)")->group("Output");
  app.add_flag("--self-test-corrupt", o.corrupt, "damage one result before it is checked (tests the exit status)")->group("");
  app.footer("Examples:\n"
             "  kdforge-bench --n 1000000 --k 1,8,16 --reps 10\n"
             "  kdforge-bench --n 3200,6400,12800 --k 4 --queries same --ops knn --nanoflann   (Hu et al.'s setting)\n"
             "  kdforge-bench --n 1000,10000,100000,1000000 --dim 4 --ops build                 (Wald's Table 1)\n"
             "  kdforge-bench --points scan.ply --queries same --k 8 --json out.jsonl\n"
             "  kdforge-bench --dist lidar --n 1000000 --queries jitter:0.001 --k 8 --ops knn,closest,radius");

  try {
    app.parse(int(mine.size()), mine.data());
  } catch (CLI::ParseError const& e) {
    int const rc = app.exit(e);
    exit_code = rc == 0 ? exit_ok : exit_usage;
    return std::nullopt;
  }

  auto fail = [&](std::string const& msg) {
    std::fprintf(stderr, "kdforge-bench: %s\nRun with --help for more information.\n", msg.c_str());
    exit_code = exit_usage;
    return std::nullopt;
  };

  // Builders: names from the registry, or all of them.
  o.builders.clear();
  for (auto const& b : split_list(builders)) {
    if (b == "all") {
      for (auto const& c : catalog)
        if (std::find(o.builders.begin(), o.builders.end(), c.name) == o.builders.end()) o.builders.push_back(c.name);
      continue;
    }
    bool const known = std::any_of(catalog.begin(), catalog.end(), [&](BuilderInfo const& c) { return c.name == b; });
    if (!known) {
      std::vector<std::string> names;
      for (auto const& c : catalog) names.push_back(c.name);
      return fail("--builder " + b + ": expected one of " + join(names, ", ") + " or all");
    }
    if (std::find(o.builders.begin(), o.builders.end(), b) == o.builders.end()) o.builders.push_back(b);
  }
  if (o.builders.empty()) return fail("--builder: no builder given");

  std::set<std::string> const known_ops{"build", "knn", "closest", "radius_count", "radius"};
  o.ops.clear();
  for (auto const& op : split_list(ops)) {
    if (op == "all") o.ops.assign(known_ops.begin(), known_ops.end());
    else if (known_ops.count(op)) o.ops.push_back(op);
    else return fail("--ops " + op + ": expected build, knn, closest, radius_count, radius or all");
  }
  if (o.ops.empty()) return fail("--ops: no operation given");
  if (o.ks.empty()) return fail("--k: no value given");

  try {
    parse_queries(o.queries);
  } catch (UsageError const& e) {
    return fail(e.what());
  }
  if (o.points_file.empty() && o.dist == "lidar" && o.dim != 3) return fail("--dist lidar needs --dim 3");

  if (!ns.empty()) o.ns = ns;
  else if (!o.points_file.empty()) o.ns.clear(); // all points of the file
  return o;
}

} // namespace kdforge_bench
