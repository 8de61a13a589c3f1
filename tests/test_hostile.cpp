// Hostile input, for every tree kind (left-balanced by each builder,
// split-and-sort, bucket, VVH, brute force; SAH triangle trees for rays)
// and every query (knn, closest_point, radius_count and radius_search with
// one radius and per-query radii, knn_approximate, range_knn and
// range_knn_rows, intersect_closest and intersect_any): the right answer,
// or a kdforge::Error that names the problem and the fix. The cases and
// their outcomes are listed in tests/README.md ("Hostile input").
//
// What "right" means where rounding enters: every answer equals brute force
// with the library's distance arithmetic in the coordinate type (bit for
// bit, ties by the smaller index), and, checked in double (long double for
// double input), the j-th neighbour's exact squared distance is the true
// j-th one up to the rounding of the coordinate type's sum of squares:
// relative (D + 2) ulp/2, plus an absolute D times the smallest subnormal
// where squares underflow.
#include "brute_force.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace kdforge;
using test::to_device;
using test::to_host;

namespace {

template <class Exec, class T, int D>
Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> rows(std::vector<Point<T, D>> const& p) {
  Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> v("rows", p.size(), D);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (int d = 0; d < D; ++d) h(i, d) = p[i][d];
  Kokkos::deep_copy(v, h);
  return v;
}

template <class Exec>
constexpr bool host_space() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
}

/// The squared distance in a wider type, from the points as given.
template <class T, int D>
long double exact_sq(Point<T, D> const& a, Point<T, D> const& b) {
  long double s = 0;
  for (int d = 0; d < D; ++d) {
    long double const t = (long double)a[d] - (long double)b[d];
    s += t * t;
  }
  return s;
}

/// A kNN row against brute force in T (bit for bit) and against the exact
/// distances (up to T's rounding; see the top of the file).
template <class T, int D, class IndexRow, class DistRow>
void check_knn_row(std::vector<Point<T, D>> const& pts, Point<T, D> const& q, int k, T sq_cutoff, IndexRow const& idx,
                   DistRow const& d2) {
  auto const ref = test::brute_knn(pts, q, k, sq_cutoff);
  std::vector<long double> exact;
  for (auto const& p : pts) exact.push_back(exact_sq(p, q));
  std::sort(exact.begin(), exact.end());
  long double const rel = (D + 2) * (long double)std::numeric_limits<T>::epsilon() / 2;
  long double const abs_tol = D * (long double)std::numeric_limits<T>::denorm_min();
  for (int j = 0; j < k; ++j) {
    CAPTURE(j);
    if (j < int(ref.size())) {
      CHECK(std::int64_t(idx(j)) == ref[std::size_t(j)].index);
      CHECK(d2(j) == ref[std::size_t(j)].sq_dist);
      long double const got = exact_sq(pts[std::size_t(idx(j))], q);
      CHECK(std::abs(got - exact[std::size_t(j)]) <= rel * exact[std::size_t(j)] + abs_tol);
    } else {
      CHECK(std::int64_t(idx(j)) == -1);
      CHECK(std::isinf(d2(j)));
    }
  }
}

template <class T>
T sq(double r) {
  return std::isinf(r) ? std::numeric_limits<T>::infinity() : T(r) * T(r);
}

