// k nearest neighbours against brute force, tie-tolerant: both tree kinds, every
// walk, split policy and query order, k from 1 to past the register lists (the
// heap path), float and double, 2 to 16 dimensions, 32- and 64-bit indices.
#include "query_checks.hpp"
#include "test_helpers.hpp"
#include "tree_checks.hpp"

#include <kdforge/build_split_sort.hpp>
#include <kdforge/kdforge.hpp>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

TEST_CASE_TEMPLATE("kNN equals brute force on left-balanced trees, every walk, split policy and order", Exec,
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
        test::check_knn_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
      }
    }
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    test::check_knn_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::as_given);
    test::check_knn_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::morton);
  }
}

TEST_CASE_TEMPLATE("kNN equals brute force on split-and-sort trees", Exec, KDFORGE_TEST_SPACES) {
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
        test::check_knn_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
    }
  }
  auto pts = test::make_points<double, 3>(3000, Distribution::clustered, 5);
  auto queries = test::make_points<double, 3>(300, Distribution::uniform, 6);
  auto tree = build_split_sort<std::int64_t>(exec, to_device<Exec>(pts, "p"));
  test::check_knn_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::morton);
}

namespace {
template <class Exec, class T, int D, class Index = std::int32_t>
void check_queries(std::vector<Point<T, D>> const& pts, std::vector<Point<T, D>> const& queries, BuildOptions opts,
                   Traversal traversal, QueryOrder order) {
  Exec exec;
  auto tree = build_left_balanced<Index>(exec, to_device<Exec>(pts, "pts"), opts);
  test::check_tree(tree, pts);
  test::check_all_queries(exec, tree, pts, queries, traversal, order);
}
} // namespace

TEST_CASE_TEMPLATE("every query in double precision, other dimensions and 64-bit indices", Exec, KDFORGE_TEST_SPACES) {
  {
    auto pts = test::make_points<double, 2>(3000, Distribution::clustered, 5);
    auto queries = test::make_points<double, 2>(300, Distribution::uniform, 6);
    for (auto tr : {Traversal::automatic, Traversal::trail}) // trail: its 64-bit level mask
      check_queries<Exec, double, 2, std::int64_t>(pts, queries, {}, tr, QueryOrder::automatic);
  }
  {
    auto pts = test::make_points<float, 4>(3000, Distribution::uniform, 7);
    auto queries = test::make_points<float, 4>(300, Distribution::uniform, 8);
    BuildOptions o;
    o.split = SplitPolicy::widest_dimension;
    check_queries<Exec>(pts, queries, o, Traversal::automatic, QueryOrder::automatic);
  }
  {
    auto pts = test::make_points<float, 16>(2000, Distribution::clustered, 9);
    auto queries = test::make_points<float, 16>(100, Distribution::clustered, 10);
    check_queries<Exec>(pts, queries, {}, Traversal::stack, QueryOrder::automatic);
  }
}

TEST_CASE_TEMPLATE("kNN within a bound per query equals brute force within it (the distributed second phase)", Exec,
                   KDFORGE_TEST_SPACES) {
  // detail::knn_impl's bounds: query q's neighbours within min(cutoff^2,
  // bounds(q)), inclusive; bounds at a point's exact distance (ties at the
  // bound), 0, +inf and above the cutoff; the register lists, the heap
  // (k > 32) and the set-aside trail walks (regroup_iterations)
  Exec exec;
  using MS = typename Exec::memory_space;
  auto pts = test::make_points<float, 3>(4000, Distribution::duplicates, 91);
  auto queries = test::make_points<float, 3>(600, Distribution::uniform, 92);
  for (int i = 0; i < 60; ++i) queries[i] = pts[i * 53 % pts.size()];
  auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto dq = to_device<Exec>(queries, "q");
  float const inf = detail::infinity<float>();
  std::vector<float> bounds(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q) {
    auto near = test::brute_knn(pts, queries[q], 40, inf);
    switch (q % 5) {
    case 0: bounds[q] = near[q % 40].sq_dist; break; // a point's distance: ties at the bound
    case 1: bounds[q] = 0; break;
    case 2: bounds[q] = inf; break;
    case 3: bounds[q] = 0.5f * near[(q / 5) % 40].sq_dist; break;
    default: bounds[q] = 10.f; break; // above every distance and the cutoff
    }
  }
  Kokkos::View<float*, MS> db("bounds", bounds.size());
  Kokkos::deep_copy(db, Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            bounds.data(), bounds.size()));
  for (double cutoff : {std::numeric_limits<double>::infinity(), 0.15}) {
    for (int k : {1, 8, 33}) {
      for (int regroup : {0, 3}) {
        CAPTURE(cutoff);
        CAPTURE(k);
        CAPTURE(regroup);
        QueryOptions qo;
        qo.cutoff_radius = cutoff;
        qo.traversal = Traversal::trail;
        qo.regroup_iterations = regroup;
        KnnResultFor<Exec, decltype(tree)> r;
        QueryWorkspace<MS> ws;
        detail::knn_impl(exec, tree, dq, k, r, qo, ws, Kokkos::View<float const*, MS>(db));
        auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
        auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
        float const sq_cut = float(cutoff) * float(cutoff);
        for (std::size_t q = 0; q < queries.size(); ++q) {
          CAPTURE(q);
          auto ref = test::brute_knn(pts, queries[q], k, std::min(sq_cut, bounds[q]));
          test::check_row(ref, &hi(q, 0), &hd(q, 0), k);
        }
      }
    }
  }
}
