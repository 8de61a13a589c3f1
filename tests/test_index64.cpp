// More than 2^32 points, without storing them: the median trees' chunk and
// node arithmetic checked against 128-bit integers for sizes up to 2^40,
// and a tree of 4.5 billion points (its arrays never touched) walked for
// its node positions; 64-bit indices through every builder, each tree's
// answers equal to the 32-bit one's; the in-place median builder (the one
// that takes more than 2^32 points) against brute force on every kind of
// data, with its level passes forced down to chunks of a few points, and
// its tree equal whatever the chunk size, the index type or the backend;
// and each builder's refusal of what it cannot take, before it reads or
// allocates anything.
#include "query_checks.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

namespace {

using u128 = unsigned __int128;

std::int64_t reference_boundary(std::int64_t n, int l, std::int64_t m) {
  return std::int64_t((u128(std::uint64_t(m)) * u128(std::uint64_t(n))) >> l);
}

template <class V>
std::vector<char> bytes_of(V const& v) {
  Kokkos::fence();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  std::vector<char> out(h.span() * sizeof(typename V::value_type));
  if (!out.empty()) std::memcpy(out.data(), h.data(), out.size());
  return out;
}

/// kNN and radius answers with the indices widened to 64 bits.
template <class Exec, class Tree, class Q>
std::vector<std::vector<std::int64_t>> answers64(Exec const& exec, Tree const& tree, Q const& q) {
  auto const nn = knn(exec, tree, q, 9);
  auto const ni = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.indices);
  std::vector<std::int64_t> idx(ni.span());
  for (std::size_t i = 0; i < ni.span(); ++i) idx[i] = std::int64_t(ni.data()[i]);
  RadiusOptions ro;
  ro.sort = true;
  auto const rs = radius_search(exec, tree, q, 0.07, ro);
  auto const ri = to_host(rs.indices);
  std::vector<std::int64_t> rows(ri.begin(), ri.end());
  auto const off = to_host(rs.offsets);
  auto const d = bytes_of(nn.sq_distances);
  std::vector<std::int64_t> dist(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) dist[i] = d[i];
  return {idx, rows, off, dist};
}

struct HugeContainer {
  std::size_t n;
};

} // namespace

// A container that claims more points than any builder but the in-place one
// takes; its coordinates are never read by a build that refuses it.
template <>
struct kdforge::AccessTraits<HugeContainer> {
  using memory_space = Kokkos::HostSpace;
  using coordinate_type = float;
  static constexpr int dimension = 3;
  static std::size_t size(HugeContainer const& c) { return c.n; }
  KOKKOS_FUNCTION static float coordinate(HugeContainer const&, std::size_t, int) { return 0.f; }
};

TEST_CASE("the median trees' chunk arithmetic is exact beyond 2^32 points") {
  std::mt19937_64 rng(21);
  std::vector<std::int64_t> sizes = {std::int64_t(1) << 32,       (std::int64_t(1) << 32) + 1, 4500000000,
                                     (std::int64_t(1) << 33) - 1, std::int64_t(1) << 40,       (std::int64_t(1) << 40) - 3};
  for (int i = 0; i < 20; ++i) sizes.push_back(std::int64_t((std::uint64_t(1) << 32) + rng() % (std::uint64_t(1) << 40)));
  for (int i = 0; i < 10; ++i) sizes.push_back(std::int64_t(2 + rng() % (std::uint64_t(1) << 32))); // the fast path too
  for (std::int64_t const n : sizes) {
    CAPTURE(n);
    int const levels = split_sort::internal_levels(n);
    REQUIRE(levels == 63 - __builtin_clzll(std::uint64_t(n)));
    for (int l = 0; l <= levels; ++l) {
      std::int64_t const chunks = std::int64_t(1) << l;
      for (int t = 0; t < 20; ++t) {
        std::int64_t const m = t == 0 ? chunks : std::int64_t(rng() % std::uint64_t(chunks + 1));
        REQUIRE(split_sort::boundary(n, l, m) == reference_boundary(n, l, m));
        std::int64_t const i = std::int64_t(rng() % std::uint64_t(n));
        std::int64_t const c = split_sort::chunk_of(n, l, i);
        REQUIRE(c >= 0);
        REQUIRE(c < chunks);
        CHECK(reference_boundary(n, l, c) <= i);
        CHECK((c + 1 == chunks || reference_boundary(n, l, c + 1) > i));
        if (l < levels) { // the median splits chunk c into the two chunks of level l + 1
          std::int64_t const cc = std::int64_t(rng() % std::uint64_t(chunks));
          std::int64_t const b = split_sort::chunk_begin(n, l, cc), e = split_sort::chunk_end(n, l, cc);
          std::int64_t const med = split_sort::median(n, l, cc);
          CHECK(b <= med);
          CHECK(med < e);
          CHECK(split_sort::chunk_begin(n, l + 1, 2 * cc) == b);
          CHECK(split_sort::chunk_end(n, l + 1, 2 * cc) == med);
          CHECK(split_sort::chunk_begin(n, l + 1, 2 * cc + 1) == med + 1);
          CHECK(split_sort::chunk_end(n, l + 1, 2 * cc + 1) == e);
        }
      }
    }
  }
}