/// Every query of a point tree (left-balanced or split-and-sort: queries
/// as points; bucket and VVH: queries as M x D rows) against brute force.
template <class Exec, class Tree, class QV, class T, int D>
void check_queries(Exec const& exec, Tree const& tree, QV const& dq, std::vector<Point<T, D>> const& pts,
                   std::vector<Point<T, D>> const& qs, int k, double r) {
  std::size_t const m = qs.size();
  auto const inf = std::numeric_limits<T>::infinity();
  {
    auto res = knn(exec, tree, dq, k);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
    for (std::size_t q = 0; q < m; ++q)
      check_knn_row(pts, qs[q], k, inf, Kokkos::subview(hi, q, Kokkos::ALL), Kokkos::subview(hd, q, Kokkos::ALL));
  }
  {
    auto res = closest_point(exec, tree, dq);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
    for (std::size_t q = 0; q < m; ++q)
      check_knn_row(pts, qs[q], 1, inf, Kokkos::subview(hi, std::make_pair(q, q + 1)),
                    Kokkos::subview(hd, std::make_pair(q, q + 1)));
  }
  {
    RadiusOptions ro;
    ro.sort = true;
    auto counts = to_host(radius_count(exec, tree, dq, r, ro));
    auto res = radius_search(exec, tree, dq, r, ro);
    auto off = to_host(res.offsets);
    auto idx = to_host(res.indices);
    auto d2 = to_host(res.sq_distances);
    Kokkos::View<double*, typename Exec::memory_space> radii("radii", m);
    Kokkos::deep_copy(radii, r);
    auto per = radius_search(exec, tree, dq, radii, ro);
    CHECK(to_host(per.offsets) == off);
    CHECK(to_host(per.indices) == idx);
    CHECK(to_host(radius_count(exec, tree, dq, radii, ro)) == counts);
    REQUIRE(off.size() == m + 1);
    // a cap of 0 neighbours: none (the walks once counted the first point)
    RadiusOptions none = ro;
    none.max_neighbors = 0;
    CHECK(to_host(radius_count(exec, tree, dq, r, none)) == std::vector<std::int64_t>(m, 0));
    CHECK(to_host(radius_count(exec, tree, dq, radii, none)) == std::vector<std::int64_t>(m, 0));
    CHECK(to_host(radius_search(exec, tree, dq, r, none).offsets) == std::vector<std::int64_t>(m + 1, 0));
    for (std::size_t q = 0; q < m; ++q) {
      auto const ref = test::brute_radius(pts, qs[q], sq<T>(r));
      CHECK(counts[q] == std::int64_t(ref.size()));
      REQUIRE(off[q + 1] - off[q] == std::int64_t(ref.size()));
      for (std::size_t j = 0; j < ref.size(); ++j) {
        CHECK(std::int64_t(idx[std::size_t(off[q]) + j]) == ref[j].index);
        CHECK(d2[std::size_t(off[q]) + j] == ref[j].sq_dist);
      }
    }
  }
  {
    // approximate: real neighbours, sorted, never nearer than the true ones
    auto res = knn_approximate(exec, tree, dq, k);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
    for (std::size_t q = 0; q < m; ++q) {
      auto const ref = test::brute_knn(pts, qs[q], k, inf);
      for (int j = 0; j < k; ++j) {
        if (hi(q, j) < 0) {
          CHECK(std::isinf(hd(q, j)));
          continue;
        }
        REQUIRE(std::size_t(hi(q, j)) < pts.size());
        CHECK(hd(q, j) == sq_distance(qs[q], pts[std::size_t(hi(q, j))]));
        REQUIRE(j < int(ref.size()));
        CHECK(hd(q, j) >= ref[std::size_t(j)].sq_dist);
      }
    }
  }
}

/// Every tree kind over pts, each with every query; 3-D adds VVH trees and
/// range kNN. In double: left-balanced and bucket trees and brute force (the
/// point and row paths; split-and-sort and VVH share their arithmetic and
/// are checked in float), so the file compiles in half the time.
template <class Exec, class T, int D>
void check_every_tree(Exec const& exec, std::vector<Point<T, D>> const& pts, std::vector<Point<T, D>> const& qs, int k,
                      double r) {
  auto const dp = to_device<Exec>(pts, "points");
  auto const dq = to_device<Exec>(qs, "queries");
  auto const rq = rows<Exec>(qs);
  std::vector<Builder> builders{Builder::presorted_partition, Builder::wald_tags};
  if (host_space<Exec>()) builders.push_back(Builder::recursive_select);
  for (Builder b : builders) {
    CAPTURE(int(b));
    BuildOptions o;
    o.builder = b;
    auto const tree = build_left_balanced(exec, dp, o);
    CHECK(tree.size() == pts.size());
    check_queries(exec, tree, dq, pts, qs, k, r);
  }
  constexpr bool all_kinds = std::is_same<T, float>::value;
  if constexpr (all_kinds) {
    INFO("split-and-sort");
    auto const tree = build_split_sort(exec, dp);
    check_queries(exec, tree, dq, pts, qs, k, r);
  }
  {
    INFO("bucket tree");
    auto const tree = build_bucket_tree(exec, rows<Exec>(pts));
    check_queries(exec, tree, rq, pts, qs, k, r);
  }
  {
    INFO("brute force");
    auto res = knn_brute_force(exec, rows<Exec>(pts), rq, k);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
    for (std::size_t q = 0; q < qs.size(); ++q)
      check_knn_row(pts, qs[q], k, std::numeric_limits<T>::infinity(), Kokkos::subview(hi, q, Kokkos::ALL),
                    Kokkos::subview(hd, q, Kokkos::ALL));
  }
  if constexpr (D == 3 && all_kinds) {
    INFO("VVH tree");
    auto const tree = build_vvh_tree(exec, dp);
    check_queries(exec, tree, rq, pts, qs, k, r);
    auto res = range_knn(exec, tree, rq, k);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
    for (std::size_t q = 0; q < qs.size(); ++q)
      check_knn_row(pts, qs[q], k, std::numeric_limits<T>::infinity(), Kokkos::subview(hi, q, Kokkos::ALL),
                    Kokkos::subview(hd, q, Kokkos::ALL));
    auto rr = range_knn_rows(exec, tree, rq, k);
    auto radii = to_host(rr.radii);
    auto off = to_host(rr.rows.offsets);
    auto idx = to_host(rr.rows.indices);
    for (std::size_t q = 0; q < qs.size(); ++q) {
      auto const ref = test::brute_radius(pts, qs[q], T(radii[q] * radii[q]));
      CHECK(off[q + 1] - off[q] == std::int64_t(ref.size()));
      CHECK(std::int64_t(ref.size()) >= std::min<std::int64_t>(k, std::int64_t(pts.size())));
      for (std::size_t j = 0; j < ref.size() && off[q] + std::int64_t(j) < off[q + 1]; ++j)
        CHECK(std::int64_t(idx[std::size_t(off[q]) + j]) == ref[j].index);
    }
  }
}

