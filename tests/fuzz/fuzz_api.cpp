// Fuzz targets api_points and api_rows (KDFORGE_FUZZ_API_POINT_TREES 1 or
// 0): the public API on small point sets and queries decoded from
// the fuzz input (sizes, dimension, k, radii, per-query radii, options, and
// coordinates that include NaN, infinities, subnormals, copies, offsets of
// 1e9 and magnitudes beyond what squared distances hold), on every point
// tree kind (left-balanced by each builder, split-and-sort, bucket, VVH) and
// brute force, with every query kind. Each answer is checked here against
// a brute force over the same points with the library's distance
// arithmetic: exact, ties by index. A kdforge::Error is the right answer
// exactly when the input is invalid (a NaN, infinite or out-of-range
// coordinate, k < 1, a negative or NaN radius); anything else, an error on
// valid input, a wrong row or a crash, aborts.
#include <kdforge/kdforge.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;

/// The fuzz input, read front to back; zeros once it runs out.
struct Bytes {
  std::uint8_t const* p;
  std::size_t n;
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::uint32_t u16() { return std::uint32_t(u8()) | std::uint32_t(u8()) << 8; }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(u8()) << (8 * i);
    return v;
  }
};

[[noreturn]] void mismatch(std::string const& what) {
  std::fprintf(stderr, "kdforge fuzz_api: %s\n", what.c_str());
  std::abort();
}

template <class T>
bool usable(T x, int dim) {
  return x * x <= kdforge::detail::max_sq_coordinate<T>(dim);
}

/// One coordinate: mostly a coarse grid (copies and ties) or uniform in
/// [0, 1); sometimes a hostile value.
template <class T>
T coordinate(Bytes& b) {
  std::uint8_t const c = b.u8();
  if (c < 100) return T(c % 8) * T(0.25);
  if (c < 180) return T(b.u16()) / T(65536);
  T const tiny = std::numeric_limits<T>::denorm_min();
  switch (c % 16) {
  case 0: return std::numeric_limits<T>::quiet_NaN();
  case 1: return std::numeric_limits<T>::infinity();
  case 2: return -std::numeric_limits<T>::infinity();
  case 3: return tiny * T(1 + b.u8());                  // subnormal
  case 4: return -tiny * T(1 + b.u8());
  case 5: return T(1e9) + T(b.u8()) * T(0.125);         // an offset: float keeps multiples of 64 there
  case 6: return T(-1e9) - T(b.u8());
  case 7: return T(1e18) * T(1 + b.u8() % 8);           // float: at and beyond the limit (2.66e18 in 3-D)
  case 8: return T(b.u8() & 1 ? 1e30 : -1e30);          // float: far beyond; double: fine
  case 9: return std::numeric_limits<T>::max();
  case 10: return T(-0.0);
  case 11: { // any bits
    std::uint64_t const bits = b.u64();
    T v;
    if constexpr (sizeof(T) == 4) {
      std::uint32_t const b32 = std::uint32_t(bits);
      std::memcpy(&v, &b32, 4);
    } else {
      std::memcpy(&v, &bits, 8);
    }
    return v;
  }
  case 12: return T(1e-30) * T(b.u8());
  case 13: return T(1e6) * T(1 + b.u8());               // far outside the unit box
  default: return T(int(c % 64) - 24);
  }
}

/// A radius: mostly ordinary, sometimes 0, infinite, negative, NaN, huge.
double radius(Bytes& b) {
  std::uint8_t const c = b.u8();
  switch (c % 12) {
  case 0: return 0.0;
  case 1: return std::numeric_limits<double>::infinity();
  case 2: return -1.0;
  case 3: return std::nan("");
  case 4: return 1e30;
  case 5: return std::numeric_limits<double>::denorm_min();
  case 6: return 1e300;
  case 7: return -0.0;
  default: return double(c) / 64.0;
  }
}