TEST_CASE("a median tree of 4.5 billion points: every node has a place, children on their sides") {
  using Tree = MedianTree<Kokkos::HostSpace, float, 3, std::int64_t>;
  std::int64_t const n = 4500000000;
  // never read: only the arithmetic of the tree's shape is walked
  Point<float, 3> dummy{};
  Kokkos::View<Point<float, 3>*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> pts(&dummy, n);
  Kokkos::View<std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> idx(nullptr, n);
  Tree const tree(pts, idx, Box<float, 3>::empty(), 0);
  CHECK(tree.size() == n);
  CHECK(tree.internal_levels() == 32);
  CHECK(tree.node_count() == (std::int64_t(1) << 33) - 1);
  std::mt19937_64 rng(22);
  std::int64_t leaves = 0;
  for (int t = 0; t < 20000; ++t) {
    int const l = int(rng() % 33);
    std::int64_t const s = lb::full(l) + std::int64_t(rng() % (std::uint64_t(1) << l));
    if (!tree.has_node(s)) {
      CHECK(l == 32); // only the last level has empty slots
      continue;
    }
    std::int64_t const p = tree.position(s);
    REQUIRE(p >= 0);
    REQUIRE(p < n);
    if (l < 32) {
      std::int64_t const left = 2 * s + 1, right = 2 * s + 2;
      if (tree.has_node(left)) CHECK(tree.position(left) < p);
      if (tree.has_node(right)) CHECK(tree.position(right) > p);
    } else {
      ++leaves;
    }
  }
  CHECK(leaves > 0);
  // the leftmost and rightmost paths end at the first and last positions
  std::int64_t s = 0, r = 0;
  for (int l = 0; l < 32; ++l) s = 2 * s + 1, r = 2 * r + 2;
  CHECK(tree.position(s) == 0);
  while (!tree.has_node(r)) r = (r - 1) / 2;
  CHECK(tree.position(r) <= n - 1);
}

