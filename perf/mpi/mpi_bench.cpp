// kdforge-mpi-bench: the distributed tree's benchmark driver. Strong scaling
// (fixed total points and queries) or weak scaling (fixed per rank), a
// uniform or a clustered point set, every rank's points those of its cell of
// a grid over the domain (or slabs, or random ranks), queries owned by the
// rank whose cell holds them or spread over all ranks. The domain is the
// unit cube, and for weak scaling px x py x pz unit cubes (the grid's, P x
// 1 x 1 for slabs): every rank's cell is then a unit cube of n points, the
// one-rank problem, where dividing one cube would give the ranks cells of
// other shapes (1 x 0.5 x 0.5 on 4), whose trees answer queries at other
// speeds (--weak-domain cube keeps the unit cube). Per operation:
// the time of the call (max over ranks, median over repetitions; on one
// rank also kNN on the plain local tree, the layer's cost), each
// phase's time (max over ranks), the bytes moved per query against the
// minimum (the query out, its k results back), and a check of a sample of
// queries against one tree over the union of the points on rank 0.
//
//   mpirun -np 4 kdforge-mpi-bench --n 1000000 --m 1000000 --scaling strong --ops knn,closest,radius
//
// The point sets are generated on the device from a counter-based hash:
// point i of the global set is the same for every number of ranks, so a
// strong-scaling series runs on one point set and one query set.
#include <kdforge/distributed_tree.hpp>
#include <kdforge/kdforge.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using T = float;
constexpr int D = 3;
using P3 = kdforge::Point<T, D>;
using PV = Kokkos::View<P3*, MS>;

int g_rank = 0, g_size = 1;

// ---- the point sets ------------------------------------------------------------

KOKKOS_INLINE_FUNCTION std::uint64_t mix(std::uint64_t x) { // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
KOKKOS_INLINE_FUNCTION double unit(std::uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }

/// Point i of the global set: uniform in [0,1]^3, or clustered: one of 64
/// Gaussian blobs (centres in [0.1, 0.9]^3, sigma 0.005 to 0.04 log-uniform,
/// fixed by the seed), clamped to the cube; scaled by `extent` (the domain).
struct Generate {
  std::uint64_t seed;
  int clustered;
  double extent[3];
  KOKKOS_INLINE_FUNCTION P3 operator()(std::int64_t i) const {
    P3 p = unit_point(i);
    for (int d = 0; d < D; ++d) p[d] = T(double(p[d]) * extent[d]);
    return p;
  }
  KOKKOS_INLINE_FUNCTION P3 unit_point(std::int64_t i) const {
    std::uint64_t const h = mix(seed ^ mix(std::uint64_t(i)));
    P3 p;
    if (!clustered) {
      for (int d = 0; d < D; ++d) p[d] = T(unit(mix(h + std::uint64_t(d))));
      return p;
    }
    std::uint64_t const c = mix(h + 7) % 64;
    std::uint64_t const hc = mix(seed * 31 + c);
    double const sigma = 0.005 * ::exp(unit(mix(hc + 5)) * ::log(8.0));
    for (int d = 0; d < D; ++d) {
      double const centre = 0.1 + 0.8 * unit(mix(hc + std::uint64_t(d)));
      double const u1 = unit(mix(h + 11 + 2 * std::uint64_t(d))) + 1e-300, u2 = unit(mix(h + 12 + 2 * std::uint64_t(d)));
      double const g = ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2);
      double const x = centre + sigma * g;
      p[d] = T(x < 0 ? 0 : x > 1 ? 1 : x);
    }
    return p;
  }
};

/// Which rank owns a point: its cell of a px x py x pz grid over the
/// domain (`extent`), its slab in x, or a hash of its number.
struct Owner {
  int grid[3];
  int mode; // 0 grid, 1 slabs, 2 random
  std::uint64_t seed;
  double extent[3];
  KOKKOS_INLINE_FUNCTION int operator()(P3 const& p, std::int64_t i) const {
    if (mode == 2) return int(mix(seed ^ std::uint64_t(i)) % std::uint64_t(grid[0] * grid[1] * grid[2]));
    int c[3];
    for (int d = 0; d < 3; ++d) {
      int const g = grid[d];
      int v = int(double(p[d]) / extent[d] * g);
      c[d] = v < 0 ? 0 : v >= g ? g - 1 : v;
    }
    return (c[2] * grid[1] + c[1]) * grid[0] + c[0];
  }
};