template <class T>
T sq_radius(double r) { // as kdforge squares a checked radius
  if (std::isinf(r)) return std::numeric_limits<T>::infinity();
  return T(r) * T(r);
}

/// The problem: n points and m queries of dim coordinates, row-major.
template <class T>
struct Problem {
  int dim = 3;
  std::int64_t n = 0, m = 0;
  std::vector<T> pts, qs;
  bool self = false;          ///< the queries are the points
  std::vector<char> dropped;  ///< points left out (NonFinitePolicy::drop)
  T const* point(std::int64_t i) const { return pts.data() + i * dim; }
  T const* query(std::int64_t q) const { return qs.data() + q * dim; }
  bool any_unusable(std::vector<T> const& v) const {
    for (T x : v)
      if (!usable(x, dim)) return true;
    return false;
  }
};

/// The library's squared distance: first square, then the others added in order.
template <class T>
T sq_dist(T const* a, T const* b, int dim) {
  T const d0 = a[0] - b[0];
  T s = d0 * d0;
  for (int d = 1; d < dim; ++d) {
    T const t = a[d] - b[d];
    s = s + t * t;
  }
  return s;
}

template <class T>
using Row = std::vector<std::pair<T, std::int64_t>>;

/// Every point within sq_r of query q, sorted by (distance, index).
template <class T>
Row<T> reference(Problem<T> const& pb, std::int64_t q, T sq_r, bool exclude_self) {
  Row<T> all;
  for (std::int64_t i = 0; i < pb.n; ++i) {
    if (!pb.dropped.empty() && pb.dropped[std::size_t(i)]) continue;
    if (exclude_self && i == q) continue;
    T const d = sq_dist(pb.query(q), pb.point(i), pb.dim);
    if (d <= sq_r) all.emplace_back(d, i);
  }
  std::sort(all.begin(), all.end());
  return all;
}

std::string where(char const* op, std::int64_t q, int j) {
  return std::string(op) + ": query " + std::to_string(q) + " slot " + std::to_string(j);
}

/// A kNN row (k slots) against the reference: exact, then (-1, +inf).
template <class T, class I, class D>
void check_knn_row(char const* op, std::int64_t q, Row<T> const& ref, int k, I const& idx, D const& d2) {
  for (int j = 0; j < k; ++j) {
    if (j < int(ref.size())) {
      if (std::int64_t(idx(q, j)) != ref[std::size_t(j)].second || !(d2(q, j) == ref[std::size_t(j)].first))
        mismatch(where(op, q, j) + ": got (" + std::to_string(std::int64_t(idx(q, j))) + ", " +
                 std::to_string(double(d2(q, j))) + "), brute force (" + std::to_string(ref[std::size_t(j)].second) +
                 ", " + std::to_string(double(ref[std::size_t(j)].first)) + ")");
    } else if (std::int64_t(idx(q, j)) != -1 || !std::isinf(d2(q, j))) {
      mismatch(where(op, q, j) + ": expected no neighbour, got " + std::to_string(std::int64_t(idx(q, j))));
    }
  }
}

/// A CSR row: sorted rows exact; unsorted ones the same set with the right distances.
template <class T>
void check_csr_row(char const* op, std::int64_t q, Row<T> ref, std::vector<std::int64_t> const& off, bool sorted,
                   std::int64_t cap, std::vector<std::int64_t> const& idx, std::vector<T> const& d2) {
  if (cap >= 0 && std::int64_t(ref.size()) > cap) ref.resize(std::size_t(cap));
  std::int64_t const b = off[std::size_t(q)], e = off[std::size_t(q + 1)];
  if (e - b != std::int64_t(ref.size()))
    mismatch(std::string(op) + ": query " + std::to_string(q) + " has " + std::to_string(e - b) +
             " neighbours, brute force " + std::to_string(ref.size()));
  Row<T> got;
  for (std::int64_t i = b; i < e; ++i) got.emplace_back(d2[std::size_t(i)], idx[std::size_t(i)]);
  if (!sorted) std::sort(got.begin(), got.end());
  if (got != ref) mismatch(std::string(op) + ": query " + std::to_string(q) + ": the row differs from brute force");
}

