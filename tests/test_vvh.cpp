// VVH photon trees (Zhou et al. 2008, section 5.1): the tree's invariants
// (preorder, every point in exactly one leaf, tight boxes, split planes
// between the children's points), queries equal to brute force (knn,
// closest point, radius count and search, per-query radii), degenerate
// photon sets (all on a plane, all identical, one, none), the same tree on
// every backend, the builder's rules replayed node by node on the host, bad
// input refused; kNN by iterative range search (Algorithm
// 6): rows that hold the exact k nearest, and exactly k equal to brute force.
#include "brute_force.hpp"
#include "test_helpers.hpp"

#include <kdforge/build_vvh_tree.hpp>
#include <kdforge/range_knn.hpp>
#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

namespace {

template <class Exec, class T>
Kokkos::View<T**, typename Exec::memory_space> rows(std::vector<Point<T, 3>> const& p) {
  Kokkos::View<T**, typename Exec::memory_space> v("rows", p.size(), 3);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (int d = 0; d < 3; ++d) h(i, d) = p[i][d];
  Kokkos::deep_copy(v, h);
  return v;
}

/// Preorder links, point ranges that partition the parent's, every input
/// point in exactly one leaf, tight boxes, planes between the children.
template <class Tree, class T>
void check_vvh_tree(Tree const& tree, std::vector<Point<T, 3>> const& pts) {
  using Index = typename Tree::index_type;
  std::int64_t const n = std::int64_t(pts.size());
  REQUIRE(std::int64_t(tree.size()) == n);
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
  auto const boxes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.boxes());
  auto const tp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.points());
  auto const idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.original_indices());
  // the points in tree order are the input's, each once
  std::vector<int> seen(std::size_t(n), 0);
  for (std::int64_t p = 0; p < n; ++p) {
    REQUIRE(idx(p) >= 0);
    REQUIRE(std::int64_t(idx(p)) < n);
    ++seen[std::size_t(idx(p))];
    for (int d = 0; d < 3; ++d) REQUIRE(tp(p, d) == pts[std::size_t(idx(p))][d]);
  }
  for (int s : seen) REQUIRE(s == 1);
  if (n == 0) {
    CHECK(tree.node_count() == 0);
    return;
  }
  REQUIRE(tree.node_count() >= 1);
  REQUIRE(nodes(0).begin == 0);
  REQUIRE(std::int64_t(nodes(0).end) == n);
  // walk in preorder: node s's left child is s + 1, its right child follows
  // the left sub-tree; the leaves' ranges cover [0, n) in order
  std::vector<std::pair<Index, int>> todo = {{Index(0), 0}};
  Index expected = 0;
  std::int64_t covered = 0;
  int deepest = 0;
  std::int64_t largest_leaf = 0;
  while (!todo.empty()) {
    auto const [s, depth] = todo.back();
    todo.pop_back();
    REQUIRE(s == expected);
    ++expected;
    deepest = std::max(deepest, depth);
    auto const node = nodes(s);
    REQUIRE(node.begin <= node.end);
    // tight box
    if (node.begin == node.end) {
      for (int d = 0; d < 3; ++d) CHECK(boxes(s, d) > boxes(s, 3 + d));
    } else {
      for (int d = 0; d < 3; ++d) {
        T lo = std::numeric_limits<T>::infinity(), hi = -lo;
        for (Index p = node.begin; p < node.end; ++p) {
          lo = std::min(lo, tp(p, d));
          hi = std::max(hi, tp(p, d));
        }
        REQUIRE(boxes(s, d) == lo);
        REQUIRE(boxes(s, 3 + d) == hi);
      }
    }
    if (node.is_leaf()) {
      REQUIRE(std::int64_t(node.begin) == covered);
      covered = node.end;
      largest_leaf = std::max<std::int64_t>(largest_leaf, node.end - node.begin);
      continue;
    }
    REQUIRE(node.left == s + 1);
    REQUIRE(node.right > node.left);
    REQUIRE(node.right < tree.node_count());
    auto const l = nodes(node.left), r = nodes(node.right);
    REQUIRE(l.begin == node.begin);
    REQUIRE(l.end == r.begin);
    REQUIRE(r.end == node.end);
    int const sd = node.split_dim;
    REQUIRE(sd >= 0);
    REQUIRE(sd < 3);
    for (Index p = l.begin; p < l.end; ++p) REQUIRE(tp(p, sd) <= node.split_value);
    for (Index p = r.begin; p < r.end; ++p) REQUIRE(tp(p, sd) >= node.split_value);
    todo.push_back({node.right, depth + 1});
    todo.push_back({node.left, depth + 1});
  }
  CHECK(covered == n);
  CHECK(std::int64_t(expected) == std::int64_t(tree.node_count()));
  CHECK(deepest == tree.height());
  CHECK(tree.height() < kernels::box_stack_capacity);
  CHECK(largest_leaf == tree.max_leaf_size());
}