template <class T, int D>
std::vector<Point<T, D>> uniform(std::size_t n, std::uint64_t seed, double lo, double width) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Point<T, D>> p(n);
  for (auto& x : p)
    for (int d = 0; d < D; ++d) x[d] = T(lo + width * u(rng));
  return p;
}

/// Calls f; CHECKs that it throws kdforge::Error whose message holds every
/// one of `parts`.
template <class F>
void check_error(F&& f, std::vector<std::string> const& parts) {
  try {
    f();
    FAIL("expected a kdforge::Error");
  } catch (Error const& e) {
    std::string const what = e.what();
    for (auto const& p : parts) {
      CAPTURE(what);
      CHECK(what.find(p) != std::string::npos);
    }
  }
}

} // namespace

TEST_CASE_TEMPLATE("hostile sizes: N = 0, 1, 2, k > N, k <= 0, radius 0, negative and infinite", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  using P = Point<float, 3>;
  std::vector<P> const qs{{{0.f, 0.f, 0.f}}, {{1.f, 2.f, 3.f}}, {{0.5f, 0.5f, 0.5f}}};
  SUBCASE("N = 0, 1, 2 with k > N and radius 0 (coincident points only)") {
    for (std::size_t n : {0, 1, 2}) {
      CAPTURE(n);
      std::vector<P> pts;
      if (n > 0) pts.push_back(P{{1.f, 2.f, 3.f}}); // query 1 sits on it
      if (n > 1) pts.push_back(P{{1.f, 2.f, 3.f}}); // a copy: radius 0 finds both
      check_every_tree(exec, pts, qs, 5, 0.0);
      check_every_tree(exec, pts, qs, 1, 1.0);
    }
  }
  SUBCASE("k <= 0, negative, NaN and -inf radii are errors naming the argument") {
    auto const pts = uniform<float, 3>(50, 1, 0, 1);
    auto const dp = to_device<Exec>(pts, "p");
    auto const dq = to_device<Exec>(qs, "q");
    auto const rq = rows<Exec>(qs);
    auto const lb = build_left_balanced(exec, dp);
    auto const ss = build_split_sort(exec, dp);
    auto const bt = build_bucket_tree(exec, rows<Exec>(pts));
    auto const vt = build_vvh_tree(exec, dp);
    for (int k : {0, -1, std::numeric_limits<int>::min()}) {
      CAPTURE(k);
      check_error([&] { knn(exec, lb, dq, k); }, {"kdforge::knn", "k must be >= 1"});
      check_error([&] { knn(exec, ss, dq, k); }, {"k must be >= 1"});
      check_error([&] { knn(exec, bt, rq, k); }, {"k must be >= 1"});
      check_error([&] { knn(exec, vt, rq, k); }, {"k must be >= 1"});
      check_error([&] { knn_approximate(exec, lb, dq, k); }, {"knn_approximate", "k must be >= 1"});
      check_error([&] { knn_approximate(exec, bt, rq, k); }, {"k must be >= 1"});
      check_error([&] { range_knn(exec, vt, rq, k); }, {"range_knn", "k must be >= 1"});
      check_error([&] { range_knn_rows(exec, vt, rq, k); }, {"range_knn_rows", "k must be >= 1"});
      check_error([&] { knn_brute_force(exec, rows<Exec>(pts), rq, k); }, {"knn_brute_force"});
    }
    for (double r : {-1.0, -0.5e-300, -std::numeric_limits<double>::infinity(), std::nan("")}) {
      CAPTURE(r);
      check_error([&] { radius_count(exec, lb, dq, r); }, {"radius_count", "radius must be >= 0"});
      check_error([&] { radius_search(exec, ss, dq, r); }, {"radius_search", "radius must be >= 0"});
      check_error([&] { radius_count(exec, bt, rq, r); }, {"radius must be >= 0"});
      check_error([&] { radius_search(exec, vt, rq, r); }, {"radius must be >= 0"});
      QueryOptions qo;
      qo.cutoff_radius = r;
      check_error([&] { knn(exec, lb, dq, 2, qo); }, {"cutoff_radius must be >= 0"});
      check_error([&] { closest_point(exec, bt, rq, qo); }, {"cutoff_radius must be >= 0"});
      ApproximateOptions ao;
      ao.cutoff_radius = r;
      check_error([&] { knn_approximate(exec, ss, dq, 2, ao); }, {"cutoff_radius must be >= 0"});
      // per-query radii: the first bad one named
      Kokkos::View<double*, typename Exec::memory_space> radii("radii", qs.size());
      Kokkos::deep_copy(radii, 0.25);
      Kokkos::deep_copy(Kokkos::subview(radii, 1), r);
      check_error([&] { radius_search(exec, lb, dq, radii); }, {"radii(1) must be >= 0"});
      check_error([&] { radius_count(exec, vt, rq, radii); }, {"radii(1) must be >= 0"});
    }
  }
  SUBCASE("an infinite radius finds every point, -0 only coincident ones") {
    auto pts = uniform<double, 3>(40, 2, -5, 10);
    pts.push_back(Point<double, 3>{{0.5, 0.5, 0.5}});
    std::vector<Point<double, 3>> q{{{0.5, 0.5, 0.5}}, {{1e6, -1e6, 3}}};
    check_every_tree(exec, pts, q, 41, std::numeric_limits<double>::infinity());
    check_every_tree(exec, pts, q, 3, -0.0);
  }
}