template <class V>
auto host(V const& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  return h;
}
template <class V>
std::vector<typename V::non_const_value_type> vec(V const& v) {
  auto h = host(v);
  return std::vector<typename V::non_const_value_type>(h.data(), h.data() + h.extent(0));
}

/// Runs `f`; true if it threw kdforge::Error. Any error where `invalid` is
/// false is a defect, as is no error where it is true.
template <class F>
bool expect(bool invalid, char const* op, F&& f) {
  try {
    f();
  } catch (kdforge::Error const& e) {
    if (!invalid) mismatch(std::string(op) + ": kdforge::Error on valid input: " + e.what());
    if (std::strncmp(e.what(), "kdforge::", 9) != 0) mismatch(std::string(op) + ": unnamed error: " + e.what());
    return true;
  }
  if (invalid) mismatch(std::string(op) + ": invalid input accepted");
  return false;
}

/// Every query of `tree` (built over pb) against brute force. `Q` makes the
/// query View; bucket-like trees (run-time dimension) take extra options.
template <class T, class Tree, class QV>
void check_queries(Bytes& b, Problem<T> const& pb, Tree const& tree, QV const& dq, bool bucket_like, bool bucket) {
  Exec exec;
  bool const bad_queries = pb.any_unusable(pb.qs) && pb.m > 0;
  int const k = int(b.u8() % 40) - 2;
  double const r = radius(b), cutoff = radius(b);
  bool const bad_r = !(r >= 0), bad_cutoff = !(cutoff >= 0);
  T const sq_r = bad_r ? T(0) : sq_radius<T>(r);
  T const sq_cut = bad_cutoff ? T(0) : sq_radius<T>(cutoff);

  kdforge::QueryOptions qo;
  qo.cutoff_radius = cutoff;
  bool exclude_self = false;
  if (bucket_like) {
    qo.strategy = kdforge::KnnStrategy(b.u8() % 3);
    qo.traversal = kdforge::Traversal(b.u8() % 5); // team, and the walks bucket trees take as stack
    exclude_self = bucket && pb.self && (b.u8() & 1);
    qo.exclude_self = exclude_self;
  } else {
    qo.traversal = kdforge::Traversal(b.u8() % 4);
    qo.order = kdforge::QueryOrder(b.u8() % 3);
    qo.bucket_levels = int(b.u8() % 8) - 1;
    if (qo.traversal == kdforge::Traversal::trail) qo.regroup_iterations = int(b.u8() % 6) - 1;
  }

  // kNN
  expect(bad_queries || k < 1 || bad_cutoff, "knn", [&] {
    auto res = kdforge::knn(exec, tree, dq, k, qo);
    auto hi = host(res.indices);
    auto hd = host(res.sq_distances);
    for (std::int64_t q = 0; q < pb.m; ++q) check_knn_row("knn", q, reference(pb, q, sq_cut, exclude_self), k, hi, hd);
  });
  // closest point
  expect(bad_queries || bad_cutoff, "closest_point", [&] {
    auto res = kdforge::closest_point(exec, tree, dq, qo);
    auto hi = vec(res.indices);
    auto hd = vec(res.sq_distances);
    for (std::int64_t q = 0; q < pb.m; ++q) {
      auto ref = reference(pb, q, sq_cut, exclude_self);
      if (ref.empty() ? (hi[std::size_t(q)] != -1 || !std::isinf(hd[std::size_t(q)]))
                      : (std::int64_t(hi[std::size_t(q)]) != ref[0].second || !(hd[std::size_t(q)] == ref[0].first)))
        mismatch(where("closest_point", q, 0) + ": differs from brute force");
    }
  });
  if (exclude_self) return; // the radius queries and approximations take no exclude_self

  // radius count and search, one radius for all
  kdforge::RadiusOptions ro;
  ro.sort = b.u8() & 1;
  ro.max_neighbors = int(b.u8() % 5) - 1;
  std::int64_t const buffers[4] = {-1, 0, 1, 3};
  ro.buffer_size = buffers[b.u8() % 4];
  if (!bucket_like) {
    ro.traversal = kdforge::Traversal(b.u8() % 4);
    ro.order = kdforge::QueryOrder(b.u8() % 3);
    ro.bucket_levels = int(b.u8() % 8) - 1;
  }
  expect(bad_queries || bad_r, "radius_count", [&] {
    auto c = vec(kdforge::radius_count(exec, tree, dq, r, ro));
    for (std::int64_t q = 0; q < pb.m; ++q) {
      std::int64_t want = std::int64_t(reference(pb, q, sq_r, false).size());
      if (ro.max_neighbors >= 0) want = std::min(want, ro.max_neighbors);
      if (c[std::size_t(q)] != want)
        mismatch("radius_count: query " + std::to_string(q) + ": " + std::to_string(c[std::size_t(q)]) +
                 ", brute force " + std::to_string(want));
    }
  });
  expect(bad_queries || bad_r, "radius_search", [&] {
    auto res = kdforge::radius_search(exec, tree, dq, r, ro);
    auto off = vec(res.offsets);
    if (std::int64_t(off.size()) != pb.m + 1) mismatch("radius_search: offsets of the wrong extent");
    std::vector<std::int64_t> idx;
    for (auto i : vec(res.indices)) idx.push_back(std::int64_t(i));
    auto d2 = vec(res.sq_distances);
    for (std::int64_t q = 0; q < pb.m; ++q)
      check_csr_row("radius_search", q, reference(pb, q, sq_r, false), off, ro.sort || ro.max_neighbors >= 0,
                    ro.max_neighbors, idx, d2);
  });
  // one radius per query
  {
    Kokkos::View<double*, MS> radii("radii", std::size_t(pb.m));
    auto hr = Kokkos::create_mirror_view(radii);
    bool bad = false;
    for (std::int64_t q = 0; q < pb.m; ++q) {
      hr(q) = radius(b);
      bad = bad || !(hr(q) >= 0);
    }
    Kokkos::deep_copy(radii, hr);
    expect(bad_queries || bad, "radius_search (radii)", [&] {
      auto res = kdforge::radius_search(exec, tree, dq, radii, ro);
      auto c = vec(kdforge::radius_count(exec, tree, dq, radii, ro));
      auto off = vec(res.offsets);
      std::vector<std::int64_t> idx;
      for (auto i : vec(res.indices)) idx.push_back(std::int64_t(i));
      auto d2 = vec(res.sq_distances);
      for (std::int64_t q = 0; q < pb.m; ++q) {
        auto ref = reference(pb, q, sq_radius<T>(hr(q)), false);
        std::int64_t want = std::int64_t(ref.size());
        if (ro.max_neighbors >= 0) want = std::min(want, ro.max_neighbors);
        if (c[std::size_t(q)] != want) mismatch("radius_count (radii): query " + std::to_string(q));
        check_csr_row("radius_search (radii)", q, ref, off, ro.sort || ro.max_neighbors >= 0, ro.max_neighbors,
                      idx, d2);
      }
    });
  }
  // approximate kNN: reported neighbours are real, sorted, distinct, and no
  // nearer than the true ones; exact when nothing cuts the search
  kdforge::ApproximateOptions ao;
  ao.queue_capacity = 1 + b.u8() % 48;
  ao.max_leaves = b.u8() % 4;
  ao.eps = double(b.u8() % 4) / 2;
  ao.cutoff_radius = cutoff;
  if (!bucket_like) ao.order = kdforge::QueryOrder(b.u8() % 3);
  bool const complete = ao.max_leaves == 0 && ao.eps == 0 && ao.queue_capacity > 2 * pb.n + 2;
  expect(bad_queries || k < 1 || bad_cutoff, "knn_approximate", [&] {
    auto res = kdforge::knn_approximate(exec, tree, dq, k, ao);
    auto hi = host(res.indices);
    auto hd = host(res.sq_distances);
    for (std::int64_t q = 0; q < pb.m; ++q) {
      auto ref = reference(pb, q, sq_cut, false);
      if (complete) {
        check_knn_row("knn_approximate (complete)", q, ref, k, hi, hd);
        continue;
      }
      std::vector<std::int64_t> seen;
      bool ended = false;
      for (int j = 0; j < k; ++j) {
        std::int64_t const i = std::int64_t(hi(q, j));
        if (i == -1) {
          if (!std::isinf(hd(q, j))) mismatch(where("knn_approximate", q, j) + ": index -1 with a finite distance");
          ended = true;
          continue;
        }
        if (ended || i < 0 || i >= pb.n || (!pb.dropped.empty() && pb.dropped[std::size_t(i)]))
          mismatch(where("knn_approximate", q, j) + ": index " + std::to_string(i) + " is no point of the tree");
        if (!(hd(q, j) == sq_dist(pb.query(q), pb.point(i), pb.dim)) || !(hd(q, j) <= sq_cut))
          mismatch(where("knn_approximate", q, j) + ": wrong distance");
        if (j >= int(ref.size()) || hd(q, j) < ref[std::size_t(j)].first)
          mismatch(where("knn_approximate", q, j) + ": nearer than the true neighbour");
        if (j > 0 && (hd(q, j) < hd(q, j - 1) || (hd(q, j) == hd(q, j - 1) && i < std::int64_t(hi(q, j - 1)))))
          mismatch(where("knn_approximate", q, j) + ": out of order");
        if (std::find(seen.begin(), seen.end(), i) != seen.end())
          mismatch(where("knn_approximate", q, j) + ": a neighbour twice");
        seen.push_back(i);
      }
    }
  });
}

