// Running out of memory: every allocation of every builder and query may
// fail (kdforge::detail::fail_allocation_after fails them one after the
// other, as a full memory space would), and each failure must reach the
// caller as kdforge::OutOfMemoryError naming the bytes requested and
// available, leave the trees, the results and the workspace passed in as
// they were, and let the next call succeed with the right answer. The
// process-wide memory limit refuses larger allocations the same way; the
// bucket tree's up-front check honours it; a radius search whose rows
// would exceed 2^31 entries is counted in 64 bits and refused, with the
// bytes it needs, before anything is written. Runs on every backend: on
// Cuda the same allocations fail (tests/README.md: running on a GPU).
#include "brute_force.hpp"
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

using namespace kdforge;
using test::Distribution;
using test::MemoryGuard;
using test::to_device;
using test::to_host;

namespace {

/// The contents of any View, flattened on the host (for before/after checks).
template <class V>
std::vector<char> bytes_of(V const& v) {
  Kokkos::fence();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  std::vector<char> out(h.span() * sizeof(typename V::value_type));
  if (!out.empty()) std::memcpy(out.data(), h.data(), out.size());
  return out;
}

/// Calls `call` with the first, then the second, ... allocation made inside
/// it failing, until a call makes no more allocations than that and
/// succeeds. Every failure must be an OutOfMemoryError that names the
/// bytes and the entry point; after each, `unchanged` checks that the
/// caller's state is as it was. Returns the number of allocations that
/// failed (at least 1 where the call allocates at all).
int fail_each_allocation(char const* entry_point, std::function<void()> const& call,
                         std::function<void()> const& unchanged) {
  int failures = 0;
  for (int k = 0;; ++k) {
    REQUIRE(k < 2000);
    detail::fail_allocation_after(k);
    bool failed = false;
    try {
      call();
    } catch (OutOfMemoryError const& e) {
      failed = true;
      std::string const what = e.what();
      CAPTURE(what);
      CHECK(what.find(std::string("kdforge::") + entry_point) != std::string::npos);
      CHECK(what.find("out of memory") != std::string::npos);
      CHECK(what.find("bytes") != std::string::npos);
    }
    detail::fail_allocation_after(-1);
    if (!failed) break;
    ++failures;
    unchanged();
  }
  return failures;
}

template <class Exec>
Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> as_rows(std::vector<Point<float, 3>> const& p) {
  Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> r("rows", p.size(), 3);
  auto h = Kokkos::create_mirror_view(r);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (int d = 0; d < 3; ++d) h(i, d) = p[i][d];
  Kokkos::deep_copy(r, h);
  return r;
}

} // namespace

TEST_CASE_TEMPLATE("an allocation above the memory limit fails as if the memory space were full", Exec,
                   KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  Exec exec;
  auto const pts = test::make_points<float, 3>(10000, Distribution::uniform, 1);
  auto const qs = test::make_points<float, 3>(10000, Distribution::uniform, 2);
  auto const dp = to_device<Exec>(pts, "p");
  auto const dq = to_device<Exec>(qs, "q");
  auto tree = build_left_balanced(exec, dp);
  auto const earlier = knn(exec, tree, dq, 8);
  auto const earlier_indices = bytes_of(earlier.indices);
  set_memory_limit(64 << 10);
  CHECK(memory_limit() == (64 << 10));
  try {
    build_left_balanced(exec, dp);
    FAIL("a build over 10000 points fitted in 64 KiB");
  } catch (OutOfMemoryError const& e) {
    std::string const what = e.what();
    CAPTURE(what);
    CHECK(e.requested_bytes() > (64u << 10));
    CHECK(e.available_bytes() <= (64u << 10));
    CHECK(what.find("kdforge::build_left_balanced: out of memory") != std::string::npos);
    CHECK(what.find("kdforge::set_memory_limit") != std::string::npos);
    CHECK(what.find(std::to_string(e.requested_bytes()) + " bytes") != std::string::npos);
  }
  // a query whose results do not fit: refused, the caller's results kept
  auto out = earlier;
  CHECK_THROWS_AS(knn(exec, tree, dq, 16, out), OutOfMemoryError);
  CHECK(out.indices.data() == earlier.indices.data());
  CHECK(bytes_of(out.indices) == earlier_indices);
  // the memory kdforge reports available is capped too
  CHECK(backend::available_bytes(exec) <= (64u << 10));
  set_memory_limit(0);
  auto again = knn(exec, build_left_balanced(exec, dp), dq, 8);
  CHECK(bytes_of(again.indices) == earlier_indices);
}

