// Saved trees: every kind of tree kdforge builds (left-balanced from every
// builder, with and without node boxes and dropped points; split-and-sort
// and in-place median trees; bucket trees of several dimensions; VVH photon
// trees; SAH triangle trees), float and double, 32- and 64-bit indices,
// saved to a file or a stream and loaded on the same and on another
// backend's memory: the same arrays, and the same answers to every query.
// Files that are not tree files, truncated anywhere, damaged anywhere, of
// another kind, coordinate type, dimension, index width, byte order or
// format version are refused with an error that says which.
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

using namespace kdforge;
using test::Distribution;
using test::to_device;
using test::to_host;

namespace {

std::string temp_path(std::string const& name) {
  char const* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/kdforge_test_" + std::to_string(getpid()) + "_" + name;
}

/// Removes a file when the test ends.
struct TempFile {
  std::string path;
  explicit TempFile(std::string const& name) : path(temp_path(name)) {}
  ~TempFile() { std::remove(path.c_str()); }
};

template <class V>
std::vector<char> bytes_of(V const& v) {
  Kokkos::fence();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  std::vector<char> out(h.span() * sizeof(typename V::value_type));
  if (!out.empty()) std::memcpy(out.data(), h.data(), out.size());
  return out;
}

std::vector<char> read_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}
void write_file(std::string const& path, std::vector<char> const& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

/// `bytes`, written to `path`, must be refused as a Tree with an error
/// whose message contains `why`.
template <class Tree, class Exec>
void refused_as(Exec const& exec, std::string const& path, std::vector<char> const& bytes, std::string const& why) {
  CAPTURE(why);
  write_file(path, bytes);
  CHECK_THROWS_WITH_AS(load<Tree>(exec, path), doctest::Contains(why.c_str()), Error);
}

/// A grid of g x g squares over [0, 1]^2, two triangles each, its corners
/// bumped up to z = 0.08: vertices and triangles.
template <class MS>
std::pair<Kokkos::View<float* [3], MS>, Kokkos::View<std::int32_t* [3], MS>> bumped_grid(int g) {
  int const nv = (g + 1) * (g + 1), nf = 2 * g * g;
  Kokkos::View<float* [3], MS> v("v", nv);
  Kokkos::View<std::int32_t* [3], MS> f("f", nf);
  auto hv = Kokkos::create_mirror_view(v);
  auto hf = Kokkos::create_mirror_view(f);
  for (int i = 0; i <= g; ++i)
    for (int j = 0; j <= g; ++j) {
      int const k = i * (g + 1) + j;
      hv(k, 0) = float(i) / float(g);
      hv(k, 1) = float(j) / float(g);
      hv(k, 2) = 0.1f * float((i * 7 + j * 3) % 5) / 5.f;
    }
  for (int i = 0, t = 0; i < g; ++i)
    for (int j = 0; j < g; ++j, t += 2) {
      int const a = i * (g + 1) + j, b = a + 1, c = a + g + 1, d = c + 1;
      hf(t, 0) = a, hf(t, 1) = b, hf(t, 2) = d;
      hf(t + 1, 0) = a, hf(t + 1, 1) = d, hf(t + 1, 2) = c;
    }
  Kokkos::deep_copy(v, hv);
  Kokkos::deep_copy(f, hf);
  return {v, f};
}

/// Where the elements of section `t` of a tree file start.
std::size_t section_at(std::vector<char> const& b, std::uint32_t t) {
  std::size_t at = sizeof(detail::TreeFileHeader);
  while (at + sizeof(detail::SectionHeader) <= b.size()) {
    detail::SectionHeader s;
    std::memcpy(&s, b.data() + at, sizeof s);
    at += sizeof s;
    if (s.tag == t) return at;
    at += std::size_t(s.count) * s.element_bytes;
  }
  FAIL("no section " << detail::tag_name(t));
  return 0;
}

/// `b`, a tree file, with a header field changed and the header's
/// checksum made right again, as a writer of that header would have it.
template <class F>
std::vector<char> with_header(std::vector<char> b, F change) {
  detail::TreeFileHeader h;
  std::memcpy(&h, b.data(), sizeof h);
  change(h);
  h.header_checksum = detail::header_checksum(h);
  std::memcpy(b.data(), &h, sizeof h);
  return b;
}

/// Element i of section `t` changed by `change`, then both checksums made
/// right again: a file that passes them, as a file written to do so would.
template <class E, class F>
std::vector<char> resealed(std::vector<char> b, std::uint32_t t, std::size_t i, F change) {
  std::size_t const at = section_at(b, t) + i * sizeof(E);
  E e;
  std::memcpy(&e, b.data() + at, sizeof e);
  change(e);
  std::memcpy(b.data() + at, &e, sizeof e);
  detail::Checksum c;
  c.add(b.data() + sizeof(detail::TreeFileHeader), b.size() - sizeof(detail::TreeFileHeader));
  return with_header(std::move(b), [&](detail::TreeFileHeader& h) { h.payload_checksum = c.value(); });
}

/// The answers of a point tree (level-order or bucket) to kNN, closest
/// point and radius search, as bytes.
template <class Exec, class Tree, class Q>
std::vector<std::vector<char>> answers(Exec const& exec, Tree const& tree, Q const& q) {
  auto const nn = knn(exec, tree, q, 7);
  auto const cp = closest_point(exec, tree, q);
  RadiusOptions ro;
  ro.sort = true;
  auto const rs = radius_search(exec, tree, q, 0.08, ro);
  return {bytes_of(nn.indices), bytes_of(nn.sq_distances), bytes_of(cp.indices), bytes_of(rs.offsets),
          bytes_of(rs.indices), bytes_of(rs.sq_distances)};
}

/// Saves, loads (file and stream), and compares arrays and answers.
template <class Exec, class Tree, class Q, class SameArrays>
void round_trip(Exec const& exec, Tree const& tree, Q const& q, SameArrays const& same, char const* name) {
  CAPTURE(name);
  TempFile file(std::string(name) + ".kdtree");
  save(tree, file.path);
  auto const loaded = load<Tree>(exec, file.path);
  CHECK(loaded.size() == tree.size());
  CHECK(loaded.node_count() == tree.node_count());
  same(tree, loaded);
  CHECK(answers(exec, loaded, q) == answers(exec, tree, q));
  std::stringstream stream(std::ios::in | std::ios::out | std::ios::binary);
  save(tree, stream);
  CHECK(stream.str() == std::string(read_file(file.path).data(), read_file(file.path).size())); // same bytes
  stream.seekg(0);
  auto const from_stream = load<Tree>(exec, stream);
  CHECK(answers(exec, from_stream, q) == answers(exec, tree, q));
}

template <class A, class B>
void same_level_order(A const& a, B const& b) {
  CHECK(bytes_of(a.points()) == bytes_of(b.points()));
  CHECK(bytes_of(a.original_indices()) == bytes_of(b.original_indices()));
  CHECK(bytes_of(a.node_boxes().records) == bytes_of(b.node_boxes().records));
  CHECK(a.node_boxes().count == b.node_boxes().count);
  CHECK(a.box_fill() == b.box_fill());
  CHECK(a.dropped_count() == b.dropped_count());
  CHECK(a.split_policy() == b.split_policy());
  for (int d = 0; d < std::decay_t<A>::dimension; ++d) {
    CHECK(a.bounds().lo[d] == b.bounds().lo[d]);
    CHECK(a.bounds().hi[d] == b.bounds().hi[d]);
  }
}

template <class Exec, class T, class P>
Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> rows_of(std::vector<P> const& p, int dim) {
  Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> r("rows", p.size(), dim);
  auto h = Kokkos::create_mirror_view(r);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (int d = 0; d < dim; ++d) h(i, d) = p[i][d];
  Kokkos::deep_copy(r, h);
  return r;
}

template <class Exec, class T, class Index>
void level_order_round_trips(Exec const& exec) {
  using MS = typename Exec::memory_space;
  auto pts = test::make_points<T, 3>(3000, Distribution::scan, 11);
  auto const qs = test::make_points<T, 3>(150, Distribution::uniform, 12);
  auto const dp = to_device<Exec>(pts, "p");
  auto const dq = to_device<Exec>(qs, "q");
  auto const same = [](auto const& a, auto const& b) {
    same_level_order(a, b);
    if constexpr (std::is_same<std::decay_t<decltype(a)>, LeftBalancedTree<MS, T, 3, Index>>::value)
      CHECK(bytes_of(a.split_dims()) == bytes_of(b.split_dims()));
  };
  BuildOptions bo;
  bo.node_boxes = NodeBoxPolicy::always;
  round_trip(exec, build_left_balanced<Index>(exec, dp, bo), dq, same, "left_balanced_boxes");
  bo.node_boxes = NodeBoxPolicy::never;
  bo.split = SplitPolicy::round_robin;
  bo.builder = Builder::wald_tags;
  round_trip(exec, build_left_balanced<Index>(exec, dp, bo), dq, same, "left_balanced_round_robin");
  bo.split = SplitPolicy::widest_dimension;
  bo.builder = Builder::presorted_partition;
  round_trip(exec, build_left_balanced<Index>(exec, dp, bo), dq, same, "left_balanced_widest");
  auto with_nan = pts;
  with_nan.insert(with_nan.begin() + 17, Point<T, 3>{{T(0.5), std::numeric_limits<T>::infinity(), T(0)}});
  bo.non_finite = NonFinitePolicy::drop;
  round_trip(exec, build_left_balanced<Index>(exec, to_device<Exec>(with_nan, "p_nan"), bo), dq, same,
             "left_balanced_dropped");
  SplitSortOptions so;
  so.node_boxes = NodeBoxPolicy::always;
  round_trip(exec, build_split_sort<Index>(exec, dp, so), dq, same, "split_sort");
  auto in_place = to_device<Exec>(pts, "p_in_place");
  round_trip(exec, build_median_in_place<Index>(exec, in_place), dq, same, "median_in_place");
  // empty and single-point trees
  round_trip(exec, build_left_balanced<Index>(exec, Kokkos::View<Point<T, 3>*, MS>("none", 0)), dq, same, "empty");
  round_trip(exec, build_split_sort<Index>(exec, Kokkos::subview(dp, Kokkos::make_pair(0, 1))), dq, same, "one");
}

} // namespace

