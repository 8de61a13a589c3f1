#pragma once
// kdforge-bench: the plain data passed between the driver's parts. No Kokkos,
// CLI11 or JSON here, so every translation unit can include it cheaply.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kdforge_bench {

/// A problem the user can fix (bad flag, unreadable or malformed file):
/// reported in one line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum Exit : int { exit_ok = 0, exit_wrong_results = 1, exit_usage = 2, exit_runtime = 3 };

/// Everything the command line sets (bench_cli.cpp documents each flag).
struct Options {
  std::vector<std::string> builders;      ///< resolved from --builder (never "all")
  std::string split = "auto";             ///< auto | round_robin | widest
  std::string node_boxes = "auto";        ///< auto | always | never
  std::string traversal = "auto";         ///< auto | stack | stack_free | trail
  std::string order = "auto";             ///< auto | as_given | morton
  std::vector<std::int64_t> ns{100000};   ///< --n; with --points: prefixes of the file (empty = all)
  std::int64_t m = -1;                    ///< --m; -1: as many queries as points (or the file's count)
  int dim = 3;
  std::string dtype = "float";            ///< float | double
  std::vector<int> ks{8};
  double neighbors = 8;                   ///< target mean neighbour count of the radius ops
  double radius = -1;                     ///< --radius; < 0: derived from `neighbors`
  std::int64_t radius_buffer = -1;        ///< RadiusOptions::buffer_size of the radius op (-1: automatic)
  std::string results = "reuse";          ///< reuse | fresh: query results written into the previous ones, or allocated per call
  int bucket_levels = -1;                 ///< Query/RadiusOptions::bucket_levels (-1: kdforge's default)
  int regroup_iterations = -1;            ///< QueryOptions::regroup_iterations (-1: kdforge's default)
  std::string dist = "uniform";           ///< a name of distributions() (pointset.hpp)
  std::string points_file;                ///< --points
  std::string queries = "uniform";        ///< same | self | uniform | jitter:SIGMA | far | a file name
  std::vector<std::string> ops{"build", "knn", "closest", "radius_count", "radius"};
  int reps = 5, warmup = 1;
  std::uint64_t seed = 1;
  std::string json_file;
  std::string label;                      ///< free text recorded in every JSON record (workload name)
  int verify = 1000;
  bool nanoflann = false;
  bool quiet = false;
  bool trace = false;                     ///< --trace: print the fenced timeline of one extra call per row
  bool corrupt = false;                   ///< hidden --self-test-corrupt: damage one result (tests exit 1)
  std::vector<std::string> kokkos_args;   ///< --kokkos-* flags, handed to Kokkos::initialize

  bool has_op(std::string const& op) const {
    for (auto const& o : ops) if (o == op) return true;
    return false;
  }
};

/// Points or queries on the host, row-major (count x dim), in double; the
/// runners convert to the benchmark's dtype.
struct PointSet {
  int dim = 0;
  std::vector<double> coords;
  std::string source; ///< "uniform", "clustered", ..., or the file name
  std::int64_t size() const { return dim ? std::int64_t(coords.size() / dim) : 0; }
};

/// One workload: one size, its points and queries.
struct Workload {
  Options const* opt = nullptr;
  std::int64_t n = 0, m = 0;
  PointSet const* points = nullptr;
  PointSet const* queries = nullptr;
  std::string queries_kind; ///< same | uniform | jitter:SIGMA | far | file (QueryKind::name)
  double radius = NAN;      ///< of the radius ops
  std::string radius_source;
};

/// One measured line of the table (and one JSON record).
struct Row {
  std::string impl = "kdforge"; ///< kdforge | nanoflann
  std::string builder;          ///< kdforge builder name, or "nanoflann"
  std::string op;               ///< build | knn | closest | radius_count | radius
  int k = 0;                    ///< knn only
  double mean_neighbors = NAN;  ///< radius ops
  std::vector<double> times_ms; ///< one per repetition, fenced
  std::vector<double> copy_ms;  ///< result copy-back to the host, per repetition (queries)
  std::int64_t items = 0;       ///< points (build) or queries per call
  std::int64_t peak_bytes = -1; ///< build: peak extra device-memory bytes held during one build
  std::int64_t tree_bytes = -1; ///< build: bytes the finished tree keeps
  int threads = 0;              ///< threads the measured code ran on (nanoflann build: 1)
  int verified = 0, sample = 0; ///< verified/sample queries agree with brute force
  std::string note;             ///< e.g. "same tree as partition"
  bool ok = true;
};

/// Where the runners send rows and progress.
struct Sink {
  virtual ~Sink() = default;
  virtual void row(Workload const& w, Row const& r) = 0;
  virtual void progress(std::string const& what) = 0;
  virtual void failure(std::string const& what) = 0; ///< one failed check, printed on stderr
};

/// Registered kdforge builders (name, one-line description); bench_env.cpp.
struct BuilderInfo {
  std::string name, description;
};
std::vector<BuilderInfo> builder_catalog();

/// Facts about this build and machine; bench_env.cpp.
struct Environment {
  std::string backend, host_backend, kokkos_version, device, cpu_model;
  int concurrency = 0;
  unsigned hardware_threads = 0;
};
Environment environment();

/// The (dtype, dim) cases compiled in; perf/CMakeLists.txt compiles one
/// translation unit of Kokkos code per case (keep both lists in step).
#define KDFORGE_BENCH_CASES(X) X(float, 2) X(float, 3) X(float, 4) X(double, 2) X(double, 3) X(double, 4)

/// The runs of one workload for one case: every selected kdforge builder
/// and its queries, then the nanoflann baseline when asked (kdforge_runner.hpp).
template <class T, int D>
void run_workload(Workload const& w, Sink& sink);

} // namespace kdforge_bench