TEST_CASE_TEMPLATE("hostile values: NaN or infinity in points, queries, radii and rays are errors naming the first",
                   Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  float const nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf, -inf}) {
    for (int axis = 0; axis < 3; ++axis) {
      CAPTURE(bad);
      CAPTURE(axis);
      auto pts = uniform<float, 3>(64, 3, 0, 1);
      pts[37][axis] = bad;
      pts[50][2 - axis] = bad; // a later one: the first is named
      auto const dp = to_device<Exec>(pts, "p");
      check_error([&] { build_left_balanced(exec, dp); }, {"build_left_balanced", "point 37", "NaN or infinite"});
      check_error([&] { build_split_sort(exec, dp); }, {"build_split_sort", "point 37", "NaN or infinite"});
      check_error([&] { build_bucket_tree(exec, rows<Exec>(pts)); }, {"build_bucket_tree", "point 37", "NaN or infinite"});
      check_error([&] { build_vvh_tree(exec, dp); }, {"build_vvh_tree", "point 37", "NaN or infinite"});
      check_error([&] { build_vvh_tree(exec, rows<Exec>(pts)); }, {"build_vvh_tree", "point 37"});
      check_error([&] { knn_brute_force(exec, rows<Exec>(pts), rows<Exec>(pts), 1); }, {"point 37"});
      // queries: every tree kind and query
      auto const good = uniform<float, 3>(64, 4, 0, 1);
      auto const gp = to_device<Exec>(good, "good");
      auto const dq = to_device<Exec>(pts, "q");
      auto const rq = rows<Exec>(pts);
      auto const lb = build_left_balanced(exec, gp);
      auto const ss = build_split_sort(exec, gp);
      auto const bt = build_bucket_tree(exec, rows<Exec>(good));
      auto const vt = build_vvh_tree(exec, gp);
      Kokkos::View<float*, MS> radii("radii", pts.size());
      Kokkos::deep_copy(radii, 0.1f);
      std::vector<std::string> const q37{"query 37", "NaN or infinite"};
      check_error([&] { knn(exec, lb, dq, 3); }, q37);
      check_error([&] { closest_point(exec, ss, dq); }, q37);
      check_error([&] { radius_count(exec, lb, dq, 0.1); }, q37);
      check_error([&] { radius_search(exec, ss, dq, radii); }, q37);
      check_error([&] { knn_approximate(exec, lb, dq, 2); }, q37);
      check_error([&] { knn(exec, bt, rq, 3); }, q37);
      check_error([&] { closest_point(exec, vt, rq); }, q37);
      check_error([&] { radius_search(exec, bt, rq, 0.1); }, q37);
      check_error([&] { radius_count(exec, vt, rq, radii); }, q37);
      check_error([&] { knn_approximate(exec, bt, rq, 2); }, q37);
      check_error([&] { knn_approximate(exec, vt, rq, 2); }, q37);
      check_error([&] { range_knn(exec, vt, rq, 4); }, q37);
      check_error([&] { range_knn_rows(exec, vt, rq, 4); }, q37);
      check_error([&] { knn_brute_force(exec, rows<Exec>(good), rq, 1); }, q37);
      // per-query radii: NaN refused, +inf finds everything
      if (bad != inf) {
        Kokkos::deep_copy(Kokkos::subview(radii, 5), bad);
        auto const gq = to_device<Exec>(good, "gq");
        check_error([&] { radius_search(exec, lb, gq, radii); }, {"radii(5) must be >= 0"});
        check_error([&] { radius_count(exec, bt, rows<Exec>(good), radii); }, {"radii(5) must be >= 0"});
      }
    }
  }
  SUBCASE("rays: NaN or infinite origin or direction, zero direction, NaN bounds") {
    Kokkos::View<float* [3], MS> v("v", 3);
    Kokkos::View<std::int32_t* [3], MS> f("f", 1);
    auto hv = Kokkos::create_mirror_view(v);
    float const corners[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    for (int i = 0; i < 3; ++i)
      for (int d = 0; d < 3; ++d) hv(i, d) = corners[i][d];
    Kokkos::deep_copy(v, hv);
    auto hf = Kokkos::create_mirror_view(f);
    hf(0, 0) = 0, hf(0, 1) = 1, hf(0, 2) = 2;
    Kokkos::deep_copy(f, hf);
    auto const tree = build_sah_tree(exec, v, f);
    Ray<float> const ok{{0.2f, 0.2f, 1.f}, {0.f, 0.f, -1.f}, 0.f, inf};
    std::vector<Ray<float>> bad_rays;
    for (float b : {nan, inf, -inf})
      for (int d = 0; d < 3; ++d) {
        Ray<float> r = ok;
        r.origin[d] = b;
        bad_rays.push_back(r);
        r = ok;
        r.direction[d] = b;
        bad_rays.push_back(r);
      }
    Ray<float> r = ok;
    r.direction[2] = 0.f;
    bad_rays.push_back(r); // zero direction
    r = ok;
    r.tmin = nan;
    bad_rays.push_back(r);
    r = ok;
    r.tmax = nan;
    bad_rays.push_back(r);
    for (float t : {-inf, -1.f, -1e-30f}) { // rays start at t >= 0
      r = ok;
      r.tmin = t;
      bad_rays.push_back(r);
    }
    for (std::size_t i = 0; i < bad_rays.size(); ++i) {
      CAPTURE(i);
      std::vector<Ray<float>> rs{ok, ok, bad_rays[i], ok};
      auto const dr = to_device<Exec>(rs, "rays");
      check_error([&] { intersect_closest(exec, tree, dr); }, {"intersect_closest", "ray 2"});
      check_error([&] { intersect_any(exec, tree, dr); }, {"intersect_any", "ray 2"});
    }
    // vertices: NaN or infinite refused naming the vertex
    hv(1, 2) = nan;
    Kokkos::deep_copy(v, hv);
    check_error([&] { build_sah_tree(exec, v, f); }, {"build_sah_tree", "vertex 1", "NaN or infinite"});
    // the good rays (an infinite tmax among them), and a window around the hit, answer
    hv(1, 2) = 0;
    Kokkos::deep_copy(v, hv);
    auto const t2 = build_sah_tree(exec, v, f);
    Ray<float> back = ok;
    back.tmin = 0.5f;
    back.tmax = 1.5f;
    std::vector<Ray<float>> rs{ok, back};
    auto const hits = to_host(intersect_closest(exec, t2, to_device<Exec>(rs, "rays")));
    CHECK(hits[0].triangle == 0);
    CHECK(hits[0].t == 1.f);
    CHECK(hits[1].triangle == 0);
  }
}