/// knn (k = 1, 8, 50), closest point, radius count and search (sorted,
/// capped, per-query radii) against brute force.
template <class Exec, class Tree, class T>
void check_vvh_queries(Exec const& exec, Tree const& tree, std::vector<Point<T, 3>> const& pts,
                       std::vector<Point<T, 3>> const& queries) {
  auto const q = rows<Exec>(queries);
  std::size_t const m = queries.size();
  for (int k : {1, 8, 50}) {
    CAPTURE(k);
    auto const r = knn(exec, tree, q, k);
    auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
    for (std::size_t i = 0; i < m; ++i) {
      CAPTURE(i);
      auto const ref = test::brute_knn(pts, queries[i], k, std::numeric_limits<T>::infinity());
      for (int j = 0; j < k; ++j) {
        if (std::size_t(j) < ref.size()) {
          CHECK(hd(i, j) == ref[std::size_t(j)].sq_dist);
          CHECK(std::int64_t(hi(i, j)) == ref[std::size_t(j)].index);
        } else {
          CHECK(std::int64_t(hi(i, j)) == -1);
          CHECK(std::isinf(hd(i, j)));
        }
      }
    }
  }
  {
    auto const c = closest_point(exec, tree, q);
    auto const ci = to_host(c.indices);
    auto const cd = to_host(c.sq_distances);
    for (std::size_t i = 0; i < m; ++i) {
      auto const ref = test::brute_knn(pts, queries[i], 1, std::numeric_limits<T>::infinity());
      if (ref.empty()) {
        CHECK(std::int64_t(ci[i]) == -1);
      } else {
        CHECK(cd[i] == ref[0].sq_dist);
        CHECK(std::int64_t(ci[i]) == ref[0].index);
      }
    }
  }
  std::vector<double> radii(m);
  for (std::size_t i = 0; i < m; ++i) radii[i] = 0.02 + 0.03 * double(i % 5);
  for (bool per_query : {false, true}) {
    CAPTURE(per_query);
    double const radius = 0.08;
    RadiusOptions ro;
    ro.sort = true;
    auto const dr = to_device<Exec>(radii, "radii");
    auto const counts = to_host(per_query ? radius_count(exec, tree, q, dr) : radius_count(exec, tree, q, radius));
    auto const rs = per_query ? radius_search(exec, tree, q, dr, ro) : radius_search(exec, tree, q, radius, ro);
    auto const off = to_host(rs.offsets);
    auto const ri = to_host(rs.indices);
    auto const rd = to_host(rs.sq_distances);
    for (std::size_t i = 0; i < m; ++i) {
      CAPTURE(i);
      T const r = T(per_query ? radii[i] : radius);
      auto const ref = test::brute_radius(pts, queries[i], r * r);
      CHECK(counts[i] == std::int64_t(ref.size()));
      REQUIRE(off[i + 1] - off[i] == std::int64_t(ref.size()));
      for (std::size_t j = 0; j < ref.size(); ++j) {
        CHECK(rd[std::size_t(off[i]) + j] == ref[j].sq_dist);
        CHECK(std::int64_t(ri[std::size_t(off[i]) + j]) == ref[j].index);
      }
    }
  }
}

