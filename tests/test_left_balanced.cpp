// Left-balanced k-d trees (Wald 2022): builders, invariants, and every query
// against brute force, on every configured backend.
#include "brute_force.hpp"
#include "query_checks.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cstdio>
#include <map>

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>
#endif

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

namespace {

template <class Tree>
struct HostTree {
  std::vector<typename Tree::point_type> pts;
  std::vector<typename Tree::index_type> idx;
  std::vector<std::uint8_t> dims;
};
template <class Tree>
HostTree<Tree> host_copy(Tree const& t) {
  return {to_host(t.points()), to_host(t.original_indices()), to_host(t.split_dims())};
}

// Every node's left sub-tree <= its split value <= its right sub-tree, in its
// split dimension; every input point appears exactly once.
template <class Tree, class T, int D>
void check_tree(Tree const& tree, std::vector<Point<T, D>> const& input) {
  auto h = host_copy(tree);
  std::int64_t const n = std::int64_t(h.pts.size());
  REQUIRE(n == std::int64_t(input.size()) - tree.dropped_count());
  std::vector<int> seen(input.size(), 0);
  for (std::int64_t s = 0; s < n; ++s) {
    REQUIRE(h.idx[s] >= 0);
    REQUIRE(std::size_t(h.idx[s]) < input.size());
    ++seen[h.idx[s]];
    for (int d = 0; d < D; ++d) REQUIRE(h.pts[s][d] == input[h.idx[s]][d]);
  }
  for (auto c : seen) REQUIRE(c <= 1);
  for (std::int64_t s = 0; s < n; ++s) {
    int const dim = tree.split_policy() == SplitPolicy::round_robin ? lb::level(s) % D : h.dims[s];
    T const split = h.pts[s][dim];
    // walk both sub-trees
    std::vector<std::int64_t> stack;
    if (2 * s + 1 < n) stack.push_back(2 * s + 1);
    while (!stack.empty()) {
      auto c = stack.back();
      stack.pop_back();
      REQUIRE(h.pts[c][dim] <= split);
      if (2 * c + 1 < n) stack.push_back(2 * c + 1);
      if (2 * c + 2 < n) stack.push_back(2 * c + 2);
    }
    if (2 * s + 2 < n) stack.push_back(2 * s + 2);
    while (!stack.empty()) {
      auto c = stack.back();
      stack.pop_back();
      REQUIRE(h.pts[c][dim] >= split);
      if (2 * c + 1 < n) stack.push_back(2 * c + 1);
      if (2 * c + 2 < n) stack.push_back(2 * c + 2);
    }
  }
}

template <class Exec, class T, int D, class Index = std::int32_t>
void check_queries(std::vector<Point<T, D>> const& pts, std::vector<Point<T, D>> const& queries, BuildOptions opts,
                   Traversal traversal, QueryOrder order) {
  Exec exec;
  auto tree = build_left_balanced<Index>(exec, to_device<Exec>(pts, "pts"), opts);
  check_tree(tree, pts);
  test::check_all_queries(exec, tree, pts, queries, traversal, order);
}

} // namespace

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

TEST_CASE_TEMPLATE("kNN, closest point and radius search equal brute force", Exec, KDFORGE_TEST_SPACES) {
  for (auto dist : {Distribution::uniform, Distribution::clustered, Distribution::duplicates, Distribution::plane}) {
    CAPTURE(int(dist));
    auto pts = test::make_points<float, 3>(5000, dist, 77);
    auto queries = test::make_points<float, 3>(700, Distribution::uniform, 78);
    // some queries on data points (exact zero distances, ties)
    for (int i = 0; i < 100; ++i) queries[i] = pts[i * 37 % pts.size()];
    for (auto tr : {Traversal::stack, Traversal::stack_free, Traversal::trail}) {
      for (auto split : {SplitPolicy::round_robin, SplitPolicy::widest_dimension}) {
        BuildOptions o;
        o.split = split;
        check_queries<Exec>(pts, queries, o, tr, QueryOrder::automatic);
      }
    }
    BuildOptions o;
    check_queries<Exec>(pts, queries, o, Traversal::automatic, QueryOrder::morton);
  }
}