// A million identical points, one case per builder (and the VVH tree's
// range kNN apart), so that compute-sanitizer runs them side by side: a
// case of two builders, or of the VVH tree with its range kNN, takes more
// than 16 minutes under memcheck on a GPU.
// Every query: the k smallest indices at the one distance; radius rows
// hold all N.
template <class Exec>
struct Identical {
  static constexpr std::size_t n = 1000000;
  Exec exec;
  std::vector<Point<float, 3>> pts = std::vector<Point<float, 3>>(n, Point<float, 3>{{0.25f, 0.5f, 0.75f}});
  std::vector<Point<float, 3>> qs{{{0.25f, 0.5f, 0.75f}}, {{1.f, 1.f, 1.f}}};
  decltype(to_device<Exec>(pts, "p")) dp = to_device<Exec>(pts, "p");
  decltype(to_device<Exec>(qs, "q")) dq = to_device<Exec>(qs, "q");
  decltype(rows<Exec>(qs)) rq = rows<Exec>(qs);
  float d1 = sq_distance(qs[1], pts[0]);

  template <class Tree, class Queries>
  void check(Tree const& tree, Queries const& queries) const {
    auto res = knn(exec, tree, queries, 7);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
    for (int j = 0; j < 7; ++j) {
      CHECK(hi(0, j) == j);
      CHECK(hd(0, j) == 0.f);
      CHECK(hi(1, j) == j);
      CHECK(hd(1, j) == d1);
    }
    auto c = closest_point(exec, tree, queries);
    CHECK(to_host(c.indices) == std::vector<typename Tree::index_type>{0, 0});
    CHECK(to_host(radius_count(exec, tree, queries, 0.0)) == std::vector<std::int64_t>{std::int64_t(n), 0});
    RadiusOptions ro;
    ro.sort = true;
    auto rs = radius_search(exec, tree, queries, 2.0, ro);
    auto off = to_host(rs.offsets);
    CHECK(off == std::vector<std::int64_t>{0, std::int64_t(n), 2 * std::int64_t(n)});
    auto idx = to_host(rs.indices);
    bool in_order = true;
    for (std::size_t i = 0; i < n; ++i) in_order = in_order && idx[i] == std::int32_t(i) && idx[n + i] == std::int32_t(i);
    CHECK(in_order);
    auto a = knn_approximate(exec, tree, queries, 3);
    auto ad = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.sq_distances);
    CHECK(ad(0, 0) == 0.f);
    CHECK(ad(1, 2) == d1);
  }
};

