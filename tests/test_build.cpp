// Builders: Wald 2022's left-balanced arithmetic and the paper's walkthrough;
// every left-balanced builder gives the identical tree on every backend, in
// every dimension, with both split policies; the automatic policy's limit;
// Wehr & Radkowski 2018's
// split-and-sort chunk arithmetic against the paper's formulas, its
// segmented sorts against std::stable_sort, the whole builder against a
// recursive reference on every backend, and its tuning table.
#include "test_helpers.hpp"
#include "tree_checks.hpp"

#include <kdforge/build_split_sort.hpp>
#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

using test::check_tree;
using test::check_median_tree;
using test::reference_order;

TEST_CASE("left-balanced tree arithmetic matches a recursive reference") {
  for (std::int64_t n = 1; n < 600; ++n) {
    // ss(s) by recursion
    std::vector<std::int64_t> ss(n, 0);
    for (std::int64_t s = n - 1; s >= 0; --s)
      ss[s] = 1 + (2 * s + 1 < n ? ss[2 * s + 1] : 0) + (2 * s + 2 < n ? ss[2 * s + 2] : 0);
    int const L = lb::num_levels(n);
    CHECK(L == lb::level(n - 1) + 1);
    for (std::int64_t s = 0; s < n; ++s) {
      CHECK(lb::subtree_size(s, n) == ss[s]);
      // sb(s, l) = F(l) + sizes of the left siblings on level l
      int const l = lb::level(s);
      std::int64_t sb = lb::full(l);
      for (std::int64_t t = lb::full(l); t < s; ++t) sb += ss[t];
      CHECK(lb::segment_begin(s, n) == sb);
    }
  }
}

TEST_CASE_TEMPLATE("the paper's 10-point walkthrough (Wald 2022, section 5)", Exec, KDFORGE_TEST_SPACES) {
  std::vector<Point<float, 2>> pts{{10, 15}, {46, 63}, {68, 21}, {40, 33}, {25, 54},
                                    {15, 43}, {44, 58}, {45, 40}, {62, 69}, {53, 67}};
  // the final array of section 5
  std::vector<Point<float, 2>> expected{{46, 63}, {15, 43}, {53, 67}, {40, 33}, {44, 58},
                                        {68, 21}, {62, 69}, {10, 15}, {45, 40}, {25, 54}};
  std::vector<Builder> builders{Builder::wald_tags, Builder::presorted_partition, Builder::automatic};
  if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible)
    builders.push_back(Builder::recursive_select);
  for (auto b : builders) {
    BuildOptions o;
    o.builder = b;
    auto tree = build_left_balanced(Exec{}, to_device<Exec>(pts, "pts"), o);
    auto h = to_host(tree.points());
    REQUIRE(h.size() == expected.size());
    for (std::size_t i = 0; i < h.size(); ++i) {
      CHECK(h[i][0] == expected[i][0]);
      CHECK(h[i][1] == expected[i][1]);
    }
    auto idx = to_host(tree.original_indices());
    for (std::size_t i = 0; i < h.size(); ++i) CHECK(pts[idx[i]][0] == h[i][0]);
  }
}

namespace {
// Partition (on Exec and on the host), tags and recursive_select (host) must
// give the identical tree: indices and, under widest, split dimensions.
template <class Exec, int D>
void check_builders_agree(std::size_t n, Distribution dist, SplitPolicy split, std::uint64_t seed) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  auto pts = test::make_points<float, D>(n, dist, seed);
  BuildOptions a, b, r;
  a.builder = Builder::presorted_partition;
  b.builder = Builder::wald_tags;
  r.builder = Builder::recursive_select; // CPUs only: built by the host space
  a.split = b.split = r.split = split;
  auto ta = build_left_balanced(Exec{}, to_device<Exec>(pts, "pts"), a);
  auto tb = build_left_balanced(Exec{}, to_device<Exec>(pts, "pts"), b);
  auto ts = build_left_balanced(Host{}, to_device<Host>(pts, "pts"), a);
  auto tr = build_left_balanced(Host{}, to_device<Host>(pts, "pts"), r);
  auto ia = to_host(ta.original_indices());
  CHECK(ia == to_host(tb.original_indices()));
  CHECK(ia == to_host(ts.original_indices()));
  CHECK(ia == to_host(tr.original_indices()));
  if (split == SplitPolicy::widest_dimension) {
    CHECK(to_host(ta.split_dims()) == to_host(tb.split_dims()));
    CHECK(to_host(ta.split_dims()) == to_host(tr.split_dims()));
  }
  check_tree(ta, pts);
}
} // namespace

TEST_CASE_TEMPLATE("all builders give the identical tree, on every backend", Exec, KDFORGE_TEST_SPACES) {
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::duplicates, Distribution::line,
                    Distribution::plane}) {
    for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(7), std::size_t(8),
                          std::size_t(9), std::size_t(1000), std::size_t(4097), std::size_t(50000)}) {
      for (auto split : {SplitPolicy::round_robin, SplitPolicy::widest_dimension}) {
        CAPTURE(n);
        CAPTURE(int(dist));
        CAPTURE(int(split));
        check_builders_agree<Exec, 3>(n, dist, split, 1234 + n);
      }
    }
  }
}

