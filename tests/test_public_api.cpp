// The package's public surface: version, errors, the points adaptor with its
// customisation points (N x D Views, user structs with payloads), queries
// that write into the caller's result Views with a reused workspace, and the
// huge-page advice on host allocations.
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <cstring>

struct Particle { // a user's struct with payload
  double mass;
  float pos[3];
  int id;
};
template <>
struct kdforge::PointTraits<Particle> {
  static constexpr int dimension = 3;
  using coordinate_type = float;
  KOKKOS_FUNCTION static float coordinate(Particle const& p, int d) { return p.pos[d]; }
};

TEST_CASE("version is major.minor.patch") {
  CHECK(std::strlen(kdforge::version()) >= 5);
  CHECK(std::string(kdforge::version()) == KDFORGE_VERSION_STRING);
}

TEST_CASE("errors carry the place and the cause") {
  try {
    KDFORGE_REQUIRE(1 == 2, "demo", "value ", 3, " is bad");
    FAIL("no throw");
  } catch (kdforge::Error const& e) {
    CHECK(std::string(e.what()) == "kdforge::demo: value 3 is bad");
  }
}

TEST_CASE_TEMPLATE("points adaptor: N x D Views and user structs give the same tree", Exec, KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  auto pts = kdforge::test::make_points<float, 3>(2000, kdforge::test::Distribution::uniform, 99);
  Kokkos::View<float* [3], Kokkos::LayoutLeft, MS> soa("soa", pts.size());
  Kokkos::View<Particle*, MS> particles("particles", pts.size());
  auto hs = Kokkos::create_mirror_view(soa);
  auto hp = Kokkos::create_mirror_view(particles);
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (int d = 0; d < 3; ++d) {
      hs(i, d) = pts[i][d];
      hp(i).pos[d] = pts[i][d];
      hp(i).id = int(i);
    }
  Kokkos::deep_copy(soa, hs);
  Kokkos::deep_copy(particles, hp);
  auto t1 = kdforge::build_left_balanced(Exec{}, kdforge::test::to_device<Exec>(pts, "p"));
  auto t2 = kdforge::build_left_balanced(Exec{}, soa);
  auto t3 = kdforge::build_left_balanced(Exec{}, particles);
  auto i1 = kdforge::test::to_host(t1.original_indices());
  CHECK(i1 == kdforge::test::to_host(t2.original_indices()));
  CHECK(i1 == kdforge::test::to_host(t3.original_indices()));
  // queries can be user structs too
  auto r = kdforge::knn(Exec{}, t3, particles, 1);
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
  for (std::size_t i = 0; i < pts.size(); ++i) CHECK(hi(i, 0) == int(i)); // distinct points: itself
}

TEST_CASE("huge-page advice covers only whole 2 MiB pages of the allocation, host memory only") {
  using kdforge::detail::huge_page_bytes;
  using kdforge::detail::whole_huge_pages;
  std::uintptr_t const H = huge_page_bytes;
  // aligned start, whole pages
  auto r = whole_huge_pages(4 * H, 3 * H);
  CHECK(r.first == 4 * H);
  CHECK(r.last == 7 * H);
  // unaligned start and end: rounded inwards
  r = whole_huge_pages(4 * H + 100, 3 * H);
  CHECK(r.first == 5 * H);
  CHECK(r.last == 7 * H);
  // no whole page inside
  r = whole_huge_pages(4 * H + 1, H);
  CHECK(r.first == r.last);
  r = whole_huge_pages(4 * H + 1, 0);
  CHECK(r.first == r.last);

  // small Views are never marked; a large host View may be (a hint the
  // kernel may refuse), and stays usable either way
  Kokkos::View<float*, Kokkos::HostSpace> small("small", 1000);
  CHECK_FALSE(kdforge::detail::advise_huge_pages(small));
  Kokkos::View<float*, Kokkos::HostSpace> large(Kokkos::view_alloc(Kokkos::WithoutInitializing, "large"), 3 * H);
  bool const marked = kdforge::detail::advise_huge_pages(large);
#if !defined(__linux__)
  CHECK_FALSE(marked);
#else
  (void)marked;
#endif
  for (std::size_t i = 0; i < large.extent(0); i += 1000) large(i) = float(i);
  for (std::size_t i = 0; i < large.extent(0); i += 1000) REQUIRE(large(i) == float(i));
#if defined(KOKKOS_ENABLE_CUDA)
  Kokkos::View<float*, Kokkos::CudaSpace> device(Kokkos::view_alloc(Kokkos::WithoutInitializing, "device"), 3 * H);
  CHECK_FALSE(kdforge::detail::advise_huge_pages(device));
#endif
}

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

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
