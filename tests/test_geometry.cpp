// Real geometry: every distribution (surfaces, planes, lines, clusters,
// duplicates, scans, anisotropic boxes) x builder x query kind x backend
// equals brute force, and the walks stay cheap where ties or thin geometry
// once made them visit whole trees.
#include "query_checks.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace kdforge;
using test::Distribution;
using test::to_device;

namespace {

constexpr Distribution all_distributions[] = {
    Distribution::uniform,      Distribution::clustered, Distribution::duplicates,  Distribution::line,
    Distribution::plane,        Distribution::sphere,    Distribution::tilted_plane, Distribution::scan,
    Distribution::half_copies,  Distribution::identical, Distribution::anisotropic,
};

enum class QueryKind { uniform_in_box, jitter, self, far };

char const* name(QueryKind k) {
  switch (k) {
  case QueryKind::uniform_in_box: return "uniform in the box";
  case QueryKind::jitter: return "jitter";
  case QueryKind::self: return "self";
  case QueryKind::far: return "far";
  }
  return "?";
}

template <class T, int D>
std::vector<Point<T, D>> make_queries(std::vector<Point<T, D>> const& pts, QueryKind kind, std::size_t m,
                                      std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 0.01);
  Box<T, D> box = Box<T, D>::empty();
  for (auto const& p : pts) box.extend(p);
  std::vector<Point<T, D>> q(m);
  for (std::size_t i = 0; i < m; ++i) {
    for (int d = 0; d < D; ++d) {
      double const lo = double(box.lo[d]), hi = double(box.hi[d]);
      double const width = hi > lo ? hi - lo : 1.0;
      switch (kind) {
      case QueryKind::uniform_in_box: q[i][d] = T(lo - 0.05 * width + 1.1 * width * u(rng)); break;
      case QueryKind::jitter: q[i][d] = T(double(pts[rng() % pts.size()][d]) + g(rng)); break;
      case QueryKind::self: q[i][d] = pts[i % pts.size()][d]; break;
      case QueryKind::far: q[i][d] = T(lo + 1e6 * width + width * u(rng)); break;
      }
    }
  }
  return q;
}

} // namespace

TEST_CASE_TEMPLATE("every distribution, builder and query kind equals brute force", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : all_distributions) {
    CAPTURE(std::string(test::name(dist)));
    auto const pts = test::make_points<float, 3>(1500, dist, 900 + int(dist));
    auto const dp = to_device<Exec>(pts, "points");
    for (auto kind : {QueryKind::uniform_in_box, QueryKind::jitter, QueryKind::self, QueryKind::far}) {
      CAPTURE(name(kind));
      auto const queries = make_queries(pts, kind, 120, 950 + int(kind));
      for (auto boxes : {NodeBoxPolicy::automatic, NodeBoxPolicy::never, NodeBoxPolicy::always}) {
        CAPTURE(int(boxes));
        BuildOptions bo;
        bo.node_boxes = boxes;
        auto const tree = build_left_balanced(exec, dp, bo);
        for (auto tr : {Traversal::automatic, Traversal::stack, Traversal::stack_free, Traversal::trail}) {
          CAPTURE(int(tr));
          test::check_all_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
        }
      }
      SplitSortOptions so;
      so.node_boxes = NodeBoxPolicy::always;
      auto const median = build_split_sort(exec, dp, so);
      test::check_all_queries(exec, median, pts, queries, Traversal::automatic, QueryOrder::automatic);
      // approximate kNN with a queue that holds every pending branch: exact
      ApproximateOptions ao;
      ao.queue_capacity = int(pts.size());
      auto const dq = to_device<Exec>(queries, "queries");
      auto const ap = knn_approximate(exec, median, dq, 8, ao);
      auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ap.indices);
      auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ap.sq_distances);
      for (std::size_t q = 0; q < queries.size(); ++q)
        test::check_row(test::brute_knn(pts, queries[q], 8, detail::infinity<float>()), &hi(q, 0), &hd(q, 0), 8);
    }
  }
}