// D decides how many bottom levels the partition builder finishes per thread
// (8 up to D = 4 on CPUs, 6 on GPUs; 6 up to 8, 5 up to 16, 4 up to 32, none
// above): each regime, both sides of its threshold in N.
TEST_CASE_TEMPLATE("all builders agree in other dimensions", Exec, KDFORGE_TEST_SPACES) {
  for (auto split : {SplitPolicy::round_robin, SplitPolicy::widest_dimension}) {
    for (std::size_t n : {std::size_t(31), std::size_t(63), std::size_t(64), std::size_t(255), std::size_t(256),
                          std::size_t(3001)}) {
      CAPTURE(n);
      CAPTURE(int(split));
      check_builders_agree<Exec, 2>(n, Distribution::clustered, split, 4321 + n);
      check_builders_agree<Exec, 5>(n, Distribution::line, split, 4321 + n);
      check_builders_agree<Exec, 9>(n, Distribution::uniform, split, 4321 + n);
      check_builders_agree<Exec, 20>(n, Distribution::duplicates, split, 4321 + n);
      check_builders_agree<Exec, 40>(n, Distribution::clustered, split, 4321 + n);
    }
  }
}

// SplitPolicy::automatic: round robin up to 2.5:1, the widest side beyond.
// The cell of one of 2 ranks (a cube halved) measures just over 2:1; it must
// not fall on either side by a hair.
TEST_CASE_TEMPLATE("the automatic split policy: round robin up to 2.5:1, the widest side beyond", Exec,
                   KDFORGE_TEST_SPACES) {
  auto box = [](std::array<float, 3> w) {
    Box<float, 3> b;
    for (int d = 0; d < 3; ++d) {
      b.lo[d] = 1.0f;
      b.hi[d] = 1.0f + w[std::size_t(d)];
    }
    return b;
  };
  auto pick = [&](std::array<float, 3> w) { return detail::resolve_split(SplitPolicy::automatic, box(w)); };
  CHECK(pick({1.0f, 1.0f, 1.0f}) == SplitPolicy::round_robin);
  CHECK(pick({0.49999f, 0.99999f, 0.99998f}) == SplitPolicy::round_robin); // a cube halved
  CHECK(pick({0.5f, 1.0f, 1.0f}) == SplitPolicy::round_robin);
  CHECK(pick({1.0f, 2.5f, 1.5f}) == SplitPolicy::round_robin);
  CHECK(pick({1.0f, 2.51f, 1.0f}) == SplitPolicy::widest_dimension);
  CHECK(pick({0.25f, 1.0f, 1.0f}) == SplitPolicy::widest_dimension); // a cube in quarters
  CHECK(pick({1.0f, 1.0f, 0.0f}) == SplitPolicy::widest_dimension); // a plane
  CHECK(pick({0.0f, 1.0f, 0.0f}) == SplitPolicy::widest_dimension); // a line
  CHECK(pick({1000.0f, 1.0f, 1.0f}) == SplitPolicy::widest_dimension);
  CHECK(pick({0.0f, 0.0f, 0.0f}) == SplitPolicy::round_robin); // one point: nothing to choose
  CHECK(detail::resolve_split(SplitPolicy::widest_dimension, box({1.0f, 1.0f, 1.0f})) == SplitPolicy::widest_dimension);
  CHECK(detail::resolve_split(SplitPolicy::round_robin, box({1.0f, 0.0f, 1.0f})) == SplitPolicy::round_robin);

  // the trees built: uniform points in a cube halved, and in a cube in quarters
  auto pts = test::make_points<float, 3>(4000, Distribution::uniform, 77);
  auto squeeze = [&](float f) {
    auto p = pts;
    for (auto& q : p) q[0] *= f;
    return build_left_balanced(Exec{}, to_device<Exec>(p, "pts")).split_policy();
  };
  CHECK(squeeze(0.5f) == SplitPolicy::round_robin);
  CHECK(squeeze(0.25f) == SplitPolicy::widest_dimension);
}

TEST_CASE("parallel selection of the recursive builder puts the exact rank in place") {
  using Host = Kokkos::DefaultHostExecutionSpace;
  using N = kernels::PackedNode<float, 3, std::int32_t>;
  for (auto dist : {Distribution::uniform, Distribution::duplicates, Distribution::plane}) {
    auto pts = test::make_points<float, 3>(200000, dist, 99);
    std::vector<N> base(pts.size()), tmp(pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) base[i] = kernels::pack_node(pts[i], std::int32_t(i));
    for (std::int64_t k : {std::int64_t(0), std::int64_t(777), std::int64_t(100000), std::int64_t(199999)}) {
      for (int d = 0; d < 3; ++d) {
        CAPTURE(k);
        CAPTURE(d);
        auto work = base;
        kernels::recursive_detail::parallel_select(Host{}, work.data(), tmp.data(), 0, std::int64_t(work.size()), k, d);
        kernels::recursive_detail::KeyLess<N> less{d};
        auto ref = base;
        std::nth_element(ref.begin(), ref.begin() + k, ref.end(), less);
        REQUIRE(work[k].index == ref[k].index);
        bool ok = true;
        for (std::int64_t i = 0; i < k; ++i) ok = ok && less(work[i], work[k]);
        for (std::int64_t i = k + 1; i < std::int64_t(work.size()); ++i) ok = ok && less(work[k], work[i]);
        CHECK(ok);
      }
    }
  }
}

TEST_CASE_TEMPLATE("the recursive builder's machine-wide top levels give the same tree", Exec, KDFORGE_TEST_SPACES) {
  for (auto split : {SplitPolicy::round_robin, SplitPolicy::widest_dimension}) {
    CAPTURE(int(split));
    check_builders_agree<Exec, 3>(400000, Distribution::clustered, split, 4321 + 400000);
  }
}

namespace {
std::vector<std::int64_t> interesting_sizes() {
  std::vector<std::int64_t> v;
  for (std::int64_t n = 1; n <= 300; ++n) v.push_back(n);
  for (int k = 9; k <= 20; k += 1)
    for (std::int64_t d : {-1, 0, 1}) v.push_back((std::int64_t(1) << k) + d);
  for (std::int64_t n : {1000, 4097, 12345, 99999, 500000, 1000003}) v.push_back(n);
  return v;
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