TEST_CASE_TEMPLATE("hostile copies: a million identical points, the left-balanced partition builders terminate and answer",
                   Exec, KDFORGE_TEST_SPACES) {
  Identical<Exec> t;
  std::vector<Builder> builders{Builder::presorted_partition};
  if (host_space<Exec>()) builders.push_back(Builder::recursive_select);
  for (Builder b : builders) {
    CAPTURE(int(b));
    BuildOptions o;
    o.builder = b;
    t.check(build_left_balanced(t.exec, t.dp, o), t.dq);
  }
}

TEST_CASE_TEMPLATE("hostile copies: a million identical points, Wald's tag builder terminates and answers", Exec,
                   KDFORGE_TEST_SPACES) {
  Identical<Exec> t;
  BuildOptions o;
  o.builder = Builder::wald_tags;
  t.check(build_left_balanced(t.exec, t.dp, o), t.dq);
}

TEST_CASE_TEMPLATE("hostile copies: a million identical points, split-and-sort terminates and answers", Exec,
                   KDFORGE_TEST_SPACES) {
  Identical<Exec> t;
  t.check(build_split_sort(t.exec, t.dp), t.dq);
}

TEST_CASE_TEMPLATE("hostile copies: a million identical points, the bucket tree terminates and answers", Exec,
                   KDFORGE_TEST_SPACES) {
  Identical<Exec> t;
  t.check(build_bucket_tree(t.exec, rows<Exec>(t.pts)), t.rq);
}

TEST_CASE_TEMPLATE("hostile copies: a million identical points, the VVH tree terminates and answers", Exec,
                   KDFORGE_TEST_SPACES) {
  Identical<Exec> t;
  t.check(build_vvh_tree(t.exec, t.dp), t.rq);
}

TEST_CASE_TEMPLATE("hostile copies: a million identical points, the VVH tree's range kNN terminates and answers", Exec,
                   KDFORGE_TEST_SPACES) {
  Identical<Exec> t;
  auto rk = range_knn(t.exec, build_vvh_tree(t.exec, t.dp), t.rq, 50);
  auto ri = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rk.indices);
  auto rd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rk.sq_distances);
  for (int j = 0; j < 50; ++j) {
    CHECK(ri(0, j) == j);
    CHECK(rd(0, j) == 0.f);
    CHECK(ri(1, j) == j);
    CHECK(rd(1, j) == t.d1);
  }
}

