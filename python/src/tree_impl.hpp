#pragma once
// The Python module's trees: kdforge's left-balanced, split-sort and bucket
// trees behind the Tree interface of trees.hpp, answering scipy's questions
// (k-th neighbours with unsquared distances and index n for a missing one,
// counts and lists within a radius) on the default execution space.
//
// What differs from kdforge's C++ API, and why: scipy's missing neighbour is
// (inf, n), not (+inf squared, -1), and its distance_upper_bound is strict
// (d < bound) where kdforge's cutoff is inclusive, so one pass after the
// query rewrites kdforge's rows into the caller's arrays (unsquared, int64,
// only the columns asked for). scipy's eps > 0 asks for neighbours within
// (1 + eps) of the true ones: the exact answer meets that, and measured faster
// than kdforge's (1 + eps) search (ApproximateOptions::eps) run with a queue
// as large as the tree, which it needs to keep the bound (python/README.md).
// The caller's arrays are read in place where
// the execution space can read them (NumPy on CPUs, CuPy and PyTorch on the
// GPU); NumPy arrays in a GPU build are copied to the device once per call.
#include "space.hpp"

#include <kdforge/build_bucket_tree.hpp>
#include <kdforge/build_left_balanced.hpp>
#include <kdforge/build_split_sort.hpp>
#include <kdforge/knn.hpp>
#include <kdforge/radius.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kdforge_python {

template <class T>
constexpr char dtype_char() {
  return std::is_same<T, float>::value ? 'f' : std::is_same<T, double>::value ? 'd' : 'q';
}

template <class T>
void check_dtype(ArrayRef const& a, char const* what) {
  KDFORGE_REQUIRE(a.dtype == dtype_char<T>(), "python", what, " have dtype code '", a.dtype, "', expected '",
                  dtype_char<T>(), "'");
}

/// The caller's array as a strided View in the execution space's memory:
/// the caller's memory itself where the space can read it, else (NumPy
/// input in a GPU build) one copy on the device, kept in `owner`.
template <class T>
struct InSpace {
  Kokkos::View<T**, Kokkos::LayoutRight, MS> owner;
  T const* ptr = nullptr;
  std::int64_t rows = 0, cols = 0, s0 = 0, s1 = 0;

  Kokkos::View<T const**, Kokkos::LayoutStride, MS> view() const {
    return Kokkos::View<T const**, Kokkos::LayoutStride, MS>(ptr, Kokkos::LayoutStride(rows, s0, cols, s1));
  }
  template <int D>
  Kokkos::View<T const* [D], Kokkos::LayoutStride, MS> fixed() const {
    return Kokkos::View<T const* [D], Kokkos::LayoutStride, MS>(ptr, Kokkos::LayoutStride(rows, s0, D, s1));
  }
  Kokkos::View<T const*, Kokkos::LayoutStride, MS> column() const {
    return Kokkos::View<T const*, Kokkos::LayoutStride, MS>(ptr, Kokkos::LayoutStride(rows, s0));
  }
};

template <class T>
InSpace<T> in_space(ArrayRef const& a, char const* what) {
  check_dtype<T>(a, what);
  InSpace<T> r;
  r.ptr = reinterpret_cast<T const*>(a.ptr);
  r.rows = a.rows;
  r.cols = a.cols;
  // Kokkos' strided layout wants a positive stride also where an extent is 1
  r.s0 = a.s0 > 0 ? a.s0 : a.cols;
  r.s1 = a.s1 > 0 ? a.s1 : 1;
  if (a.device) {
    KDFORGE_REQUIRE(!exec_on_host, "python", what,
                    " are a GPU array, but this kdforge module was built for the CPU (", Exec::name(),
                    "): pass NumPy arrays, or build the module with -DKDFORGE_BACKEND=Cuda");
    check_device_of(a, what);
    return r;
  }
  if constexpr (exec_on_host) {
    return r;
  } else {
    // host -> device: the host rows made contiguous where they are not,
    // then one transfer
    Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> h;
    if (r.rows == 0 || (r.s1 == 1 && r.s0 == r.cols)) {
      h = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>(const_cast<T*>(r.ptr), r.rows, r.cols);
    } else {
      h = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::python::host_rows"), r.rows, r.cols);
      Kokkos::View<T const**, Kokkos::LayoutStride, Kokkos::HostSpace> src(
          r.ptr, Kokkos::LayoutStride(r.rows, r.s0, r.cols, r.s1));
      Kokkos::deep_copy(h, src);
    }
    r.owner = Kokkos::View<T**, Kokkos::LayoutRight, MS>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::python::input"), r.rows, r.cols);
    Kokkos::deep_copy(r.owner, h);
    r.ptr = r.owner.data();
    r.s0 = r.cols;
    r.s1 = 1;
    return r;
  }
}

