// Bad input gets a clear answer: empty and one-point sets, copies of one
// point, NaN and infinite points (refused with their index, or dropped) and
// queries (refused with their index by every operation), bad arguments and
// options of every builder and query, each a kdforge::Error naming the cause.
#include "test_helpers.hpp"
#include "tree_checks.hpp"

#include <kdforge/build_split_sort.hpp>
#include <kdforge/kdforge.hpp>
#include <kdforge/knn_approximate.hpp>

#include <cmath>
#include <limits>
#include <string>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

using test::check_tree;
using test::check_median_tree;

TEST_CASE_TEMPLATE("adversarial inputs get clear answers", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  SUBCASE("empty point set: valid empty tree, no neighbours") {
    auto tree = build_left_balanced(exec, Kokkos::View<Point<float, 3>*, typename Exec::memory_space>("none", 0));
    CHECK(tree.size() == 0);
    auto q = to_device<Exec>(test::make_points<float, 3>(5, Distribution::uniform, 1), "q");
    auto r = knn(exec, tree, q, 4);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 4; ++j) CHECK(hi(i, j) == -1);
    CHECK(to_host(radius_count(exec, tree, q, 1.0)) == std::vector<std::int64_t>(5, 0));
    auto rs = radius_search(exec, tree, q, 1.0);
    CHECK(rs.indices.extent(0) == 0);
  }
  SUBCASE("one point, and k > N") {
    std::vector<Point<double, 3>> pts{{1, 2, 3}};
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    auto r = knn(exec, tree, to_device<Exec>(std::vector<Point<double, 3>>{{0, 0, 0}}, "q"), 3);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
    CHECK(hi(0, 0) == 0);
    CHECK(hd(0, 0) == 14.0);
    CHECK(hi(0, 1) == -1);
    CHECK(std::isinf(hd(0, 2)));
  }
  SUBCASE("all-identical points: ties broken by index") {
    std::vector<Point<float, 3>> pts(1000, Point<float, 3>{{0.5f, 0.5f, 0.5f}});
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    check_tree(tree, pts);
    auto r = knn(exec, tree, to_device<Exec>(std::vector<Point<float, 3>>{{0.f, 0.f, 0.f}}, "q"), 5);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    for (int j = 0; j < 5; ++j) CHECK(hi(0, j) == j);
  }
  SUBCASE("NaN and infinity: rejected with the index, or dropped") {
    auto pts = test::make_points<float, 3>(100, Distribution::uniform, 3);
    pts[42][1] = std::numeric_limits<float>::quiet_NaN();
    pts[77][2] = std::numeric_limits<float>::infinity();
    auto d = to_device<Exec>(pts, "p");
    try {
      build_left_balanced(exec, d);
      FAIL("expected an error");
    } catch (kdforge::Error const& e) {
      CHECK(std::string(e.what()).find("point 42") != std::string::npos);
    }
    BuildOptions o;
    o.non_finite = NonFinitePolicy::drop;
    auto tree = build_left_balanced(exec, d, o);
    CHECK(tree.size() == 98);
    CHECK(tree.dropped_count() == 2);
    check_tree(tree, pts);
    // the caller's View is untouched
    auto back = to_host(d);
    CHECK(std::isnan(back[42][1]));
    CHECK(back[0][0] == pts[0][0]);
  }
  SUBCASE("bad query arguments") {
    auto tree = build_left_balanced(exec, to_device<Exec>(test::make_points<float, 3>(10, Distribution::uniform, 1), "p"));
    auto q = to_device<Exec>(test::make_points<float, 3>(2, Distribution::uniform, 2), "q");
    CHECK_THROWS_AS(knn(exec, tree, q, 0), kdforge::Error);
    CHECK_THROWS_AS(knn(exec, tree, q, -3), kdforge::Error);
    CHECK_THROWS_AS(radius_count(exec, tree, q, -1.0), kdforge::Error);
    CHECK_THROWS_AS(radius_search(exec, tree, q, std::nan("")), kdforge::Error);
    QueryOptions qo;
    qo.cutoff_radius = -2;
    CHECK_THROWS_AS(closest_point(exec, tree, q, qo), kdforge::Error);
    RadiusOptions ro;
    ro.buffer_size = -2;
    CHECK_THROWS_AS(radius_search(exec, tree, q, 0.1, ro), kdforge::Error);
    ro.buffer_size = std::int64_t(1) << 21;
    CHECK_THROWS_AS(radius_search(exec, tree, q, 0.1, ro), kdforge::Error);
    ro.buffer_size = 0;
    for (int bad : {-2, kernels::max_bucket_levels + 1}) {
      CAPTURE(bad);
      qo.cutoff_radius = 1;
      qo.bucket_levels = bad;
      ro.bucket_levels = bad;
      CHECK_THROWS_AS(knn(exec, tree, q, 2, qo), kdforge::Error);
      CHECK_THROWS_AS(radius_count(exec, tree, q, 0.1, ro), kdforge::Error);
      CHECK_THROWS_AS(radius_search(exec, tree, q, 0.1, ro), kdforge::Error);
    }
  }
  SUBCASE("recursive_select is refused on a GPU, with a clear error") {
    BuildOptions o;
    o.builder = Builder::recursive_select;
    auto d = to_device<Exec>(test::make_points<float, 3>(10, Distribution::uniform, 1), "p");
    if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible) {
      CHECK(build_left_balanced(exec, d, o).size() == 10);
    } else {
      CHECK_THROWS_AS(build_left_balanced(exec, d, o), kdforge::Error);
    }
  }
}

