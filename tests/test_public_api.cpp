// The public surface: version, errors, and the points adaptor with its
// customisation points (N x D Views, user structs with payloads).
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
