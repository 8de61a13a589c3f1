// Radius count and radius search against brute force: counts, sorted and
// unsorted CSR rows, count-then-fill and buffered methods, capped rows (the
// nearest within the radius); both tree kinds, every walk, split policy and
// order; running out of memory is an error.
#include "query_checks.hpp"
#include "test_helpers.hpp"
#include "tree_checks.hpp"

#include <kdforge/build_split_sort.hpp>
#include <kdforge/kdforge.hpp>


#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>
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

#if defined(__linux__) && !defined(KOKKOS_ENABLE_CUDA) && !defined(__SANITIZE_ADDRESS__)
// The CPU radius search appends rows to per-chunk buffers inside a parallel
// region; running out of memory there once escaped the region (OpenMP
// terminates the program). With the address space capped a little above
// what the process maps now, a search whose rows need ~1.6 GB must throw
// kdforge::Error, and the next search must work. (Not in Cuda builds: the
// CUDA runtime's address-space reservations do not mix with the cap; nor
// under AddressSanitizer, whose shadow memory does not fit under it.)
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

namespace {

// Rows of query i from a per-query call equal row i of a call with radius
// radii[i] alone: counts, unsorted rows (same traversal order), sorted rows,
// capped rows.
template <class Exec, class Tree, class Q>
void check_per_query_radii(Exec const& exec, Tree const& tree, Q const& dq, std::vector<double> const& radii,
                           std::vector<double> const& distinct) {
  auto const dr = to_device<Exec>(radii, "radii");
  for (std::int64_t cap : {std::int64_t(-1), std::int64_t(5)}) {
    for (bool sort : {false, true}) {
      CAPTURE(cap);
      CAPTURE(sort);
      RadiusOptions ro;
      ro.sort = sort;
      ro.max_neighbors = cap;
      auto const counts = to_host(radius_count(exec, tree, dq, dr, ro));
      auto const rs = radius_search(exec, tree, dq, dr, ro);
      auto const off = to_host(rs.offsets);
      auto const idx = to_host(rs.indices);
      auto const sqd = to_host(rs.sq_distances);
      REQUIRE(off.size() == radii.size() + 1);
      for (double r : distinct) {
        CAPTURE(r);
        auto const c1 = to_host(radius_count(exec, tree, dq, r, ro));
        auto const r1 = radius_search(exec, tree, dq, r, ro);
        auto const off1 = to_host(r1.offsets);
        auto const idx1 = to_host(r1.indices);
        auto const sqd1 = to_host(r1.sq_distances);
        for (std::size_t i = 0; i < radii.size(); ++i) {
          if (!(radii[i] == r)) continue;
          CAPTURE(i);
          CHECK(counts[i] == c1[i]);
          REQUIRE(off[i + 1] - off[i] == off1[i + 1] - off1[i]);
          for (std::int64_t j = 0; j < off[i + 1] - off[i]; ++j) {
            CHECK(idx[off[i] + j] == idx1[off1[i] + j]);
            CHECK(sqd[off[i] + j] == sqd1[off1[i] + j]);
          }
        }
      }
    }
  }
}

} // namespace

TEST_CASE_TEMPLATE("per-query radii equal running each radius alone, on every tree kind", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  std::vector<double> const distinct = {0.0, 0.03, 0.1, 0.25, std::numeric_limits<double>::infinity()};
  auto pts = test::make_points<float, 3>(3000, Distribution::clustered, 91);
  auto queries = test::make_points<float, 3>(400, Distribution::uniform, 92);
  for (int i = 0; i < 50; ++i) queries[i] = pts[i * 41 % pts.size()];
  std::vector<double> radii(queries.size());
  for (std::size_t i = 0; i < radii.size(); ++i) radii[i] = distinct[(i * 7 + i / 3) % distinct.size()];
  auto const dq = to_device<Exec>(queries, "q");
  auto const dp = to_device<Exec>(pts, "p");
  {
    auto tree = build_left_balanced(exec, dp);
    check_per_query_radii(exec, tree, dq, radii, distinct);
  }
  {
    auto tree = build_split_sort(exec, dp);
    check_per_query_radii(exec, tree, dq, radii, distinct);
  }
  {
    Kokkos::View<float**, typename Exec::memory_space> p2("p2", pts.size(), 3), q2("q2", queries.size(), 3);
    auto hp = Kokkos::create_mirror_view(p2);
    auto hq = Kokkos::create_mirror_view(q2);
    for (std::size_t i = 0; i < pts.size(); ++i)
      for (int d = 0; d < 3; ++d) hp(i, d) = pts[i][d];
    for (std::size_t i = 0; i < queries.size(); ++i)
      for (int d = 0; d < 3; ++d) hq(i, d) = queries[i][d];
    Kokkos::deep_copy(p2, hp);
    Kokkos::deep_copy(q2, hq);
    auto tree = build_bucket_tree(exec, p2);
    check_per_query_radii(exec, tree, q2, radii, distinct);
  }
  // float radii, as a user's gather radii often are
  {
    std::vector<float> fr(radii.begin(), radii.end());
    auto tree = build_left_balanced(exec, dp);
    auto const a = to_host(radius_count(exec, tree, dq, to_device<Exec>(fr, "fr")));
    auto const b = to_host(radius_count(exec, tree, dq, to_device<Exec>(radii, "dr")));
    CHECK(a == b);
  }
}

TEST_CASE_TEMPLATE("per-query radii are checked like the scalar radius", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(200, Distribution::uniform, 3);
  auto queries = test::make_points<float, 3>(10, Distribution::uniform, 4);
  auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto const dq = to_device<Exec>(queries, "q");
  std::vector<double> radii(10, 0.1);
  radii[4] = -1.0;
  CHECK_THROWS_WITH_AS(radius_count(exec, tree, dq, to_device<Exec>(radii, "r")), doctest::Contains("radii(4)"), Error);
  radii[4] = std::nan("");
  radii[2] = std::nan("");
  CHECK_THROWS_WITH_AS(radius_search(exec, tree, dq, to_device<Exec>(radii, "r")), doctest::Contains("radii(2)"), Error);
  std::vector<double> few(9, 0.1);
  CHECK_THROWS_WITH_AS(radius_count(exec, tree, dq, to_device<Exec>(few, "r")), doctest::Contains("9 entries"), Error);
  // zero queries, zero radii: nothing to do
  auto const none = radius_search(exec, tree, to_device<Exec>(std::vector<Point<float, 3>>{}, "q0"),
                                  to_device<Exec>(std::vector<double>{}, "r0"));
  CHECK(to_host(none.offsets) == std::vector<std::int64_t>{0});
}
