// The tree walks (kernels/query/walks): what they visit and in which order,
// checked node by node on the host, and what bucket levels, regrouping and
// node boxes (ties among copies of one point, the box order of kNN walks)
// change, which is how fast they are and never what they find.
#include "brute_force.hpp"
#include "query_checks.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <vector>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

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

namespace {
// Collects a candidate list's rows on the host (a host-device functor: GPU
// compilers compile for_each_result for both sides).
template <class Index, class T>
struct Collect {
  std::vector<Index>* indices;
  std::vector<T>* sq_distances;
  template <class N>
  KOKKOS_FUNCTION void operator()(int, N const& nb) const {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    indices->push_back(nb.index);
    sq_distances->push_back(nb.sq_dist);
#else
    (void)nb;
#endif
  }
};

// Counts what a kNN walk shows its candidate list.
template <class Tree, int CAP>
struct CountingCandidates : kernels::SortedCandidates<Tree, CAP> {
  using Base = kernels::SortedCandidates<Tree, CAP>;
  std::int64_t visits = 0;
  CountingCandidates(Tree const& t, int k) : Base(t, k, detail::infinity<float>()) {}
  KOKKOS_FUNCTION void visit(typename Base::Index i, float d2) {
    ++visits;
    Base::visit(i, d2);
  }
};
} // namespace

TEST_CASE("kNN walks on copies of one point visit a few nodes, not the whole tree") {
  using Host = Kokkos::DefaultHostExecutionSpace;
  Host exec;
  std::size_t const n = 50000;
  auto const pts = test::make_points<float, 3>(n, Distribution::identical, 5);
  auto const tree = build_left_balanced(exec, to_device<Host>(pts, "points"));
  REQUIRE(!tree.node_boxes().empty());
  using Tree = std::decay_t<decltype(tree)>;
  for (int levels : {0, 2, 3}) {
    CAPTURE(levels);
    CountingCandidates<Tree, 8> st(tree, 8), tr(tree, 8);
    kernels::traverse_stack(tree, pts[0], st, levels);
    kernels::traverse_trail(tree, pts[0], tr, levels);
    for (auto const* c : {&st, &tr}) {
      CHECK(c->visits < 2000); // without the tie-aware boxes: all 50000
      std::vector<std::int32_t> got;
      std::vector<float> dist;
      c->for_each_result(8, Collect<std::int32_t, float>{&got, &dist});
      CHECK(got == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}); // the smallest indices win ties
    }
  }
}

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

// With node boxes a kNN walk goes first into the child whose box is nearer,
// and prunes by the principal-axes boxes: off a tilted plane and a diagonal
// line, far fewer points reach the candidate list than with the split planes
// alone, the same final rows either way (checked against brute force in
// test_geometry.cpp).
TEST_CASE("kNN walks with node boxes show the candidates a fraction of the points") {
  using Host = Kokkos::DefaultHostExecutionSpace;
  Host exec;
  for (auto dist : {Distribution::tilted_plane, Distribution::line}) {
    CAPTURE(std::string(test::name(dist)));
    auto const pts = test::make_points<float, 3>(100000, dist, 15);
    auto const queries = test::make_points<float, 3>(200, Distribution::uniform, 16);
    BuildOptions with, without;
    with.node_boxes = NodeBoxPolicy::always;
    without.node_boxes = NodeBoxPolicy::never;
    auto const boxed = build_left_balanced(exec, to_device<Host>(pts, "points"), with);
    auto const plain = build_left_balanced(exec, to_device<Host>(pts, "points"), without);
    using Tree = std::decay_t<decltype(boxed)>;
    for (int walk = 0; walk < 2; ++walk) {
      CAPTURE(walk);
      std::int64_t visits_boxed = 0, visits_plain = 0;
      for (auto const& q : queries) {
        CountingCandidates<Tree, 8> b(boxed, 8), p(plain, 8);
        if (walk == 0) {
          kernels::traverse_stack(boxed, q, b, 3);
          kernels::traverse_stack(plain, q, p, 3);
        } else {
          kernels::traverse_trail(boxed, q, b, 2);
          kernels::traverse_trail(plain, q, p, 2);
        }
        visits_boxed += b.visits;
        visits_plain += p.visits;
        std::vector<std::int32_t> ib, ip;
        std::vector<float> db, dp;
        b.for_each_result(8, Collect<std::int32_t, float>{&ib, &db});
        p.for_each_result(8, Collect<std::int32_t, float>{&ip, &dp});
        CHECK(ib == ip);
        CHECK(db == dp);
      }
      CAPTURE(visits_boxed);
      CAPTURE(visits_plain);
      CHECK(visits_boxed * 8 < visits_plain);
    }
  }
}