TEST_CASE_TEMPLATE("double precision, other dimensions and 64-bit indices", Exec, KDFORGE_TEST_SPACES) {
  {
    auto pts = test::make_points<double, 2>(3000, Distribution::clustered, 5);
    auto queries = test::make_points<double, 2>(300, Distribution::uniform, 6);
    for (auto tr : {Traversal::automatic, Traversal::trail}) // trail: its 64-bit level mask
      check_queries<Exec, double, 2, std::int64_t>(pts, queries, {}, tr, QueryOrder::automatic);
  }
  {
    auto pts = test::make_points<float, 4>(3000, Distribution::uniform, 7);
    auto queries = test::make_points<float, 4>(300, Distribution::uniform, 8);
    BuildOptions o;
    o.split = SplitPolicy::widest_dimension;
    check_queries<Exec>(pts, queries, o, Traversal::automatic, QueryOrder::automatic);
  }
  {
    auto pts = test::make_points<float, 16>(2000, Distribution::clustered, 9);
    auto queries = test::make_points<float, 16>(100, Distribution::clustered, 10);
    check_queries<Exec>(pts, queries, {}, Traversal::stack, QueryOrder::automatic);
  }
}

// Bucket levels change how the bottom of the tree is walked, never what is
// found: every setting, with every traversal, gives the brute-force kNN rows
// and radius sets, and for a given setting all traversals list unsorted
// radius rows in the same order. Sizes around powers of two put the bucket
// level on full and on partly filled last levels; tiny trees are one bucket.
TEST_CASE_TEMPLATE("bucket levels never change query results", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(6), std::size_t(7), std::size_t(8),
                        std::size_t(100), std::size_t(1023), std::size_t(1024), std::size_t(1500)}) {
    for (auto dist : {Distribution::uniform, Distribution::duplicates}) {
      CAPTURE(n);
      CAPTURE(int(dist));
      auto pts = test::make_points<float, 3>(n, dist, 500 + n);
      auto queries = test::make_points<float, 3>(150, Distribution::uniform, 600 + n);
      queries[0] = pts[0];
      auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
      auto dq = to_device<Exec>(queries, "q");
      int const k = 9;
      std::vector<std::vector<Neighbor<float, std::int64_t>>> knn_ref, rad_ref;
      for (auto const& q : queries) {
        knn_ref.push_back(test::brute_knn(pts, q, k, detail::infinity<float>()));
        rad_ref.push_back(test::brute_radius(pts, q, 0.15f * 0.15f));
      }
      for (int levels = 0; levels <= kernels::max_bucket_levels; ++levels) {
        CAPTURE(levels);
        std::vector<std::int32_t> unsorted[3];
        int t = 0;
        for (auto tr : {Traversal::stack, Traversal::stack_free, Traversal::trail}) {
          QueryOptions qo;
          qo.traversal = tr;
          qo.bucket_levels = levels;
          auto r = knn(exec, tree, dq, k, qo);
          auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
          auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
          for (std::size_t q = 0; q < queries.size(); ++q) test::check_row(knn_ref[q], &hi(q, 0), &hd(q, 0), k);
          RadiusOptions ro;
          ro.traversal = tr;
          ro.bucket_levels = levels;
          auto rs = radius_search(exec, tree, dq, 0.15, ro);
          auto off = to_host(rs.offsets);
          unsorted[t] = to_host(rs.indices);
          for (std::size_t q = 0; q < queries.size(); ++q) {
            std::vector<std::int64_t> got(unsorted[t].begin() + off[q], unsorted[t].begin() + off[q + 1]), want;
            for (auto const& nb : rad_ref[q]) want.push_back(nb.index);
            std::sort(got.begin(), got.end());
            std::sort(want.begin(), want.end());
            CHECK(got == want);
          }
          ++t;
        }
        CHECK(unsorted[0] == unsorted[1]);
        CHECK(unsorted[0] == unsorted[2]);
      }
    }
  }
}