TEST_CASE_TEMPLATE("queries with NaN or infinite coordinates are refused by every operation", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  auto const pts = test::make_points<float, 3>(500, Distribution::uniform, 3);
  auto const tree = build_left_balanced(exec, to_device<Exec>(pts, "points"));
  auto const median = build_split_sort(exec, to_device<Exec>(pts, "points"));
  for (float bad : {detail::infinity<float>(), -detail::infinity<float>(), std::nanf("")}) {
    for (std::size_t m : {std::size_t(1), std::size_t(300)}) { // one query: no Morton pass
      CAPTURE(m);
      auto queries = test::make_points<float, 3>(m, Distribution::uniform, 4);
      std::size_t const where = m / 3;
      queries[where][1] = bad;
      if (m > 2) queries[m - 1][0] = bad; // a later one: the first is named
      auto const dq = to_device<Exec>(queries, "queries");
      std::string const first = "query " + std::to_string(where) + " ";
      for (auto order : {QueryOrder::automatic, QueryOrder::as_given}) {
        QueryOptions qo;
        qo.order = order;
        RadiusOptions ro;
        ro.order = order;
        CHECK_THROWS_WITH_AS(knn(exec, tree, dq, 4, qo), doctest::Contains(first.c_str()), Error);
        CHECK_THROWS_WITH_AS(closest_point(exec, tree, dq, qo), doctest::Contains(first.c_str()), Error);
        CHECK_THROWS_WITH_AS(radius_count(exec, tree, dq, 0.1, ro), doctest::Contains(first.c_str()), Error);
        CHECK_THROWS_WITH_AS(radius_search(exec, tree, dq, 0.1, ro), doctest::Contains(first.c_str()), Error);
        CHECK_THROWS_WITH_AS(knn(exec, median, dq, 4, qo), doctest::Contains(first.c_str()), Error);
        ApproximateOptions ao;
        ao.order = order;
        CHECK_THROWS_WITH_AS(knn_approximate(exec, median, dq, 4, ao), doctest::Contains(first.c_str()), Error);
      }
    }
  }
  // an empty tree refuses them too (the answer would be "none" otherwise)
  auto const empty = build_left_balanced(exec, Kokkos::View<Point<float, 3>*, typename Exec::memory_space>("e", 0));
  std::vector<Point<float, 3>> one{{{0.f, std::nanf(""), 0.f}}};
  CHECK_THROWS_AS(knn(exec, empty, to_device<Exec>(one, "q"), 1), Error);
}