struct Mine {
  Generate gen;
  Owner owner;
  int me;
  std::int64_t first; // global number of element 0
  Kokkos::View<std::int64_t*, MS> flags;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const g = first + i;
    flags(i) = owner(gen(g), g) == me ? 1 : 0;
  }
};

struct Collect {
  Generate gen;
  std::int64_t first;
  Kokkos::View<std::int64_t*, MS> offsets;
  PV out;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if (offsets(i + 1) != offsets(i)) out(offsets(i)) = gen(first + i);
  }
};

struct RoundRobin {
  Generate gen;
  int me, P;
  PV out;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { out(i) = gen(i * P + me); }
};

/// This rank's elements of the global set [0, n): those `owner` gives it
/// (or, with by_owner false, element g for g % P == this rank).
PV my_share(Generate gen, Owner owner, std::int64_t n, bool by_owner) {
  Exec exec;
  if (!by_owner) { // round robin: element g goes to rank g % P
    std::int64_t const mine = n / g_size + (g_rank < n % g_size ? 1 : 0);
    PV out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "queries"), mine);
    Kokkos::parallel_for("bench::round_robin", Kokkos::RangePolicy<Exec>(exec, 0, mine), RoundRobin{gen, g_rank, g_size, out});
    exec.fence();
    return out;
  }
  // in chunks, so a large global set needs no global-sized scratch
  std::int64_t const chunk = std::int64_t(1) << 24;
  std::vector<PV> parts;
  std::int64_t total = 0;
  Kokkos::View<std::int64_t*, MS> flags("flags", std::size_t(std::min(n, chunk) + 1));
  for (std::int64_t first = 0; first < n; first += chunk) {
    std::int64_t const len = std::min(chunk, n - first);
    Kokkos::parallel_for("bench::mine", Kokkos::RangePolicy<Exec>(exec, 0, len), Mine{gen, owner, g_rank, first, flags});
    // the slot after the chunk holds the last scan's total: the scan's total must not count it
    Kokkos::deep_copy(exec, Kokkos::subview(flags, len), std::int64_t(0));
    auto head = Kokkos::subview(flags, std::make_pair(std::int64_t(0), len + 1));
    std::int64_t const count = kdforge::backend::exclusive_scan(exec, head, head);
    PV part(Kokkos::view_alloc(Kokkos::WithoutInitializing, "part"), count);
    Kokkos::parallel_for("bench::collect", Kokkos::RangePolicy<Exec>(exec, 0, len), Collect{gen, first, head, part});
    parts.push_back(part);
    total += count;
  }
  PV out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "points"), total);
  std::int64_t at = 0;
  for (auto const& p : parts) {
    Kokkos::deep_copy(exec, Kokkos::subview(out, std::make_pair(at, at + std::int64_t(p.extent(0)))), p);
    at += std::int64_t(p.extent(0));
  }
  exec.fence();
  return out;
}

/// px x py x pz = P, as cubic as can be.
void factor(int P, int grid[3]) {
  grid[0] = grid[1] = grid[2] = 1;
  int rest = P;
  for (int f = 2; f <= rest;) {
    if (rest % f == 0) {
      int* smallest = std::min_element(grid, grid + 3);
      *smallest *= f;
      rest /= f;
    } else {
      ++f;
    }
  }
  std::sort(grid, grid + 3, [](int a, int b) { return a > b; });
}

// ---- measuring -------------------------------------------------------------------