/// An output array of the caller's (C-ordered, rows x cols) as a View the
/// execution space writes: the caller's memory where it can, else a device
/// buffer copied back to the caller's host array by finish().
template <class T>
struct OutSpace {
  Kokkos::View<T**, Kokkos::LayoutRight, MS> view;
  Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> host; // the caller's, when copied back
  void finish(Exec const& exec) const {
    if (host.data()) Kokkos::deep_copy(exec, host, view);
  }
};

template <class T>
OutSpace<T> out_space(ArrayRef const& a, char const* what) {
  check_dtype<T>(a, what);
  KDFORGE_REQUIRE((a.rows <= 1 || a.s0 == a.cols) && (a.cols <= 1 || a.s1 == 1), "python", what,
                  " must be C-ordered");
  OutSpace<T> o;
  T* p = reinterpret_cast<T*>(a.ptr);
  if (a.device || exec_on_host) {
    if (a.device) check_device_of(a, what);
    o.view = Kokkos::View<T**, Kokkos::LayoutRight, MS>(p, a.rows, a.cols);
  } else {
    o.host = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>(p, a.rows, a.cols);
    o.view = Kokkos::View<T**, Kokkos::LayoutRight, MS>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::python::output"), a.rows, a.cols);
  }
  return o;
}

/// kdforge's kNN rows -> scipy's: the ks[c]-th neighbour's unsquared
/// distance and index, (inf, n) where there is none or where it is not
/// strictly nearer than the upper bound.
template <class T, class Index>
struct ScipyRows {
  Kokkos::View<Index**, Kokkos::LayoutRight, MS> idx;
  Kokkos::View<T**, Kokkos::LayoutRight, MS> sqd;
  Kokkos::View<std::int64_t*, MS> cols; ///< 0-based columns of idx/sqd, or >= their width: missing
  Kokkos::View<T**, Kokkos::LayoutRight, MS> out_d;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MS> out_i;
  std::int64_t n;
  T sq_bound; ///< strict: a neighbour needs sq_distance < sq_bound
  KOKKOS_FUNCTION void operator()(std::int64_t q) const {
    std::int64_t const width = std::int64_t(idx.extent(1));
    for (std::int64_t c = 0; c < std::int64_t(cols.extent(0)); ++c) {
      std::int64_t const j = cols(c);
      Index const i = j < width ? idx(q, j) : Index(-1);
      T const d2 = j < width ? sqd(q, j) : T(0);
      if (i < 0 || !(d2 < sq_bound)) {
        out_d(q, c) = kdforge::detail::infinity<T>();
        out_i(q, c) = n;
      } else {
        out_d(q, c) = T(::sqrt(double(d2))); // correctly rounded for float too
        out_i(q, c) = std::int64_t(i);
      }
    }
  }
};

struct SumCounts {
  Kokkos::View<std::int64_t*, MS> counts;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& s) const { s += counts(i); }
};

/// Rows of a host CSR sorted by index (scipy's return_sorted), with their
/// distances alongside when there are any.
struct SortRowsByIndex {
  Csr* csr;
  void operator()(std::int64_t q) const {
    std::int64_t const b = csr->offsets[std::size_t(q)], e = csr->offsets[std::size_t(q) + 1];
    if (e - b < 2) return;
    auto* idx = csr->indices.data();
    if (csr->distances.empty()) {
      std::sort(idx + b, idx + e);
      return;
    }
    auto* dist = csr->distances.data();
    std::vector<std::pair<std::int64_t, double>> row(std::size_t(e - b));
    for (std::int64_t j = b; j < e; ++j) row[std::size_t(j - b)] = {idx[j], dist[j]};
    std::sort(row.begin(), row.end());
    for (std::int64_t j = b; j < e; ++j) std::tie(idx[j], dist[j]) = row[std::size_t(j - b)];
  }
};