TEST_CASE_TEMPLATE("resize keeps the rows both extents share, resize_keeping only the rows in use", Exec,
                   KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  using MS = typename Exec::memory_space;
  using Rows = Kokkos::View<float**, Kokkos::LayoutRight, MS>;
  auto filled = [](std::size_t n, std::size_t m) {
    Rows v("rows", n, m);
    auto h = Kokkos::create_mirror_view(v);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) h(i, j) = float(100 * i + j);
    Kokkos::deep_copy(v, h);
    return v;
  };
  auto rows_equal = [](Rows const& v, std::size_t rows, std::size_t cols) { // copies only the rows kept
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{},
                                                 Kokkos::subview(v, Kokkos::make_pair(std::size_t(0), rows), Kokkos::ALL));
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j)
        if (h(i, j) != float(100 * i + j)) return false;
    return true;
  };
  SUBCASE("resize: grown and narrowed, then shrunk") {
    auto v = filled(5, 4);
    backend::resize(v, 9, 3);
    REQUIRE(v.extent(0) == 9);
    REQUIRE(v.extent(1) == 3);
    CHECK(rows_equal(v, 5, 3));
    backend::resize(v, 2, 3);
    REQUIRE(v.extent(0) == 2);
    CHECK(rows_equal(v, 2, 3));
  }
  SUBCASE("resize_keeping copies the first rows only, and never more than both extents hold") {
    auto v = filled(6, 2);
    auto const old = v;
    backend::resize_keeping(v, 3, 12, 2);
    REQUIRE(v.extent(0) == 12);
    CHECK(v.data() != old.data());
    CHECK(rows_equal(v, 3, 2));
    auto w = filled(4, 2);
    backend::resize_keeping(w, 10, 3, 2); // more rows in use than the new extent: clamped
    REQUIRE(w.extent(0) == 3);
    CHECK(rows_equal(w, 3, 2));
    Kokkos::View<int*, MS> one("one", 4);
    Kokkos::deep_copy(one, 7);
    backend::resize_keeping(one, 0, 8); // nothing in use: nothing copied
    CHECK(one.extent(0) == 8);
  }
  SUBCASE("a failed allocation leaves the View as it was") {
    auto v = filled(5, 4);
    auto const old = v;
    detail::fail_allocation_after(0);
    CHECK_THROWS_AS(backend::resize_keeping(v, 5, 50, 4), OutOfMemoryError);
    detail::fail_allocation_after(-1);
    CHECK(v.data() == old.data());
    CHECK(v.extent(0) == 5);
    CHECK(rows_equal(v, 5, 4));
  }
}

TEST_CASE_TEMPLATE("reserve grows a builder's scratch at least twofold, never shrinks it, and frees the old first", Exec,
                   KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  using V = Kokkos::View<int*, typename Exec::memory_space>;
  V v("kdforge::scratch", 10);
  auto const first = v.data();
  backend::reserve(v, 10); // holds enough: untouched
  CHECK(v.data() == first);
  backend::reserve(v, 3);
  CHECK(v.extent(0) == 10);
  backend::reserve(v, 11); // a little more: doubled
  CHECK(v.extent(0) == 20);
  CHECK(v.label() == "kdforge::scratch");
  backend::reserve(v, 100, "kdforge::renamed"); // much more: exactly that
  CHECK(v.extent(0) == 100);
  CHECK(v.label() == "kdforge::renamed");
  V empty;
  backend::reserve(empty, 0);
  CHECK(empty.extent(0) == 0);
  backend::reserve(empty, 1, "kdforge::from_empty");
  CHECK(empty.extent(0) == 1);
  CHECK(empty.label() == "kdforge::from_empty");
  // the old allocation is released before the new one is made, so a
  // failure leaves the View empty (the builders then throw and drop it)
  detail::fail_allocation_after(0);
  CHECK_THROWS_AS(backend::reserve(v, 1000), OutOfMemoryError);
  detail::fail_allocation_after(-1);
  CHECK(v.extent(0) == 0);
}

