#pragma once
// Balanced median k-d trees by the adaptive split-and-sort builder of Wehr &
// Radkowski 2018 (kernels/build/split_sort.hpp has the algorithm), and the
// threads-per-block autotuning its section III-C recommends.
//
//   auto tree = kdforge::build_split_sort(exec, points);            // defaults
//   kdforge::SplitSortOptions o; o.threads_per_block = 64;          // or tuned:
//   kdforge::tune_split_sort(exec, {"tuning.txt"});  o.tuning_file = "tuning.txt";
//
// The tree answers knn / closest_point / radius_count / radius_search
// (query.hpp) and knn_approximate (approximate.hpp) like the left-balanced one.
#include <kdforge/backends/memory.hpp>
#include <kdforge/build_left_balanced.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/kernels/builders/split_sort/build.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/trees/median_tree.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/access.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kdforge {

using SplitSortStrategy = split_sort::Strategy;

struct SplitSortOptions {
  /// Threads per block (TPB): a multiple of 32 in [32, 1024]. 0: from the
  /// tuning table when one is found for this device, else 32 below 200,000
  /// points and 128 above (the paper's best values, Table II).
  int threads_per_block = 0;
  /// Radix base of all radix sorts: a power of two in [2, 256]; 32 is what
  /// the paper found best.
  int radix_base = 32;
  /// Chunk width from which a level uses the parallel radix sort; 0 means
  /// TPB (the paper's choice, section IV-A). Must be >= TPB.
  std::int64_t cutoff = 0;
  SplitSortStrategy strategy = SplitSortStrategy::adaptive;
  NonFinitePolicy non_finite = NonFinitePolicy::reject;
  /// Boxes of the inner nodes' sub-trees for the queries (see BuildOptions::node_boxes).
  NodeBoxPolicy node_boxes = NodeBoxPolicy::automatic;
  /// Tuning table written by tune_split_sort; empty: $KDFORGE_SPLIT_SORT_TUNING if set.
  std::string tuning_file;
  /// When set, the build fences between phases and fills this in (slower).
  SplitSortStats* stats = nullptr;
  /// Use the CUDA kernels on Kokkos::Cuda: the shared-memory histogram and the
  /// warp-ranked distribution (false runs the portable Kokkos forms, which
  /// follow Algorithms 4 and 5 literally; the trees are identical).
  bool vendor_histogram = true;
};

namespace detail {

template <class Exec>
std::string device_name(Exec const& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, exec.cuda_device()) == cudaSuccess) return prop.name;
  }
#endif
  return std::string(Exec::name()) + " x" + std::to_string(exec.concurrency());
}

inline std::string tuning_file_of(SplitSortOptions const& o) {
  if (!o.tuning_file.empty()) return o.tuning_file;
  char const* env = std::getenv("KDFORGE_SPLIT_SORT_TUNING");
  return env ? std::string(env) : std::string();
}

struct TuningRow {
  std::int64_t n;
  int threads_per_block;
  double ms;
};

/// Reads a tuning table; returns its rows if it was made for `device` and
/// `radix_base`, else none. A file that exists but cannot be parsed is an error.
inline std::vector<TuningRow> read_tuning(std::string const& file, std::string const& device, int radix_base) {
  std::ifstream in(file);
  if (!in) return {};
  std::vector<TuningRow> rows;
  std::string line, dev;
  int base = 0;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    if (line.rfind("device ", 0) == 0) {
      dev = line.substr(7);
      continue;
    }
    if (line.rfind("radix_base ", 0) == 0) {
      s.ignore(11);
      s >> base;
      continue;
    }
    TuningRow r{};
    if (!(s >> r.n >> r.threads_per_block >> r.ms) || r.n <= 0 || r.threads_per_block < 32 ||
        r.threads_per_block > 1024 || r.threads_per_block % 32 != 0)
      fail("split_sort tuning", file, ":", lineno, ": expected '<points> <threads per block> <ms>', got '", line, "'");
    rows.push_back(r);
  }
  if (dev != device || base != radix_base) return {};
  return rows;
}

/// TPB of the tuned row nearest to n (in log scale); 0 without rows.
inline int tuned_threads_per_block(std::vector<TuningRow> const& rows, std::int64_t n) {
  int best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (auto const& r : rows) {
    double const d = std::abs(std::log(double(r.n)) - std::log(double(std::max<std::int64_t>(n, 1))));
    if (d < best_d) {
      best_d = d;
      best = r.threads_per_block;
    }
  }
  return best;
}