/// What differs between the tree kinds: how the queries are passed (M x D
/// with D fixed, or a rank-2 View for bucket trees).
template <class KTree>
struct QueryForm {
  template <class T>
  static auto of(InSpace<T> const& q) { return q.template fixed<KTree::dimension>(); }
  static int dim(KTree const&) { return KTree::dimension; }
};
template <class T, class Index>
struct QueryForm<kdforge::BucketTree<MS, T, Index>> {
  static auto of(InSpace<T> const& q) { return q.view(); }
  static int dim(kdforge::BucketTree<MS, T, Index> const& t) { return t.dim(); }
};

template <class KTree>
class TreeImpl final : public Tree {
  using T = typename KTree::coordinate_type;
  using Index = typename KTree::index_type;
  using Form = QueryForm<KTree>;

public:
  TreeImpl(KTree tree, std::string builder, std::int64_t n)
      : m_tree(std::move(tree)), m_builder(std::move(builder)), m_n(n), m_dim(Form::dim(m_tree)) {}

  std::int64_t size() const override { return m_n; }
  int dim() const override { return m_dim; }
  char dtype() const override { return dtype_char<T>(); }
  std::string builder() const override { return m_builder; }

  void knn(ArrayRef const& queries, std::vector<std::int64_t> const& ks, double upper_bound, ArrayRef const& out_d,
           ArrayRef const& out_i, Checkpoint const& check) override {
    Exec const exec;
    std::int64_t const m = queries.rows;
    auto const q = in_space<T>(queries, "the queries");
    auto od = out_space<T>(out_d, "the distances");
    auto oi = out_space<std::int64_t>(out_i, "the indices");
    KDFORGE_REQUIRE(od.view.extent(0) == std::size_t(m) && oi.view.extent(0) == std::size_t(m) &&
                        od.view.extent(1) == ks.size() && oi.view.extent(1) == ks.size(),
                    "python", "the result arrays must be M x len(k)");
    std::int64_t const kmax = *std::max_element(ks.begin(), ks.end());
    // no row is longer than the tree: columns beyond it are missing anyway
    int const k = int(std::max<std::int64_t>(1, std::min<std::int64_t>(kmax, std::max<std::int64_t>(m_n, 1))));
    if (ks != m_ks) { // the columns asked for, on the device (kept: loops ask the same)
      m_cols = Kokkos::View<std::int64_t*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::python::cols"),
                                               ks.size());
      auto h = Kokkos::create_mirror_view(m_cols);
      for (std::size_t c = 0; c < ks.size(); ++c) h(c) = ks[c] - 1;
      Kokkos::deep_copy(exec, m_cols, h);
      m_ks = ks;
    }
    check();
    kdforge::QueryOptions o;
    o.cutoff_radius = upper_bound;
    kdforge::knn(exec, m_tree, Form::of(q), k, m_knn, o, m_workspace);
    auto const& rows = m_knn;
    check();
    // squared in T, as kdforge squares its cutoff
    T const sq_bound = std::isinf(upper_bound) ? kdforge::detail::infinity<T>() : T(upper_bound) * T(upper_bound);
    Kokkos::parallel_for("kdforge::python::scipy_rows", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         ScipyRows<T, Index>{rows.indices, rows.sq_distances, m_cols, od.view, oi.view, m_n, sq_bound});
    od.finish(exec);
    oi.finish(exec);
    exec.fence();
  }

  void radius_count(ArrayRef const& queries, ArrayRef const& radii, double r, ArrayRef const& out,
                    Checkpoint const& check) override {
    Exec const exec;
    auto const q = in_space<T>(queries, "the queries");
    auto oc = out_space<std::int64_t>(out, "the counts");
    Kokkos::View<std::int64_t*, MS> counts(oc.view.data(), std::size_t(queries.rows));
    check();
    if (radii.ptr) {
      auto const rr = in_space<double>(radii, "the radii");
      kdforge::radius_count(exec, m_tree, Form::of(q), rr.column(), counts, {}, m_workspace);
    } else {
      kdforge::radius_count(exec, m_tree, Form::of(q), r, counts, {}, m_workspace);
    }
    check();
    oc.finish(exec);
    exec.fence();
  }

  std::vector<std::int64_t> count_pairs(ArrayRef const& queries, std::vector<double> const& rs,
                                        Checkpoint const& check) override {
    Exec const exec;
    auto const q = in_space<T>(queries, "the other tree's points");
    std::vector<std::int64_t> sums;
    for (double const r : rs) {
      check();
      kdforge::radius_count(exec, m_tree, Form::of(q), r, m_counts, {}, m_workspace);
      std::int64_t s = 0;
      Kokkos::parallel_reduce("kdforge::python::sum_counts", Kokkos::RangePolicy<Exec>(exec, 0, queries.rows),
                              SumCounts{m_counts}, s);
      sums.push_back(s);
    }
    return sums;
  }

  Csr radius_search(ArrayRef const& queries, ArrayRef const& radii, double r, bool sort_by_index, bool distances,
                    Checkpoint const& check) override {
    Exec const exec;
    std::int64_t const m = queries.rows;
    auto const q = in_space<T>(queries, "the queries");
    check();
    kdforge::RadiusResultFor<Exec, KTree> res;
    if (radii.ptr) {
      auto const rr = in_space<double>(radii, "the radii");
      kdforge::radius_search(exec, m_tree, Form::of(q), rr.column(), res, {}, m_workspace);
    } else {
      kdforge::radius_search(exec, m_tree, Form::of(q), r, res, {}, m_workspace);
    }
    check();
    auto const offsets = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.offsets);
    auto const idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.indices);
    Kokkos::View<T*, Kokkos::HostSpace> sqd;
    if (distances) sqd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, res.sq_distances);
    res = {}; // the device rows are no longer needed
    Csr csr;
    csr.offsets.assign(offsets.data(), offsets.data() + m + 1);
    std::int64_t const total = csr.offsets.back();
    csr.indices.resize(std::size_t(total));
    for (std::int64_t j = 0; j < total; ++j) csr.indices[std::size_t(j)] = std::int64_t(idx(j));
    if (distances) {
      csr.distances.resize(std::size_t(total));
      for (std::int64_t j = 0; j < total; ++j) csr.distances[std::size_t(j)] = ::sqrt(double(sqd(j)));
    }
    check();
    if (sort_by_index)
      Kokkos::parallel_for("kdforge::python::sort_rows", Kokkos::RangePolicy<HostExec>(0, m), SortRowsByIndex{&csr});
    HostExec().fence();
    return csr;
  }

  void release() override {
    m_tree = KTree();
    m_knn = {};
    m_counts = {};
    m_cols = {};
    m_ks.clear();
    m_workspace.release();
  }