namespace walk_order { // not anonymous: nvcc then calls fixed_bound unreferenced
// Records the caller's indices of the nodes a walk visits, in order. Its
// bound shrinks like a kNN's (the 4th smallest distance seen so far) or is a
// fixed radius; Fixed declares the latter to the trail walk, which then ends
// paths without re-testing planes. Fixed = false with a fixed radius makes
// the trail walk take its re-testing path for a radius search.
template <bool Fixed>
struct RecordingVisitor {
  static constexpr bool fixed_bound = Fixed;
  bool shrinking;
  float sq_r;
  std::vector<std::int32_t> order{};
  std::vector<std::int32_t> hits{}; // the visits that matter: within the bound when visited
  float best[4] = {detail::infinity<float>(), detail::infinity<float>(), detail::infinity<float>(),
                   detail::infinity<float>()};
  // host and device functions like the walks that call them (GPU compilers
  // compile those for both); only ever run on the host
  KOKKOS_FUNCTION float bound() const { return shrinking ? best[3] : sq_r; }
  KOKKOS_FUNCTION bool done() const { return false; }
  KOKKOS_FUNCTION void visit(std::int32_t i, float d2) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    order.push_back(i);
    if (shrinking ? d2 < best[3] : d2 <= sq_r) hits.push_back(i);
#else
    (void)i;
#endif
    for (int j = 3; j >= 0 && d2 < best[j]; --j) {
      if (j < 3) best[j + 1] = best[j];
      best[j] = d2;
    }
  }
};
} // namespace walk_order
using walk_order::RecordingVisitor;