template <class T>
std::vector<Point<T, 3>> queries_for(std::vector<Point<T, 3>> const& pts, std::size_t m, std::uint64_t seed) {
  auto q = test::make_points<T, 3>(m, Distribution::uniform, seed);
  for (std::size_t i = 0; i < 20 && i < m && !pts.empty(); ++i) q[i] = pts[i * 13 % pts.size()]; // on photons: ties
  return q;
}

} // namespace

TEST_CASE_TEMPLATE("VVH trees keep their invariants and answer queries like brute force", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::sphere, Distribution::scan,
                    Distribution::half_copies, Distribution::anisotropic, Distribution::duplicates}) {
    CAPTURE(test::name(dist));
    auto const pts = test::make_points<float, 3>(4000, dist, 31);
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    CHECK(tree.query_radius() > 0.0);
    check_vvh_tree(tree, pts);
    check_vvh_queries(exec, tree, pts, queries_for(pts, 120, 32));
  }
}

TEST_CASE_TEMPLATE("VVH trees: every option, double, 64-bit indices, other point containers", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto const pts = test::make_points<double, 3>(3000, Distribution::clustered, 41);
  VvhOptions o;
  o.query_radius = 0.02;
  o.small_node_size = 8;
  o.empty_space_ratio = 0.0;
  auto const t64 = build_vvh_tree<std::int64_t>(exec, to_device<Exec>(pts, "p"), o);
  CHECK(t64.query_radius() == 0.02);
  check_vvh_tree(t64, pts);
  check_vvh_queries(exec, t64, pts, queries_for(pts, 80, 42));
  o = VvhOptions{};
  o.small_node_size = 1; // large-node stage only
  o.traversal_cost = 5.0;
  auto const t1 = build_vvh_tree(exec, rows<Exec>(pts), o); // an N x 3 View
  check_vvh_tree(t1, pts);
  CHECK(t1.max_leaf_size() == 1);
  check_vvh_queries(exec, t1, pts, queries_for(pts, 40, 43));
}

TEST_CASE_TEMPLATE("VVH trees on degenerate photon sets: a plane, one point repeated, one, none", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  {
    auto const pts = test::make_points<float, 3>(3000, Distribution::plane, 51);
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    check_vvh_tree(tree, pts);
    check_vvh_queries(exec, tree, pts, queries_for(pts, 100, 52));
  }
  {
    auto const pts = test::make_points<float, 3>(2000, Distribution::identical, 53);
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    check_vvh_tree(tree, pts);
    CHECK(tree.node_count() == 1); // no plane separates copies of one point
    check_vvh_queries(exec, tree, pts, queries_for(pts, 30, 54));
  }
  {
    auto const pts = test::make_points<float, 3>(3000, Distribution::line, 55);
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    check_vvh_tree(tree, pts);
    check_vvh_queries(exec, tree, pts, queries_for(pts, 50, 56));
  }
  {
    // exponentially spaced values: the median levels bound the height
    std::vector<Point<double, 3>> pts(1500);
    for (std::size_t i = 0; i < pts.size(); ++i) pts[i] = Point<double, 3>{{std::ldexp(1.0, -int(i % 1000)), 0.5, 0.25}};
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    check_vvh_tree(tree, pts);
    check_vvh_queries(exec, tree, pts, queries_for(pts, 30, 57));
  }
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(33)}) {
    CAPTURE(n);
    auto const pts = test::make_points<float, 3>(n, Distribution::uniform, 58);
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    check_vvh_tree(tree, pts);
    check_vvh_queries(exec, tree, pts, queries_for(pts, 25, 59));
  }
}