private:
  KTree m_tree;
  std::string m_builder;
  std::int64_t m_n;
  int m_dim;
  // kept between calls: a loop of same-sized queries allocates nothing
  kdforge::KnnResult<MS, T, Index> m_knn;
  Kokkos::View<std::int64_t*, MS> m_counts;
  Kokkos::View<std::int64_t*, MS> m_cols;
  std::vector<std::int64_t> m_ks;
  kdforge::QueryWorkspace<MS> m_workspace;
};

/// Builds a left-balanced or split-sort tree over M x D points, D fixed.
template <class T, int D>
std::unique_ptr<Tree> build_fixed(BuildRequest const& req, Checkpoint const& check) {
  Exec const exec;
  std::int64_t const n = req.points.rows;
  std::unique_ptr<Tree> tree;
  {
    auto const p = in_space<T>(req.points, "the points");
    check();
    if (req.builder == "split-sort") {
      auto t = kdforge::build_split_sort(exec, p.template fixed<D>());
      tree = std::make_unique<TreeImpl<decltype(t)>>(std::move(t), req.builder, n);
    } else {
      auto t = kdforge::build_left_balanced(exec, p.template fixed<D>());
      tree = std::make_unique<TreeImpl<decltype(t)>>(std::move(t), req.builder, n);
    }
    exec.fence();
  }
  check();
  return tree;
}

/// Builds a bucket tree over M x D points, D a run-time value.
template <class T>
std::unique_ptr<Tree> build_bucket(BuildRequest const& req, Checkpoint const& check) {
  Exec const exec;
  std::int64_t const n = req.points.rows;
  std::unique_ptr<Tree> tree;
  {
    auto const p = in_space<T>(req.points, "the points");
    check();
    kdforge::BucketOptions bo;
    if (req.leafsize > 0) bo.bucket_size = req.leafsize;
    auto t = kdforge::build_bucket_tree(exec, p.view(), bo);
    tree = std::make_unique<TreeImpl<decltype(t)>>(std::move(t), req.builder, n);
    exec.fence();
  }
  check();
  return tree;
}

} // namespace kdforge_python