// The claim behind "all walks find the same unsorted radius rows": for the
// same bucket levels and a fixed bound (radius visitors declare it),
// stack-free and trail visit the same nodes in the same order (trail: with
// and without its fixed-bound shortcut); the stack walk, which prunes with
// the distance to a far child's whole cell instead of its plane, visits a
// subsequence of them, with the same visits that matter (within the bound),
// in the same order. With a bound that may shrink (kNN), the stack and trail
// walks show a path's nodes later, or not at all (see kernels::trail_descend
// and traverse_stack): there, each walk visits no node twice, visits every
// node within the final bound, and ends with the same best distances; the
// stack-free walk shows the root first, the deferring ones never. Checked
// directly on the host, node by node, for sizes whose last level is full,
// nearly empty and in between, and trees whose planes are degenerate
// (duplicates, a line). With node boxes, the stack and trail walks skip
// sub-trees whose boxes are out of reach: their radius visits are a
// subsequence of the stack-free walk's, with the same visits that matter.
TEST_CASE("radius walks visit in one order, kNN walks visit all that matters") {
  using Host = Kokkos::DefaultHostExecutionSpace;
  static_assert(kernels::has_fixed_bound<RecordingVisitor<true>>::value);
  static_assert(!kernels::has_fixed_bound<RecordingVisitor<false>>::value);
  Host exec;
  std::size_t pruned = 0;   // visits the stack walk's cell distances save
  std::size_t root_first = 0; // shrinking bound, n >= 1000: deferring walks that showed the root first
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(7), std::size_t(8),
                        std::size_t(100), std::size_t(1000), std::size_t(1025)}) {
    for (auto dist : {Distribution::uniform, Distribution::duplicates, Distribution::line}) {
      CAPTURE(n);
      CAPTURE(int(dist));
      auto pts = test::make_points<float, 3>(n, dist, 700 + n);
      auto queries = test::make_points<float, 3>(40, Distribution::uniform, 800 + n);
      queries[0] = pts[0];
      for (auto boxes : {NodeBoxPolicy::never, NodeBoxPolicy::always}) {
      CAPTURE(int(boxes));
      BuildOptions bo;
      bo.node_boxes = boxes;
      auto tree = build_left_balanced(exec, to_device<Host>(pts, "p"), bo);
      CHECK(tree.node_boxes().empty() == (boxes == NodeBoxPolicy::never || n < 2));
      for (int levels = 0; levels <= kernels::max_bucket_levels; ++levels) {
        CAPTURE(levels);
        for (auto const& q : queries) {
          float const sq_r = 0.2f * 0.2f;
          { // fixed bound, declared: one order
            RecordingVisitor<true> st{false, sq_r}, sf{false, sq_r}, tr{false, sq_r};
            kernels::traverse_stack(tree, q, st, levels);
            kernels::traverse_stack_free(tree, q, sf, levels);
            kernels::traverse_trail(tree, q, tr, levels);
            if (boxes == NodeBoxPolicy::never) {
              REQUIRE(!st.order.empty());
              CHECK(tr.order == sf.order);
            }
            CHECK(st.hits == sf.hits);
            CHECK(tr.hits == sf.hits);
            for (auto const* w : {&st, &tr}) { // w's visits are a subsequence of sf's
              std::size_t matched = 0;
              for (std::size_t j = 0; j < sf.order.size() && matched < w->order.size(); ++j)
                matched += sf.order[j] == w->order[matched] ? 1 : 0;
              CHECK(matched == w->order.size());
            }
            if (n >= 1000 && levels == 0) pruned += sf.order.size() - st.order.size();
          }
          for (bool shrinking : {true, false}) { // kNN-like; or a fixed radius not declared
            CAPTURE(shrinking);
            RecordingVisitor<false> st{shrinking, sq_r}, sf{shrinking, sq_r}, tr{shrinking, sq_r};
            kernels::traverse_stack(tree, q, st, levels);
            kernels::traverse_stack_free(tree, q, sf, levels);
            kernels::traverse_trail(tree, q, tr, levels);
            if (shrinking) REQUIRE(!sf.hits.empty()); // the first visit always matters
            float const final_bound = sf.bound();
            for (auto const* w : {&st, &tr}) {
              CHECK(w->bound() == final_bound);
              for (int j = 0; j < 4; ++j) // with a fixed radius, the best of what was visited within it
                if (shrinking || sf.best[j] <= sq_r || w->best[j] <= sq_r) CHECK(w->best[j] == sf.best[j]);
              auto sorted = w->order;
              std::sort(sorted.begin(), sorted.end());
              CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()); // none twice
              for (std::int32_t s = 0; s < std::int32_t(tree.node_count()); ++s) {
                if (!tree.has_node(s)) continue;
                auto const p = tree.load(s);
                if (kernels::sq_distance(q, p) <= final_bound)
                  CHECK(std::binary_search(sorted.begin(), sorted.end(), p.index));
              }
            }
            if (shrinking && n >= 1000) {
              std::int32_t const root = tree.load(0).index;
              CHECK(sf.order.front() == root);
              root_first += (st.order.front() == root ? 1 : 0) + (tr.order.front() == root ? 1 : 0);
            }
          }
        }
      }
      }
    }
  }
  CHECK(pruned > 0);
  CHECK(root_first == 0); // the deferral is on
}

