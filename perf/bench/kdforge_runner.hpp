#pragma once
// kdforge-bench: the measured kdforge runs of one workload, for one
// (dtype, dim) case. Included once per case by kdforge_case.cpp.
//
// Timing: every repetition is bracketed by Kokkos::fence(); `--warmup`
// repetitions run first and are dropped. A query's time is the library call;
// with `--results reuse` (the default) the call writes into the result Views
// of the previous repetition, as a time-stepping code would (and as the
// nanoflann baseline writes into preallocated arrays), with `--results fresh`
// every call allocates its results (included in the time). Its copy-back time is
// create_mirror_view_and_copy of every result view to the host (zero-copy on
// host backends, where the mirror is the result itself).
// Memory: one extra, untimed build runs with Kokkos Tools allocation hooks on
// and reports the peak of the bytes held in Kokkos allocations of the
// execution space's memory space during the build, above what was held
// before it (CUB temporary storage included: kdforge allocates it as Views),
// and the bytes the finished tree keeps.
#include "builders.hpp"
#include "nanoflann_runner.hpp"
#include "options.hpp"
#include "trace.hpp"
#include "verify.hpp"

#include <kdforge/kdforge.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <iomanip>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace kdforge_bench {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;

/// Peak bytes allocated through Kokkos in one memory space while switched on.
struct MemoryTracker {
  static inline std::mutex mutex;
  static inline std::unordered_map<void const*, std::uint64_t> live;
  static inline std::int64_t current = 0, peak = 0;
  static inline std::string space;

  static void on_alloc(Kokkos_Profiling_SpaceHandle h, char const*, void const* ptr, std::uint64_t size) {
    if (space != h.name) return;
    std::lock_guard<std::mutex> lock(mutex);
    live[ptr] = size;
    current += std::int64_t(size);
    peak = std::max(peak, current);
  }
  static void on_dealloc(Kokkos_Profiling_SpaceHandle h, char const*, void const* ptr, std::uint64_t) {
    if (space != h.name) return;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(ptr); // blocks allocated before start() are not ours
    if (it == live.end()) return;
    current -= std::int64_t(it->second);
    live.erase(it);
  }
  static void start() {
    live.clear();
    current = peak = 0;
    space = MS::name();
    Kokkos::Tools::Experimental::set_allocate_data_callback(&on_alloc);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(&on_dealloc);
  }
  static void stop() { // all hooks null again: Kokkos' tool path is off, as in timed runs
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  }
};

/// Times body() over warmup + reps fenced repetitions; before() runs untimed
/// ahead of each (e.g. to free the previous result).
template <class Before, class Body>
std::vector<double> time_reps(Options const& o, Before&& before, Body&& body) {
  std::vector<double> t;
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    before();
    Kokkos::fence();
    Kokkos::Timer timer;
    body();
    Kokkos::fence();
    double const ms = timer.seconds() * 1e3;
    if (r >= o.warmup) t.push_back(ms);
  }
  return t;
}

/// As time_reps, with a copy-back phase timed separately after each query;
/// with --trace, one more call's timeline is printed.
template <class Before, class Query, class Copy>
void time_query(Options const& o, Row& row, Before&& before, Query&& query, Copy&& copy) {
  if (o.trace) {
    before();
    Tracer::run(row.op + (row.op == "knn" ? " k=" + std::to_string(row.k) : std::string()), query);
  }
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    before();
    Kokkos::fence();
    Kokkos::Timer timer;
    query();
    Kokkos::fence();
    double const tq = timer.seconds() * 1e3;
    timer.reset();
    copy();
    Kokkos::fence();
    double const tc = timer.seconds() * 1e3;
    if (r >= o.warmup) row.times_ms.push_back(tq), row.copy_ms.push_back(tc);
  }
}

template <class T, int D>
struct Case {
  using PointView = Kokkos::View<kdforge::Point<T, D>*, MS>;
  Workload const& w;
  Options const& o;
  Sink& sink;
  std::vector<HostPoint<T, D>> hp, hq;
  PointView pts, qs, qs_sample; ///< qs_sample: the sampled queries only (tree checks)
  Reference ref;
  BenchBuildOptions bo;
  kdforge::QueryOptions qo;
  kdforge::RadiusOptions ro;
  std::map<std::string, std::pair<std::string, std::vector<std::int64_t>>> groups; ///< group -> (first builder, tree)
  bool corrupted = false;