namespace {

/// The builder's rules (kernels/builders/vvh/build.hpp: section 5.1 and
/// the differences its header states) replayed on the host along the built
/// tree: large nodes cut off empty space wider than Ce of their cell, else
/// split at the spatial median of the box's longest axis (lo where the
/// midpoint splits nothing off); small nodes take the cheapest plane through
/// a point by the exact VVH cost, or stay leaves; from level 32 on, large
/// nodes split at the median position and small ones stay leaves; copies of
/// one point stay a leaf. Every cost is computed in double, one rounding per
/// operation, as the builder does. Checks every node's decision, plane and
/// range, and the order of every leaf's points.
template <class Tree, class T>
void check_vvh_rules(Tree const& tree, std::vector<Point<T, 3>> const& pts, VvhOptions const& o) {
  using Index = typename Tree::index_type;
  std::int64_t const n = std::int64_t(pts.size());
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
  auto const idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.original_indices());
  double const r2 = tree.query_radius() + tree.query_radius();
  int const big_levels = kernels::vvh::vvh_levels;
  using Lists = std::array<std::vector<std::int64_t>, 3>;
  struct Job {
    Index node;
    int level;
    Lists lists;
    std::array<T, 6> cell;
  };
  Lists root;
  for (int d = 0; d < 3; ++d) {
    auto& l = root[std::size_t(d)];
    l.resize(std::size_t(n));
    for (std::int64_t i = 0; i < n; ++i) l[std::size_t(i)] = i;
    std::stable_sort(l.begin(), l.end(), [&](std::int64_t a, std::int64_t b) { return pts[std::size_t(a)][d] < pts[std::size_t(b)][d]; });
  }
  if (n == 0) return;
  std::array<T, 6> root_cell;
  for (int d = 0; d < 3; ++d) {
    root_cell[std::size_t(d)] = pts[std::size_t(root[std::size_t(d)].front())][d];
    root_cell[std::size_t(3 + d)] = pts[std::size_t(root[std::size_t(d)].back())][d];
  }
  // V(cell + R), the cell's side `dim` moved to `plane` (left: hi, right: lo)
  auto const grown = [&](std::array<T, 6> const& c, int dim, double plane, bool right) {
    double v = 1.0;
    for (int d = 0; d < 3; ++d) {
      double lo = double(c[std::size_t(d)]), hi = double(c[std::size_t(3 + d)]);
      if (d == dim) (right ? lo : hi) = plane;
      v = v * ((hi - lo) + r2);
    }
    return v;
  };
  std::vector<Job> todo{{Index(0), 0, root, root_cell}};
  std::int64_t checked = 0;
  while (!todo.empty()) {
    Job job = std::move(todo.back());
    todo.pop_back();
    ++checked;
    CAPTURE(job.node);
    CAPTURE(job.level);
    auto const node = nodes(job.node);
    auto const coord = [&](int d, std::int64_t j) { return pts[std::size_t(job.lists[std::size_t(d)][std::size_t(j)])][d]; };
    std::int64_t const count = std::int64_t(job.lists[0].size());
    REQUIRE(std::int64_t(node.end) - std::int64_t(node.begin) == count);
    int dim = -1;
    T value = T(0);
    std::int64_t left = 0;
    bool const decided = count >= 2 && (job.level < big_levels || count > o.small_node_size);
    if (decided) {
      T box[6];
      for (int d = 0; d < 3; ++d) {
        box[d] = coord(d, 0);
        box[3 + d] = coord(d, count - 1);
      }
      int wide = 0;
      T width = T(-1);
      for (int d = 0; d < 3; ++d)
        if (box[3 + d] - box[d] > width) {
          width = box[3 + d] - box[d];
          wide = d;
        }
      auto const upper = [&](int d, T v) {
        std::int64_t k = 0;
        while (k < count && coord(d, k) <= v) ++k;
        return k;
      };
      if (width > T(0) && count > o.small_node_size) {
        if (job.level >= big_levels) {
          dim = wide;
          left = count / 2;
          value = coord(wide, left - 1);
        } else {
          double best_ratio = 0.0;
          int side = -1;
          for (int d = 0; d < 3; ++d) {
            double const clo = double(job.cell[std::size_t(d)]), chi = double(job.cell[std::size_t(3 + d)]);
            double const ext = chi - clo;
            if (!(ext > 0.0)) continue;
            double const gaps[2] = {double(box[d]) - clo, chi - double(box[3 + d])};
            for (int h = 0; h < 2; ++h) {
              if (!(gaps[h] > o.empty_space_ratio * ext)) continue;
              if (gaps[h] / ext > best_ratio) {
                best_ratio = gaps[h] / ext;
                side = 2 * d + h;
              }
            }
          }
          if (side >= 0) {
            dim = side / 2;
            value = side % 2 == 0 ? box[dim] : box[3 + dim];
            left = side % 2 == 0 ? 0 : count;
          } else {
            dim = wide;
            value = T(0.5 * (double(box[wide]) + double(box[3 + wide])));
            left = upper(wide, value);
            if (left == 0 || left == count) {
              value = box[wide];
              left = upper(wide, value);
            }
          }
        }
      } else if (width > T(0) && job.level < big_levels) {
        double const v = grown(job.cell, -1, 0.0, false);
        double best = o.point_cost * double(count);
        for (int d = 0; d < 3; ++d)
          for (std::int64_t j = 0; j + 1 < count; ++j) {
            T const c = coord(d, j);
            if (!(c < coord(d, j + 1))) continue;
            double const sum = double(j + 1) * grown(job.cell, d, double(c), false) +
                               double(count - j - 1) * grown(job.cell, d, double(c), true);
            double const cost = o.traversal_cost + o.point_cost * (sum / v);
            if (cost < best) {
              best = cost;
              dim = d;
              value = c;
              left = j + 1;
            }
          }
      }
    }
    if (dim < 0) {
      REQUIRE(node.is_leaf());
      for (std::int64_t j = 0; j < count; ++j) CHECK(std::int64_t(idx(node.begin + Index(j))) == job.lists[0][std::size_t(j)]);
      continue;
    }
    REQUIRE(!node.is_leaf());
    REQUIRE(node.split_dim == dim);
    REQUIRE(node.split_value == value);
    REQUIRE(std::int64_t(nodes(node.left).end) - std::int64_t(nodes(node.left).begin) == left);
    std::vector<char> goes_left(std::size_t(n), 0);
    for (std::int64_t j = 0; j < left; ++j) goes_left[std::size_t(job.lists[std::size_t(dim)][std::size_t(j)])] = 1;
    Job l{node.left, job.level + 1, {}, job.cell}, r{node.right, job.level + 1, {}, job.cell};
    l.cell[std::size_t(3 + dim)] = value;
    r.cell[std::size_t(dim)] = value;
    for (int d = 0; d < 3; ++d)
      for (std::int64_t i : job.lists[std::size_t(d)]) (goes_left[std::size_t(i)] ? l : r).lists[std::size_t(d)].push_back(i);
    todo.push_back(std::move(r));
    todo.push_back(std::move(l));
  }
  CHECK(checked == std::int64_t(tree.node_count()));
}

} // namespace