template <class T>
void fill(Bytes& b, Problem<T>& pb, std::int64_t n, std::int64_t m, int dim) {
  pb.dim = dim;
  pb.n = n;
  pb.pts.resize(std::size_t(n * dim));
  for (auto& x : pb.pts) x = coordinate<T>(b);
  pb.self = (b.u8() % 4) == 0;
  if (pb.self) {
    pb.m = n;
    pb.qs = pb.pts;
  } else {
    pb.m = m;
    pb.qs.resize(std::size_t(m * dim));
    for (auto& x : pb.qs) x = coordinate<T>(b);
  }
}

template <class T>
Kokkos::View<T**, Kokkos::LayoutRight, MS> rows(std::vector<T> const& v, std::int64_t count, int dim) {
  Kokkos::View<T**, Kokkos::LayoutRight, MS> d("rows", std::size_t(count), std::size_t(dim));
  auto h = Kokkos::create_mirror_view(d);
  for (std::int64_t i = 0; i < count; ++i)
    for (int j = 0; j < dim; ++j) h(i, j) = v[std::size_t(i * dim + j)];
  Kokkos::deep_copy(d, h);
  return d;
}

template <class T, int D>
Kokkos::View<kdforge::Point<T, D>*, MS> points(std::vector<T> const& v, std::int64_t count) {
  Kokkos::View<kdforge::Point<T, D>*, MS> d("points", std::size_t(count));
  auto h = Kokkos::create_mirror_view(d);
  for (std::int64_t i = 0; i < count; ++i)
    for (int j = 0; j < D; ++j) h(i)[j] = v[std::size_t(i * D + j)];
  Kokkos::deep_copy(d, h);
  return d;
}