// The overloads that write into the caller's result Views: the same results
// as the allocating calls, the caller's allocation kept when its extents fit
// (a time loop allocates nothing) and replaced when they do not.
TEST_CASE_TEMPLATE("queries write into the caller's result Views", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(3000, Distribution::clustered, 31);
  auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto q1 = to_device<Exec>(test::make_points<float, 3>(400, Distribution::uniform, 32), "q1");
  auto q2 = to_device<Exec>(test::make_points<float, 3>(250, Distribution::uniform, 33), "q2");
  KnnResultFor<Exec, decltype(tree)> kr;
  ClosestResultFor<Exec, decltype(tree)> cr;
  RadiusResultFor<Exec, decltype(tree)> rr;
  Kokkos::View<std::int64_t*, typename Exec::memory_space> counts;
  auto flat = [](auto const& v) { // any rank-1 or rank-2 View, row by row
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
    std::vector<typename decltype(h)::non_const_value_type> out;
    for (std::size_t i = 0; i < h.extent(0); ++i) {
      if constexpr (decltype(h)::rank == 1) out.push_back(h(i));
      else
        for (std::size_t j = 0; j < h.extent(1); ++j) out.push_back(h(i, j));
    }
    return out;
  };
  RadiusOptions ro;
  ro.sort = true;
  // with and without one workspace for all calls; q3 (8192 < M) sorts by 16
  // Morton bits where the others take 8, and grows the workspace
  auto q3 = to_device<Exec>(test::make_points<float, 3>(9000, Distribution::clustered, 34), "q3");
  QueryWorkspace<typename Exec::memory_space> ws;
  CHECK(ws.bytes() == 0);
  for (bool use_ws : {false, true}) {
    CAPTURE(use_ws);
    for (auto const& q : {q1, q1, q3, q2}) {
      auto* const kept_idx = kr.indices.data();
      bool const same_size = kr.indices.extent(0) == q.extent(0);
      if (use_ws) {
        knn(exec, tree, q, 7, kr, {}, ws);
        closest_point(exec, tree, q, cr, {}, ws);
        radius_count(exec, tree, q, 0.08, counts, ro, ws);
        radius_search(exec, tree, q, 0.08, rr, ro, ws);
        CHECK(ws.bytes() >= q.extent(0) * (sizeof(std::uint32_t) + sizeof(std::int32_t))); // codes and order
      } else {
        knn(exec, tree, q, 7, kr);
        closest_point(exec, tree, q, cr);
        radius_count(exec, tree, q, 0.08, counts, ro);
        radius_search(exec, tree, q, 0.08, rr, ro);
      }
      exec.fence();
      CHECK(kr.indices.extent(0) == q.extent(0));
      CHECK(kr.indices.extent(1) == 7);
      CHECK((kr.indices.data() == kept_idx) == same_size);
      auto fresh = knn(exec, tree, q, 7);
      CHECK(flat(fresh.indices) == flat(kr.indices));
      CHECK(flat(fresh.sq_distances) == flat(kr.sq_distances));
      auto c = closest_point(exec, tree, q);
      CHECK(to_host(c.indices) == to_host(cr.indices));
      CHECK(to_host(c.sq_distances) == to_host(cr.sq_distances));
      auto all = flat(fresh.indices);
      std::vector<std::int32_t> col;
      for (std::size_t i = 0; i < all.size(); i += 7) col.push_back(all[i]);
      CHECK(col == to_host(cr.indices)); // closest point is kNN's first column
      CHECK(to_host(radius_count(exec, tree, q, 0.08, ro)) == to_host(counts));
      auto r = radius_search(exec, tree, q, 0.08, ro);
      CHECK(to_host(r.offsets) == to_host(rr.offsets));
      CHECK(to_host(r.indices) == to_host(rr.indices));
      CHECK(to_host(r.sq_distances) == to_host(rr.sq_distances));
      CHECK(to_host(r.offsets).back() == std::int64_t(to_host(r.indices).size()));
    }
  }
  std::size_t const held = ws.bytes();
  knn(exec, tree, q2, 7, kr, {}, ws); // smaller: nothing reallocated
  exec.fence();
  CHECK(ws.bytes() == held);
  ws.release();
  CHECK(ws.bytes() == 0);
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

TEST_CASE_TEMPLATE("adversarial inputs get clear answers", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  SUBCASE("empty point set: valid empty tree, no neighbours") {
    auto tree = build_left_balanced(exec, Kokkos::View<Point<float, 3>*, typename Exec::memory_space>("none", 0));
    CHECK(tree.size() == 0);
    auto q = to_device<Exec>(test::make_points<float, 3>(5, Distribution::uniform, 1), "q");
    auto r = knn(exec, tree, q, 4);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 4; ++j) CHECK(hi(i, j) == -1);
    CHECK(to_host(radius_count(exec, tree, q, 1.0)) == std::vector<std::int64_t>(5, 0));
    auto rs = radius_search(exec, tree, q, 1.0);
    CHECK(rs.indices.extent(0) == 0);
  }
  SUBCASE("one point, and k > N") {
    std::vector<Point<double, 3>> pts{{1, 2, 3}};
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    auto r = knn(exec, tree, to_device<Exec>(std::vector<Point<double, 3>>{{0, 0, 0}}, "q"), 3);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
    CHECK(hi(0, 0) == 0);
    CHECK(hd(0, 0) == 14.0);
    CHECK(hi(0, 1) == -1);
    CHECK(std::isinf(hd(0, 2)));
  }
  SUBCASE("all-identical points: ties broken by index") {
    std::vector<Point<float, 3>> pts(1000, Point<float, 3>{{0.5f, 0.5f, 0.5f}});
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    check_tree(tree, pts);
    auto r = knn(exec, tree, to_device<Exec>(std::vector<Point<float, 3>>{{0.f, 0.f, 0.f}}, "q"), 5);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    for (int j = 0; j < 5; ++j) CHECK(hi(0, j) == j);
  }
  SUBCASE("NaN and infinity: rejected with the index, or dropped") {
    auto pts = test::make_points<float, 3>(100, Distribution::uniform, 3);
    pts[42][1] = std::numeric_limits<float>::quiet_NaN();
    pts[77][2] = std::numeric_limits<float>::infinity();
    auto d = to_device<Exec>(pts, "p");
    try {
      build_left_balanced(exec, d);
      FAIL("expected an error");
    } catch (kdforge::Error const& e) {
      CHECK(std::string(e.what()).find("point 42") != std::string::npos);
    }
    BuildOptions o;
    o.non_finite = NonFinitePolicy::drop;
    auto tree = build_left_balanced(exec, d, o);
    CHECK(tree.size() == 98);
    CHECK(tree.dropped_count() == 2);
    check_tree(tree, pts);
    // the caller's View is untouched
    auto back = to_host(d);
    CHECK(std::isnan(back[42][1]));
    CHECK(back[0][0] == pts[0][0]);
  }
  SUBCASE("bad query arguments") {
    auto tree = build_left_balanced(exec, to_device<Exec>(test::make_points<float, 3>(10, Distribution::uniform, 1), "p"));
    auto q = to_device<Exec>(test::make_points<float, 3>(2, Distribution::uniform, 2), "q");
    CHECK_THROWS_AS(knn(exec, tree, q, 0), kdforge::Error);
    CHECK_THROWS_AS(knn(exec, tree, q, -3), kdforge::Error);
    CHECK_THROWS_AS(radius_count(exec, tree, q, -1.0), kdforge::Error);
    CHECK_THROWS_AS(radius_search(exec, tree, q, std::nan("")), kdforge::Error);
    QueryOptions qo;
    qo.cutoff_radius = -2;
    CHECK_THROWS_AS(closest_point(exec, tree, q, qo), kdforge::Error);
    RadiusOptions ro;
    ro.buffer_size = -2;
    CHECK_THROWS_AS(radius_search(exec, tree, q, 0.1, ro), kdforge::Error);
    ro.buffer_size = std::int64_t(1) << 21;
    CHECK_THROWS_AS(radius_search(exec, tree, q, 0.1, ro), kdforge::Error);
    ro.buffer_size = 0;
    for (int bad : {-2, kernels::max_bucket_levels + 1}) {
      CAPTURE(bad);
      qo.cutoff_radius = 1;
      qo.bucket_levels = bad;
      ro.bucket_levels = bad;
      CHECK_THROWS_AS(knn(exec, tree, q, 2, qo), kdforge::Error);
      CHECK_THROWS_AS(radius_count(exec, tree, q, 0.1, ro), kdforge::Error);
      CHECK_THROWS_AS(radius_search(exec, tree, q, 0.1, ro), kdforge::Error);
    }
  }
  SUBCASE("recursive_select is refused on a GPU, with a clear error") {
    BuildOptions o;
    o.builder = Builder::recursive_select;
    auto d = to_device<Exec>(test::make_points<float, 3>(10, Distribution::uniform, 1), "p");
    if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible) {
      CHECK(build_left_balanced(exec, d, o).size() == 10);
    } else {
      CHECK_THROWS_AS(build_left_balanced(exec, d, o), kdforge::Error);
    }
  }
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