TEST_CASE_TEMPLATE("bad regroup settings are errors", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(100, Distribution::uniform, 921);
  auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto dq = to_device<Exec>(pts, "q");
  QueryOptions qo;
  qo.regroup_iterations = -2;
  CHECK_THROWS_WITH_AS(knn(exec, tree, dq, 4, qo), doctest::Contains("regroup_iterations must be -1"), kdforge::Error);
  qo.regroup_iterations = 10;
  qo.traversal = Traversal::stack;
  CHECK_THROWS_WITH_AS(knn(exec, tree, dq, 4, qo), doctest::Contains("needs Traversal::trail"), kdforge::Error);
  CHECK_THROWS_WITH_AS(closest_point(exec, tree, dq, qo), doctest::Contains("needs Traversal::trail"), kdforge::Error);
}

TEST_CASE_TEMPLATE("split-and-sort: adversarial input and bad options get clear answers", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  SUBCASE("empty, one point, identical points") {
    auto empty = build_split_sort(exec, Kokkos::View<Point<float, 3>*, MS>("none", 0));
    CHECK(empty.size() == 0);
    CHECK(empty.node_count() == 0);
    auto q = to_device<Exec>(test::make_points<float, 3>(3, Distribution::uniform, 1), "q");
    auto r = knn(exec, empty, q, 2);
    auto ri = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) CHECK(ri(i, j) == -1);
    std::vector<Point<double, 3>> one{{1, 2, 3}};
    auto t1 = build_split_sort(exec, to_device<Exec>(one, "p"));
    auto c = closest_point(exec, t1, to_device<Exec>(std::vector<Point<double, 3>>{{0, 0, 0}}, "q"));
    CHECK(to_host(c.indices)[0] == 0);
    CHECK(to_host(c.sq_distances)[0] == 14.0);
    std::vector<Point<float, 3>> same(777, Point<float, 3>{{0.25f, 0.5f, 0.75f}});
    auto ts = build_split_sort(exec, to_device<Exec>(same, "p"));
    check_median_tree(ts, same);
    auto rk = knn(exec, ts, to_device<Exec>(std::vector<Point<float, 3>>{{0.f, 0.f, 0.f}}, "q"), 4);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rk.indices);
    for (int j = 0; j < 4; ++j) CHECK(hi(0, j) == j);
  }
  SUBCASE("NaN and infinity: rejected with the index, or dropped") {
    auto pts = test::make_points<float, 3>(200, Distribution::uniform, 3);
    pts[17][0] = std::numeric_limits<float>::quiet_NaN();
    pts[150][1] = -std::numeric_limits<float>::infinity();
    auto d = to_device<Exec>(pts, "p");
    try {
      build_split_sort(exec, d);
      FAIL("expected an error");
    } catch (kdforge::Error const& e) {
      CHECK(std::string(e.what()).find("point 17") != std::string::npos);
    }
    SplitSortOptions o;
    o.non_finite = NonFinitePolicy::drop;
    auto tree = build_split_sort(exec, d, o);
    CHECK(tree.size() == 198);
    CHECK(tree.dropped_count() == 2);
    check_median_tree(tree, pts);
    auto back = to_host(d);
    CHECK(std::isnan(back[17][0]));
  }
  SUBCASE("bad options") {
    auto d = to_device<Exec>(test::make_points<float, 3>(100, Distribution::uniform, 3), "p");
    for (int tpb : {-32, 16, 48, 2048}) {
      SplitSortOptions o;
      o.threads_per_block = tpb;
      CHECK_THROWS_AS(build_split_sort(exec, d, o), kdforge::Error);
    }
    for (int base : {0, 1, 3, 48, 512}) {
      SplitSortOptions o;
      o.radix_base = base;
      CHECK_THROWS_AS(build_split_sort(exec, d, o), kdforge::Error);
    }
    SplitSortOptions o;
    o.threads_per_block = 128;
    o.cutoff = 64;
    CHECK_THROWS_WITH_AS(build_split_sort(exec, d, o), doctest::Contains("at most two chunks"), kdforge::Error);
  }
}
