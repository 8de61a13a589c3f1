// Adaptive split-and-sort trees (Wehr & Radkowski 2018): chunk arithmetic
// against the paper's real-number formulas and a recursive median build, the
// segmented parallel radix sort and the per-chunk sorts against
// std::stable_sort, the whole builder against a host reference on every
// backend, queries against brute force, the min-max heap against a multiset,
// approximate kNN, bad input and the tuning table.
#include "brute_force.hpp"
#include "query_checks.hpp"
#include "test_helpers.hpp"

#include <kdforge/knn_approximate.hpp>
#include <kdforge/kdforge.hpp>
#include <kdforge/build_split_sort.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

namespace {

std::vector<std::int64_t> interesting_sizes() {
  std::vector<std::int64_t> v;
  for (std::int64_t n = 1; n <= 300; ++n) v.push_back(n);
  for (int k = 9; k <= 20; k += 1)
    for (std::int64_t d : {-1, 0, 1}) v.push_back((std::int64_t(1) << k) + d);
  for (std::int64_t n : {1000, 4097, 12345, 99999, 500000, 1000003}) v.push_back(n);
  return v;
}

// The tree the paper's method must give, built directly: recursive stable
// sorts of index ranges on the host, with the median rule of the appendix.
template <class T, int D>
void reference_build(std::vector<Point<T, D>> const& pts, std::vector<std::int64_t>& idx, std::int64_t lo,
                     std::int64_t hi, int l, std::int64_t c) {
  std::int64_t const n = std::int64_t(pts.size());
  int const L = split_sort::internal_levels(n);
  REQUIRE(lo == split_sort::chunk_begin(n, l, c));
  REQUIRE(hi == split_sort::chunk_end(n, l, c));
  if (l == L) {
    REQUIRE(hi - lo <= 1);
    return;
  }
  int const d = l % D;
  std::stable_sort(idx.begin() + lo, idx.begin() + hi, [&](std::int64_t a, std::int64_t b) {
    return kernels::ordered_bits(pts[a][d]) < kernels::ordered_bits(pts[b][d]);
  });
  std::int64_t const m = split_sort::median(n, l, c);
  REQUIRE(lo <= m);
  REQUIRE(m < hi);
  // a balanced median: the two sides differ by at most one element
  CHECK(std::abs((m - lo) - (hi - m - 1)) <= 1);
  reference_build(pts, idx, lo, m, l + 1, 2 * c);
  reference_build(pts, idx, m + 1, hi, l + 1, 2 * c + 1);
}

template <class T, int D>
std::vector<std::int64_t> reference_order(std::vector<Point<T, D>> const& pts) {
  std::vector<std::int64_t> idx(pts.size());
  std::iota(idx.begin(), idx.end(), 0);
  if (!pts.empty()) reference_build(pts, idx, 0, std::int64_t(pts.size()), 0, 0);
  return idx;
}

// Every node's left sub-tree <= its split value <= its right sub-tree.
template <class Tree, class T, int D>
void check_median_tree(Tree const& tree, std::vector<Point<T, D>> const& input) {
  auto pts = to_host(tree.points());
  auto idx = to_host(tree.original_indices());
  std::int64_t const n = std::int64_t(pts.size());
  REQUIRE(n == std::int64_t(input.size()) - tree.dropped_count());
  std::vector<int> seen(input.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    ++seen[idx[i]];
    for (int d = 0; d < D; ++d) REQUIRE(pts[i][d] == input[idx[i]][d]);
  }
  for (auto c : seen) REQUIRE(c <= 1);
  std::int64_t const slots = tree.node_count();
  std::vector<int> node_of_position(n, 0);
  for (std::int64_t s = 0; s < slots; ++s)
    if (tree.has_node(typename Tree::index_type(s))) ++node_of_position[tree.position(typename Tree::index_type(s))];
  for (auto c : node_of_position) REQUIRE(c == 1); // every point is exactly one node
  auto exists = [&](std::int64_t s) { return s < slots && tree.has_node(typename Tree::index_type(s)); };
  for (std::int64_t s = 0; s < slots; ++s) {
    if (!exists(s)) continue;
    int const dim = lb::level(s) % D;
    T const split = pts[tree.position(typename Tree::index_type(s))][dim];
    for (int side = 1; side <= 2; ++side) {
      std::vector<std::int64_t> stack;
      if (exists(2 * s + side)) stack.push_back(2 * s + side);
      while (!stack.empty()) {
        auto c = stack.back();
        stack.pop_back();
        T const v = pts[tree.position(typename Tree::index_type(c))][dim];
        if (side == 1) REQUIRE(v <= split);
        else REQUIRE(v >= split);
        if (exists(2 * c + 1)) stack.push_back(2 * c + 1);
        if (exists(2 * c + 2)) stack.push_back(2 * c + 2);
      }
    }
  }
}

} // namespace