TEST_CASE_TEMPLATE("VVH trees follow the builder's rules node by node (a host replay)", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::scan, Distribution::duplicates,
                    Distribution::plane}) {
    CAPTURE(test::name(dist));
    auto const pts = test::make_points<float, 3>(3000, dist, 81);
    VvhOptions const o;
    check_vvh_rules(build_vvh_tree(exec, to_device<Exec>(pts, "p"), o), pts, o);
  }
  // small buckets and no empty-space cuts, double; exponentially spaced
  // values (the median levels from level 32 on)
  auto const pts = test::make_points<double, 3>(2000, Distribution::clustered, 82);
  VvhOptions o;
  o.small_node_size = 4;
  o.empty_space_ratio = 0.0;
  o.query_radius = 0.01;
  check_vvh_rules(build_vvh_tree(exec, to_device<Exec>(pts, "p"), o), pts, o);
  std::vector<Point<double, 3>> chain(1200);
  for (std::size_t i = 0; i < chain.size(); ++i) chain[i] = Point<double, 3>{{std::ldexp(1.0, -int(i % 600)), 0.5, 0.25 * double(i % 2)}};
  check_vvh_rules(build_vvh_tree(exec, to_device<Exec>(chain, "p")), chain, VvhOptions{});
}

namespace {

/// The same tree, node for node: links, ranges, planes, boxes, point order.
template <class A, class B>
void require_same_tree(A const& a, B const& b) {
  REQUIRE(a.node_count() == b.node_count());
  CHECK(a.query_radius() == b.query_radius());
  CHECK(to_host(a.original_indices()) == to_host(b.original_indices()));
  auto const na = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.nodes());
  auto const nb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.nodes());
  auto const ba = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.boxes());
  auto const bb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.boxes());
  for (std::int64_t s = 0; s < std::int64_t(a.node_count()); ++s) {
    REQUIRE(na(s).left == nb(s).left);
    REQUIRE(na(s).right == nb(s).right);
    REQUIRE(na(s).begin == nb(s).begin);
    REQUIRE(na(s).end == nb(s).end);
    REQUIRE(na(s).split_dim == nb(s).split_dim);
    REQUIRE(na(s).split_value == nb(s).split_value);
    for (int j = 0; j < 6; ++j) REQUIRE(ba(s, j) == bb(s, j));
  }
}

} // namespace