#if KDFORGE_FUZZ_API_POINT_TREES
/// Left-balanced or split-and-sort trees of dimension D.
template <class T, int D, bool SplitSort>
void point_trees(Bytes& b) {
  Exec exec;
  Problem<T> pb;
  fill<T>(b, pb, b.u8() % 48, b.u8() % 6, D);
  bool const drop = b.u8() & 1;
  // drop leaves out the points with a NaN or infinite coordinate, whatever
  // their others; a finite point out of range is refused either way
  bool invalid = false;
  pb.dropped.assign(std::size_t(pb.n), 0);
  for (std::int64_t i = 0; i < pb.n; ++i) {
    bool finite = true, in_range = true;
    for (int d = 0; d < D; ++d) {
      finite = finite && std::isfinite(pb.point(i)[d]);
      in_range = in_range && usable(pb.point(i)[d], D);
    }
    if (drop && !finite) pb.dropped[std::size_t(i)] = 1;
    else if (!in_range) invalid = true;
  }
  auto dp = points<T, D>(pb.pts, pb.n);
  auto dq = points<T, D>(pb.qs, pb.m);
  auto const policy = drop ? kdforge::NonFinitePolicy::drop : kdforge::NonFinitePolicy::reject;
  std::int64_t const kept = pb.n - std::count(pb.dropped.begin(), pb.dropped.end(), char(1));
  if constexpr (SplitSort) {
    kdforge::SplitSortOptions o;
    o.non_finite = policy;
    o.strategy = kdforge::SplitSortStrategy(b.u8() % 3);
    int const bases[4] = {2, 4, 32, 256};
    o.radix_base = bases[b.u8() % 4];
    o.node_boxes = kdforge::NodeBoxPolicy(b.u8() % 3);
    expect(invalid, "build_split_sort", [&] {
      auto tree = kdforge::build_split_sort(exec, dp, o);
      if (std::int64_t(tree.size()) != kept || std::int64_t(tree.dropped_count()) != pb.n - kept)
        mismatch("build_split_sort: wrong size or dropped count");
      check_queries<T>(b, pb, tree, dq, false, false);
    });
  } else {
    kdforge::BuildOptions o;
    o.non_finite = policy;
    o.builder = kdforge::Builder(b.u8() % 4);
    o.split = kdforge::SplitPolicy(b.u8() % 3);
    o.node_boxes = kdforge::NodeBoxPolicy(b.u8() % 3);
    expect(invalid, "build_left_balanced", [&] {
      auto tree = kdforge::build_left_balanced(exec, dp, o);
      if (std::int64_t(tree.size()) != kept || std::int64_t(tree.dropped_count()) != pb.n - kept)
        mismatch("build_left_balanced: wrong size or dropped count");
      check_queries<T>(b, pb, tree, dq, false, false);
    });
  }
}