TEST_CASE_TEMPLATE("every level-order tree saved and loaded answers as before", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  level_order_round_trips<Exec, float, std::int32_t>(exec);
  level_order_round_trips<Exec, double, std::int64_t>(exec);
}

TEST_CASE_TEMPLATE("bucket, VVH and triangle trees saved and loaded answer as before", Exec, KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  Exec exec;
  auto const same_bucket = [](auto const& a, auto const& b) {
    CHECK(a.dim() == b.dim());
    CHECK(a.height() == b.height());
    CHECK(a.bucket_size() == b.bucket_size());
    CHECK(bytes_of(a.points()) == bytes_of(b.points()));
    CHECK(bytes_of(a.original_indices()) == bytes_of(b.original_indices()));
    CHECK(bytes_of(a.nodes()) == bytes_of(b.nodes()));
    CHECK(bytes_of(a.boxes()) == bytes_of(b.boxes()));
  };
  for (int dim : {1, 5, 64}) {
    CAPTURE(dim);
    std::mt19937 rng(13 + dim);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    std::vector<std::vector<float>> p(2000, std::vector<float>(std::size_t(dim))), q(100, std::vector<float>(std::size_t(dim)));
    for (auto& x : p)
      for (auto& v : x) v = u(rng);
    for (auto& x : q)
      for (auto& v : x) v = u(rng);
    BucketOptions bo;
    bo.bucket_size = dim == 5 ? 1 : 8;
    round_trip(exec, build_bucket_tree(exec, rows_of<Exec, float>(p, dim), bo), rows_of<Exec, float>(q, dim), same_bucket,
               "bucket");
  }
  auto const pts = test::make_points<double, 3>(3000, Distribution::clustered, 14);
  auto const qs = test::make_points<double, 3>(100, Distribution::clustered, 15);
  auto const photons = build_vvh_tree<std::int64_t>(exec, to_device<Exec>(pts, "photons"));
  round_trip(exec, photons, rows_of<Exec, double>(qs, 3), [&](auto const& a, auto const& b) {
    same_bucket(a, b);
    CHECK(a.query_radius() == b.query_radius());
  }, "vvh");

  // triangles: a grid of 40 x 40 squares, two triangles each, bumped
  auto const [v, f] = bumped_grid<MS>(40);
  auto const scene = build_sah_tree(exec, v, f);
  Kokkos::View<Ray<float>*, MS> rays("rays", 500);
  auto hr = Kokkos::create_mirror_view(rays);
  std::mt19937 rng(16);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int i = 0; i < 500; ++i)
    hr(i) = Ray<float>{{u(rng), u(rng), 1.f}, {0.1f * (u(rng) - 0.5f), 0.1f * (u(rng) - 0.5f), -1.f}, 0.f, 10.f};
  Kokkos::deep_copy(rays, hr);
  TempFile file("triangles.kdtree");
  save(scene, file.path);
  auto const loaded = load<TriangleTree<MS, float>>(exec, file.path);
  CHECK(bytes_of(loaded.nodes()) == bytes_of(scene.nodes()));
  CHECK(bytes_of(loaded.leaf_triangles()) == bytes_of(scene.leaf_triangles()));
  CHECK(bytes_of(loaded.corners()) == bytes_of(scene.corners()));
  CHECK(loaded.height() == scene.height());
  CHECK(sah_cost(loaded) == sah_cost(scene));
  CHECK(bytes_of(intersect_closest(exec, loaded, rays)) == bytes_of(intersect_closest(exec, scene, rays)));
  CHECK(bytes_of(intersect_any(exec, loaded, rays)) == bytes_of(intersect_any(exec, scene, rays)));
  // a version-1 file: its corners' order is unknown, so it is refused
  auto const v1 = with_header(read_file(file.path), [](detail::TreeFileHeader& h) {
    CHECK(h.version == detail::tree_file_version);
    h.version = 1;
  });
  TempFile old("triangles_v1.kdtree");
  refused_as<TriangleTree<MS, float>>(exec, old.path, v1, "build the tree again and save it");
}