  Case(Workload const& w_, Sink& s) : w(w_), o(*w_.opt), sink(s) {}

  static PointView to_device(std::vector<HostPoint<T, D>> const& h, char const* label) {
    static_assert(sizeof(kdforge::Point<T, D>) == sizeof(HostPoint<T, D>), "layouts differ");
    PointView v(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), h.size());
    Kokkos::View<kdforge::Point<T, D> const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(
        reinterpret_cast<kdforge::Point<T, D> const*>(h.data()), h.size());
    auto mirror = Kokkos::create_mirror_view(v);
    Kokkos::deep_copy(mirror, hv);
    Kokkos::deep_copy(v, mirror);
    return v;
  }

  std::string where(std::string const& builder, std::string const& what) const {
    std::ostringstream os;
    os << "N=" << w.n << " " << builder << ": " << what;
    return os.str();
  }

  void report(Row& row, CheckResult const& check, std::string const& what) {
    row.verified = check.ok;
    row.sample = check.total;
    row.ok = row.ok && check.ok == check.total;
    for (auto const& f : check.failures) sink.failure(where(row.builder, what) + ": " + f);
    sink.row(w, row);
  }
};

template <class Tree, class = void>
struct has_original_indices : std::false_type {};
template <class Tree>
struct has_original_indices<Tree, std::void_t<decltype(std::declval<Tree const&>().original_indices())>>
    : std::true_type {};

template <class T, int D, class Tree>
void run_queries(Case<T, D>& c, Tree const& tree, std::string const& builder) {
  Options const& o = c.o;
  std::int64_t const m = c.w.m;
  auto base = [&](char const* op) {
    Row row;
    row.builder = builder;
    row.op = op;
    row.items = m;
    row.threads = int(Exec().concurrency());
    return row;
  };
  auto const& ref = c.ref;
  if (o.has_op("knn")) {
    for (int k : o.ks) {
      c.sink.progress(c.where(builder, "knn k=" + std::to_string(k)));
      Row row = base("knn");
      row.k = k;
      decltype(kdforge::knn(Exec{}, tree, c.qs, k, c.qo)) res;
      bool const reuse = o.results == "reuse";
      kdforge::QueryWorkspace<MS> ws; // reused with the results
      decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices)) hi;
      decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances)) hd;
      time_query(
          o, row, [&] { hi = {}, hd = {}; if (!reuse) res = {}; },
          [&] {
            if (reuse) kdforge::knn(Exec{}, tree, c.qs, k, res, c.qo, ws);
            else res = kdforge::knn(Exec{}, tree, c.qs, k, c.qo);
          },
          [&] {
            hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
            hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
          });
      auto check = check_knn<T, D>(
          ref, c.hp, c.hq, k, 0.0, [&](std::size_t s, int j) { return hi(ref.queries[s], j); },
          [&](std::size_t s, int j) { return hd(ref.queries[s], j); });
      c.report(row, check, "knn k=" + std::to_string(k));
    }
  }
  if (o.has_op("closest")) {
    c.sink.progress(c.where(builder, "closest"));
    Row row = base("closest");
    decltype(kdforge::closest_point(Exec{}, tree, c.qs, c.qo)) res;
    bool const reuse = o.results == "reuse";
    kdforge::QueryWorkspace<MS> ws; // reused with the results
    decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices)) hi;
    decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances)) hd;
    time_query(
        o, row, [&] { hi = {}, hd = {}; if (!reuse) res = {}; },
        [&] {
          if (reuse) kdforge::closest_point(Exec{}, tree, c.qs, res, c.qo, ws);
          else res = kdforge::closest_point(Exec{}, tree, c.qs, c.qo);
        },
        [&] {
          hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
          hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
        });
    auto check = check_knn<T, D>(
        ref, c.hp, c.hq, 1, 0.0, [&](std::size_t s, int) { return hi(ref.queries[s]); },
        [&](std::size_t s, int) { return hd(ref.queries[s]); });
    c.report(row, check, "closest");
  }
  if (o.has_op("radius_count")) {
    c.sink.progress(c.where(builder, "radius_count"));
    Row row = base("radius_count");
    decltype(kdforge::radius_count(Exec{}, tree, c.qs, c.w.radius, c.ro)) counts;
    bool const reuse = o.results == "reuse";
    kdforge::QueryWorkspace<MS> ws; // reused with the results
    decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, counts)) hc;
    time_query(
        o, row, [&] { hc = {}; if (!reuse) counts = {}; },
        [&] {
          if (reuse) kdforge::radius_count(Exec{}, tree, c.qs, c.w.radius, counts, c.ro, ws);
          else counts = kdforge::radius_count(Exec{}, tree, c.qs, c.w.radius, c.ro);
        },
        [&] { hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, counts); });
    double total = 0;
    for (std::int64_t q = 0; q < m; ++q) total += double(hc(q));
    row.mean_neighbors = m ? total / double(m) : 0;
    auto check = check_radius_count(ref, 0.0, [&](std::size_t s) { return hc(ref.queries[s]); });
    c.report(row, check, "radius_count");
  }
  if (o.has_op("radius")) {
    c.sink.progress(c.where(builder, "radius"));
    Row row = base("radius");
    decltype(kdforge::radius_search(Exec{}, tree, c.qs, c.w.radius, c.ro)) res;
    bool const reuse = o.results == "reuse";
    kdforge::QueryWorkspace<MS> ws; // reused with the results
    decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.offsets)) ho;
    decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices)) hi;
    decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances)) hd;
    time_query(
        o, row, [&] { ho = {}, hi = {}, hd = {}; if (!reuse) res = {}; },
        [&] {
          if (reuse) kdforge::radius_search(Exec{}, tree, c.qs, c.w.radius, res, c.ro, ws);
          else res = kdforge::radius_search(Exec{}, tree, c.qs, c.w.radius, c.ro);
        },
        [&] {
          ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.offsets);
          hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
          hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
        });
    row.mean_neighbors = m ? double(ho(m)) / double(m) : 0;
    auto row_of = [&](std::size_t s) { return ref.queries[s]; };
    auto check = check_radius_rows<T, D>(
        ref, c.hp, c.hq, 0.0, [&](std::size_t s) { return ho(row_of(s) + 1) - ho(row_of(s)); },
        [&](std::size_t s, std::int64_t p) { return hi(ho(row_of(s)) + p); },
        [&](std::size_t s, std::int64_t p) { return hd(ho(row_of(s)) + p); });
    c.report(row, check, "radius");
  }
}