TEST_CASE_TEMPLATE("node boxes are kept where the points leave their cells empty", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : all_distributions) {
    CAPTURE(std::string(test::name(dist)));
    auto const pts = test::make_points<float, 3>(20000, dist, 77);
    auto const tree = build_left_balanced(exec, to_device<Exec>(pts, "points"));
    CAPTURE(tree.box_fill());
    // filled cells: boxes would prune nothing the planes do not
    if (dist == Distribution::uniform || dist == Distribution::half_copies || dist == Distribution::anisotropic)
      CHECK(tree.node_boxes().empty());
    // thin, clustered or tied: kept (an axis-aligned plane is pruned by the
    // tree's box already, and either choice is right for it)
    if (dist == Distribution::clustered || dist == Distribution::line || dist == Distribution::sphere ||
        dist == Distribution::tilted_plane || dist == Distribution::identical)
      CHECK(!tree.node_boxes().empty());
    CHECK(tree.box_fill() >= 0.0);
    CHECK(tree.box_fill() <= 1.0);
    // the boxes are tight: each holds its sub-tree's points, touching them on every side
    if (!tree.node_boxes().empty()) {
      auto const boxes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.node_boxes().boxes);
      auto const tp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.points());
      auto const ti = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.original_indices());
      std::int64_t const n = std::int64_t(tp.extent(0));
      for (std::int64_t s : {std::int64_t(0), std::int64_t(1), std::int64_t(2), std::int64_t(37), n / 2 - 1}) {
        if (s < 0 || s >= std::int64_t(boxes.extent(0))) continue;
        Box<float, 3> want = Box<float, 3>::empty();
        std::int32_t min_index = ti(s);
        std::vector<std::int64_t> todo{s};
        while (!todo.empty()) {
          std::int64_t const v = todo.back();
          todo.pop_back();
          if (v >= n) continue;
          want.extend(tp(v));
          min_index = std::min(min_index, ti(v));
          todo.push_back(2 * v + 1);
          todo.push_back(2 * v + 2);
        }
        for (int d = 0; d < 3; ++d) {
          CHECK(boxes(s).lo[d] == want.lo[d]);
          CHECK(boxes(s).hi[d] == want.hi[d]);
        }
        CHECK(boxes(s).min_index == min_index);
      }
    }
  }
}

namespace {
// Counts what a kNN walk shows its candidate list.
template <class Tree, int CAP>
struct CountingCandidates : kernels::SortedCandidates<Tree, CAP> {
  using Base = kernels::SortedCandidates<Tree, CAP>;
  std::int64_t visits = 0;
  CountingCandidates(Tree const& t, int k) : Base(t, k, detail::infinity<float>()) {}
  KOKKOS_FUNCTION void visit(typename Base::Index i, float d2) {
    ++visits;
    Base::visit(i, d2);
  }
};
} // namespace

TEST_CASE("kNN walks on copies of one point visit a few nodes, not the whole tree") {
  using Host = Kokkos::DefaultHostExecutionSpace;
  Host exec;
  std::size_t const n = 50000;
  auto const pts = test::make_points<float, 3>(n, Distribution::identical, 5);
  auto const tree = build_left_balanced(exec, to_device<Host>(pts, "points"));
  REQUIRE(!tree.node_boxes().empty());
  using Tree = std::decay_t<decltype(tree)>;
  for (int levels : {0, 2, 3}) {
    CAPTURE(levels);
    CountingCandidates<Tree, 8> st(tree, 8), tr(tree, 8);
    kernels::traverse_stack(tree, pts[0], st, levels);
    kernels::traverse_trail(tree, pts[0], tr, levels);
    for (auto const* c : {&st, &tr}) {
      CHECK(c->visits < 2000); // without the tie-aware boxes: all 50000
      std::vector<std::int32_t> got;
      c->for_each_result(8, [&](int, auto const& nb) { got.push_back(nb.index); });
      CHECK(got == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}); // the smallest indices win ties
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