// The checksums catch damage, not a file made to pass them: the node links
// of bucket and triangle trees are checked as they load, so a link out of
// range, a node with two parents, a cycle, a tree deeper than the walks'
// stacks or an out-of-range point, leaf or triangle is refused before a
// walk could follow it.
TEST_CASE("tree files whose checksums match but whose node links or point indices are wrong are refused") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  using MS = Exec::memory_space;
  Exec exec;
  TempFile file("links.kdtree"), bad("links_bad.kdtree");

  SUBCASE("bucket trees") {
    using Tree = BucketTree<MS, float>;
    using Node = Tree::node_type;
    auto const pts = test::make_points<float, 3>(2000, Distribution::uniform, 21);
    std::vector<std::vector<float>> p;
    for (auto const& x : pts) p.push_back({x[0], x[1], x[2]});
    BucketOptions bo;
    bo.bucket_size = 8;
    auto const tree = build_bucket_tree(exec, rows_of<Exec, float>(p, 3), bo);
    save(tree, file.path);
    auto const bytes = read_file(file.path);
    auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
    REQUIRE(nodes.extent(0) > 7);
    REQUIRE(!nodes(0).is_leaf());
    std::size_t leaf = 0;
    while (!nodes(leaf).is_leaf()) ++leaf;
    CHECK(load<Tree>(exec, file.path).node_count() == tree.node_count());
    auto const node = std::uint32_t(detail::tag("NODE"));
    CHECK(resealed<Node>(bytes, node, 0, [](Node&) {}) == bytes); // the helper reseals as save does
    auto const refused = [&](std::vector<char> const& b, std::string const& why) { refused_as<Tree>(exec, bad.path, b, why); };
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.left = 0; }), "has child 0"); // a cycle
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.right = n.left; }), "the child of two nodes");
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.left = 1 << 30; }), "has child 1073741824");
    refused(resealed<Node>(bytes, node, leaf, [](Node& n) { n.end = 2001; }), "holds points");
    refused(resealed<Node>(bytes, node, leaf, [](Node& n) { n.left = -7; }), "has child -7");
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.split_dim = 3; }), "splits dimension 3 of 3");
    auto const indx = std::uint32_t(detail::tag("INDX"));
    refused(resealed<std::int32_t>(bytes, indx, 17, [](std::int32_t& i) { i = 2000; }), "1 point indices outside [0, 2000)");
    refused(resealed<std::int32_t>(bytes, indx, 0, [](std::int32_t& i) { i = -1; }), "1 point indices outside [0, 2000)");
    // a spine of 66 levels, a leaf beside each step: deeper than the walk's stack
    REQUIRE(nodes.extent(0) > 2 * 66 + 1);
    std::vector<char> spine = bytes;
    for (std::int32_t k = 0; k <= 66; ++k) {
      spine = resealed<Node>(spine, node, std::size_t(2 * k), [&](Node& n) {
        n.left = 2 * k + 1, n.right = 2 * k + 2, n.begin = 0, n.end = 2000, n.split_dim = 0;
      });
      spine = resealed<Node>(spine, node, std::size_t(2 * k + 1), [](Node& n) { n.left = n.right = -1, n.begin = 0, n.end = 2000; });
    }
    refused(spine, "levels deep; the walks hold");
  }

  SUBCASE("level-order trees: point indices") {
    // 300 points and 3 NaN ones the build drops: indices name the 303 input rows
    auto pts = test::make_points<float, 3>(300, Distribution::uniform, 23);
    for (std::size_t at : {std::size_t(7), std::size_t(150), std::size_t(299)})
      pts.insert(pts.begin() + std::ptrdiff_t(at), Point<float, 3>{{std::nanf(""), 0.5f, 0.5f}});
    auto const dp = test::to_device<Exec>(pts, "p");
    auto check = [&](auto const& tree) {
      using Tree = std::decay_t<decltype(tree)>;
      REQUIRE(tree.dropped_count() == 3);
      save(tree, file.path);
      auto const bytes = read_file(file.path);
      CHECK(load<Tree>(exec, file.path).size() == 300);
      auto const indx = std::uint32_t(detail::tag("INDX"));
      auto const refused = [&](std::vector<char> const& b, std::string const& why) { refused_as<Tree>(exec, bad.path, b, why); };
      refused(resealed<std::int32_t>(bytes, indx, 5, [](std::int32_t& i) { i = 303; }), "1 point indices outside [0, 303)");
      refused(resealed<std::int32_t>(bytes, indx, 0, [](std::int32_t& i) { i = -5; }), "1 point indices outside [0, 303)");
      // 302 names an input row, so the file loads: a repeated index answers
      // wrongly, as any edited point would, but sends no caller out of its array
      write_file(bad.path, resealed<std::int32_t>(bytes, indx, 5, [](std::int32_t& i) { i = 302; }));
      CHECK(load<Tree>(exec, bad.path).size() == 300);
    };
    BuildOptions bo;
    bo.non_finite = NonFinitePolicy::drop;
    check(build_left_balanced(exec, dp, bo));
    SplitSortOptions so;
    so.non_finite = NonFinitePolicy::drop;
    check(build_split_sort(exec, dp, so));
  }

  SUBCASE("triangle trees") {
    using Tree = TriangleTree<MS, float>;
    using Node = Tree::node_type;
    auto const [v, f] = bumped_grid<MS>(20);
    auto const tree = build_sah_tree(exec, v, f);
    save(tree, file.path);
    auto const bytes = read_file(file.path);
    auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
    REQUIRE(nodes.extent(0) > 7);
    REQUIRE(!nodes(0).is_leaf());
    std::size_t leaf = 0;
    while (!nodes(leaf).is_leaf()) ++leaf;
    CHECK(load<Tree>(exec, file.path).nodes().extent(0) == nodes.extent(0));
    auto const node = std::uint32_t(detail::tag("NODE"));
    auto const refused = [&](std::vector<char> const& b, std::string const& why) { refused_as<Tree>(exec, bad.path, b, why); };
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.a = 0; }), "has right child 0"); // a cycle
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.a = 1; }), "has right child 1"); // shared with the left
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.a = 1 << 30; }), "has right child");
    refused(resealed<Node>(bytes, node, 0, [&](Node& n) { n.a = std::int32_t(nodes.extent(0)) - 1; }), "is due");
    refused(resealed<Node>(bytes, node, 0, [](Node& n) { n.kind = 5; }), "is of kind 5");
    refused(resealed<Node>(bytes, node, leaf, [](Node& n) { n.b = 1 << 30; }), "lists leaf entries");
    refused(resealed<Node>(bytes, node, leaf, [](Node& n) { n.a = -1; }), "lists leaf entries");
    refused(resealed<std::int32_t>(bytes, std::uint32_t(detail::tag("LEAF")), 3, [](std::int32_t& t) { t = 800; }),
            "names triangle 800 of 800");
    refused(resealed<std::int32_t>(bytes, std::uint32_t(detail::tag("LEAF")), 0, [](std::int32_t& t) { t = -1; }),
            "names triangle -1");
  }
}