TEST_CASE_TEMPLATE("hostile coordinates: offsets of 1e9, subnormals, huge values, far queries", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  SUBCASE("offset 1e9 in double: exact") {
    auto const pts = uniform<double, 3>(3000, 5, 1e9, 1.0);
    auto const qs = uniform<double, 3>(40, 6, 1e9 - 0.1, 1.2);
    check_every_tree(exec, pts, qs, 9, 0.05);
  }
  SUBCASE("offset 1e9 in float: a grid of 64 apart, exact where float holds the squares") {
    // float spaces 1e9 + x by 64; the differences, squares and sums of
    // multiples of 64 up to 1e4 are exact in float: the answers are exactly
    // those of the points as float gives them, ties by index
    auto const pts = uniform<float, 3>(3000, 7, 1e9, 1e4);
    auto const qs = uniform<float, 3>(40, 8, 1e9, 1e4);
    check_every_tree(exec, pts, qs, 9, 300.0);
  }
  SUBCASE("offset 1e9 in float over 1e6: squares rounded, right up to float's rounding") {
    auto const pts = uniform<float, 3>(3000, 9, 1e9, 1e6);
    auto const qs = uniform<float, 3>(40, 10, 1e9, 1e6);
    check_every_tree(exec, pts, qs, 9, 3e4);
  }
  SUBCASE("subnormal coordinates: float squares underflow, distances tie at 0, ties by index") {
    float const tiny = std::numeric_limits<float>::denorm_min();
    std::vector<Point<float, 3>> pts;
    for (int i = 0; i < 200; ++i) pts.push_back(Point<float, 3>{{tiny * float(i % 17), tiny * float(i % 5), -tiny * float(i % 3)}});
    auto qs = std::vector<Point<float, 3>>{{{0.f, 0.f, 0.f}}, {{tiny * 40, 0.f, 0.f}}, {{1e-20f, 0.f, 0.f}}};
    check_every_tree(exec, pts, qs, 12, 0.0);
    auto dpts = uniform<double, 3>(500, 11, 0, 1);
    for (auto& p : dpts)
      for (int d = 0; d < 3; ++d) p[d] *= std::numeric_limits<double>::denorm_min() * 1e6;
    check_every_tree(exec, dpts, std::vector<Point<double, 3>>{{{0, 0, 0}}, {{1e-310, 2e-310, 0}}}, 12, 1e-309);
  }
  SUBCASE("huge coordinates: within the range right, beyond it an error naming the limit") {
    // float in 3-D: squared distances hold coordinates up to +-sqrt(FLT_MAX / 48) = 2.66e18
    CHECK(detail::coordinate_limit<float>(3) == doctest::Approx(2.66e18).epsilon(0.01));
    auto pts = uniform<float, 3>(500, 12, -2e18, 4e18);
    auto qs = uniform<float, 3>(20, 13, -2.6e18, 5.2e18);
    check_every_tree(exec, pts, qs, 6, 1e18);
    // double: 1e30 is nothing
    auto dpts = uniform<double, 3>(500, 14, -1e30, 2e30);
    check_every_tree(exec, dpts, uniform<double, 3>(20, 15, -1e30, 2e30), 6, 3e29);
    // beyond: refused with the point, the value and the limit, by every builder and query
    for (float big : {1e19f, -1e30f, std::numeric_limits<float>::max()}) {
      CAPTURE(big);
      pts[123][1] = big;
      auto const dp = to_device<Exec>(pts, "p");
      std::vector<std::string> const msg{"point 123", "beyond +-2.6", "float", "3 dimensions", "(or use double)"};
      check_error([&] { build_left_balanced(exec, dp); }, msg);
      BuildOptions drop;
      drop.non_finite = NonFinitePolicy::drop; // drop leaves out NaN and infinity, never huge finite points
      check_error([&] { build_left_balanced(exec, dp, drop); }, msg);
      SplitSortOptions sdrop;
      sdrop.non_finite = NonFinitePolicy::drop;
      check_error([&] { build_split_sort(exec, dp, sdrop); }, msg);
      check_error([&] { build_bucket_tree(exec, rows<Exec>(pts)); }, msg);
      check_error([&] { build_vvh_tree(exec, dp); }, msg);
      check_error([&] { knn_brute_force(exec, rows<Exec>(pts), rows<Exec>(qs), 1); }, msg);
      auto const good = build_left_balanced(exec, to_device<Exec>(qs, "q"));
      auto const bt = build_bucket_tree(exec, rows<Exec>(qs));
      std::vector<std::string> const qmsg{"query 123", "beyond +-2.6"};
      check_error([&] { knn(exec, good, dp, 2); }, qmsg);
      check_error([&] { radius_search(exec, good, dp, 1.0); }, qmsg);
      check_error([&] { knn_approximate(exec, good, dp, 2); }, qmsg);
      check_error([&] { closest_point(exec, bt, rows<Exec>(pts)); }, qmsg);
    }
    // under drop, a point with a NaN or infinite coordinate is left out
    // whatever its other coordinates
    pts[123][1] = 1e30f;
    pts[123][2] = std::numeric_limits<float>::quiet_NaN();
    {
      BuildOptions drop;
      drop.non_finite = NonFinitePolicy::drop;
      auto const t = build_left_balanced(exec, to_device<Exec>(pts, "p"), drop);
      CHECK(t.size() == pts.size() - 1);
    }
    pts[123][1] = pts[123][2] = 0.f;
    // double beyond its range (+-1.9e153 in 3-D)
    dpts[7][0] = 1e200;
    check_error([&] { build_split_sort(exec, to_device<Exec>(dpts, "p")); }, {"point 7", "beyond +-1.9", "double"});
    // the limit follows the dimension: bucket trees of 1000 dimensions take up to 1.46e17 in float
    std::vector<float> wide(2 * 1000, 1.f);
    wide[1000 + 999] = 1e17f;
    Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> w("w", 2, 1000);
    Kokkos::deep_copy(w, Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace>(wide.data(), 2, 1000));
    auto const wt = build_bucket_tree(exec, w);
    auto const wn = to_host(closest_point(exec, wt, Kokkos::subview(w, std::make_pair(0, 1), Kokkos::ALL)).indices);
    CHECK(wn[0] == 0);
    wide[1000 + 999] = 2e17f;
    Kokkos::deep_copy(w, Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace>(wide.data(), 2, 1000));
    check_error([&] { build_bucket_tree(exec, w); }, {"point 1", "(axis 999)", "1000 dimensions"});
  }
  SUBCASE("queries far outside the box: 1e6 widths away, right") {
    auto const pts = uniform<float, 3>(2000, 16, 0, 1);
    std::vector<Point<float, 3>> qs{{{1e6f, 1e6f, 1e6f}}, {{-1e6f, 0.5f, 0.5f}}, {{0.5f, 2e6f, -3e6f}}};
    check_every_tree(exec, pts, qs, 8, 1.0);                                     // nothing within 1
    check_every_tree(exec, pts, qs, 3, std::numeric_limits<double>::infinity()); // everything
    auto const dpts = uniform<double, 3>(2000, 17, 0, 1);
    check_every_tree(exec, dpts, std::vector<Point<double, 3>>{{{1e6, 1e6, 1e6}}, {{0.5, -1e6, 0.5}}}, 8, 1.0);
  }
}