TEST_CASE_TEMPLATE("an arena serves a scope's uninitialised allocations once it has seen what a scope asks for", Exec,
                   KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  using MS = typename Exec::memory_space;
  using V = Kokkos::View<double*, MS>;
  using M = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MS>;
  auto uninit = [](std::string const& label) { return Kokkos::view_alloc(Kokkos::WithoutInitializing, label); };
  backend::Arena<MS> arena;
  CHECK(arena.bytes() == 0);
  auto const before = detail::allocations_made();
  { // the first scope allocates as usual and records what it asked for
    backend::ArenaScope<MS> scope(arena);
    auto a = backend::allocate<V>(uninit("a"), 1000);
    auto b = backend::allocate<M>(uninit("b"), 3, 700);
    CHECK(a.label() == "a"); // managed Views of their own
    CHECK(b.label() == "b");
  }
  CHECK(detail::allocations_made() - before == 2);
  CHECK(arena.bytes() == 0);
  std::size_t size = 0;
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    backend::ArenaScope<MS> scope(arena); // grows the arena to what the last scope asked for
    CHECK(arena.bytes() >= 1000 * sizeof(double) + 3 * 700 * sizeof(std::int32_t));
    CHECK(arena.bytes() > size);
    size = arena.bytes();
    char const* base = nullptr;
    auto const made = detail::allocations_made();
    auto a = backend::allocate<V>(uninit("a"), 1000);
    auto b = backend::allocate<M>(uninit("b"), 3, 700);
    auto zeroed = backend::allocate<V>("zeroed", 10); // initialised Views are never from the arena
    CHECK(detail::allocations_made() - made == 1);
    CHECK(zeroed.label() == "zeroed");
    auto inside = [&](void const* p, std::size_t bytes) {
      if (!base) base = static_cast<char const*>(p);
      auto const c = static_cast<char const*>(p);
      return c >= base && c + bytes <= base + size && std::uintptr_t(c) % 64 == 0; // Kokkos::Impl::MEMORY_ALIGNMENT
    };
    CHECK(inside(a.data(), 1000 * sizeof(double)));
    CHECK(inside(b.data(), 3 * 700 * sizeof(std::int32_t)));
    CHECK((a.data() + 1000 <= static_cast<void const*>(b.data()) ||
           static_cast<void const*>(b.data() + 2100) <= a.data())); // disjoint
    CHECK(b.extent(0) == 3);
    CHECK(b.extent(1) == 700);
    // usable: written and read back through the execution space
    Kokkos::parallel_for(Kokkos::RangePolicy<Exec>(0, 2100), KOKKOS_LAMBDA(int i) { b(i / 700, i % 700) = i; });
    std::int64_t sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::RangePolicy<Exec>(0, 2100), KOKKOS_LAMBDA(int i, std::int64_t& s) { s += b(i / 700, i % 700); }, sum);
    CHECK(sum == std::int64_t(2100) * 2099 / 2);
    // what does not fit is allocated as usual
    auto big = backend::allocate<V>(uninit("big"), size / sizeof(double)); // more than is left
    CHECK(big.label() == "big");
    CHECK(detail::allocations_made() - made == 2);
    { // an inner scope over another arena serves, then the outer again
      backend::Arena<MS> other;
      {
        backend::ArenaScope<MS> inner(other);
        CHECK(backend::allocate<V>(uninit("c"), 1).label() == "c"); // the inner, empty arena: as usual
      }
      CHECK(other.bytes() == 0);
    }
    auto d = backend::allocate<V>(uninit("d"), 1);
    CHECK(d.label().empty()); // from the outer arena again
  }
  // no scope, no arena
  auto e = backend::allocate<V>(uninit("e"), 1);
  CHECK(e.label() == "e");
  // the big request was recorded: the next scope grows the arena for it,
  // and one that asks for nothing leaves it so
  { backend::ArenaScope<MS> scope(arena); }
  std::size_t const grown = arena.bytes();
  CHECK(grown > size);
  { backend::ArenaScope<MS> scope(arena); }
  CHECK(arena.bytes() == grown);
  arena.release();
  CHECK(arena.bytes() == 0);

  // one scope over an arena at a time
  {
    backend::ArenaScope<MS> scope(arena);
    CHECK_THROWS_AS(backend::ArenaScope<MS>{arena}, Error);
  }
  { backend::ArenaScope<MS> again(arena); } // the refused one left the arena as it was

  // a block the memory space refuses: scopes allocate as usual, and do not
  // ask for a block again until the arena is released
  backend::Arena<MS> small;
  { // asks for 16 KiB in two pieces: the next scope wants a block of 20 KiB
    backend::ArenaScope<MS> scope(small);
    backend::allocate<V>(uninit("p"), 1000);
    backend::allocate<V>(uninit("q"), 1000);
  }
  set_memory_limit(12000); // each piece fits, the block does not
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    auto const made = detail::allocations_made();
    backend::ArenaScope<MS> scope(small);
    CHECK(detail::allocations_made() - made == (round == 0 ? 1 : 0)); // the refused block, once
    CHECK(small.bytes() == 0);
    auto p = backend::allocate<V>(uninit("p"), 1000);
    CHECK(p.label() == "p");
  }
  set_memory_limit(0);
  { backend::ArenaScope<MS> scope(small); }
  CHECK(small.bytes() == 0);
  small.release();
  { // asks again, and is served from the next scope on
    backend::ArenaScope<MS> scope(small);
    backend::allocate<V>(uninit("p"), 1000);
  }
  backend::ArenaScope<MS> scope(small);
  CHECK(small.bytes() >= 1000 * sizeof(double));
  CHECK(backend::allocate<V>(uninit("p"), 1000).label().empty());
}

TEST_CASE_TEMPLATE("an arena reserved in advance serves its first scope; a pause hides it", Exec, KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  using MS = typename Exec::memory_space;
  using V = Kokkos::View<double*, MS>;
  auto uninit = [](std::string const& label) { return Kokkos::view_alloc(Kokkos::WithoutInitializing, label); };
  backend::Arena<MS> arena;
  arena.reserve(3000 * sizeof(double));
  std::size_t const size = arena.bytes();
  CHECK(size >= 3000 * sizeof(double));
  CHECK(size < 4000 * sizeof(double)); // what was asked for, not a quarter more
  arena.reserve(10); // never shrinks
  CHECK(arena.bytes() == size);
  {
    backend::ArenaScope<MS> scope(arena);
    CHECK_THROWS_AS(arena.reserve(1 << 20), Error); // not while a scope is alive
    auto const made = detail::allocations_made();
    auto a = backend::allocate<V>(uninit("a"), 1000);
    CHECK(a.label().empty()); // served by the first scope
    {
      backend::ArenaPause<MS> const pause;
      auto own = backend::allocate<V>(uninit("own"), 1000);
      CHECK(own.label() == "own"); // allocated as usual, outliving the scope
      backend::Arena<MS> other; // a block of its own is never from the paused arena
      other.reserve(1024); // 800 bytes, served in steps of 256
      backend::ArenaScope<MS> inner(other);
      CHECK(backend::allocate<V>(uninit("b"), 100).label().empty());
    }
    auto c = backend::allocate<V>(uninit("c"), 1000);
    CHECK(c.label().empty()); // the pause is over
    CHECK(detail::allocations_made() - made == 2); // `own` and the other arena's block
    CHECK((c.data() >= a.data() + 1000 || c.data() + 1000 <= a.data()));
  }
  CHECK(arena.bytes() == size);
  // a block the memory space refuses leaves the arena empty, and its scopes
  // allocate as usual
  backend::Arena<MS> refused;
  detail::fail_allocation_after(0);
  refused.reserve(1000);
  detail::fail_allocation_after(-1);
  CHECK(refused.bytes() == 0);
  backend::ArenaScope<MS> scope(refused);
  CHECK(backend::allocate<V>(uninit("d"), 10).label() == "d");
}