TEST_CASE_TEMPLATE("VVH trees are identical on every backend", Exec, KDFORGE_TEST_SPACES) {
  using Host = Kokkos::Serial;
  for (auto dist : {Distribution::clustered, Distribution::scan, Distribution::duplicates}) {
    auto const pts = test::make_points<float, 3>(5000, dist, 61);
    require_same_tree(build_vvh_tree(Exec{}, to_device<Exec>(pts, "p")), build_vvh_tree(Host{}, to_device<Host>(pts, "p")));
  }
}

// On GPUs a team of threads decides each node (kernels/builders/vvh:
// searches of team-size-ary steps, the planes' costs shared and reduced);
// host backends decide with one thread a node. Teams of CPU threads run the
// GPU's way here, so CPUs test it too.
TEST_CASE_TEMPLATE("VVH trees: deciding each node by a team of threads builds the same tree", Exec, KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible) {
    Exec exec;
    int const most = Kokkos::TeamPolicy<Exec>(exec, 1, 1).team_size_max(test::NoWork{}, Kokkos::ParallelForTag{});
    if (most < 2) {
      MESSAGE(std::string(Exec::name()) << " runs teams of one thread here: nothing to compare");
      return;
    }
    auto const by_team = [&](auto const& pts, VvhOptions const& o, int team) {
      using T = std::decay_t<decltype(pts[0][0])>;
      kernels::vvh::Params const p{o.traversal_cost, o.point_cost, o.empty_space_ratio, o.query_radius,
                                   std::int64_t(o.small_node_size)};
      return kernels::vvh::build<std::int32_t, Exec, T>(exec, rows<Exec>(pts), p, o.expected_k, team);
    };
    std::vector<int> teams = {2};
    for (int t = 3; t <= 4 && t <= most; ++t) teams.push_back(t);
    for (int team : teams) {
      CAPTURE(team);
      for (auto dist : {Distribution::clustered, Distribution::scan, Distribution::duplicates, Distribution::uniform}) {
        for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(40), std::size_t(5000)}) {
          CAPTURE(n);
          auto const pts = test::make_points<float, 3>(n, dist, 91);
          require_same_tree(by_team(pts, VvhOptions{}, team), build_vvh_tree(exec, to_device<Exec>(pts, "p")));
        }
      }
      // the exact VVH of small nodes over most levels; medians from level 32 on
      VvhOptions o;
      o.small_node_size = 4;
      o.empty_space_ratio = 0.0;
      o.query_radius = 0.01;
      auto const pts = test::make_points<double, 3>(2000, Distribution::clustered, 82);
      require_same_tree(by_team(pts, o, team), build_vvh_tree(exec, to_device<Exec>(pts, "p"), o));
      std::vector<Point<double, 3>> chain(1200);
      for (std::size_t i = 0; i < chain.size(); ++i)
        chain[i] = Point<double, 3>{{std::ldexp(1.0, -int(i % 600)), 0.5, 0.25 * double(i % 2)}};
      require_same_tree(by_team(chain, VvhOptions{}, team), build_vvh_tree(exec, to_device<Exec>(chain, "p")));
    }
  }
}