double max_over_ranks(double v) {
  double m = v;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
std::int64_t sum_over_ranks(std::int64_t v) {
  std::int64_t s = v;
  MPI_Allreduce(&v, &s, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return s;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Row {
  std::string op;
  int k = 0;
  double total_ms = 0, route_ms = 0, forward_ms = 0, local_ms = 0, return_ms = 0, merge_ms = 0;
  double phase2_ms = 0; // kNN: the second phase's part of the five above
  double bytes_per_query = 0, min_bytes_per_query = 0, pairs_per_query = 0, remote_per_query = 0;
  std::string verified = "-";
};

/// Runs `call` reps times (after warmup); the row of its medians.
template <class Tree, class Call>
Row measure(std::string const& op, int k, Tree const& tree, std::int64_t m_total, double min_bytes, int reps, int warmup,
            Call const& call) {
  std::vector<double> total, route, forward, local, back, merge, phase2;
  Row row;
  row.op = op;
  row.k = k;
  for (int r = 0; r < warmup + reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    Kokkos::Timer t;
    call();
    Kokkos::fence();
    double const wall = t.seconds();
    auto const& s = tree.last_stats();
    if (r < warmup) continue;
    total.push_back(max_over_ranks(wall) * 1e3);
    route.push_back(max_over_ranks(s.route_s) * 1e3);
    forward.push_back(max_over_ranks(s.forward_s) * 1e3);
    local.push_back(max_over_ranks(s.local_s) * 1e3);
    back.push_back(max_over_ranks(s.return_s) * 1e3);
    merge.push_back(max_over_ranks(s.merge_s) * 1e3);
    phase2.push_back(max_over_ranks(s.phase2_s) * 1e3);
    if (r == warmup + reps - 1) {
      double const q = double(std::max<std::int64_t>(m_total, 1));
      row.bytes_per_query = double(sum_over_ranks(s.bytes_sent)) / q;
      row.pairs_per_query = double(sum_over_ranks(s.sent_pairs)) / q;
      row.remote_per_query = double(sum_over_ranks(s.remote_pairs)) / q;
    }
  }
  row.total_ms = median(total);
  row.route_ms = median(route);
  row.forward_ms = median(forward);
  row.local_ms = median(local);
  row.return_ms = median(back);
  row.merge_ms = median(merge);
  row.phase2_ms = median(phase2);
  row.min_bytes_per_query = min_bytes;
  return row;
}

// ---- verification on rank 0 -------------------------------------------------------

/// Gathers every rank's values on rank 0, rank after rank (others: empty).
template <class V>
std::vector<V> gather(std::vector<V> const& mine) {
  int n = int(mine.size());
  std::size_t const np = std::size_t(g_size);
  std::vector<int> counts(np), displ(np, 0);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<V> all;
  if (g_rank == 0) {
    for (int p = 1; p < g_size; ++p) displ[std::size_t(p)] = displ[std::size_t(p) - 1] + counts[std::size_t(p) - 1];
    all.resize(std::size_t(displ.back() + counts.back()));
  }
  MPI_Datatype type;
  MPI_Type_contiguous(int(sizeof(V)), MPI_BYTE, &type);
  MPI_Type_commit(&type);
  MPI_Gatherv(mine.data(), n, type, all.data(), counts.data(), displ.data(), type, 0, MPI_COMM_WORLD);
  MPI_Type_free(&type);
  return all;
}

template <class V>
std::vector<typename V::non_const_value_type> to_vector(V const& v, std::size_t n) {
  std::vector<typename V::non_const_value_type> out(n);
  auto h = Kokkos::create_mirror_view(v);
  Kokkos::deep_copy(h, v);
  for (std::size_t i = 0; i < n; ++i) out[i] = h.data()[i];
  return out;
}

/// One tree over the union of all points on rank 0 (rank-major order: the
/// global indices), answering the first `sample` queries of every rank.
struct Verifier {
  int sample = 0;
  std::vector<P3> union_points; // rank 0
  std::vector<P3> queries;      // rank 0: the samples of all ranks
  kdforge::LeftBalancedTree<MS, T, D> tree;
  PV d_queries;

  Verifier(PV const& points, PV const& my_queries, int s) : sample(s) {
    if (sample <= 0) return;
    union_points = gather(to_vector(points, points.extent(0)));
    std::size_t const mine = std::min<std::size_t>(std::size_t(sample), my_queries.extent(0));
    queries = gather(to_vector(my_queries, mine));
    if (g_rank == 0) {
      PV all(Kokkos::view_alloc(Kokkos::WithoutInitializing, "union"), union_points.size());
      Kokkos::deep_copy(all, Kokkos::View<P3*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                 union_points.data(), union_points.size()));
      tree = kdforge::build_left_balanced(Exec{}, all);
      d_queries = PV(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sample"), queries.size());
      Kokkos::deep_copy(d_queries, Kokkos::View<P3*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                       queries.data(), queries.size()));
      union_points.clear();
      union_points.shrink_to_fit();
    }
  }

  /// kNN rows (global index, squared distance) of the sample, on rank 0 against the union tree.
  std::string knn(kdforge::DistributedKnnResult<MS, T, std::int32_t> const& got, int k) const {
    if (sample <= 0) return "-";
    std::size_t const mine = std::min<std::size_t>(std::size_t(sample), got.global_indices.extent(0));
    auto gi = gather(to_vector(got.global_indices, mine * std::size_t(k)));
    auto gd = gather(to_vector(got.sq_distances, mine * std::size_t(k)));
    int bad = 0;
    std::size_t rows = 0;
    if (g_rank == 0) {
      auto want = kdforge::knn(Exec{}, tree, d_queries, k);
      auto wi = to_vector(want.indices, queries.size() * std::size_t(k));
      auto wd = to_vector(want.sq_distances, queries.size() * std::size_t(k));
      rows = queries.size();
      for (std::size_t e = 0; e < wi.size(); ++e) bad += (gi[e] != std::int64_t(wi[e]) || gd[e] != wd[e]) ? 1 : 0;
    }
    return verdict(bad, rows);
  }

  std::string closest(kdforge::DistributedClosestResult<MS, T, std::int32_t> const& got) const {
    if (sample <= 0) return "-";
    std::size_t const mine = std::min<std::size_t>(std::size_t(sample), got.global_indices.extent(0));
    auto gi = gather(to_vector(got.global_indices, mine));
    auto gd = gather(to_vector(got.sq_distances, mine));
    int bad = 0;
    std::size_t rows = 0;
    if (g_rank == 0) {
      auto want = kdforge::closest_point(Exec{}, tree, d_queries);
      auto wi = to_vector(want.indices, queries.size());
      auto wd = to_vector(want.sq_distances, queries.size());
      rows = queries.size();
      for (std::size_t e = 0; e < wi.size(); ++e) bad += (gi[e] != std::int64_t(wi[e]) || gd[e] != wd[e]) ? 1 : 0;
    }
    return verdict(bad, rows);
  }

  /// Radius rows as sets of (global index, squared distance).
  std::string radius(kdforge::DistributedRadiusResult<MS, T, std::int32_t> const& got, double r) const {
    if (sample <= 0) return "-";
    std::size_t const mine = std::min<std::size_t>(std::size_t(sample), got.offsets.extent(0) - 1);
    auto off = to_vector(got.offsets, mine + 1);
    auto all_g = to_vector(got.global_indices, std::size_t(off.back()));
    auto all_d = to_vector(got.sq_distances, std::size_t(off.back()));
    std::vector<std::int64_t> lengths(mine);
    for (std::size_t i = 0; i < mine; ++i) lengths[i] = off[i + 1] - off[i];
    auto glen = gather(lengths);
    auto gg = gather(all_g);
    auto gd = gather(all_d);
    int bad = 0;
    std::size_t rows = 0;
    if (g_rank == 0) {
      kdforge::RadiusOptions ro;
      ro.sort = true;
      auto want = kdforge::radius_search(Exec{}, tree, d_queries, r, ro);
      auto wo = to_vector(want.offsets, queries.size() + 1);
      auto wi = to_vector(want.indices, std::size_t(wo.back()));
      auto wd = to_vector(want.sq_distances, std::size_t(wo.back()));
      rows = queries.size();
      std::size_t at = 0;
      for (std::size_t q = 0; q < rows; ++q) {
        std::vector<std::pair<T, std::int64_t>> a, b;
        for (std::int64_t e = 0; e < glen[q]; ++e) a.emplace_back(gd[at + std::size_t(e)], gg[at + std::size_t(e)]);
        at += std::size_t(glen[q]);
        for (std::int64_t e = wo[q]; e < wo[q + 1]; ++e) b.emplace_back(wd[std::size_t(e)], std::int64_t(wi[std::size_t(e)]));
        std::sort(a.begin(), a.end());
        bad += a != b ? 1 : 0;
      }
    }
    return verdict(bad, rows);
  }

  std::string verdict(int bad, std::size_t rows) const {
    int b = bad;
    MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (g_rank != 0) return b ? "FAILED" : "ok";
    std::ostringstream os;
    if (bad) os << "FAILED (" << bad << " of " << rows << " rows)";
    else os << "ok " << rows;
    return os.str();
  }
};

} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  CLI::App app{"kdforge-mpi-bench: the distributed tree, strong and weak scaling over MPI ranks"};
  std::int64_t n = 1000000, m = 1000000;
  std::string scaling = "strong", dist = "uniform", decomp = "grid", owner = "cell", ops = "build,knn,closest,radius";
  std::string weak_domain = "grow", split = "auto";
  std::string ks = "8", csv, json, label;
  double radius = 0;
  int reps = 5, warmup = 1, verify = 1000, box_levels = 2;
  std::string gpu_aware = "auto";
  app.add_option("--n", n, "points: in all (strong) or per rank (weak)");
  app.add_option("--m", m, "queries: in all (strong) or per rank (weak)");
  app.add_option("--scaling", scaling, "strong | weak")->check(CLI::IsMember({"strong", "weak"}));
  app.add_option("--dist", dist, "uniform | clustered (64 Gaussian blobs)")->check(CLI::IsMember({"uniform", "clustered"}));
  app.add_option("--decomp", decomp, "grid (a cell per rank) | slabs (in x) | random (any rank)")
      ->check(CLI::IsMember({"grid", "slabs", "random"}));
  app.add_option("--weak-domain", weak_domain,
                 "weak scaling's domain: grow (a unit cube per cell of the grid: every rank's share is the one-rank "
                 "problem) | cube (the unit cube divided, denser with every rank)")
      ->check(CLI::IsMember({"grow", "cube"}));
  app.add_option("--split", split,
                 "local trees' split planes: auto (by each rank's box), round_robin (level mod D) or widest (the "
                 "node box's widest side)")
      ->check(CLI::IsMember({"auto", "round_robin", "widest"}));
  app.add_option("--query-owner", owner, "cell (the rank whose cell holds it) | any (round robin over the ranks)")
      ->check(CLI::IsMember({"cell", "any"}));
  app.add_option("--ops", ops, "comma list of build, knn, closest, radius");
  app.add_option("--k", ks, "comma list of k for knn");
  app.add_option("--radius", radius, "radius search radius (0: about 8 neighbours for uniform points)");
  app.add_option("--reps", reps, "timed repetitions (the median is reported)");
  app.add_option("--warmup", warmup, "untimed repetitions first");
  app.add_option("--verify", verify, "queries per rank checked against one tree over the union on rank 0 (0: none)");
  app.add_option("--box-levels", box_levels, "DistributedOptions::box_levels: 2^L boxes per rank in the top");
  app.add_option("--gpu-aware", gpu_aware, "auto | on | off: GPU memory to MPI directly")->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--csv", csv, "append the rows to this CSV file (rank 0)");
  app.add_option("--json", json, "write the run as JSON (rank 0)");
  app.add_option("--label", label, "a name for this run in the CSV (e.g. 16x1)");
  int exit_code = 0;
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    exit_code = g_rank == 0 ? app.exit(e) : (e.get_exit_code() != 0 ? 2 : 0);
    MPI_Finalize();
    return exit_code;
  }

  auto const device = kdforge::rank_device(MPI_COMM_WORLD);
  Kokkos::initialize(kdforge::kokkos_settings(device));
  {
    Exec exec;
    bool const weak = scaling == "weak";
    std::int64_t const n_total = weak ? n * g_size : n;
    std::int64_t const m_total = weak ? m * g_size : m;
    Owner own{{1, 1, 1}, decomp == "grid" ? 0 : decomp == "slabs" ? 1 : 2, 99, {1, 1, 1}};
    if (decomp == "slabs") own.grid[0] = g_size;
    else factor(g_size, own.grid);
    double volume = 1;
    if (weak && weak_domain == "grow")
      for (int d = 0; d < 3; ++d) {
        own.extent[d] = own.grid[d];
        volume *= own.extent[d];
      }
    // about 8 neighbours for uniform points
    if (radius <= 0) radius = std::cbrt(8.0 * volume / (4.18879 * double(n_total)));
    std::vector<int> k_list;
    {
      std::stringstream ss(ks);
      for (std::string t; std::getline(ss, t, ',');) k_list.push_back(std::stoi(t));
    }
    auto has_op = [&](char const* o) { return ("," + ops + ",").find("," + std::string(o) + ",") != std::string::npos; };

    Generate const gen_points{1234567, dist == "clustered", {own.extent[0], own.extent[1], own.extent[2]}};
    Generate const gen_queries{7654321, dist == "clustered", {own.extent[0], own.extent[1], own.extent[2]}};
    PV points = my_share(gen_points, own, n_total, true);
    PV queries = my_share(gen_queries, own, m_total, owner == "cell");
    std::int64_t const my_n = std::int64_t(points.extent(0));

    kdforge::DistributedOptions dopt;
    dopt.box_levels = box_levels;
    dopt.gpu_aware = gpu_aware == "on" ? kdforge::GpuAwareMpi::on
                     : gpu_aware == "off" ? kdforge::GpuAwareMpi::off : kdforge::GpuAwareMpi::automatic;

    std::vector<Row> rows;
    // build: median over reps of max-over-ranks of the local build and the top
    std::vector<double> t_local, t_top, t_total;
    kdforge::DistributedTree<MS, kdforge::LeftBalancedTree<MS, T, D>> tree;
    for (int r = 0; r < (has_op("build") ? warmup + reps : 1); ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      Kokkos::Timer t;
      kdforge::BuildOptions bo;
      bo.split = split == "round_robin" ? kdforge::SplitPolicy::round_robin
                 : split == "widest"    ? kdforge::SplitPolicy::widest_dimension
                                        : kdforge::SplitPolicy::automatic;
      tree = kdforge::build_distributed_tree(exec, MPI_COMM_WORLD, points, bo, dopt);
      double const wall = t.seconds();
      if (r < warmup && has_op("build")) continue;
      t_local.push_back(max_over_ranks(tree.build_local_seconds()) * 1e3);
      t_top.push_back(max_over_ranks(tree.build_top_seconds()) * 1e3);
      t_total.push_back(max_over_ranks(wall) * 1e3);
    }
    if (has_op("build")) {
      Row b;
      b.op = "build";
      b.total_ms = median(t_total);
      b.local_ms = median(t_local);
      b.route_ms = median(t_top); // the top: its all-gathers
      rows.push_back(b);
    }

    Verifier verifier(points, queries, verify);
    double const query_bytes = double(sizeof(P3));
    double const entry_bytes = double(sizeof(T) + sizeof(std::int32_t));
    std::int64_t const my_m = std::int64_t(queries.extent(0));
    for (int k : has_op("knn") ? k_list : std::vector<int>{}) {
      kdforge::DistributedKnnResult<MS, T, std::int32_t> res;
      auto row = measure("knn", k, tree, m_total, query_bytes + k * entry_bytes, reps, warmup,
                         [&] { kdforge::knn(exec, tree, queries, k, res); });
      row.verified = verifier.knn(res, k);
      rows.push_back(row);
    }
    // one rank: the same queries on the plain (non-distributed) tree, what
    // the distributed layer costs on top
    for (int k : has_op("knn") && g_size == 1 ? k_list : std::vector<int>{}) {
      kdforge::KnnResult<MS, T, std::int32_t> res;
      kdforge::QueryWorkspace<MS> ws;
      auto row = measure("knn-tree", k, tree, m_total, 0, reps, warmup,
                         [&] { kdforge::knn(exec, tree.local_tree(), queries, k, res, {}, ws); });
      row.route_ms = row.forward_ms = row.return_ms = row.merge_ms = 0;
      row.local_ms = row.total_ms;
      row.bytes_per_query = row.pairs_per_query = row.remote_per_query = 0;
      rows.push_back(row);
    }
    if (has_op("closest")) {
      kdforge::DistributedClosestResult<MS, T, std::int32_t> res;
      auto row = measure("closest", 1, tree, m_total, query_bytes + entry_bytes, reps, warmup,
                         [&] { kdforge::closest_point(exec, tree, queries, res); });
      row.verified = verifier.closest(res);
      rows.push_back(row);
    }
    if (has_op("radius")) {
      kdforge::DistributedRadiusResult<MS, T, std::int32_t> res;
      std::int64_t found = 0;
      auto row = measure("radius", 0, tree, m_total, 0, reps, warmup, [&] {
        kdforge::radius_search(exec, tree, queries, radius, res);
      });
      Kokkos::View<std::int64_t, Kokkos::HostSpace> last("last");
      Kokkos::deep_copy(last, Kokkos::subview(res.offsets, my_m));
      found = sum_over_ranks(last());
      double const mean = double(found) / double(std::max<std::int64_t>(m_total, 1));
      row.k = int(std::lround(mean));
      row.min_bytes_per_query = query_bytes + mean * entry_bytes;
      row.verified = verifier.radius(res, radius);
      rows.push_back(row);
    }

    // the table, the CSV, the JSON (rank 0)
    std::int64_t const n_all = sum_over_ranks(my_n);
    if (n_all != n_total) { // the ranks' shares must partition the set
      if (g_rank == 0)
        std::fprintf(stderr, "kdforge-mpi-bench: the ranks hold %lld points, not %lld\n", (long long)n_all,
                     (long long)n_total);
      exit_code = 1;
    }
    // every rank's GPU, so a run shows one GPU per rank (or how they are shared)
    std::vector<int> devices(2 * std::size_t(g_size));
    int const mine[2] = {device.device_id, device.visible_devices};
    MPI_Gather(mine, 2, MPI_INT, devices.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
      char const* space = Exec::name();
      int const threads = Exec().concurrency();
      std::printf("kdforge-mpi-bench: %d rank(s) x %d %s thread(s), %s, %s scaling: %lld points, %lld queries, %s, "
                  "domain %g x %g x %g, %s decomposition, queries owned by %s, %d boxes per rank, radius %.5g\n",
                  g_size, threads, space, kdforge::to_string(tree.transport()), scaling.c_str(), (long long)n_all,
                  (long long)m_total, dist.c_str(), own.extent[0], own.extent[1], own.extent[2], decomp.c_str(),
                  owner == "cell" ? "their cell's rank" : "any rank", tree.boxes_per_rank(), radius);
      if (device.visible_devices > 0) {
        std::printf("devices (rank: GPU of those visible to it):");
        for (int r = 0; r < g_size; ++r) std::printf(" %d:%d/%d", r, devices[2 * r], devices[2 * r + 1]);
        std::printf("\n");
      }
      std::printf("%-8s %4s %10s %9s %9s %9s %9s %9s %9s %9s %9s %6s %8s %8s  %s\n", "op", "k", "total_ms", "route",
                  "forward", "local", "return", "merge", "phase2", "B/query", "min_B/q", "ratio", "pairs/q", "remote/q",
                  "verified");
      for (auto const& r : rows) {
        if (r.op == "build") {
          std::printf("%-8s %4s %10.3f %9s %9s %9.3f %9s %9s   (top: all-gathers %.3f ms; local build max over ranks)\n",
                      "build", "", r.total_ms, "", "", r.local_ms, "", "", r.route_ms);
          continue;
        }
        std::printf("%-8s %4d %10.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.1f %9.1f %6.2f %8.3f %8.3f  %s\n",
                    r.op.c_str(), r.k, r.total_ms, r.route_ms, r.forward_ms, r.local_ms, r.return_ms, r.merge_ms,
                    r.phase2_ms, r.bytes_per_query,
                    r.min_bytes_per_query, r.min_bytes_per_query > 0 ? r.bytes_per_query / r.min_bytes_per_query : 0.0,
                    r.pairs_per_query, r.remote_per_query, r.verified.c_str());
      }
      std::printf("(times: max over ranks, median of %d; phase2: kNN's second phase, route to merge, within the five "
                  "before it; B/query: bytes sent between ranks per query, min_B/q: the query out and its k results "
                  "back; k of radius: mean neighbours)\n",
                  reps);
      if (!csv.empty()) {
        bool const fresh = !std::ifstream(csv).good();
        std::ofstream f(csv, std::ios::app);
        if (fresh)
          f << "label,ranks,threads,space,transport,scaling,n_total,m_total,dist,decomp,query_owner,op,k,total_ms,"
               "route_ms,forward_ms,local_ms,return_ms,merge_ms,phase2_ms,bytes_per_query,min_bytes_per_query,"
               "pairs_per_query,remote_per_query,verified\n";
        for (auto const& r : rows)
          f << (label.empty() ? std::to_string(g_size) + "x" + std::to_string(threads) : label) << ',' << g_size << ','
            << threads << ',' << space << ',' << kdforge::to_string(tree.transport()) << ',' << scaling << ',' << n_all
            << ',' << m_total << ',' << dist << ',' << decomp << ',' << owner << ',' << r.op << ',' << r.k << ','
            << r.total_ms << ',' << r.route_ms << ',' << r.forward_ms << ',' << r.local_ms << ',' << r.return_ms << ','
            << r.merge_ms << ',' << r.phase2_ms << ',' << r.bytes_per_query << ',' << r.min_bytes_per_query << ','
            << r.pairs_per_query << ',' << r.remote_per_query << ',' << '"' << r.verified << '"' << '\n';
      }
      if (!json.empty()) {
        std::ofstream f(json);
        f << "{\n  \"ranks\": " << g_size << ", \"threads\": " << threads << ", \"space\": \"" << space
          << "\", \"transport\": \"" << kdforge::to_string(tree.transport()) << "\",\n  \"scaling\": \"" << scaling
          << "\", \"n_total\": " << n_all << ", \"m_total\": " << m_total << ", \"dist\": \"" << dist
          << "\", \"decomp\": \"" << decomp << "\", \"query_owner\": \"" << owner << "\",\n  \"rows\": [\n";
        for (std::size_t i = 0; i < rows.size(); ++i) {
          auto const& r = rows[i];
          f << "    {\"op\": \"" << r.op << "\", \"k\": " << r.k << ", \"total_ms\": " << r.total_ms
            << ", \"route_ms\": " << r.route_ms << ", \"forward_ms\": " << r.forward_ms << ", \"local_ms\": " << r.local_ms
            << ", \"return_ms\": " << r.return_ms << ", \"merge_ms\": " << r.merge_ms
            << ", \"phase2_ms\": " << r.phase2_ms
            << ", \"bytes_per_query\": " << r.bytes_per_query << ", \"min_bytes_per_query\": " << r.min_bytes_per_query
            << ", \"pairs_per_query\": " << r.pairs_per_query << ", \"remote_per_query\": " << r.remote_per_query
            << ", \"verified\": \"" << r.verified << "\"}" << (i + 1 < rows.size() ? "," : "") << "\n";
        }
        f << "  ]\n}\n";
      }
    }
    for (auto const& r : rows)
      if (r.verified.rfind("FAILED", 0) == 0) exit_code = 1;
    tree = {};
  }
  Kokkos::finalize();
  MPI_Finalize();
  if (exit_code && g_rank == 0) std::fprintf(stderr, "kdforge-mpi-bench: CHECK FAILED\n");
  return exit_code;
}