TEST_CASE_TEMPLATE("a small bucket build takes its scratch from one block", Exec, KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  Exec exec;
  // enough points for levels of the loop before the team finish takes the
  // nodes of at most finish_limit points
  std::size_t const n = 12000;
  REQUIRE(std::int64_t(n) > kernels::bfs::finish_limit);
  auto const p = as_rows<Exec>(test::make_points<float, 3>(n, Distribution::clustered, 11));
  BucketOptions o;
  o.bucket_size = 4;
  auto const made = detail::allocations_made();
  auto const tree = build_bucket_tree(exec, p, o);
  // the tree's points, indices, nodes and boxes, the sorted lists, the
  // block (on GPUs perhaps the vendor sort's storage beside): some twenty
  // allocations before
  CHECK(detail::allocations_made() - made <= 8);
  CHECK(tree.size() == n);
  CHECK(tree.height() > 8);
  // the block counts in the peak the build reports and is checked against
  using MS = typename Exec::memory_space;
  std::int64_t const block = kernels::bfs::scratch_block_bytes<float, std::int32_t, MS>(std::int64_t(n), 3, 4);
  CHECK(block > 0);
  std::int64_t const finish = kernels::bfs::finish_bytes<float, std::int32_t>(std::int64_t(n), 3, 4);
  CHECK(finish > 0);
  CHECK(tree.build_peak_bytes() == kernels::bfs::peak_bytes<float, std::int32_t>(std::int64_t(n), 3) + finish + block);
  o.memory_limit = std::size_t(tree.build_peak_bytes()) - 1;
  CHECK_THROWS_AS(build_bucket_tree(exec, p, o), OutOfMemoryError);
  o.memory_limit = std::size_t(tree.build_peak_bytes());
  CHECK(build_bucket_tree(exec, p, o).node_count() == tree.node_count());
}

