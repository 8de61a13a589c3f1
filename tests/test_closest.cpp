// Closest point against brute force, with and without a cutoff radius: both
// tree kinds, every walk, split policy and query order.
#include "query_checks.hpp"
#include "test_helpers.hpp"
#include "tree_checks.hpp"

#include <kdforge/build_split_sort.hpp>
#include <kdforge/kdforge.hpp>


#include <cmath>
#include <limits>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

TEST_CASE_TEMPLATE("closest point equals brute force on left-balanced trees, every walk, split policy and order", Exec,
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
        test::check_closest_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
      }
    }
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    test::check_closest_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::as_given);
    test::check_closest_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::morton);
  }
}

TEST_CASE_TEMPLATE("closest point equals brute force on split-and-sort trees", Exec, KDFORGE_TEST_SPACES) {
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
        test::check_closest_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
    }
  }
  auto pts = test::make_points<double, 3>(3000, Distribution::clustered, 5);
  auto queries = test::make_points<double, 3>(300, Distribution::uniform, 6);
  auto tree = build_split_sort<std::int64_t>(exec, to_device<Exec>(pts, "p"));
  test::check_closest_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::morton);
}

// Closest point is kNN with k = 1: the same rows, with and without a cutoff
// (beyond it, index -1 and distance +inf), whatever the walk.
TEST_CASE_TEMPLATE("closest point is kNN's first column", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(4000, Distribution::clustered, 41);
  auto queries = test::make_points<float, 3>(600, Distribution::uniform, 42);
  auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto dq = to_device<Exec>(queries, "q");
  for (double cutoff : {std::numeric_limits<double>::infinity(), 0.02}) {
    CAPTURE(cutoff);
    for (auto tr : {Traversal::automatic, Traversal::stack, Traversal::stack_free, Traversal::trail}) {
      CAPTURE(int(tr));
      QueryOptions qo;
      qo.traversal = tr;
      qo.cutoff_radius = cutoff;
      auto c = closest_point(exec, tree, dq, qo);
      auto k = knn(exec, tree, dq, 1, qo);
      auto ki = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, k.indices);
      auto kd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, k.sq_distances);
      auto ci = to_host(c.indices);
      auto cd = to_host(c.sq_distances);
      int missing = 0;
      for (std::size_t q = 0; q < queries.size(); ++q) {
        CHECK(ci[q] == ki(q, 0));
        CHECK(cd[q] == kd(q, 0));
        missing += ci[q] < 0 ? 1 : 0;
      }
      if (std::isinf(cutoff)) CHECK(missing == 0);
      else CHECK(missing > 0); // the cutoff leaves some queries without a neighbour
    }
  }
}