template <class T, int D, class B>
void measure_builder(Case<T, D>& c) {
  using Tree = decltype(B::build(Exec{}, c.pts, c.bo));
  Options const& o = c.o;
  std::string const name = B::name;
  c.sink.progress(c.where(name, "build, " + std::to_string(o.warmup) + " warm-up + " + std::to_string(o.reps) +
                                    " timed repetitions"));
  std::optional<Tree> tree;
  Row row;
  row.builder = name;
  row.op = "build";
  row.items = c.w.n;
  row.threads = int(Exec().concurrency());
  row.times_ms = time_reps(o, [&] { tree.reset(); }, [&] { tree.emplace(B::build(Exec{}, c.pts, c.bo)); });
  if (o.trace) {
    tree.reset();
    Tracer::run("build " + name, [&] { tree.emplace(B::build(Exec{}, c.pts, c.bo)); });
  }

  // One more build, untimed, with the allocation hooks on.
  tree.reset();
  Kokkos::fence();
  MemoryTracker::start();
  {
    Tree t = B::build(Exec{}, c.pts, c.bo);
    Kokkos::fence();
    row.tree_bytes = MemoryTracker::current;
    tree.emplace(std::move(t));
  }
  MemoryTracker::stop();
  row.peak_bytes = MemoryTracker::peak;

  // The tree is checked by a closest-point query of each sampled query ...
  auto r = kdforge::knn(Exec{}, *tree, c.qs_sample, 1, c.qo);
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
  auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
  if (o.corrupt && !c.corrupted && hd.extent(0) > 0) { // --self-test-corrupt: prove a wrong answer fails the run
    hd(0, 0) = hd(0, 0) * T(2) + T(1);
    c.corrupted = true;
  }
  auto check = check_knn<T, D>(
      c.ref, c.hp, c.hq, 1, 0.0, [&](std::size_t s, int) { return hi(s, 0); }, [&](std::size_t s, int) { return hd(s, 0); });
  // ... and, within a group of builders promising the identical tree, by comparison.
  std::string const group = B::same_tree_group;
  if constexpr (has_original_indices<Tree>::value) {
    if (!group.empty()) {
      auto idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree->original_indices());
      std::vector<std::int64_t> v(idx.data(), idx.data() + idx.extent(0));
      auto it = c.groups.find(group);
      if (it == c.groups.end()) {
        c.groups[group] = {name, std::move(v)};
      } else if (v == it->second.second) {
        row.note = "same tree as " + it->second.first;
      } else {
        row.note = "DIFFERENT TREE from " + it->second.first;
        row.ok = false;
        c.sink.failure(c.where(name, "build") + ": the tree differs from " + it->second.first +
                       "'s, though both promise the identical left-balanced tree");
      }
    }
  }
  { // what the automatic choices made of these points
    std::ostringstream facts;
    facts << (tree->split_policy() == kdforge::SplitPolicy::widest_dimension ? "widest split" : "round-robin split")
          << ", node boxes " << (tree->node_boxes().empty() ? "off" : "on") << " (fill " << std::setprecision(2)
          << tree->box_fill() << ")";
    row.note = row.note.empty() ? facts.str() : row.note + "; " + facts.str();
  }
  c.report(row, check, "build (closest point of the sampled queries)");
  run_queries<T, D>(c, *tree, name);
}