TEST_CASE_TEMPLATE("every allocation of every builder may fail, and the caller's trees stay usable", Exec,
                   KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  using MS = typename Exec::memory_space;
  Exec exec;
  auto pts = test::make_points<float, 3>(3000, Distribution::clustered, 3);
  auto const qs = test::make_points<float, 3>(200, Distribution::clustered, 4);
  auto const dp = to_device<Exec>(pts, "p");
  auto const dq = to_device<Exec>(qs, "q");
  auto const rows = as_rows<Exec>(pts);
  auto const qrows = as_rows<Exec>(qs);
  auto const kept = build_left_balanced(exec, dp); // built before any failure: must stay usable
  auto const reference = bytes_of(knn(exec, kept, dq, 6).indices);
  auto const kept_usable = [&] { CHECK(bytes_of(knn(exec, kept, dq, 6).indices) == reference); };

  auto check_left_balanced = [&](BuildOptions const& bo, char const* what) {
    CAPTURE(what);
    LeftBalancedTree<MS, float, 3> tree;
    int const failures = fail_each_allocation(
        "build_left_balanced", [&] { tree = build_left_balanced(exec, dp, bo); }, kept_usable);
    CHECK(failures >= 3);
    CHECK(bytes_of(knn(exec, tree, dq, 6).indices) == reference);
  };
  {
    BuildOptions bo;
    bo.node_boxes = NodeBoxPolicy::always;
    check_left_balanced(bo, "automatic");
    bo.builder = Builder::wald_tags;
    bo.split = SplitPolicy::widest_dimension;
    check_left_balanced(bo, "wald_tags, widest");
    bo.builder = Builder::presorted_partition;
    check_left_balanced(bo, "presorted_partition, widest");
    bo.split = SplitPolicy::round_robin;
    check_left_balanced(bo, "presorted_partition, round robin");
    if constexpr (!detail::runs_on_gpu<Exec>()) {
      bo.builder = Builder::recursive_select;
      check_left_balanced(bo, "recursive_select");
    }
  }
  {
    // NaN points dropped: the compaction's allocations too
    auto with_nan = pts;
    with_nan.push_back(Point<float, 3>{{std::numeric_limits<float>::quiet_NaN(), 0.f, 0.f}});
    auto const dn = to_device<Exec>(with_nan, "p_nan");
    BuildOptions bo;
    bo.non_finite = NonFinitePolicy::drop;
    LeftBalancedTree<MS, float, 3> tree;
    fail_each_allocation("build_left_balanced", [&] { tree = build_left_balanced(exec, dn, bo); }, kept_usable);
    CHECK(bytes_of(knn(exec, tree, dq, 6).indices) == reference);
  }
  {
    SplitSortOptions so;
    so.node_boxes = NodeBoxPolicy::always;
    MedianTree<MS, float, 3> tree;
    CHECK(fail_each_allocation("build_split_sort", [&] { tree = build_split_sort(exec, dp, so); }, kept_usable) >= 3);
    CHECK(bytes_of(knn(exec, tree, dq, 6).indices) == reference);
  }
  {
    BucketTree<MS, float> tree;
    CHECK(fail_each_allocation("build_bucket_tree", [&] { tree = build_bucket_tree(exec, rows); }, kept_usable) >= 3);
    CHECK(bytes_of(knn(exec, tree, qrows, 6).indices) == reference);
  }
  {
    VvhTree<MS, float> tree;
    CHECK(fail_each_allocation("build_vvh_tree", [&] { tree = build_vvh_tree(exec, dp); }, kept_usable) >= 3);
    CHECK(bytes_of(knn(exec, tree, qrows, 6).indices) == reference);
  }
  {
    // triangles: a strip of 300 random triangles; rays from above
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    int const nv = 400, nf = 300;
    Kokkos::View<float* [3], MS> v("v", nv);
    Kokkos::View<std::int32_t* [3], MS> f("f", nf);
    auto hv = Kokkos::create_mirror_view(v);
    auto hf = Kokkos::create_mirror_view(f);
    for (int i = 0; i < nv; ++i)
      for (int d = 0; d < 3; ++d) hv(i, d) = u(rng);
    for (int i = 0; i < nf; ++i)
      for (int c = 0; c < 3; ++c) hf(i, c) = std::int32_t(rng() % nv);
    Kokkos::deep_copy(v, hv);
    Kokkos::deep_copy(f, hf);
    Kokkos::View<Ray<float>*, MS> rays("rays", 100);
    auto hr = Kokkos::create_mirror_view(rays);
    for (int i = 0; i < 100; ++i) hr(i) = Ray<float>{{u(rng), u(rng), 2.f}, {0.f, 0.f, -1.f}, 0.f, 10.f};
    Kokkos::deep_copy(rays, hr);
    auto const scene = build_sah_tree(exec, v, f);
    auto const hits_ref = bytes_of(intersect_closest(exec, scene, rays));
    TriangleTree<MS, float> tree;
    CHECK(fail_each_allocation("build_sah_tree", [&] { tree = build_sah_tree(exec, v, f); },
                               [&] { CHECK(bytes_of(intersect_closest(exec, scene, rays)) == hits_ref); }) >= 3);
    CHECK(bytes_of(intersect_closest(exec, tree, rays)) == hits_ref);
    // and the ray queries, into results passed in
    auto hits = intersect_closest(exec, scene, rays);
    Kokkos::View<Ray<float>*, MS> other("rays2", 100);
    auto ho = Kokkos::create_mirror_view(other);
    for (int i = 0; i < 100; ++i) ho(i) = Ray<float>{{u(rng), u(rng), -1.f}, {0.f, 0.f, 1.f}, 0.f, 10.f};
    Kokkos::deep_copy(other, ho);
    fail_each_allocation("intersect_closest", [&] { intersect_closest(exec, scene, other, hits); },
                         [&] { CHECK(bytes_of(hits) == hits_ref); });
    auto occluded = intersect_any(exec, scene, rays);
    auto const occluded_ref = bytes_of(occluded);
    Kokkos::View<Ray<float>*, MS> more("rays3", 150); // a different length: the results are reallocated
    auto hm = Kokkos::create_mirror_view(more);
    for (int i = 0; i < 150; ++i) hm(i) = Ray<float>{{u(rng), u(rng), 2.f}, {0.f, 0.f, -1.f}, 0.f, 10.f};
    Kokkos::deep_copy(more, hm);
    fail_each_allocation("intersect_any", [&] { intersect_any(exec, scene, more, occluded); },
                         [&] { CHECK(bytes_of(occluded) == occluded_ref); });
  }
}