#if defined(__linux__) && !defined(KOKKOS_ENABLE_CUDA)
// The CPU radius search appends rows to per-chunk buffers inside a parallel
// region; running out of memory there once escaped the region (OpenMP
// terminates the program). With the address space capped a little above
// what the process maps now, a search whose rows need ~1.6 GB must throw
// kdforge::Error, and the next search must work. (Not in Cuda builds: the
// CUDA runtime's address-space reservations do not mix with the cap.)
TEST_CASE_TEMPLATE("out of memory in the CPU radius search is an error, not a crash", Exec, KDFORGE_TEST_SPACES) {
  if constexpr (!detail::runs_on_gpu<Exec>()) {
    Exec exec;
    auto const pts = test::make_points<float, 3>(10000, Distribution::uniform, 61);
    auto const qs = test::make_points<float, 3>(20000, Distribution::uniform, 62);
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    auto q = to_device<Exec>(qs, "q");
    RadiusResult<typename Exec::memory_space, float, std::int32_t> out;
    radius_search(exec, tree, q, 0.03, out); // checked against brute force elsewhere
    auto const before_offsets = to_host(out.offsets);
    auto const before_indices = to_host(out.indices);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    REQUIRE(pages > 0);
    rlimit old{};
    REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
    rlimit capped = old;
    capped.rlim_cur = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(128) << 20);
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < capped.rlim_cur) capped.rlim_cur = old.rlim_cur;
    REQUIRE(setrlimit(RLIMIT_AS, &capped) == 0);
    bool threw = false;
    std::string message;
    try {
      radius_search(exec, tree, q, 2.0, out); // every point is within 2 of every query: 2e8 rows
    } catch (Error const& e) {
      threw = true;
      message = e.what();
    }
    REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
    CHECK(threw);
    CHECK(message.find("out of memory") != std::string::npos);
    // nothing left broken: the same search as before the cap, the same rows
    radius_search(exec, tree, q, 0.03, out);
    CHECK(to_host(out.offsets) == before_offsets);
    CHECK(to_host(out.indices) == before_indices);
    CHECK(before_offsets.back() > 0);
  }
}
#endif