template <class Exec>
split_sort::Params checked_params(Exec const& exec, SplitSortOptions const& o, std::int64_t n) {
  split_sort::Params p;
  KDFORGE_REQUIRE(o.radix_base >= 2 && o.radix_base <= 256 && (o.radix_base & (o.radix_base - 1)) == 0,
                  "build_split_sort", "SplitSortOptions::radix_base must be a power of two in [2, 256] (got ",
                  o.radix_base, ")");
  p.radix_bits = 0;
  while ((1 << p.radix_bits) < o.radix_base) ++p.radix_bits;
  int tpb = o.threads_per_block;
  if (tpb == 0) {
    std::string const file = tuning_file_of(o);
    if (!file.empty()) tpb = tuned_threads_per_block(read_tuning(file, device_name(exec), o.radix_base), n);
    if (tpb == 0) tpb = n < 200000 ? 32 : 128;
  }
  KDFORGE_REQUIRE(tpb >= 32 && tpb <= 1024 && tpb % 32 == 0, "build_split_sort",
                  "SplitSortOptions::threads_per_block must be a multiple of 32 in [32, 1024], or 0 for automatic (got ",
                  tpb, ")");
  p.threads_per_block = tpb;
  KDFORGE_REQUIRE(o.cutoff == 0 || o.cutoff >= tpb, "build_split_sort", "SplitSortOptions::cutoff (", o.cutoff,
                  ") must be >= threads_per_block (", tpb,
                  "): a block of the parallel sort may overlap at most two chunks; 0 means cutoff = threads_per_block");
  p.cutoff = o.cutoff == 0 ? tpb : o.cutoff;
  KDFORGE_REQUIRE(o.strategy == SplitSortStrategy::adaptive || o.strategy == SplitSortStrategy::naive_radix ||
                      o.strategy == SplitSortStrategy::naive_insertion,
                  "build_split_sort", "unknown SplitSortOptions::strategy value ", int(o.strategy));
  p.strategy = o.strategy;
  p.vendor_histogram = o.vendor_histogram;
  return p;
}

} // namespace detail

/// Builds a balanced median k-d tree over `points` with the adaptive
/// split-and-sort method on the execution space instance `exec`. The
/// caller's points are copied, never modified. Errors: bad options, NaN/Inf
/// under NonFinitePolicy::reject, more points than Index (or 2^32 - 1) holds.
template <class Index = std::int32_t, class Exec, class Points>
auto build_split_sort(Exec const& exec, Points const& points, SplitSortOptions const& options = {}) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::build_split_sort: the first argument must be a Kokkos execution space instance");
  static_assert(detail::check_points_container<Points, Exec>());
  using A = AccessTraits<Points>;
  detail::check_point_count<Index, Exec>(A::size(points), "build_split_sort");
  split_sort::Params const prm = detail::checked_params(exec, options, std::int64_t(A::size(points)));
  return detail::api_call<typename Exec::memory_space>("build_split_sort", [&] {
    return detail::build_split_sort_impl<Index, Exec, typename A::coordinate_type, A::dimension>(
        exec, to_points(exec, points, "kdforge::tree::points_input"), prm, options.non_finite, options.node_boxes,
        options.stats);
  });
}

struct SplitSortTuneOptions {
  std::string file;                                        ///< where the table goes ("" = not written)
  std::vector<std::int64_t> sizes{2000, 10000, 50000, 100000, 200000, 300000, 500000, 1000000, 2000000};
  std::vector<int> threads_per_block{32, 64, 128, 256, 512, 1024}; ///< candidates (multiples of 32)
  int repetitions = 5;                                     ///< median of this many builds per pair
  int radix_base = 32;
  std::uint64_t seed = 1;
};

/// Section III-C's hyper-parameter search: for each size, builds trees over
/// uniform random float3 points with each candidate TPB and keeps the
/// fastest (median of the repetitions). Writes the table to options.file,
/// tagged with this device's name, and returns its rows.
template <class Exec>
std::vector<detail::TuningRow> tune_split_sort(Exec const& exec, SplitSortTuneOptions const& options = {}) {
  KDFORGE_REQUIRE(!options.sizes.empty() && !options.threads_per_block.empty() && options.repetitions >= 1,
                  "tune_split_sort", "needs at least one size, one candidate and one repetition");
  using MS = typename Exec::memory_space;
  std::vector<detail::TuningRow> rows;
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (std::int64_t const n : options.sizes) {
    KDFORGE_REQUIRE(n >= 1, "tune_split_sort", "sizes must be >= 1 (got ", n, ")");
    auto pts = backend::allocate<Kokkos::View<Point<float, 3>*, MS>>("kdforge::tune::points", n);
    auto h = Kokkos::create_mirror_view(pts);
    for (std::int64_t i = 0; i < n; ++i) h(i) = Point<float, 3>{{u(rng), u(rng), u(rng)}};
    Kokkos::deep_copy(exec, pts, h);
    detail::TuningRow best{n, 0, std::numeric_limits<double>::infinity()};
    for (int const tpb : options.threads_per_block) {
      SplitSortOptions o;
      o.threads_per_block = tpb;
      o.radix_base = options.radix_base;
      std::vector<double> t;
      build_split_sort(exec, pts, o); // warm-up
      for (int r = 0; r < options.repetitions; ++r) {
        exec.fence();
        auto const a = std::chrono::steady_clock::now();
        auto tree = build_split_sort(exec, pts, o);
        exec.fence();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
      }
      std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
      if (t[t.size() / 2] < best.ms) best = {n, tpb, t[t.size() / 2]};
    }
    rows.push_back(best);
  }
  if (!options.file.empty()) {
    std::ofstream out(options.file);
    KDFORGE_REQUIRE(bool(out), "tune_split_sort", "cannot write the tuning table to ", options.file);
    out << "# kdforge split-and-sort tuning table, written by kdforge::tune_split_sort\n"
        << "# columns: points, fastest threads per block, median build time in ms\n"
        << "device " << detail::device_name(exec) << "\n"
        << "radix_base " << options.radix_base << "\n";
    for (auto const& r : rows) out << r.n << ' ' << r.threads_per_block << ' ' << r.ms << '\n';
  }
  return rows;
}

} // namespace kdforge