TEST_CASE_TEMPLATE("hostile triangles: copies, huge and subnormal meshes answer as the brute-force test", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  auto run = [&](std::vector<float> const& verts, std::vector<std::int32_t> const& tris,
                 std::vector<Ray<float>> const& rs) {
    std::size_t const nv = verts.size() / 3, nf = tris.size() / 3;
    Kokkos::View<float* [3], MS> v("v", nv);
    Kokkos::View<std::int32_t* [3], MS> f("f", nf);
    auto hv = Kokkos::create_mirror_view(v);
    auto hf = Kokkos::create_mirror_view(f);
    for (std::size_t i = 0; i < nv; ++i)
      for (int d = 0; d < 3; ++d) hv(i, d) = verts[3 * i + std::size_t(d)];
    for (std::size_t i = 0; i < nf; ++i)
      for (int d = 0; d < 3; ++d) hf(i, d) = tris[3 * i + std::size_t(d)];
    Kokkos::deep_copy(v, hv);
    Kokkos::deep_copy(f, hf);
    auto const tree = build_sah_tree(exec, v, f);
    auto const dr = to_device<Exec>(rs, "rays");
    auto const hits = to_host(intersect_closest(exec, tree, dr));
    auto const any = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, intersect_any(exec, tree, dr));
    for (std::size_t i = 0; i < rs.size(); ++i) {
      CAPTURE(i);
      auto const w = kernels::make_watertight_ray(rs[i]);
      Hit<float> best{-1, std::numeric_limits<float>::infinity(), 0.f, 0.f};
      for (std::size_t t = 0; t < nf; ++t) {
        float c[3][3];
        for (int k = 0; k < 3; ++k)
          for (int d = 0; d < 3; ++d) c[k][d] = verts[3 * std::size_t(tris[3 * t + std::size_t(k)]) + std::size_t(d)];
        auto const h = kernels::intersect_watertight(w, c[0], c[1], c[2], rs[i].tmin, rs[i].tmax);
        if (h.hit && (best.triangle < 0 || h.t < best.t)) best = Hit<float>{std::int32_t(t), h.t, h.u, h.v};
      }
      CHECK(hits[i].triangle == best.triangle);
      if (best.triangle >= 0) CHECK(hits[i].t == best.t);
      CHECK(bool(any(i)) == (best.triangle >= 0));
    }
    return hits;
  };
  float const inf = std::numeric_limits<float>::infinity();
  SUBCASE("100,000 copies of one triangle: the smallest index") {
    std::vector<float> verts{0, 0, 0, 1, 0, 0, 0, 1, 0};
    std::vector<std::int32_t> tris;
    for (int i = 0; i < 100000; ++i) tris.insert(tris.end(), {0, 1, 2});
    auto const hits = run(verts, tris, {{{0.2f, 0.2f, 1.f}, {0.f, 0.f, -1.f}, 0.f, inf}});
    CHECK(hits[0].triangle == 0);
  }
  SUBCASE("scaled by 1e18 and by 1e-40 (subnormal), and offset by 1e9") {
    for (auto const& so : {std::pair<float, float>{1e18f, 0.f}, {1e-40f, 0.f}, {1024.f, 1e9f}}) {
      float const s = so.first, o = so.second; // not a structured binding: CAPTURE's lambda may not capture one before C++20
      CAPTURE(s);
      std::vector<float> verts{o, o, o, o + s, o, o, o, o + s, o, o + s, o + s, o + s};
      std::vector<std::int32_t> tris{0, 1, 2, 1, 3, 2, 0, 3, 1};
      std::vector<Ray<float>> rs{{{o + 0.2f * s, o + 0.2f * s, o + s}, {0.f, 0.f, -1.f}, 0.f, inf},
                                 {{o - s, o - s, o - s}, {1.f, 1.f, 1.f}, 0.f, inf},
                                 {{o + 0.5f * s, o + 0.5f * s, o - s}, {0.f, 0.f, 1.f}, 0.f, inf}};
      run(verts, tris, rs);
    }
  }
}