TEST_CASE("split-and-sort chunk arithmetic equals the paper's formulas and a recursive median split") {
  for (std::int64_t n : interesting_sizes()) {
    CAPTURE(n);
    int const L = split_sort::internal_levels(n);
    CHECK(L == int(std::floor(std::log2(double(n)))));
    for (int l = 0; l <= L; ++l) {
      double const w = double(n) / std::ldexp(1.0, l);
      std::int64_t const chunks = std::int64_t(1) << l;
      // positions: splitting elements of the levels above, or in exactly one chunk
      std::int64_t covered = 0;
      for (std::int64_t c = 0; c < chunks; ++c) {
        std::int64_t const b = split_sort::chunk_begin(n, l, c), e = split_sort::chunk_end(n, l, c);
        // appendix III: i_s = 0 for c = 0, floor(w c) + 1 otherwise
        CHECK(b == (c == 0 ? 0 : std::int64_t(std::floor(w * double(c))) + 1));
        covered += e - b;
        if (l < L) { // every internal chunk has a median strictly inside
          std::int64_t const m = split_sort::median(n, l, c);
          CHECK(b <= m);
          CHECK(m < e);
        }
      }
      CHECK(covered == n - (chunks - 1));
      if (n > 5000 && l > 12) continue; // the per-position checks below are quadratic-ish
      for (std::int64_t i = 0; i < n; ++i) {
        // appendix II: splitting = ceil(i / w) < (i + 1) / w and i != 0
        bool const paper_split = i != 0 && std::ceil(double(i) / w) < double(i + 1) / w;
        CHECK(split_sort::is_splitting(n, l, i) == paper_split);
        if (!paper_split) { // appendix I: chunk c = floor(i / w)
          CHECK(split_sort::chunk_of(n, l, i) == std::int64_t(std::floor(double(i) / w)));
        }
      }
    }
    if (n <= 100000) {
      std::vector<Point<float, 1>> pts(n);
      for (std::int64_t i = 0; i < n; ++i) pts[i][0] = float((i * 7919) % n);
      reference_order(pts); // REQUIREs the recursion meets the arithmetic at every node
    }
  }
}

TEST_CASE("a block of the parallel sort overlaps at most two chunks, and the histogram layout is a bijection") {
  for (std::int64_t n : {256, 257, 1000, 4095, 4096, 4097, 100003}) {
    for (int tpb : {32, 64, 128}) {
      for (int l = 0; double(n) / std::ldexp(1.0, l) >= tpb; ++l) {
        CAPTURE(n);
        CAPTURE(tpb);
        CAPTURE(l);
        std::int64_t const blocks = (n + tpb - 1) / tpb;
        split_sort::LevelGeometry geo{n, l, tpb, 4, blocks};
        std::vector<int> hit(2 * blocks * 4, 0);
        for (std::int64_t b = 0; b < blocks; ++b) {
          auto const bc = geo.block(b);
          std::int64_t const last = std::min<std::int64_t>((b + 1) * tpb, n) - 1;
          CHECK(split_sort::chunk_of(n, l, last) - bc.c0 <= 1);
          for (std::int64_t i = b * tpb; i <= last; ++i) {
            bool const fixed = i == bc.lead || i == bc.split;
            CHECK(fixed == split_sort::is_splitting(n, l, i));
          }
          auto const e = geo.entries(b);
          for (int s = 0; s < 2; ++s) {
            std::int64_t const g = 2 * b + s;
            std::int64_t const c = e.chunk(s);
            std::int64_t const gs = geo.chunk_first_entry(c), ge = geo.chunk_first_entry(c + 1);
            CHECK(gs == e.begin(s));
            CHECK(ge == e.end(s));
            CHECK(gs <= g);
            CHECK(g < ge);
            for (int digit = 0; digit < 4; ++digit) ++hit[geo.slot(g, digit, gs, ge)];
          }
        }
        for (int h : hit) CHECK(h == 1);
      }
    }
  }
}