TEST_CASE_TEMPLATE("the in-place median tree equals brute force on every kind of data, whatever its chunk size", Exec,
                   KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  Exec exec;
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::duplicates, Distribution::line,
                    Distribution::plane, Distribution::identical, Distribution::half_copies}) {
    for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(17), std::size_t(1000), std::size_t(4097)}) {
      CAPTURE(test::name(dist));
      CAPTURE(n);
      auto const pts = test::make_points<float, 3>(n, dist, 23 + n);
      auto const qs = test::make_points<float, 3>(60, Distribution::uniform, 24);
      std::vector<std::vector<char>> orders;
      for (std::int64_t finish : {std::int64_t(0), std::int64_t(1), std::int64_t(5)}) {
        CAPTURE(finish);
        auto points = to_device<Exec>(pts, "p");
        InPlaceOptions io;
        io.finish_size = finish;
        auto const tree = build_median_in_place(exec, points, io);
        CHECK(tree.points().data() == points.data()); // in place: the caller's View is the tree's
        // a permutation of the caller's points, each with its caller's index
        auto const hp = to_host(tree.points());
        auto const hi = to_host(tree.original_indices());
        std::vector<char> seen(n, 0);
        for (std::size_t i = 0; i < n; ++i) {
          REQUIRE(hi[i] >= 0);
          REQUIRE(std::size_t(hi[i]) < n);
          CHECK(seen[std::size_t(hi[i])] == 0);
          seen[std::size_t(hi[i])] = 1;
          for (int d = 0; d < 3; ++d) CHECK(hp[i][d] == pts[std::size_t(hi[i])][d]);
        }
        orders.push_back(bytes_of(tree.original_indices()));
        if (finish != 0) continue;
        test::check_all_queries(exec, tree, pts, qs, Traversal::automatic, QueryOrder::automatic);
        test::check_knn_queries(exec, tree, pts, qs, Traversal::stack_free, QueryOrder::as_given);
        // 64-bit indices: the same tree
        auto points64 = to_device<Exec>(pts, "p64");
        auto const t64 = build_median_in_place<std::int64_t>(exec, points64, io);
        auto const i64 = to_host(t64.original_indices());
        CHECK(std::equal(i64.begin(), i64.end(), hi.begin()));
      }
      for (auto const& o : orders) CHECK(o == orders.front()); // the same tree for every chunk size
    }
  }
  (void)sizeof(MS);
}

TEST_CASE_TEMPLATE("with distinct coordinates the in-place median tree is the split-and-sort tree", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  for (std::size_t n : {std::size_t(255), std::size_t(256), std::size_t(5001)}) {
    CAPTURE(n);
    auto const pts = test::make_points<double, 3>(n, Distribution::uniform, 25 + n);
    for (int d = 0; d < 3; ++d) { // distinct in every dimension, or the test would not say this
      std::vector<double> c(n);
      for (std::size_t i = 0; i < n; ++i) c[i] = pts[i][d];
      std::sort(c.begin(), c.end());
      REQUIRE(std::adjacent_find(c.begin(), c.end()) == c.end());
    }
    auto points = to_device<Exec>(pts, "p");
    InPlaceOptions io;
    io.finish_size = 7;
    auto const in_place = build_median_in_place<std::int64_t>(exec, points, io);
    auto const sorted = build_split_sort<std::int64_t>(exec, to_device<Exec>(pts, "p2"));
    CHECK(bytes_of(in_place.original_indices()) == bytes_of(sorted.original_indices()));
    CHECK(bytes_of(in_place.points()) == bytes_of(sorted.points()));
  }
}

TEST_CASE_TEMPLATE("the in-place builder refuses NaN points and leaves them in the caller's order", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(100, Distribution::uniform, 26);
  pts[42][1] = std::numeric_limits<float>::quiet_NaN();
  auto points = to_device<Exec>(pts, "p");
  auto const before = bytes_of(points);
  CHECK_THROWS_WITH_AS(build_median_in_place(exec, points), doctest::Contains("point 42"), Error);
  CHECK(bytes_of(points) == before);
  InPlaceOptions io;
  io.finish_size = -1;
  CHECK_THROWS_WITH_AS(build_median_in_place(exec, points, io), doctest::Contains("finish_size"), Error);
}