TEST_CASE("a tree saved from one backend's memory loads into another's") {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Host = Kokkos::DefaultHostExecutionSpace;
  Exec exec;
  Host host;
  auto const pts = test::make_points<float, 3>(2000, Distribution::uniform, 17);
  auto const qs = test::make_points<float, 3>(100, Distribution::uniform, 18);
  BuildOptions bo;
  bo.node_boxes = NodeBoxPolicy::always;
  auto const tree = build_left_balanced(exec, to_device<Exec>(pts, "p"), bo);
  TempFile file("portable.kdtree");
  save(tree, file.path);
  auto const on_host = load<LeftBalancedTree<Host::memory_space, float, 3>>(host, file.path);
  CHECK(answers(host, on_host, to_device<Host>(qs, "q")) == answers(exec, tree, to_device<Exec>(qs, "q")));
  // and back: saved from the host, loaded where it came from
  TempFile again("portable_back.kdtree");
  save(on_host, again.path);
  CHECK(read_file(again.path) == read_file(file.path));
  auto const back = load<decltype(tree)>(exec, again.path);
  CHECK(answers(exec, back, to_device<Exec>(qs, "q")) == answers(exec, tree, to_device<Exec>(qs, "q")));
}

// Triangle corners are a two-dimensional array per triangle: a file must
// hold them in one order whichever backend wrote it (a GPU's default layout
// is column-major, a CPU's row-major).
TEST_CASE("a triangle tree saved from one backend's memory loads into another's") {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Host = Kokkos::DefaultHostExecutionSpace;
  using MS = Exec::memory_space;
  using HS = Host::memory_space;
  Exec exec;
  Host host;
  auto const [v, f] = bumped_grid<MS>(30);
  auto const scene = build_sah_tree(exec, v, f);
  TempFile file("portable_triangles.kdtree");
  save(scene, file.path);
  auto const on_host = load<TriangleTree<HS, float>>(host, file.path);
  // the same coordinates at the same (triangle, corner, dimension)
  auto const mine = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), scene.corners());
  auto const theirs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), on_host.corners());
  REQUIRE(theirs.extent(0) == mine.extent(0));
  int differ = 0;
  for (std::size_t i = 0; i < mine.extent(0); ++i)
    for (int c = 0; c < 3; ++c)
      for (int d = 0; d < 3; ++d) differ += mine(i, c, d) != theirs(i, c, d);
  CHECK(differ == 0);
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<Ray<float>> rs(400);
  for (auto& r : rs) r = Ray<float>{{u(rng), u(rng), 1.f}, {0.1f * (u(rng) - 0.5f), 0.1f * (u(rng) - 0.5f), -1.f}, 0.f, 10.f};
  Kokkos::View<Ray<float>*, MS> rays("rays", rs.size());
  Kokkos::View<Ray<float>*, HS> host_rays("host_rays", rs.size());
  auto hr = Kokkos::create_mirror_view(rays);
  for (std::size_t i = 0; i < rs.size(); ++i) hr(i) = host_rays(i) = rs[i];
  Kokkos::deep_copy(rays, hr);
  auto const hits = intersect_closest(exec, scene, rays);
  auto const host_hits = intersect_closest(host, on_host, host_rays);
  CHECK(bytes_of(host_hits) == bytes_of(hits));
  int hit = 0;
  auto const hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), host_hits);
  for (std::size_t i = 0; i < hh.extent(0); ++i) hit += hh(i).triangle >= 0;
  CHECK(hit > 300); // the rays point at the grid: a test of hits, not of misses
  // and back: saved from the host, byte for byte the same file
  TempFile again("portable_triangles_back.kdtree");
  save(on_host, again.path);
  CHECK(read_file(again.path) == read_file(file.path));
}