#else
/// Bucket trees (run-time dimension 1 to 5) and brute force.
template <class T>
void bucket_tree(Bytes& b, bool brute) {
  Exec exec;
  Problem<T> pb;
  int const dim = 1 + b.u8() % 5;
  fill<T>(b, pb, b.u8() % 48, b.u8() % 6, dim);
  bool const invalid = pb.any_unusable(pb.pts);
  auto dp = rows(pb.pts, pb.n, dim);
  auto dq = rows(pb.qs, pb.m, dim);
  if (brute) {
    int const k = int(b.u8() % 40) - 2;
    kdforge::BruteForceOptions o;
    o.cutoff_radius = radius(b);
    o.exclude_self = pb.self && (b.u8() & 1);
    bool const bad_queries = pb.any_unusable(pb.qs) && pb.m > 0;
    expect(invalid || bad_queries || k < 1 || !(o.cutoff_radius >= 0), "knn_brute_force", [&] {
      auto res = kdforge::knn_brute_force(exec, dp, dq, k, o);
      auto hi = host(res.indices);
      auto hd = host(res.sq_distances);
      for (std::int64_t q = 0; q < pb.m; ++q)
        check_knn_row("knn_brute_force", q, reference(pb, q, sq_radius<T>(o.cutoff_radius), o.exclude_self), k, hi, hd);
    });
    return;
  }
  kdforge::BucketOptions o;
  o.bucket_size = 1 + b.u8() % 9;
  expect(invalid, "build_bucket_tree", [&] {
    auto tree = kdforge::build_bucket_tree(exec, dp, o);
    if (std::int64_t(tree.size()) != pb.n) mismatch("build_bucket_tree: wrong size");
    check_queries<T>(b, pb, tree, dq, true, true);
  });
}

