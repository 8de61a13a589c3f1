// Approximate kNN (Wehr & Radkowski 2018): the bounded min-max queue against a
// multiset, and knn_approximate exact with a queue as large as the tree,
// valid (true neighbours, sorted, no repeats) and measurably close with a
// small one.
#include "brute_force.hpp"
#include "query_checks.hpp"
#include "test_helpers.hpp"

#include <kdforge/build_split_sort.hpp>
#include <kdforge/kdforge.hpp>
#include <kdforge/knn_approximate.hpp>

#include <algorithm>
#include <cmath>
#include <set>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

TEST_CASE("the min-max heap keeps min and max like a multiset") {
  struct Store {
    int* a;
    KOKKOS_FUNCTION int& operator()(int i) const { return a[i]; }
  };
  std::mt19937 rng(5);
  for (int cap : {1, 2, 3, 7, 64}) {
    std::vector<int> buf(cap);
    kernels::MinMaxHeap<int, Store> heap(Store{buf.data()}, cap);
    std::multiset<int> ref;
    for (int step = 0; step < 20000; ++step) {
      int const op = int(rng() % 4);
      int const x = int(rng() % 50);
      if (op <= 1) {
        bool const kept_all = heap.push_bounded(x);
        if (int(ref.size()) < cap) {
          CHECK(kept_all);
          ref.insert(x);
        } else {
          CHECK(!kept_all);
          if (x < *ref.rbegin()) {
            ref.erase(std::prev(ref.end()));
            ref.insert(x);
          }
        }
      } else if (op == 2 && !ref.empty()) {
        CHECK(heap.pop_min() == *ref.begin());
        ref.erase(ref.begin());
      } else if (op == 3 && !ref.empty()) {
        CHECK(heap.pop_max() == *ref.rbegin());
        ref.erase(std::prev(ref.end()));
      }
      REQUIRE(heap.size() == int(ref.size()));
      if (!ref.empty()) {
        CHECK(heap.min() == *ref.begin());
        CHECK(heap.max() == *ref.rbegin());
      }
    }
  }
}

TEST_CASE_TEMPLATE("approximate kNN: exact with a large queue, valid and measurable with a small one", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(3000, Distribution::clustered, 31);
  auto queries = test::make_points<float, 3>(400, Distribution::uniform, 32);
  for (int i = 0; i < 50; ++i) queries[i] = pts[i * 13];
  auto dq = to_device<Exec>(queries, "q");
  auto st = build_split_sort(exec, to_device<Exec>(pts, "p"));
  auto lt = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  for (int k : {1, 8, 20, 40}) {
    CAPTURE(k);
    // Q >= N can never drop a branch: exact, equal to brute force
    ApproximateOptions exact;
    exact.queue_capacity = 3000;
    for (int which = 0; which < 2; ++which) {
      auto r = which == 0 ? knn_approximate(exec, st, dq, k, exact) : knn_approximate(exec, lt, dq, k, exact);
      auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
      auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
      for (std::size_t q = 0; q < queries.size(); ++q) {
        auto ref = test::brute_knn(pts, queries[q], k, detail::infinity<float>());
        test::check_row(ref, &hi(q, 0), &hd(q, 0), k);
      }
    }
    // small queues and a leaf limit: every reported neighbour is real, rows
    // ascending, recall between 0 and 1, and more room never hurts much
    double prev_recall = -1;
    for (int Q : {1, 4, 32, 64}) {
      ApproximateOptions o;
      o.queue_capacity = Q;
      auto r = knn_approximate(exec, st, dq, k, o);
      auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
      auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
      std::int64_t hits = 0;
      for (std::size_t q = 0; q < queries.size(); ++q) {
        auto ref = test::brute_knn(pts, queries[q], k, detail::infinity<float>());
        std::set<std::int64_t> want;
        for (auto const& x : ref) want.insert(x.index);
        for (int j = 0; j < k; ++j) {
          if (hi(q, j) < 0) { // a tiny queue may reach fewer than k points: the rest of the row is empty
            CHECK(std::isinf(hd(q, j)));
            if (j + 1 < k) CHECK(hi(q, j + 1) < 0);
            continue;
          }
          CHECK(hd(q, j) == sq_distance(queries[q], pts[hi(q, j)]));
          if (j > 0) CHECK(hd(q, j - 1) <= hd(q, j));
          hits += want.count(hi(q, j));
        }
        CHECK(hd(q, 0) >= ref[0].sq_dist);
      }
      double const recall = double(hits) / double(k * queries.size());
      CHECK(recall > 0.1);
      CHECK(recall >= prev_recall - 0.02);
      prev_recall = recall;
    }
    ApproximateOptions one_leaf;
    one_leaf.max_leaves = 1;
    auto r = knn_approximate(exec, st, dq, 1, one_leaf);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
    for (std::size_t q = 0; q < queries.size(); ++q) CHECK(std::isfinite(hd(q, 0)));
  }
  ApproximateOptions bad;
  bad.queue_capacity = 0;
  CHECK_THROWS_AS(knn_approximate(exec, st, dq, 3, bad), kdforge::Error);
  CHECK_THROWS_AS(knn_approximate(exec, st, dq, 0), kdforge::Error);
  bad = {};
  bad.max_leaves = -1;
  CHECK_THROWS_AS(knn_approximate(exec, st, dq, 3, bad), kdforge::Error);
}
