// Real geometry: every distribution (surfaces, planes, lines, clusters,
// duplicates, scans, anisotropic boxes) x node-box policy x walk x query kind
// x backend equals brute force; the node boxes are kept where they pay and
// are tight, and the principal-axes boxes contain their sub-trees' points and
// are kept where the points are thin along a direction no axis follows.
#include "query_checks.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

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

/// Whether a tree's points have no width in some dimension (an axis-aligned plane or line).
template <class Tree>
bool has_flat_dimension(Tree const& tree) {
  bool flat = false;
  for (int d = 0; d < Tree::dimension; ++d) flat = flat || !(tree.bounds().hi[d] > tree.bounds().lo[d]);
  return flat;
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
    // the automatic rule: below the target's fill, or points with no width in some dimension
    CHECK(!tree.node_boxes().empty() ==
          (tree.box_fill() < kernels::automatic_box_fill<Exec>() || has_flat_dimension(tree)));
    // GPUs keep them for fuller cells than CPUs (clustered points: see node_boxes.hpp)
    CHECK(kernels::automatic_box_fill<Exec>() == (detail::runs_on_gpu<Exec>() ? 0.95 : 0.8));
    // the boxes are tight: each holds its sub-tree's points, touching them on every side
    if (!tree.node_boxes().empty()) {
      auto const boxes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.node_boxes().records);
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
          CHECK(boxes(s).box.lo[d] == want.lo[d]);
          CHECK(boxes(s).box.hi[d] == want.hi[d]);
        }
        CHECK(boxes(s).box.min_index == min_index);
      }
    }
  }
}

// Radius walks leave the node boxes aside (kernels/query/radius.hpp,
// radius_walk_tree), except for capped rows, whose bound shrinks, and, on
// GPUs, for points with no width in some dimension, where only the boxes
// prune a query off the points. The tree itself keeps its boxes.
TEST_CASE_TEMPLATE("radius walks leave node boxes aside where they do not pay", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  constexpr bool gpu = detail::runs_on_gpu<Exec>();
  for (auto dist : {Distribution::sphere, Distribution::tilted_plane, Distribution::plane, Distribution::line}) {
    CAPTURE(std::string(test::name(dist)));
    auto const pts = test::make_points<float, 3>(5000, dist, 31);
    BuildOptions bo;
    bo.node_boxes = NodeBoxPolicy::always;
    auto const tree = build_left_balanced(exec, to_device<Exec>(pts, "points"), bo);
    REQUIRE(!tree.node_boxes().empty());
    bool const flat = has_flat_dimension(tree);
    CHECK(flat == (dist == Distribution::plane));
    auto const walked = detail::radius_walk_tree<Exec>(tree, false);
    CHECK(walked.node_boxes().empty() == !(gpu && flat));
    CHECK(walked.box_fill() == tree.box_fill());
    CHECK(walked.size() == tree.size());
    CHECK(!detail::radius_walk_tree<Exec>(tree, true).node_boxes().empty());
    CHECK(!tree.node_boxes().empty());
    SplitSortOptions so;
    so.node_boxes = NodeBoxPolicy::always;
    auto const median = build_split_sort(exec, to_device<Exec>(pts, "points"), so);
    REQUIRE(!median.node_boxes().empty());
    CHECK(detail::radius_walk_tree<Exec>(median, false).node_boxes().empty() == !(gpu && flat));
    CHECK(!detail::radius_walk_tree<Exec>(median, true).node_boxes().empty());
  }
}

// Every inner node's principal-axes box holds every point of its sub-tree
// (|axis_i . (x - center)| <= half_i, in exact arithmetic on the stored
// values), and is marked worth testing (framed) where the points lie on a
// surface or a line that no coordinate axis follows, never on an
// axis-aligned plane, where the axis-aligned box is as thin.
TEST_CASE_TEMPLATE("principal-axes boxes contain their points and are kept where they are thin", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : all_distributions) {
    CAPTURE(std::string(test::name(dist)));
    auto const pts = test::make_points<float, 3>(20000, dist, 78);
    BuildOptions bo;
    bo.node_boxes = NodeBoxPolicy::always;
    auto const tree = build_left_balanced(exec, to_device<Exec>(pts, "points"), bo);
    REQUIRE(!tree.node_boxes().empty());
    auto const rec = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.node_boxes().records);
    auto const tp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.points());
    std::int64_t const n = std::int64_t(tp.extent(0));
    std::int64_t framed = 0, outside = 0;
    for (std::int64_t s = 0; s < std::int64_t(rec.extent(0)); ++s) {
      auto const& f = rec(s).frame;
      framed += rec(s).box.framed ? 1 : 0;
      if (s % 7 != 0 && s > 64) continue; // every point of the top sub-trees, a sample below
      std::vector<std::int64_t> todo{s};
      while (!todo.empty()) {
        std::int64_t const v = todo.back();
        todo.pop_back();
        if (v >= n) continue;
        for (int i = 0; i < 3; ++i) {
          long double t = 0;
          for (int d = 0; d < 3; ++d) t += (long double)f.axis[i][d] * ((long double)tp(v)[d] - (long double)f.center[d]);
          outside += (t < 0 ? -t : t) > (long double)f.half[i] ? 1 : 0;
        }
        todo.push_back(2 * v + 1);
        todo.push_back(2 * v + 2);
      }
    }
    CHECK(outside == 0);
    std::int64_t const inner = std::int64_t(rec.extent(0));
    if (dist == Distribution::tilted_plane || dist == Distribution::line || dist == Distribution::sphere)
      CHECK(framed > inner / 2);
    if (dist == Distribution::plane || dist == Distribution::identical) CHECK(framed == 0);
  }
}