// Regrouping (QueryOptions::regroup_iterations) stops walks after a number of
// iterations, saves them and finishes them in a second pass: any cap, down
// to one iteration (every walk saved at its first step), must give the
// brute-force rows and exactly the rows of the uninterrupted walk, for every
// candidate list size (k = 20: the 32-slot list) and for closest point.
TEST_CASE_TEMPLATE("regrouped kNN walks give the same results", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (auto dist : {Distribution::uniform, Distribution::duplicates}) {
    CAPTURE(int(dist));
    auto pts = test::make_points<float, 3>(3000, dist, 901);
    auto queries = test::make_points<float, 3>(400, Distribution::uniform, 902);
    for (int i = 0; i < 40; ++i) queries[i] = pts[i * 11];
    auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
    auto dq = to_device<Exec>(queries, "q");
    QueryWorkspace<typename Exec::memory_space> ws;
    for (int k : {1, 3, 8, 16, 20}) {
      CAPTURE(k);
      std::vector<std::vector<Neighbor<float, std::int64_t>>> ref;
      for (auto const& q : queries) ref.push_back(test::brute_knn(pts, q, k, detail::infinity<float>()));
      QueryOptions qo;
      qo.traversal = Traversal::trail;
      qo.regroup_iterations = 0;
      auto plain = knn(exec, tree, dq, k, qo);
      auto pi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, plain.indices);
      auto pd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, plain.sq_distances);
      for (int cap : {1, 5, 40, 1000}) {
        CAPTURE(cap);
        qo.regroup_iterations = cap;
        KnnResultFor<Exec, decltype(tree)> r;
        knn(exec, tree, dq, k, r, qo, ws); // the workspace reused across k and caps
        // the two saved-walk counters take turns: the one just used holds
        // this call's count, the next call's was zeroed by this call
        auto counts = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ws.regroup_count);
        REQUIRE(counts.extent(0) == 2);
        CHECK(counts(ws.regroup_turn) == 0);
        CHECK(counts(1 - ws.regroup_turn) <= queries.size());
        if (cap == 1) CHECK(counts(1 - ws.regroup_turn) == queries.size()); // every walk saved at its first step
        auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
        auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
        for (std::size_t q = 0; q < queries.size(); ++q) {
          test::check_row(ref[q], &hi(q, 0), &hd(q, 0), k);
          for (int j = 0; j < k; ++j) {
            CHECK(hi(q, j) == pi(q, j));
            CHECK(hd(q, j) == pd(q, j));
          }
        }
      }
    }
    QueryOptions qo;
    qo.traversal = Traversal::trail;
    qo.cutoff_radius = 0.02;
    auto plain = closest_point(exec, tree, dq, qo);
    qo.regroup_iterations = 3;
    auto r = closest_point(exec, tree, dq, qo);
    CHECK(to_host(r.indices) == to_host(plain.indices));
    CHECK(to_host(r.sq_distances) == to_host(plain.sq_distances));
    int found = 0;
    for (auto i : to_host(r.indices)) found += i >= 0 ? 1 : 0;
    CHECK(found > 0); // the cutoff leaves some queries without a neighbour, not all
    CHECK(found < int(queries.size()));
  }
}