template <class T, int D>
void run_workload(Workload const& w, Sink& sink) {
  Case<T, D> c(w, sink);
  Options const& o = c.o;
  c.hp = to_host_points<T, D>(*w.points, w.n);
  c.hq = to_host_points<T, D>(*w.queries, w.m);
  c.pts = c.to_device(c.hp, "bench::points");
  c.qs = c.to_device(c.hq, "bench::queries");

  c.bo.split = o.split == "widest"        ? kdforge::SplitPolicy::widest_dimension
               : o.split == "round_robin" ? kdforge::SplitPolicy::round_robin
                                          : kdforge::SplitPolicy::automatic;
  c.bo.node_boxes = o.node_boxes == "always" ? kdforge::NodeBoxPolicy::always
                    : o.node_boxes == "never" ? kdforge::NodeBoxPolicy::never
                                              : kdforge::NodeBoxPolicy::automatic;
  kdforge::Traversal const tr = o.traversal == "stack"        ? kdforge::Traversal::stack
                                : o.traversal == "stack_free" ? kdforge::Traversal::stack_free
                                : o.traversal == "trail"      ? kdforge::Traversal::trail
                                                              : kdforge::Traversal::automatic;
  c.qo.traversal = tr;
  c.ro.traversal = tr;
  kdforge::QueryOrder const order = o.order == "morton"     ? kdforge::QueryOrder::morton
                                    : o.order == "as_given" ? kdforge::QueryOrder::as_given
                                                            : kdforge::QueryOrder::automatic;
  c.qo.order = order;
  c.ro.order = order;
  c.ro.buffer_size = o.radius_buffer;
  c.qo.bucket_levels = o.bucket_levels;
  c.qo.regroup_iterations = o.regroup_iterations;
  c.ro.bucket_levels = o.bucket_levels;

  int kmax = 1;
  if (o.has_op("knn")) for (int k : o.ks) kmax = std::max(kmax, k);
  bool const radius_ops = o.has_op("radius") || o.has_op("radius_count");
  sink.progress("N=" + std::to_string(w.n) + ": brute-force reference of " +
                std::to_string(std::min<std::int64_t>(o.verify, w.m)) + " sampled queries");
  c.ref = compute_reference<T, D>(c.hp, c.hq, o.verify, kmax, radius_ops ? w.radius : -1.0, nanoflann_tolerance<T>());
  {
    std::vector<HostPoint<T, D>> sample;
    for (auto q : c.ref.queries) sample.push_back(c.hq[std::size_t(q)]);
    c.qs_sample = c.to_device(sample, "bench::sampled_queries");
  }

  for (auto const& name : o.builders)
    for_each_builder([&](auto* b) {
      using B = std::remove_pointer_t<decltype(b)>;
      if (name == B::name) measure_builder<T, D, B>(c);
    });
  if (o.nanoflann) run_nanoflann<T, D>(w, sink, c.hp, c.hq, c.ref);
}

} // namespace kdforge_bench