TEST_CASE_TEMPLATE("every allocation of every query may fail, and earlier results and the workspace stay as they were",
                   Exec, KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  using MS = typename Exec::memory_space;
  Exec exec;
  auto const pts = test::make_points<float, 3>(4000, Distribution::scan, 6);
  auto const qa = test::make_points<float, 3>(300, Distribution::uniform, 7);
  auto const qb = test::make_points<float, 3>(300, Distribution::scan, 8);
  auto const qc = test::make_points<float, 3>(170, Distribution::uniform, 9);
  auto const dp = to_device<Exec>(pts, "p");
  auto const da = to_device<Exec>(qa, "qa");
  auto const db = to_device<Exec>(qb, "qb");
  auto const dc = to_device<Exec>(qc, "qc");
  BuildOptions bo;
  bo.node_boxes = NodeBoxPolicy::always;
  auto const tree = build_left_balanced(exec, dp, bo);
  QueryWorkspace<MS> ws;

  for (int k : {4, 40}) { // sorted candidate lists and the heap
    CAPTURE(k);
    auto const ref_b = bytes_of(knn(exec, tree, db, k).indices);
    KnnResultFor<Exec, decltype(tree)> out;
    knn(exec, tree, da, k, out, {}, ws);
    auto const a_idx = bytes_of(out.indices), a_dist = bytes_of(out.sq_distances);
    auto const unchanged = [&] {
      CHECK(bytes_of(out.indices) == a_idx);
      CHECK(bytes_of(out.sq_distances) == a_dist);
    };
    auto copy = out;
    fail_each_allocation("knn", [&] { knn(exec, tree, dc, k, copy, {}, ws); }, [&] {
      CHECK(copy.indices.data() == out.indices.data());
      unchanged();
    });
    fail_each_allocation("knn", [&] { knn(exec, tree, db, k, out, {}, ws); }, unchanged);
    CHECK(bytes_of(out.indices) == ref_b);
  }
  {
    auto const ref_b = bytes_of(closest_point(exec, tree, db).indices);
    ClosestResultFor<Exec, decltype(tree)> out;
    closest_point(exec, tree, da, out, {}, ws);
    auto const a_idx = bytes_of(out.indices);
    fail_each_allocation("closest_point", [&] { closest_point(exec, tree, db, out, {}, ws); },
                         [&] { CHECK(bytes_of(out.indices) == a_idx); });
    CHECK(bytes_of(out.indices) == ref_b);
  }
  {
    auto const ref_b = bytes_of(radius_count(exec, tree, db, 0.05));
    Kokkos::View<std::int64_t*, MS> counts;
    radius_count(exec, tree, dc, 0.05, counts, {}, ws);
    auto const c_counts = bytes_of(counts);
    fail_each_allocation("radius_count", [&] { radius_count(exec, tree, db, 0.05, counts, {}, ws); },
                         [&] { CHECK(bytes_of(counts) == c_counts); });
    CHECK(bytes_of(counts) == ref_b);
  }
  for (int mode = 0; mode < 4; ++mode) {
    RadiusOptions ro;
    if (mode == 1) ro.buffer_size = 0;  // count, then fill
    if (mode == 2) ro.buffer_size = 3;  // scratch rows
    if (mode == 3) ro.max_neighbors = 3; // the nearest 3, sorted
    ro.sort = mode != 1;
    CAPTURE(mode);
    auto const ref = radius_search(exec, tree, db, 0.05, ro);
    auto const ref_off = bytes_of(ref.offsets), ref_idx = bytes_of(ref.indices);
    RadiusResultFor<Exec, decltype(tree)> out;
    radius_search(exec, tree, da, 1e-6, out, ro, ws); // (almost) no rows: the next call must grow them
    auto const a_off = bytes_of(out.offsets), a_idx = bytes_of(out.indices), a_dist = bytes_of(out.sq_distances);
    auto const unchanged = [&] {
      CHECK(bytes_of(out.offsets) == a_off);
      CHECK(bytes_of(out.indices) == a_idx);
      CHECK(bytes_of(out.sq_distances) == a_dist);
    };
    CHECK(fail_each_allocation("radius_search", [&] { radius_search(exec, tree, db, 0.05, out, ro, ws); }, unchanged) >= 1);
    CHECK(bytes_of(out.offsets) == ref_off);
    CHECK(bytes_of(out.indices) == ref_idx);
    // per-query radii (their check allocates too), fewer queries
    Kokkos::View<double*, MS> radii("radii", qc.size());
    Kokkos::deep_copy(radii, 0.03);
    auto const b_off = bytes_of(out.offsets);
    fail_each_allocation("radius_search", [&] { radius_search(exec, tree, dc, radii, out, ro, ws); },
                         [&] { CHECK(bytes_of(out.offsets) == b_off); });
  }
  {
    // bucket trees and their brute force; approximate and brute-force kNN
    auto const rows = as_rows<Exec>(pts);
    auto const rb = as_rows<Exec>(qb);
    auto const ra = as_rows<Exec>(qa);
    auto const btree = build_bucket_tree(exec, rows);
    for (auto strategy : {KnnStrategy::tree, KnnStrategy::brute_force}) {
      QueryOptions qo;
      qo.strategy = strategy;
      auto const ref_b = bytes_of(knn(exec, btree, rb, 5, qo).indices);
      KnnResultFor<Exec, decltype(btree)> out;
      knn(exec, btree, ra, 5, out, qo);
      auto const a_idx = bytes_of(out.indices);
      fail_each_allocation("knn", [&] { knn(exec, btree, rb, 5, out, qo); },
                           [&] { CHECK(bytes_of(out.indices) == a_idx); });
      CHECK(bytes_of(out.indices) == ref_b);
      ClosestResultFor<Exec, decltype(btree)> cp;
      closest_point(exec, btree, ra, cp, qo);
      auto const a_cp = bytes_of(cp.indices);
      fail_each_allocation("closest_point", [&] { closest_point(exec, btree, rb, cp, qo); },
                           [&] { CHECK(bytes_of(cp.indices) == a_cp); });
    }
    RadiusResultFor<Exec, decltype(btree)> out;
    radius_search(exec, btree, ra, 0.02, out);
    auto const a_off = bytes_of(out.offsets), a_idx = bytes_of(out.indices);
    fail_each_allocation("radius_search", [&] { radius_search(exec, btree, rb, 0.05, out); }, [&] {
      CHECK(bytes_of(out.offsets) == a_off);
      CHECK(bytes_of(out.indices) == a_idx);
    });
    auto const ref_apx = bytes_of(knn_approximate(exec, btree, rb, 5).indices);
    KnnResultFor<Exec, decltype(btree)> apx;
    fail_each_allocation("knn_approximate", [&] { apx = knn_approximate(exec, btree, rb, 5); }, [] {});
    CHECK(bytes_of(apx.indices) == ref_apx);
    auto const ref_bf = bytes_of(knn_brute_force(exec, rows, rb, 5).indices);
    KnnResultFor<Exec, decltype(btree)> bf;
    fail_each_allocation("knn_brute_force", [&] { bf = knn_brute_force(exec, rows, rb, 5); }, [] {});
    CHECK(bytes_of(bf.indices) == ref_bf);
  }
  {
    // approximate kNN on a level-order tree; photon trees' range kNN
    ApproximateOptions ao;
    ao.queue_capacity = 4;
    auto const ref = bytes_of(knn_approximate(exec, tree, db, 5, ao).indices);
    KnnResultFor<Exec, decltype(tree)> apx;
    fail_each_allocation("knn_approximate", [&] { apx = knn_approximate(exec, tree, db, 5, ao); }, [] {});
    CHECK(bytes_of(apx.indices) == ref);
    auto const photons = build_vvh_tree(exec, dp);
    auto const gathers = as_rows<Exec>(qb);
    auto const ref_rk = bytes_of(range_knn(exec, photons, gathers, 10).indices);
    KnnResultFor<Exec, decltype(photons)> rk;
    fail_each_allocation("range_knn", [&] { rk = range_knn(exec, photons, gathers, 10); }, [] {});
    CHECK(bytes_of(rk.indices) == ref_rk);
    auto const ref_rows = bytes_of(range_knn_rows(exec, photons, gathers, 10).rows.indices);
    decltype(range_knn_rows(exec, photons, gathers, 10)) rr;
    fail_each_allocation("range_knn_rows", [&] { rr = range_knn_rows(exec, photons, gathers, 10); }, [] {});
    CHECK(bytes_of(rr.rows.indices) == ref_rows);
  }
  {
    // normals and ICP (nested entry points: the outer one is named)
    auto const ref_n = bytes_of(estimate_normals(exec, tree, dp, 8));
    Kokkos::View<Point<float, 3>*, MS> normals;
    fail_each_allocation("estimate_normals", [&] { normals = estimate_normals(exec, tree, dp, 8); }, [] {});
    CHECK(bytes_of(normals) == ref_n);
    auto moved = pts;
    for (auto& p : moved) p[0] += 0.01f;
    auto const source = to_device<Exec>(moved, "source");
    IcpOptions io;
    io.max_iterations = 3;
    auto const ref_icp = icp(exec, tree, dp, source, {}, io);
    IcpResult r;
    fail_each_allocation("icp", [&] { r = icp(exec, tree, dp, source, {}, io); }, [] {});
    CHECK(r.iterations == ref_icp.iterations);
    CHECK(r.rmse == ref_icp.rmse);
  }
}

