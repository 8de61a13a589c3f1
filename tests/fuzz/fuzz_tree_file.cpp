// Fuzz target: kdforge::load (core/include/kdforge/save_load.hpp) on
// arbitrary bytes. The first byte picks the tree type (left-balanced,
// median, bucket, VVH or triangle tree, all float, 3-D where fixed); with
// its high bit set, the header's and the payload's checksums are made right
// before loading, so that mutations reach the structure checks instead of
// stopping at the checksum, as a file written to pass them would. The right
// answers: a kdforge::Error from load naming the file, or a tree that every
// query (kNN, closest point, radius; rays for triangle trees) runs on
// without a crash, a hang or a sanitizer report, its hits naming triangles
// of the tree (the point indices are the file's to choose). Anything else is
// a defect.
#include <kdforge/kdforge.hpp>
#include <kdforge/detail/tree_file.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;

[[noreturn]] void defect(std::string const& what) {
  std::fprintf(stderr, "kdforge fuzz_tree_file: %s\n", what.c_str());
  std::abort();
}

void reseal(std::string& b) {
  kdforge::detail::TreeFileHeader h;
  if (b.size() < sizeof h) return;
  std::memcpy(&h, b.data(), sizeof h);
  kdforge::detail::Checksum c;
  c.add(b.data() + sizeof h, b.size() - sizeof h);
  h.payload_checksum = c.value();
  h.header_checksum = kdforge::detail::header_checksum(h);
  std::memcpy(&b[0], &h, sizeof h);
}

template <class Tree>
Tree load_or_stop(std::string const& bytes, bool& ok) {
  std::istringstream in(bytes);
  try {
    ok = true;
    return kdforge::load<Tree>(Exec{}, in, "fuzz");
  } catch (kdforge::Error const& e) {
    if (std::string(e.what()).find("fuzz") == std::string::npos) defect(std::string("an error that names no file: ") + e.what());
    ok = false;
    return Tree{};
  }
}

// The three point queries, on the tree's type of queries
template <class Tree, class Q>
void point_queries(Tree const& tree, Q const& q) {
  Exec exec;
  try {
    kdforge::knn(exec, tree, q, 3);
    kdforge::closest_point(exec, tree, q);
    kdforge::radius_count(exec, tree, q, 0.5);
  } catch (kdforge::Error const&) { // refusing a loaded tree's points (NaN, huge) is an answer
  }
}

Kokkos::View<kdforge::Point<float, 3>*, MS> points3() {
  Kokkos::View<kdforge::Point<float, 3>*, MS> q("q", 4);
  auto h = Kokkos::create_mirror_view(q);
  float const v[4][3] = {{0.f, 0.f, 0.f}, {0.5f, 0.5f, 0.5f}, {1.f, -1.f, 2.f}, {1e3f, 0.f, -1e3f}};
  for (int i = 0; i < 4; ++i)
    for (int d = 0; d < 3; ++d) h(i)[d] = v[i][d];
  Kokkos::deep_copy(q, h);
  return q;
}

template <class Tree>
void point_tree(std::string const& bytes) {
  bool ok = false;
  auto const tree = load_or_stop<Tree>(bytes, ok);
  if (!ok) return;
  point_queries(tree, points3());
}

template <class Tree>
void bucket_tree(std::string const& bytes) {
  bool ok = false;
  auto const tree = load_or_stop<Tree>(bytes, ok);
  if (!ok) return;
  int const dim = tree.dim();
  if (dim > 64) return; // a valid tree of many dimensions: the queries' cost, not their safety
  Kokkos::View<float**, Kokkos::LayoutRight, MS> q("q", 3, dim);
  auto h = Kokkos::create_mirror_view(q);
  for (int i = 0; i < 3; ++i)
    for (int d = 0; d < dim; ++d) h(i, d) = float(i) * 0.5f - float(d % 3) * 0.25f;
  Kokkos::deep_copy(q, h);
  point_queries(tree, q);
}

void triangle_tree(std::string const& bytes) {
  using Tree = kdforge::TriangleTree<MS, float>;
  bool ok = false;
  auto const tree = load_or_stop<Tree>(bytes, ok);
  if (!ok) return;
  Kokkos::View<kdforge::Ray<float>*, MS> rays("rays", 3);
  auto h = Kokkos::create_mirror_view(rays);
  h(0) = kdforge::Ray<float>{{0.2f, 0.2f, 5.f}, {0.f, 0.f, -1.f}, 0.f, 100.f};
  h(1) = kdforge::Ray<float>{{-5.f, 0.3f, 0.1f}, {1.f, 0.01f, 0.f}, 0.f, 100.f};
  h(2) = kdforge::Ray<float>{{0.5f, 0.5f, 0.5f}, {0.3f, -0.4f, 0.5f}, 0.f, 1e30f};
  Kokkos::deep_copy(rays, h);
  Exec exec;
  try {
    auto const hits = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, kdforge::intersect_closest(exec, tree, rays));
    for (int i = 0; i < 3; ++i)
      if (hits(i).triangle < -1 || hits(i).triangle >= std::int64_t(tree.corners().extent(0)))
        defect("intersect_closest: a triangle outside the tree");
    kdforge::intersect_any(exec, tree, rays);
  } catch (kdforge::Error const&) {
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<char const*>(data) + 1, size - 1);
  if (data[0] & 0x80) reseal(bytes);
  switch ((data[0] & 0x7f) % 5) {
  case 0: point_tree<kdforge::LeftBalancedTree<MS, float, 3>>(bytes); break;
  case 1: point_tree<kdforge::MedianTree<MS, float, 3>>(bytes); break;
  case 2: bucket_tree<kdforge::BucketTree<MS, float>>(bytes); break;
  case 3: bucket_tree<kdforge::VvhTree<MS, float>>(bytes); break;
  default: triangle_tree(bytes); break;
  }
  return 0;
}