TEST_CASE_TEMPLATE("each level's sorts equal std::stable_sort per chunk", Exec, KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  Exec exec;
  std::mt19937_64 rng(99);
  for (std::int64_t n : {40, 300, 1000, 4097, 30011}) {
    for (int radix_bits : {1, 5, 8}) {
      for (int tpb : {32, 64, 256}) {
        for (int l = 0; l <= split_sort::internal_levels(n); ++l) {
          split_sort::Params prm;
          prm.threads_per_block = tpb;
          prm.radix_bits = radix_bits;
          prm.cutoff = tpb;
          double const w = double(n) / std::ldexp(1.0, l);
          std::vector<split_sort::LevelSort> kinds{split_sort::LevelSort::sequential_radix};
          if (w >= tpb) kinds.push_back(split_sort::LevelSort::parallel_radix);
          if (w < 200) kinds.push_back(split_sort::LevelSort::insertion);
          for (auto how : kinds) {
            for (bool vendor : {true, false}) {
              if (!vendor && how != split_sort::LevelSort::parallel_radix) continue;
              CAPTURE(n);
              CAPTURE(radix_bits);
              CAPTURE(tpb);
              CAPTURE(l);
              CAPTURE(int(how));
              prm.vendor_histogram = vendor;
              // few distinct keys: stability matters; 12-bit keys: several passes
              std::vector<std::uint32_t> keys(n);
              std::vector<std::int32_t> idx(n);
              for (std::int64_t i = 0; i < n; ++i) {
                keys[i] = std::uint32_t(rng() % (i % 3 == 0 ? 5 : 4096));
                idx[i] = std::int32_t(i);
              }
              int const passes = split_sort::radix_passes<std::uint32_t>(4095, radix_bits);
              Kokkos::View<std::uint32_t*, MS> dk = to_device<Exec>(keys, "k"), dk2("k2", n);
              Kokkos::View<std::int32_t*, MS> di = to_device<Exec>(idx, "i"), di2("i2", n);
              // the buffers agree on the fixed positions, as the builder keeps them
              Kokkos::deep_copy(di2, di);
              std::int64_t const blocks = (n + tpb - 1) / tpb;
              Kokkos::View<std::uint32_t*, MS> hist("h", 2 * blocks * (1 << radix_bits));
              Kokkos::View<char*, MS> ws;
              split_sort::sort_level(exec, how, prm, l, passes, dk, dk2, di, di2, hist, ws);
              auto gk = to_host(dk);
              auto gi = to_host(di);
              // expected: each chunk stably sorted, splitting elements untouched
              std::vector<std::int32_t> want = idx;
              for (std::int64_t c = 0; c < (std::int64_t(1) << l); ++c) {
                std::int64_t const b = split_sort::chunk_begin(n, l, c), e = split_sort::chunk_end(n, l, c);
                std::stable_sort(want.begin() + b, want.begin() + e,
                                 [&](std::int32_t a, std::int32_t z) { return keys[a] < keys[z]; });
              }
              REQUIRE(gi == want);
              for (std::int64_t i = 0; i < n; ++i) {
                if (!split_sort::is_splitting(n, l, i)) REQUIRE(gk[i] == keys[gi[i]]);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE_TEMPLATE("the split-and-sort builder equals the recursive reference, on every backend", Exec,
                   KDFORGE_TEST_SPACES) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::duplicates, Distribution::line,
                    Distribution::plane}) {
    for (std::int64_t n : {1, 2, 3, 15, 16, 17, 31, 32, 33, 255, 256, 257, 1000, 4095, 4096, 4097, 65537}) {
      auto pts = test::make_points<float, 3>(std::size_t(n), dist, 4321 + n);
      auto const want = reference_order(pts);
      for (int tpb : {32, 64, 256}) {
        for (int base : {2, 32, 256}) {
          if (n > 5000 && (base != 32 || tpb == 64)) continue;
          CAPTURE(int(dist));
          CAPTURE(n);
          CAPTURE(tpb);
          CAPTURE(base);
          SplitSortOptions o;
          o.threads_per_block = tpb;
          o.radix_base = base;
          auto tree = build_split_sort(Exec{}, to_device<Exec>(pts, "p"), o);
          auto got = to_host(tree.original_indices());
          REQUIRE(got.size() == want.size());
          for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == want[i]);
          if (tpb == 32 && base == 32) {
            check_median_tree(tree, pts);
            auto th = build_split_sort(Host{}, to_device<Host>(pts, "p"), o);
            CHECK(to_host(th.original_indices()) == got);
          }
        }
      }
      // the paper's baselines build the same tree
      for (auto strategy : {SplitSortStrategy::naive_radix, SplitSortStrategy::naive_insertion}) {
        if (strategy == SplitSortStrategy::naive_insertion && n > 5000) continue;
        SplitSortOptions o;
        o.strategy = strategy;
        auto tree = build_split_sort(Exec{}, to_device<Exec>(pts, "p"), o);
        auto got = to_host(tree.original_indices());
        for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == want[i]);
      }
    }
  }
  // double, 2-D and 4-D, 64-bit indices, and a late cutoff
  {
    auto pts = test::make_points<double, 2>(20000, Distribution::clustered, 8);
    auto want = reference_order(pts);
    SplitSortOptions o;
    o.threads_per_block = 64;
    o.cutoff = 1000;
    auto tree = build_split_sort<std::int64_t>(Exec{}, to_device<Exec>(pts, "p"), o);
    auto got = to_host(tree.original_indices());
    for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == want[i]);
  }
  {
    auto pts = test::make_points<float, 4>(20000, Distribution::uniform, 9);
    auto want = reference_order(pts);
    auto tree = build_split_sort(Exec{}, to_device<Exec>(pts, "p"));
    auto got = to_host(tree.original_indices());
    for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == want[i]);
    check_median_tree(tree, pts);
  }
}

TEST_CASE_TEMPLATE("queries on split-and-sort trees equal brute force", Exec, KDFORGE_TEST_SPACES) {
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
        test::check_all_queries(exec, tree, pts, queries, tr, QueryOrder::automatic);
    }
  }
  auto pts = test::make_points<double, 3>(3000, Distribution::clustered, 5);
  auto queries = test::make_points<double, 3>(300, Distribution::uniform, 6);
  auto tree = build_split_sort<std::int64_t>(exec, to_device<Exec>(pts, "p"));
  test::check_all_queries(exec, tree, pts, queries, Traversal::automatic, QueryOrder::morton);
}

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

