#pragma once
// Every query of a built tree against brute force, one function per
// operation: kNN for several k (with k > 32 taking the heap path), closest
// point with a cutoff, radius counts and sorted, unsorted, buffered and
// capped radius search; check_all_queries runs the three.
#include "brute_force.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kdforge::test {

// Tie-tolerant comparison of one result row with brute force: distances must
// be equal element by element, and an index may differ from the reference
// only where the distance is shared with another candidate (here the
// library's tie-break by index makes even those equal, so we check both).
template <class T, class Index>
void check_row(std::vector<Neighbor<T, std::int64_t>> const& ref, Index const* idx, T const* d2, int k) {
  for (int j = 0; j < k; ++j) {
    if (j < int(ref.size())) {
      CHECK(d2[j] == ref[j].sq_dist);
      CHECK(std::int64_t(idx[j]) == ref[j].index);
    } else {
      CHECK(idx[j] == Index(-1));
      CHECK(std::isinf(d2[j]));
    }
  }
}

template <class Exec, class Tree, class T, int D>
void check_knn_queries(Exec const& exec, Tree const& tree, std::vector<Point<T, D>> const& pts,
                       std::vector<Point<T, D>> const& queries, Traversal traversal, QueryOrder order) {
  auto dq = to_device<Exec>(queries, "queries");
  QueryOptions qo;
  qo.traversal = traversal;
  qo.order = order;
  for (int k : {1, 3, 8, 16, 33, 70}) {
    CAPTURE(k);
    auto r = knn(exec, tree, dq, k, qo);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      auto ref = brute_knn(pts, queries[q], k, detail::infinity<T>());
      check_row(ref, &hi(q, 0), &hd(q, 0), k);
    }
  }
}

template <class Exec, class Tree, class T, int D>
void check_closest_queries(Exec const& exec, Tree const& tree, std::vector<Point<T, D>> const& pts,
                           std::vector<Point<T, D>> const& queries, Traversal traversal, QueryOrder order) {
  auto dq = to_device<Exec>(queries, "queries");
  QueryOptions qo;
  qo.traversal = traversal;
  qo.order = order;
  // with a cutoff radius, and without
  double const r = 0.05;
  qo.cutoff_radius = r;
  auto c = closest_point(exec, tree, dq, qo);
  auto ci = to_host(c.indices);
  auto cd = to_host(c.sq_distances);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    auto ref = brute_knn(pts, queries[q], 1, T(r) * T(r));
    check_row(ref, &ci[q], &cd[q], 1);
  }
  qo.cutoff_radius = std::numeric_limits<double>::infinity();
  auto c2 = closest_point(exec, tree, dq, qo);
  auto ci2 = to_host(c2.indices);
  auto cd2 = to_host(c2.sq_distances);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    auto ref = brute_knn(pts, queries[q], 1, detail::infinity<T>());
    check_row(ref, &ci2[q], &cd2[q], 1);
  }
}

template <class Exec, class Tree, class T, int D>
void check_radius_queries(Exec const& exec, Tree const& tree, std::vector<Point<T, D>> const& pts,
                          std::vector<Point<T, D>> const& queries, Traversal traversal, QueryOrder order) {
  auto dq = to_device<Exec>(queries, "queries");
  // counts, CSR (sorted and unsorted), counted then filled, buffered, capped
  RadiusOptions ro;
  ro.traversal = traversal;
  ro.order = order;
  auto counts = to_host(radius_count(exec, tree, dq, 0.1, ro));
  ro.sort = true;
  auto rs = radius_search(exec, tree, dq, 0.1, ro);
  auto off = to_host(rs.offsets);
  auto ri = to_host(rs.indices);
  auto rd = to_host(rs.sq_distances);
  ro.sort = false;
  auto ru = radius_search(exec, tree, dq, 0.1, ro);
  auto uoff = to_host(ru.offsets);
  auto ui = to_host(ru.indices);
  // The automatic method above (CPUs: one traversal appending rows to
  // per-chunk buffers) against count-then-fill, sorted and not: identical.
  ro.buffer_size = 0;
  {
    auto r2 = radius_search(exec, tree, dq, 0.1, ro);
    CHECK(to_host(r2.offsets) == uoff);
    CHECK(to_host(r2.indices) == ui);
    ro.sort = true;
    auto r2s = radius_search(exec, tree, dq, 0.1, ro);
    CHECK(to_host(r2s.offsets) == off);
    CHECK(to_host(r2s.indices) == ri);
    CHECK(to_host(r2s.sq_distances) == rd);
    ro.sort = false;
  }
  // One traversal with scratch rows: a median-sized scratch makes about half
  // the rows fit (copied) and the others overflow (traversed again); both
  // must give exactly the two-pass results, sorted or not.
  std::vector<std::int64_t> sorted_counts(counts.begin(), counts.end());
  std::sort(sorted_counts.begin(), sorted_counts.end());
  ro.buffer_size = sorted_counts.empty() ? 1 : std::max<std::int64_t>(1, sorted_counts[sorted_counts.size() / 2]);
  {
    auto rb = radius_search(exec, tree, dq, 0.1, ro);
    CHECK(to_host(rb.offsets) == uoff);
    CHECK(to_host(rb.indices) == ui);
    ro.sort = true;
    auto rbs = radius_search(exec, tree, dq, 0.1, ro);
    CHECK(to_host(rbs.offsets) == off);
    CHECK(to_host(rbs.indices) == ri);
    CHECK(to_host(rbs.sq_distances) == rd);
    ro.sort = false;
  }
  ro.buffer_size = 0;
  ro.max_neighbors = 5;
  auto rc = radius_search(exec, tree, dq, 0.1, ro);
  auto coff = to_host(rc.offsets);
  auto cidx = to_host(rc.indices);
  auto cdist = to_host(rc.sq_distances);
  auto ccounts = to_host(radius_count(exec, tree, dq, 0.1, ro));
  REQUIRE(off.size() == queries.size() + 1);
  CHECK(off[0] == 0);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    auto ref = brute_radius(pts, queries[q], T(0.1) * T(0.1));
    CHECK(counts[q] == std::int64_t(ref.size()));
    REQUIRE(off[q + 1] - off[q] == std::int64_t(ref.size()));
    check_row(ref, ri.data() + off[q], rd.data() + off[q], int(ref.size())); // data(): rows may all be empty
    // unsorted rows: the same set
    std::vector<std::int64_t> got(ui.begin() + uoff[q], ui.begin() + uoff[q + 1]), want;
    for (auto const& n : ref) want.push_back(n.index);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    CHECK(got == want);
    // capped: the 5 nearest
    auto capped = ref;
    if (capped.size() > 5) capped.resize(5);
    REQUIRE(coff[q + 1] - coff[q] == std::int64_t(capped.size()));
    CHECK(ccounts[q] == std::int64_t(capped.size()));
    check_row(capped, cidx.data() + coff[q], cdist.data() + coff[q], int(capped.size()));
  }
}

template <class Exec, class Tree, class T, int D>
void check_all_queries(Exec const& exec, Tree const& tree, std::vector<Point<T, D>> const& pts,
                       std::vector<Point<T, D>> const& queries, Traversal traversal, QueryOrder order) {
  check_knn_queries(exec, tree, pts, queries, traversal, order);
  check_closest_queries(exec, tree, pts, queries, traversal, order);
  check_radius_queries(exec, tree, pts, queries, traversal, order);
}

} // namespace kdforge::test
