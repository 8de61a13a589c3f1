// Determinism: every backend returns identical query results (ties broken by
// the smaller input index; unsorted radius rows in the one traversal order
// every walk shares), and the processing order of the queries is a stable
// sort by just enough Morton bits.
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <vector>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

TEST_CASE_TEMPLATE("identical query results on every backend", Exec, KDFORGE_TEST_SPACES) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  auto pts = test::make_points<float, 3>(20000, Distribution::duplicates, 21);
  auto queries = test::make_points<float, 3>(2000, Distribution::uniform, 22);
  auto t1 = build_left_balanced(Exec{}, to_device<Exec>(pts, "p"));
  auto t2 = build_left_balanced(Host{}, to_device<Host>(pts, "p"));
  auto r1 = knn(Exec{}, t1, to_device<Exec>(queries, "q"), 10);
  auto r2 = knn(Host{}, t2, to_device<Host>(queries, "q"), 10);
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r1.indices);
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r2.indices);
  for (std::size_t q = 0; q < queries.size(); ++q)
    for (int j = 0; j < 10; ++j) CHECK(a(q, j) == b(q, j));
  RadiusOptions ro; // sorted rows: identical with every target's defaults
  ro.sort = true;
  auto s1 = radius_search(Exec{}, t1, to_device<Exec>(queries, "q"), 0.2, ro);
  auto s2 = radius_search(Host{}, t2, to_device<Host>(queries, "q"), 0.2, ro);
  CHECK(to_host(s1.offsets) == to_host(s2.offsets));
  CHECK(to_host(s1.indices) == to_host(s2.indices));
  CHECK(to_host(s1.sq_distances) == to_host(s2.sq_distances));
  ro.sort = false; // unsorted rows: traversal order, identical for the same bucket levels
  for (int levels : {0, 2, 3}) {
    CAPTURE(levels);
    ro.bucket_levels = levels;
    auto u1 = radius_search(Exec{}, t1, to_device<Exec>(queries, "q"), 0.2, ro);
    auto u2 = radius_search(Host{}, t2, to_device<Host>(queries, "q"), 0.2, ro);
    CHECK(to_host(u1.offsets) == to_host(s1.offsets));
    CHECK(to_host(u1.indices) == to_host(u2.indices));
  }
}

TEST_CASE_TEMPLATE("the processing order sorts by just enough Morton bits", Exec, KDFORGE_TEST_SPACES) {
  constexpr int key = kernels::morton_key_bits<3>();
  CHECK(key == 30);
  for (std::int64_t m : {std::int64_t(0), std::int64_t(2), std::int64_t(8192), std::int64_t(8193),
                         std::int64_t(1) << 20, std::int64_t(10000000), std::int64_t(1) << 40}) {
    CAPTURE(m);
    int const bits = kernels::morton_sort_bits<3>(m);
    CHECK(bits <= key);
    CHECK((bits % 8 == 0 || bits == key));
    if (bits < key) CHECK(m <= (std::int64_t(32) << bits));   // cells of <= 32 queries on average
    if (bits > 8) CHECK(m > (std::int64_t(32) << (bits - 8))); // and one pass fewer would not do
  }
  CHECK(kernels::morton_sort_bits<3>(std::int64_t(1) << 20) == 16);
  CHECK(kernels::morton_sort_bits<3>(std::int64_t(1) << 40) == key);
  CHECK(kernels::morton_sort_bits<16>(std::int64_t(1) << 40) == 32); // two bits per dimension, no remainder

  // The order itself: a permutation whose top `bits` code bits never decrease,
  // and as given (stable) among queries that share them.
  Exec exec;
  using MS = typename Exec::memory_space;
  auto hq = test::make_points<float, 3>(20000, Distribution::uniform, 35);
  hq[7] = hq[19000]; // equal codes: the stable sort keeps 7 before 19000
  auto q = to_device<Exec>(hq, "q");
  Box<float, 3> box = Box<float, 3>::empty();
  for (auto const& p : hq) box.extend(p);
  Kokkos::View<std::uint32_t*, MS> codes;
  Kokkos::View<char*, MS> order_bytes, scratch;
  Kokkos::View<std::int64_t, MS> bad("bad");
  Kokkos::deep_copy(bad, std::int64_t(1) << 62);
  auto const ord = kernels::morton_codes<Exec, float, 3, std::int32_t>(exec, q, box, codes, order_bytes, bad);
  kernels::sort_morton_order<Exec, 3>(exec, codes, ord, scratch);
  auto order = to_host(ord);
  std::int64_t bad_h = 0;
  Kokkos::deep_copy(bad_h, bad);
  CHECK(bad_h == std::int64_t(1) << 62); // every query finite
  int const bits = kernels::morton_sort_bits<3>(20000);
  REQUIRE(bits == 16);
  REQUIRE(order.size() == hq.size());
  std::vector<int> seen(hq.size(), 0);
  std::uint32_t prev = 0;
  std::int32_t prev_index = -1;
  for (auto const i : order) {
    REQUIRE(i >= 0);
    REQUIRE(std::size_t(i) < hq.size());
    ++seen[std::size_t(i)];
    std::uint32_t const cell = kernels::morton_code(hq[std::size_t(i)], box) >> (key - bits);
    REQUIRE(cell >= prev);
    if (cell == prev) REQUIRE(i > prev_index);
    prev = cell;
    prev_index = i;
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == std::int64_t(hq.size()));
}