TEST_CASE_TEMPLATE("split-and-sort: adversarial input and bad options get clear answers", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  SUBCASE("empty, one point, identical points") {
    auto empty = build_split_sort(exec, Kokkos::View<Point<float, 3>*, MS>("none", 0));
    CHECK(empty.size() == 0);
    CHECK(empty.node_count() == 0);
    auto q = to_device<Exec>(test::make_points<float, 3>(3, Distribution::uniform, 1), "q");
    auto r = knn(exec, empty, q, 2);
    auto ri = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) CHECK(ri(i, j) == -1);
    std::vector<Point<double, 3>> one{{1, 2, 3}};
    auto t1 = build_split_sort(exec, to_device<Exec>(one, "p"));
    auto c = closest_point(exec, t1, to_device<Exec>(std::vector<Point<double, 3>>{{0, 0, 0}}, "q"));
    CHECK(to_host(c.indices)[0] == 0);
    CHECK(to_host(c.sq_distances)[0] == 14.0);
    std::vector<Point<float, 3>> same(777, Point<float, 3>{{0.25f, 0.5f, 0.75f}});
    auto ts = build_split_sort(exec, to_device<Exec>(same, "p"));
    check_median_tree(ts, same);
    auto rk = knn(exec, ts, to_device<Exec>(std::vector<Point<float, 3>>{{0.f, 0.f, 0.f}}, "q"), 4);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rk.indices);
    for (int j = 0; j < 4; ++j) CHECK(hi(0, j) == j);
  }
  SUBCASE("NaN and infinity: rejected with the index, or dropped") {
    auto pts = test::make_points<float, 3>(200, Distribution::uniform, 3);
    pts[17][0] = std::numeric_limits<float>::quiet_NaN();
    pts[150][1] = -std::numeric_limits<float>::infinity();
    auto d = to_device<Exec>(pts, "p");
    try {
      build_split_sort(exec, d);
      FAIL("expected an error");
    } catch (kdforge::Error const& e) {
      CHECK(std::string(e.what()).find("point 17") != std::string::npos);
    }
    SplitSortOptions o;
    o.non_finite = NonFinitePolicy::drop;
    auto tree = build_split_sort(exec, d, o);
    CHECK(tree.size() == 198);
    CHECK(tree.dropped_count() == 2);
    check_median_tree(tree, pts);
    auto back = to_host(d);
    CHECK(std::isnan(back[17][0]));
  }
  SUBCASE("bad options") {
    auto d = to_device<Exec>(test::make_points<float, 3>(100, Distribution::uniform, 3), "p");
    for (int tpb : {-32, 16, 48, 2048}) {
      SplitSortOptions o;
      o.threads_per_block = tpb;
      CHECK_THROWS_AS(build_split_sort(exec, d, o), kdforge::Error);
    }
    for (int base : {0, 1, 3, 48, 512}) {
      SplitSortOptions o;
      o.radix_base = base;
      CHECK_THROWS_AS(build_split_sort(exec, d, o), kdforge::Error);
    }
    SplitSortOptions o;
    o.threads_per_block = 128;
    o.cutoff = 64;
    CHECK_THROWS_WITH_AS(build_split_sort(exec, d, o), doctest::Contains("at most two chunks"), kdforge::Error);
  }
}