TEST_CASE_TEMPLATE("the bucket tree's up-front memory check honours the memory limit", Exec, KDFORGE_TEST_SPACES) {
  MemoryGuard guard;
  Exec exec;
  auto const rows = as_rows<Exec>(test::make_points<float, 3>(5000, Distribution::uniform, 10));
  set_memory_limit(100 << 10);
  try {
    build_bucket_tree(exec, rows);
    FAIL("the bucket build fitted in 100 KiB");
  } catch (OutOfMemoryError const& e) {
    std::string const what = e.what();
    CAPTURE(what);
    CHECK(what.find("kdforge::build_bucket_tree: out of memory") != std::string::npos);
    CHECK(e.requested_bytes() ==
          std::size_t(kernels::bfs::build_peak_bytes<float, std::int32_t, typename Exec::memory_space>(5000, 3, 8)));
    CHECK(e.available_bytes() <= (100u << 10));
  }
  set_memory_limit(0);
  CHECK(build_bucket_tree(exec, rows).size() == 5000);
}

// 65536 copies of one point and 32769 queries on it, radius 1: every query
// has every point, 2^31 + 2^16 neighbours in all, rows of 17 GB. The counts
// and their sum must be exact (64-bit), and the rows refused with the bytes
// they need before `out` is touched; on CPUs the one-pass search (rows
// appended while counting) must stop when its buffers pass the memory
// available instead of filling the host.
TEST_CASE("a radius search of more than 2^31 neighbours is counted in 64 bits and refused before anything is written") {
  MemoryGuard guard;
  using Exec = Kokkos::DefaultExecutionSpace;
  using MS = Exec::memory_space;
  Exec exec;
  std::int64_t const n = 65536, m = 32769;
  std::vector<Point<float, 3>> pts(std::size_t(n), Point<float, 3>{{0.5f, 0.25f, 0.75f}});
  std::vector<Point<float, 3>> qs(std::size_t(m), Point<float, 3>{{0.5f, 0.25f, 0.75f}});
  auto const tree = build_left_balanced(exec, to_device<Exec>(pts, "p"));
  auto const dq = to_device<Exec>(qs, "q");
  RadiusResultFor<Exec, decltype(tree)> out;
  radius_search(exec, tree, Kokkos::subview(dq, Kokkos::make_pair(0, 2)), 0.5, out); // 2 rows of n
  auto const off = bytes_of(out.offsets), idx = bytes_of(out.indices);
  REQUIRE(to_host(out.offsets).back() == 2 * n);
  std::int64_t const total = n * m;
  REQUIRE(total > std::int64_t(std::numeric_limits<std::int32_t>::max()));
  set_memory_limit(std::size_t(256) << 20);
  RadiusOptions ro;
  ro.buffer_size = 0; // count, scan, then allocate the rows: the exact total is known
  try {
    radius_search(exec, tree, dq, 1.0, out, ro);
    FAIL("17 GB of rows fitted in 256 MiB");
  } catch (OutOfMemoryError const& e) {
    std::string const what = e.what();
    CAPTURE(what);
    CHECK(e.requested_bytes() == std::size_t(total) * sizeof(std::int32_t)); // the indices, exactly `total` of them
    CHECK(what.find(std::to_string(std::size_t(total) * sizeof(std::int32_t))) != std::string::npos);
    CHECK(what.find("kdforge::radius::indices") != std::string::npos);
  }
  CHECK(bytes_of(out.offsets) == off);
  CHECK(bytes_of(out.indices) == idx);
  if constexpr (!detail::runs_on_gpu<Exec>()) {
    // the one-pass CPU search stops at the limit
    CHECK_THROWS_WITH_AS(radius_search(exec, tree, dq, 1.0, out), doctest::Contains("out of memory"), OutOfMemoryError);
    CHECK(bytes_of(out.offsets) == off);
  }
  set_memory_limit(0);
  // the counts themselves: int64 each, and their sum past 2^31
  auto const counts = to_host(radius_count(exec, tree, Kokkos::subview(dq, Kokkos::make_pair(0, 3)), 1.0));
  CHECK(counts == std::vector<std::int64_t>(3, n));
}