TEST_CASE("damaged, truncated and mismatched tree files are refused with the reason") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  using MS = Exec::memory_space;
  using Tree = LeftBalancedTree<MS, float, 3>;
  Exec exec;
  auto const pts = test::make_points<float, 3>(500, Distribution::uniform, 19);
  BuildOptions bo;
  bo.node_boxes = NodeBoxPolicy::always;
  auto const tree = build_left_balanced(exec, to_device<Exec>(pts, "p"), bo);
  TempFile good("good.kdtree"), bad("bad.kdtree");
  save(tree, good.path);
  auto const bytes = read_file(good.path);
  REQUIRE(bytes.size() > 96 + 1000);
  auto const refused = [&](std::vector<char> const& b, std::string const& why) { refused_as<Tree>(exec, bad.path, b, why); };

  refused({}, "truncated: the header has 0 of its 96 bytes");
  refused(std::vector<char>(bytes.begin(), bytes.begin() + 50), "truncated: the header");
  std::string const text = "x y z\n0.1 0.2 0.3\n0.4 0.5 0.6\n0.7 0.8 0.9\n0.1 0.2 0.3\n0.4 0.5 0.6\n0.7 0.8 0.9\n0.1 0.2 0.3\n";
  refused(std::vector<char>(text.begin(), text.end()), "not a kdforge tree file");
  for (std::size_t cut : {std::size_t(96), std::size_t(96 + 8), std::size_t(200), bytes.size() / 2, bytes.size() - 1}) {
    CAPTURE(cut);
    refused(std::vector<char>(bytes.begin(), bytes.begin() + std::ptrdiff_t(cut)), "truncated");
  }
  for (std::size_t at : {std::size_t(10), std::size_t(40), std::size_t(70)}) { // any header byte
    CAPTURE(at);
    auto b = bytes;
    b[at] ^= 0x10;
    refused(b, "corrupt header");
  }
  for (std::size_t at : {std::size_t(96 + 20), std::size_t(300), bytes.size() / 3, bytes.size() - 5}) { // any payload byte
    CAPTURE(at);
    auto b = bytes;
    b[at] ^= 0x01;
    refused(b, "corrupt");
  }
  refused(with_header(bytes, [](auto& h) { h.version = 3; }), "format version 3, but this kdforge reads versions 1 to 2");
  refused(with_header(bytes, [](auto& h) { h.version = 0; }), "format version 0, but this kdforge reads versions 1 to 2");
  // version 1: a tree of points reads as it was written
  write_file(bad.path, with_header(bytes, [](auto& h) { h.version = 1; }));
  CHECK(read_file(bad.path) != bytes);
  auto const v1 = load<Tree>(exec, bad.path);
  CHECK(bytes_of(v1.points()) == bytes_of(tree.points()));
  refused(with_header(bytes, [](auto& h) { h.byte_order = 0x04030201u; }), "other byte order");
  auto longer = bytes;
  longer.push_back('!');
  refused(longer, "bytes follow the tree");

  // the right file, the wrong type
  CHECK_THROWS_WITH_AS((load<MedianTree<MS, float, 3>>(exec, good.path)), doctest::Contains("holds a left-balanced tree"), Error);
  CHECK_THROWS_WITH_AS((load<LeftBalancedTree<MS, double, 3>>(exec, good.path)), doctest::Contains("coordinates are float"), Error);
  CHECK_THROWS_WITH_AS((load<LeftBalancedTree<MS, float, 2>>(exec, good.path)), doctest::Contains("have 3 dimensions"), Error);
  CHECK_THROWS_WITH_AS((load<LeftBalancedTree<MS, float, 3, std::int64_t>>(exec, good.path)), doctest::Contains("32-bit"), Error);
  CHECK_THROWS_WITH_AS((load<BucketTree<MS, float>>(exec, good.path)), doctest::Contains("not a bucket tree"), Error);
  // paths
  CHECK_THROWS_WITH_AS(load<Tree>(exec, temp_path("does_not_exist.kdtree")), doctest::Contains("cannot read"), Error);
  CHECK_THROWS_WITH_AS(save(tree, temp_path("no_such_dir/t.kdtree")), doctest::Contains("cannot write"), Error);
  // after all that, the good file still loads
  CHECK(load<Tree>(exec, good.path).size() == 500);
}