TEST_CASE_TEMPLATE("64-bit indices give every builder the 32-bit answers", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto const pts = test::make_points<float, 3>(3000, Distribution::clustered, 27);
  auto const qs = test::make_points<float, 3>(120, Distribution::clustered, 28);
  auto const dp = to_device<Exec>(pts, "p");
  auto const dq = to_device<Exec>(qs, "q");
  for (auto builder : {Builder::presorted_partition, Builder::wald_tags, Builder::recursive_select}) {
    if (builder == Builder::recursive_select && detail::runs_on_gpu<Exec>()) continue;
    CAPTURE(int(builder));
    BuildOptions bo;
    bo.builder = builder;
    bo.node_boxes = NodeBoxPolicy::always;
    bo.split = SplitPolicy::widest_dimension;
    auto const t32 = build_left_balanced<std::int32_t>(exec, dp, bo);
    auto const t64 = build_left_balanced<std::int64_t>(exec, dp, bo);
    CHECK(answers64(exec, t64, dq) == answers64(exec, t32, dq));
    CHECK(bytes_of(t64.points()) == bytes_of(t32.points()));
  }
  CHECK(answers64(exec, build_split_sort<std::int64_t>(exec, dp), dq) == answers64(exec, build_split_sort<std::int32_t>(exec, dp), dq));
  auto p1 = to_device<Exec>(pts, "p1");
  auto p2 = to_device<Exec>(pts, "p2");
  CHECK(answers64(exec, build_median_in_place<std::int64_t>(exec, p1), dq) ==
        answers64(exec, build_median_in_place<std::int32_t>(exec, p2), dq));
  Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> rows("rows", pts.size(), 3), qrows("q", qs.size(), 3);
  auto hr = Kokkos::create_mirror_view(rows);
  auto hq = Kokkos::create_mirror_view(qrows);
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (int d = 0; d < 3; ++d) hr(i, d) = pts[i][d];
  for (std::size_t i = 0; i < qs.size(); ++i)
    for (int d = 0; d < 3; ++d) hq(i, d) = qs[i][d];
  Kokkos::deep_copy(rows, hr);
  Kokkos::deep_copy(qrows, hq);
  CHECK(answers64(exec, build_bucket_tree<std::int64_t>(exec, rows), qrows) ==
        answers64(exec, build_bucket_tree<std::int32_t>(exec, rows), qrows));
  CHECK(answers64(exec, build_vvh_tree<std::int64_t>(exec, dp), qrows) == answers64(exec, build_vvh_tree<std::int32_t>(exec, dp), qrows));
  auto const bf64 = knn_brute_force<std::int64_t>(exec, rows, qrows, 9);
  auto const bf32 = knn_brute_force<std::int32_t>(exec, rows, qrows, 9);
  auto const h64 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, bf64.indices);
  auto const h32 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, bf32.indices);
  for (std::size_t i = 0; i < h64.span(); ++i) CHECK(h64.data()[i] == std::int64_t(h32.data()[i]));
}

TEST_CASE("each builder refuses what it cannot take before reading or allocating anything") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  Exec exec;
  set_memory_limit(std::size_t(1) << 30); // should a check fail, the build ends in an error, not in swap
  std::size_t const two32 = std::size_t(1) << 32;
  CHECK_THROWS_WITH_AS(build_left_balanced<std::int64_t>(exec, HugeContainer{two32}),
                       doctest::Contains("at most 2^32 - 1 points"), Error);
  CHECK_THROWS_WITH_AS(build_left_balanced<std::int64_t>(exec, HugeContainer{two32}),
                       doctest::Contains("build_median_in_place<std::int64_t>"), Error);
  CHECK_THROWS_WITH_AS(build_split_sort<std::int64_t>(exec, HugeContainer{two32 + 5}), doctest::Contains("2^32 - 1"), Error);
  CHECK_THROWS_WITH_AS(build_left_balanced<std::int32_t>(exec, HugeContainer{std::size_t(1) << 31}),
                       doctest::Contains("do not fit the index type (32-bit)"), Error);
  CHECK_THROWS_WITH_AS(build_vvh_tree<std::int32_t>(exec, HugeContainer{std::size_t(1) << 30}),
                       doctest::Contains("3 N"), Error);
  float dummy = 0;
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> rows(&dummy, std::size_t(1) << 29, 8);
  CHECK_THROWS_WITH_AS(build_bucket_tree<std::int64_t>(exec, rows), doctest::Contains("2^31"), Error);
  Point<float, 3> p{};
  Kokkos::View<Point<float, 3>*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> many(&p, std::size_t(1) << 31);
  CHECK_THROWS_WITH_AS(build_median_in_place<std::int32_t>(exec, many), doctest::Contains("do not fit the index type"), Error);
  // queries: at most 2^32 - 1 per call
  auto const tree = build_left_balanced(exec, to_device<Exec>(test::make_points<float, 3>(10, Distribution::uniform, 29)));
  Kokkos::View<Point<float, 3>*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> queries(&p, two32);
  CHECK_THROWS_WITH_AS(knn(exec, tree, queries, 1), doctest::Contains("at most 2^32 - 1"), Error);
  set_memory_limit(0);
}