/// VVH photon trees, with range kNN.
template <class T>
void vvh_tree(Bytes& b) {
  Exec exec;
  Problem<T> pb;
  fill<T>(b, pb, b.u8() % 48, b.u8() % 6, 3);
  bool const invalid = pb.any_unusable(pb.pts);
  auto dp = points<T, 3>(pb.pts, pb.n);
  auto dq = rows(pb.qs, pb.m, 3);
  kdforge::VvhOptions o;
  int const small[3] = {1, 2, 32};
  o.small_node_size = small[b.u8() % 3];
  o.expected_k = 1 + b.u8() % 8;
  if (b.u8() & 1) o.query_radius = double(b.u8()) / 32;
  expect(invalid, "build_vvh_tree", [&] {
    auto tree = kdforge::build_vvh_tree(exec, dp, o);
    if (std::int64_t(tree.size()) != pb.n) mismatch("build_vvh_tree: wrong size");
    bool const bad_queries = pb.any_unusable(pb.qs) && pb.m > 0;
    int const k = int(b.u8() % 40) - 2;
    kdforge::RangeKnnOptions ro;
    ro.iterations = b.u8() % 4;
    ro.histogram_bins = 1 + b.u8() % 40;
    expect(bad_queries || k < 1, "range_knn", [&] {
      auto res = kdforge::range_knn(exec, tree, dq, k, ro);
      auto hi = host(res.indices);
      auto hd = host(res.sq_distances);
      T const inf = std::numeric_limits<T>::infinity();
      for (std::int64_t q = 0; q < pb.m; ++q) check_knn_row("range_knn", q, reference(pb, q, inf, false), k, hi, hd);
    });
    expect(bad_queries || k < 1, "range_knn_rows", [&] {
      auto res = kdforge::range_knn_rows(exec, tree, dq, k, ro);
      auto radii = vec(res.radii);
      auto off = vec(res.rows.offsets);
      std::vector<std::int64_t> idx;
      for (auto i : vec(res.rows.indices)) idx.push_back(std::int64_t(i));
      auto d2 = vec(res.rows.sq_distances);
      for (std::int64_t q = 0; q < pb.m; ++q) {
        T const rq = radii[std::size_t(q)];
        auto ref = reference(pb, q, rq * rq, false);
        if (std::int64_t(ref.size()) < std::min<std::int64_t>(k, pb.n))
          mismatch("range_knn_rows: query " + std::to_string(q) + ": fewer than k points within r_k");
        check_csr_row("range_knn_rows", q, ref, off, true, -1, idx, d2);
      }
    });
    check_queries<T>(b, pb, tree, dq, true, false);
  });
}

#endif

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  Bytes b{data, size};
  std::uint8_t const kind = b.u8();
  bool const dbl = kind & 0x80;
  // two targets, compiled in parallel (each tree type compiles every query
  // kernel): point trees in 3-D (float and double left-balanced, float
  // split-and-sort), and the trees of rows (bucket trees of 1 to 5
  // dimensions, brute force, VVH trees), float and double
#if KDFORGE_FUZZ_API_POINT_TREES
  if (kind % 2 == 0) dbl ? point_trees<double, 3, false>(b) : point_trees<float, 3, false>(b);
  else point_trees<float, 3, true>(b);
#else
  switch (kind % 3) {
  case 0: dbl ? bucket_tree<double>(b, false) : bucket_tree<float>(b, false); break;
  case 1: dbl ? bucket_tree<double>(b, true) : bucket_tree<float>(b, true); break;
  default: dbl ? vvh_tree<double>(b) : vvh_tree<float>(b); break;
  }
#endif
  return 0;
}