// The automatic setting regroups on GPUs once a call has enough queries
// (65536); its rows must be those of the plain walk.
TEST_CASE_TEMPLATE("automatic regrouping on a large batch changes no row", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(20000, Distribution::clustered, 911);
  auto queries = test::make_points<float, 3>(70000, Distribution::uniform, 912);
  auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto dq = to_device<Exec>(queries, "q");
  for (int k : {1, 8}) {
    CAPTURE(k);
    QueryOptions qo;
    auto automatic = knn(exec, tree, dq, k, qo);
    qo.regroup_iterations = 0;
    auto plain = knn(exec, tree, dq, k, qo);
    auto ai = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, automatic.indices);
    auto pi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, plain.indices);
    auto ad = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, automatic.sq_distances);
    bool same = true;
    for (std::size_t q = 0; q < queries.size(); ++q)
      for (int j = 0; j < k; ++j) same = same && ai(q, j) == pi(q, j);
    CHECK(same);
    for (std::size_t q = 0; q < queries.size(); q += 97)
      test::check_row(test::brute_knn(pts, queries[q], k, detail::infinity<float>()), &ai(q, 0), &ad(q, 0), k);
  }
}

TEST_CASE_TEMPLATE("bad regroup settings are errors", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  auto pts = test::make_points<float, 3>(100, Distribution::uniform, 921);
  auto tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto dq = to_device<Exec>(pts, "q");
  QueryOptions qo;
  qo.regroup_iterations = -2;
  CHECK_THROWS_WITH_AS(knn(exec, tree, dq, 4, qo), doctest::Contains("regroup_iterations must be -1"), kdforge::Error);
  qo.regroup_iterations = 10;
  qo.traversal = Traversal::stack;
  CHECK_THROWS_WITH_AS(knn(exec, tree, dq, 4, qo), doctest::Contains("needs Traversal::trail"), kdforge::Error);
  CHECK_THROWS_WITH_AS(closest_point(exec, tree, dq, qo), doctest::Contains("needs Traversal::trail"), kdforge::Error);
}