TEST_CASE_TEMPLATE("VVH trees refuse bad input with a clear error", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(100, Distribution::uniform, 71);
  pts[42][1] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(build_vvh_tree(exec, to_device<Exec>(pts, "p")), doctest::Contains("point 42"), Error);
  CHECK_THROWS_WITH_AS(build_vvh_tree(exec, rows<Exec>(pts)), doctest::Contains("point 42"), Error);
  pts[42][1] = 0.5f;
  VvhOptions o;
  o.query_radius = -1.0;
  CHECK_THROWS_WITH_AS(build_vvh_tree(exec, to_device<Exec>(pts, "p"), o), doctest::Contains("query_radius"), Error);
  o = VvhOptions{};
  o.empty_space_ratio = 1.0;
  CHECK_THROWS_WITH_AS(build_vvh_tree(exec, to_device<Exec>(pts, "p"), o), doctest::Contains("empty_space_ratio"), Error);
  o = VvhOptions{};
  o.small_node_size = 0;
  CHECK_THROWS_WITH_AS(build_vvh_tree(exec, to_device<Exec>(pts, "p"), o), doctest::Contains("small_node_size"), Error);
  Kokkos::View<float**, typename Exec::memory_space> four("four", 10, 4);
  CHECK_THROWS_WITH_AS(build_vvh_tree(exec, four), doctest::Contains("3-D"), Error);
}

namespace {

/// range_knn_rows: every row holds the exact k nearest (by brute force) and
/// every point within its r_k, nothing beyond; range_knn: exactly brute
/// force's k nearest.
template <class Exec, class Tree, class T>
void check_range_knn(Exec const& exec, Tree const& tree, std::vector<Point<T, 3>> const& pts,
                     std::vector<Point<T, 3>> const& queries, int k, RangeKnnOptions const& o) {
  CAPTURE(k);
  auto const q = rows<Exec>(queries);
  std::size_t const m = queries.size();
  auto const g = range_knn_rows(exec, tree, q, k, o);
  auto const radii = to_host(g.radii);
  auto const off = to_host(g.rows.offsets);
  auto const idx = to_host(g.rows.indices);
  auto const sqd = to_host(g.rows.sq_distances);
  REQUIRE(off.size() == m + 1);
  for (std::size_t i = 0; i < m; ++i) {
    CAPTURE(i);
    T const r = radii[i];
    T const sq_r = backend::mul_rn(r, r);
    auto const within = test::brute_radius(pts, queries[i], sq_r);
    auto const nearest = test::brute_knn(pts, queries[i], k, std::numeric_limits<T>::infinity());
    // the row is exactly the points within r_k, sorted
    REQUIRE(off[i + 1] - off[i] == std::int64_t(within.size()));
    for (std::size_t j = 0; j < within.size(); ++j) {
      CHECK(std::int64_t(idx[std::size_t(off[i]) + j]) == within[j].index);
      CHECK(sqd[std::size_t(off[i]) + j] == within[j].sq_dist);
    }
    // which includes the k nearest: at least min(k, n) points
    CHECK(within.size() >= nearest.size());
    for (std::size_t j = 0; j < nearest.size() && j < within.size(); ++j) CHECK(within[j].index == nearest[j].index);
  }
  auto const nn = range_knn(exec, tree, q, k, o);
  auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.indices);
  auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.sq_distances);
  for (std::size_t i = 0; i < m; ++i) {
    CAPTURE(i);
    auto const ref = test::brute_knn(pts, queries[i], k, std::numeric_limits<T>::infinity());
    for (int j = 0; j < k; ++j) {
      if (std::size_t(j) < ref.size()) {
        CHECK(std::int64_t(hi(i, j)) == ref[std::size_t(j)].index);
        CHECK(hd(i, j) == ref[std::size_t(j)].sq_dist);
      } else {
        CHECK(std::int64_t(hi(i, j)) == -1);
        CHECK(std::isinf(hd(i, j)));
      }
    }
  }
}

} // namespace