#if defined(KOKKOS_ENABLE_CUDA)
// The real thing on a GPU: the device filled to within 64 MiB (the memory
// pool's cached blocks given back first), a build and a query that need
// more must fail with OutOfMemoryError naming the device's bytes, and the
// tree and results made before must answer as before once it is freed.
TEST_CASE("on the GPU, memory the device cannot give is an OutOfMemoryError, and nothing breaks") {
  MemoryGuard guard;
  using Exec = Kokkos::Cuda;
  using MS = Exec::memory_space;
  Exec exec;
  auto const dp = to_device<Exec>(test::make_points<float, 3>(4000000, Distribution::uniform, 30), "p");
  auto const dq = to_device<Exec>(test::make_points<float, 3>(100000, Distribution::uniform, 31), "q");
  auto const tree = build_left_balanced(exec, dp);
  auto out = knn(exec, tree, dq, 8);
  auto const ref = bytes_of(out.indices);
  Kokkos::fence();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  int device = 0;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
  std::size_t free_b = 0, total_b = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
  std::size_t const margin = std::size_t(64) << 20;
  REQUIRE(free_b > 2 * margin);
  {
    Kokkos::View<char*, MS> filler(Kokkos::view_alloc(Kokkos::WithoutInitializing, "test::filler"), free_b - margin);
    try {
      build_left_balanced(exec, dp); // its copies of 4M points and their sort buffers: far more than 64 MiB
      FAIL("a build of 4M points fitted in 64 MiB");
    } catch (OutOfMemoryError const& e) {
      std::string const what = e.what();
      CAPTURE(what);
      CHECK(e.requested_bytes() > 0);
      CHECK(e.available_bytes() < 2 * margin);
      CHECK(what.find("kdforge::build_left_balanced: out of memory") != std::string::npos);
      CHECK(what.find("Cuda") != std::string::npos);
    }
    CHECK_THROWS_AS(knn(exec, tree, dq, 200, out), OutOfMemoryError); // 160 MB of results
    CHECK(bytes_of(out.indices) == ref);
  }
  CHECK(bytes_of(knn(exec, tree, dq, 8).indices) == ref);
  CHECK(bytes_of(knn(exec, build_left_balanced(exec, dp), dq, 8).indices) == ref);
}
#endif

#if defined(KOKKOS_ENABLE_CUDA)
namespace {
struct Padded { // 4 bytes of padding after `tag`, as kdforge's node structs have
  std::int32_t tag;
  double value;
};
} // namespace

// A kernel that stores a struct writes its members, not its padding; the
// allocation zeroes the padding, so copies of the struct read no byte that
// was never written (compute-sanitizer's initcheck: tests/README.md). The
// block is first filled with 0xff and given back to the memory pool, which
// hands the same bytes out again.
TEST_CASE("on the GPU, the padding of a struct View allocated uninitialised is zero") {
  using MS = Kokkos::CudaSpace;
  std::int64_t const n = 4096;
  {
    auto dirty = backend::allocate<Kokkos::View<unsigned char*, MS>>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "dirty"), std::size_t(n) * sizeof(Padded));
    Kokkos::deep_copy(dirty, static_cast<unsigned char>(0xff));
    Kokkos::fence();
  }
  auto v = backend::allocate<Kokkos::View<Padded*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "padded"), n);
  Kokkos::parallel_for(
      "write members", Kokkos::RangePolicy<Kokkos::Cuda>(0, n), KOKKOS_LAMBDA(std::int64_t i) {
        v(i).tag = std::int32_t(i);
        v(i).value = double(i);
      });
  Kokkos::fence();
  std::vector<unsigned char> bytes(std::size_t(n) * sizeof(Padded));
  REQUIRE(cudaMemcpy(bytes.data(), v.data(), bytes.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  std::int64_t nonzero = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::size_t b = sizeof(std::int32_t); b < offsetof(Padded, value); ++b)
      nonzero += bytes[std::size_t(i) * sizeof(Padded) + b] != 0;
  CHECK(nonzero == 0);
  Padded second;
  std::memcpy(&second, bytes.data() + sizeof(Padded), sizeof(Padded));
  CHECK(second.tag == 1);
  CHECK(second.value == 1.0);
}
#endif
