// Radius count and radius search against brute force: counts, sorted and
// unsorted CSR rows, count-then-fill and buffered methods, capped rows (the
// nearest within the radius); both tree kinds, every walk, split policy and
// order; running out of memory is an error.
#include "query_checks.hpp"
#include "test_helpers.hpp"
#include "tree_checks.hpp"

#include <kdforge/build_split_sort.hpp>
#include <kdforge/kdforge.hpp>


#include <cstdio>
#include <string>

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>
#endif

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

TEST_CASE_TEMPLATE("radius count and search equals brute force on left-balanced trees, every walk, split policy and order", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::duplicates, Distribution::plane}) {
    CAPTURE(int(dist));
    auto pts = test::make_points<float, 3>(5000, dist, 77);
    auto queries = test::make_points<float, 3>(700, Distribution::uniform, 78);
    // some queries on data points (exact zero distances, ties)
    for (int i = 0; i < 100; ++i) queries[i] = pts[i * 37 % pts.size()];
    for (auto split : {SplitPolicy::round_robin, SplitPolicy::widest_dimension, SplitPolicy::automatic}) {
      CAPTURE(int(split));
      BuildOptions o;
      o.split = split;
      auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"), o);
      test::check_tree(tree, pts);
      for (auto tr : {Traversal::stack, Traversal::stack_free, Traversal::trail}) {
        CAPTURE(int(tr));
        test::check_radius_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
      }
    }
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    test::check_radius_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::as_given);
    test::check_radius_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::morton);
  }
}

TEST_CASE_TEMPLATE("radius count and search equals brute force on split-and-sort trees", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::duplicates, Distribution::plane}) {
    for (std::size_t n : {std::size_t(4096), std::size_t(5000)}) { // 2^k: a nearly empty last level
      CAPTURE(int(dist));
      CAPTURE(n);
      auto pts = test::make_points<float, 3>(n, dist, 177);
      auto queries = test::make_points<float, 3>(500, Distribution::uniform, 178);
      for (int i = 0; i < 100; ++i) queries[i] = pts[i * 37 % pts.size()];
      auto tree = build_split_sort(exec, to_device<Exec>(pts, "p"));
      for (auto tr : {Traversal::stack, Traversal::stack_free, Traversal::trail})
        test::check_radius_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
    }
  }
  auto pts = test::make_points<double, 3>(3000, Distribution::clustered, 5);
  auto queries = test::make_points<double, 3>(300, Distribution::uniform, 6);
  auto tree = build_split_sort<std::int64_t>(exec, to_device<Exec>(pts, "p"));
  test::check_radius_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::morton);
}

#if defined(__linux__) && !defined(KOKKOS_ENABLE_CUDA)
// The CPU radius search appends rows to per-chunk buffers inside a parallel
// region; running out of memory there once escaped the region (OpenMP
// terminates the program). With the address space capped a little above
// what the process maps now, a search whose rows need ~1.6 GB must throw
// kdforge::Error, and the next search must work. (Not in Cuda builds: the
// CUDA runtime's address-space reservations do not mix with the cap.)
TEST_CASE_TEMPLATE("out of memory in the CPU radius search is an error, not a crash", Exec, KDFORGE_TEST_SPACES) {
  if constexpr (!detail::runs_on_gpu<Exec>()) {
    Exec exec;
    auto const pts = test::make_points<float, 3>(10000, Distribution::uniform, 61);
    auto const qs = test::make_points<float, 3>(20000, Distribution::uniform, 62);
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    auto q = to_device<Exec>(qs, "q");
    RadiusResult<typename Exec::memory_space, float, std::int32_t> out;
    radius_search(exec, tree, q, 0.03, out); // checked against brute force elsewhere
    auto const before_offsets = to_host(out.offsets);
    auto const before_indices = to_host(out.indices);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    REQUIRE(pages > 0);
    rlimit old{};
    REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
    rlimit capped = old;
    capped.rlim_cur = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(128) << 20);
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < capped.rlim_cur) capped.rlim_cur = old.rlim_cur;
    REQUIRE(setrlimit(RLIMIT_AS, &capped) == 0);
    bool threw = false;
    std::string message;
    try {
      radius_search(exec, tree, q, 2.0, out); // every point is within 2 of every query: 2e8 rows
    } catch (Error const& e) {
      threw = true;
      message = e.what();
    }
    REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
    CHECK(threw);
    CHECK(message.find("out of memory") != std::string::npos);
    // nothing left broken: the same search as before the cap, the same rows
    radius_search(exec, tree, q, 0.03, out);
    CHECK(to_host(out.offsets) == before_offsets);
    CHECK(to_host(out.indices) == before_indices);
    CHECK(before_offsets.back() > 0);
  }
}
#endif