TEST_CASE_TEMPLATE("kNN by iterative range search: rows hold the k nearest, exactly k equals brute force", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::scan, Distribution::plane,
                    Distribution::duplicates, Distribution::half_copies}) {
    CAPTURE(test::name(dist));
    auto const pts = test::make_points<float, 3>(4000, dist, 81);
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    auto const queries = queries_for(pts, 100, 82);
    for (int k : {1, 10, 50}) check_range_knn(exec, tree, pts, queries, k, RangeKnnOptions{});
  }
  auto const pts = test::make_points<double, 3>(3000, Distribution::sphere, 83);
  auto const queries = queries_for(pts, 60, 84);
  VvhOptions vo;
  vo.expected_k = 20;
  auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"), vo);
  RangeKnnOptions o;
  check_range_knn(exec, tree, pts, queries, 20, o);
  o.iterations = 0; // r0 alone: conservative
  check_range_knn(exec, tree, pts, queries, 20, o);
  o.iterations = 4;
  o.histogram_bins = 7;
  check_range_knn(exec, tree, pts, queries, 20, o);
  o = RangeKnnOptions{};
  o.initial_radius = 1e-4; // far too small: grown until k are in reach
  check_range_knn(exec, tree, pts, queries, 20, o);
  o.initial_radius = 10.0;
  check_range_knn(exec, tree, pts, queries, 20, o);
}

TEST_CASE_TEMPLATE("kNN by iterative range search on degenerate photon sets", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(60)}) {
    CAPTURE(n);
    auto const pts = test::make_points<float, 3>(n, Distribution::uniform, 91);
    auto const tree = build_vvh_tree(exec, to_device<Exec>(pts, "p"));
    check_range_knn(exec, tree, pts, queries_for(pts, 30, 92), 10, RangeKnnOptions{});
  }
  auto const same = test::make_points<float, 3>(500, Distribution::identical, 93);
  auto const t1 = build_vvh_tree(exec, to_device<Exec>(same, "p"));
  check_range_knn(exec, t1, same, queries_for(same, 30, 94), 8, RangeKnnOptions{});
  auto const line = test::make_points<float, 3>(2000, Distribution::line, 95);
  auto const t2 = build_vvh_tree(exec, to_device<Exec>(line, "p"));
  check_range_knn(exec, t2, line, queries_for(line, 30, 96), 16, RangeKnnOptions{});
  // bad options
  auto const q = rows<Exec>(queries_for(line, 5, 97));
  CHECK_THROWS_WITH_AS(range_knn(exec, t2, q, 0), doctest::Contains("k must be"), Error);
  RangeKnnOptions o;
  o.histogram_bins = 0;
  CHECK_THROWS_WITH_AS(range_knn_rows(exec, t2, q, 4, o), doctest::Contains("histogram_bins"), Error);
}

TEST_CASE_TEMPLATE("kNN by iterative range search gives the same radii on every backend", Exec, KDFORGE_TEST_SPACES) {
  using Host = Kokkos::Serial;
  auto const pts = test::make_points<float, 3>(5000, Distribution::scan, 101);
  auto const queries = queries_for(pts, 300, 102);
  auto const a = build_vvh_tree(Exec{}, to_device<Exec>(pts, "p"));
  auto const b = build_vvh_tree(Host{}, to_device<Host>(pts, "p"));
  auto const ga = range_knn_rows(Exec{}, a, rows<Exec>(queries), 40);
  auto const gb = range_knn_rows(Host{}, b, rows<Host>(queries), 40);
  CHECK(to_host(ga.radii) == to_host(gb.radii));
  CHECK(to_host(ga.rows.offsets) == to_host(gb.rows.offsets));
  CHECK(to_host(ga.rows.indices) == to_host(gb.rows.indices));
}