TEST_CASE_TEMPLATE("split-and-sort tuning table: written, read back, used, and checked", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  std::string const file = "kdforge_split_sort_tuning_test.txt";
  SplitSortTuneOptions t;
  t.file = file;
  t.sizes = {3000, 20000};
  t.threads_per_block = {32, 96};
  t.repetitions = 1;
  auto rows = tune_split_sort(exec, t);
  REQUIRE(rows.size() == 2);
  for (auto const& r : rows) CHECK((r.threads_per_block == 32 || r.threads_per_block == 96));
  auto pts = to_device<Exec>(test::make_points<float, 3>(20000, Distribution::uniform, 3), "p");
  SplitSortStats stats;
  SplitSortOptions o;
  o.tuning_file = file;
  o.stats = &stats;
  build_split_sort(exec, pts, o);
  CHECK(stats.threads_per_block == rows[1].threads_per_block);
  CHECK(stats.parallel_levels + stats.sequential_levels + stats.insertion_levels == split_sort::internal_levels(20000));
  CHECK(stats.parallel_radix_ms > 0);
  // a table of another device is ignored; a malformed one is an error
  {
    std::ofstream out(file);
    out << "device some other GPU\nradix_base 32\n20000 1024 1.0\n";
  }
  build_split_sort(exec, pts, o);
  CHECK(stats.threads_per_block == 32); // the default below 200,000 points
  {
    std::ofstream out(file);
    out << "device x\nradix_base 32\n20000 banana\n";
  }
  CHECK_THROWS_WITH_AS(build_split_sort(exec, pts, o), doctest::Contains("expected"), kdforge::Error);
  std::remove(file.c_str());
}
