#pragma once
// Builder "recursive_select" of left-balanced k-d trees, for CPUs.
//
// Paper: Wald 2022, observation 2.1 (sections 2 and 4): the point of node s
// is the one of rank ss(lChild(s)) among its sub-tree's points ordered along
// its split dimension; the lower ranks form the left sub-tree, the higher
// ones the right. Section 6 gives the widest-dimension split, with the
// node's domain box being the scene box clipped by its ancestors' planes.
// What differs, and why: the paper (and the level-by-level builders here)
// make O(log N) passes over all N points, each a synchronisation of the
// whole machine; that suits GPUs. On CPUs a selection (std::nth_element,
// O(m) expected for a sub-tree of m points) per node, depth first, keeps a
// sub-tree's points in a core's cache, and the two children are independent
// tasks (backend::fork_join: OpenMP tasks or oneTBB). The few top levels,
// where there are fewer sub-trees than cores, select with the whole machine
// instead (sample two pivots around the wanted rank, three-way partition in
// parallel, repeat on the part holding the rank), so that a 1M-point root
// is not one core's job. The order is the one
// every builder uses, (coordinate, input index), so the tree is identical to
// theirs (checked by a test); clipping the box top-down here and bottom-up
// in widest_split_dim gives the same box, min and max being exact.
#include <kdforge/backends/memory.hpp>
#include <kdforge/kernels/builders/left_balanced/common.hpp>
#include <kdforge/kernels/trees/packed_node.hpp>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace kdforge::kernels {

namespace recursive_detail {
template <class PV, class N>
struct Fill {
  PV pts;
  N* work;
  void operator()(std::int64_t i) const { work[i] = pack_node(pts(i), decltype(N::index)(i)); }
};

template <class N>
struct KeyLess { // the builders' order: coordinate in dimension d, then input index
  int d;
  bool operator()(N const& a, N const& b) const { return a.c[d] < b.c[d] || (a.c[d] == b.c[d] && a.index < b.index); }
};

/// Split dimension of node s with domain box `box`.
template <class T, int D>
int node_dim(bool widest, std::int64_t s, Box<T, D> const& box) {
  return widest ? widest_box_dim(box) : lb::level(s) % D;
}
/// The children's domain boxes: `box` clipped at v in dimension d (exactly
/// the clipping widest_split_dim does walking up).
template <class T, int D>
void split_box(Box<T, D> const& box, int d, T v, Box<T, D>& left, Box<T, D>& right) {
  left = right = box;
  left.hi[d] = v < left.hi[d] ? v : left.hi[d];
  right.lo[d] = v > right.lo[d] ? v : right.lo[d];
}

// Three-way split of work[b, e) by two pivots: class 0 (< lo), 1, 2 (> hi);
// chunk c counts into counts(c, cls), then scatters into tmp.
template <class N>
struct ClassCount {
  N const* work;
  std::int64_t b, e, chunk;
  N lo, hi;
  KeyLess<N> less;
  std::int64_t* counts;
  int cls(N const& x) const { return less(x, lo) ? 0 : (less(hi, x) ? 2 : 1); }
  void operator()(std::int64_t c) const {
    std::int64_t k[3] = {0, 0, 0};
    std::int64_t const cb = b + c * chunk, ce = std::min(e, cb + chunk);
    for (std::int64_t i = cb; i < ce; ++i) ++k[cls(work[i])];
    for (int j = 0; j < 3; ++j) counts[3 * c + j] = k[j];
  }
};
template <class N>
struct ClassScatter {
  ClassCount<N> cc;
  std::int64_t const* offsets; // per chunk and class: where its elements go in tmp
  N* tmp;
  void operator()(std::int64_t c) const {
    std::int64_t o[3] = {offsets[3 * c], offsets[3 * c + 1], offsets[3 * c + 2]};
    std::int64_t const cb = cc.b + c * cc.chunk, ce = std::min(cc.e, cb + cc.chunk);
    for (std::int64_t i = cb; i < ce; ++i) tmp[o[cc.cls(cc.work[i])]++] = cc.work[i];
  }
};
template <class N>
struct CopyBack {
  N const* tmp;
  N* work;
  std::int64_t b;
  void operator()(std::int64_t i) const { work[b + i] = tmp[i]; }
};

/// Puts the element of rank k (absolute position) of work[b, e) at k, the
/// smaller ones before it and the larger ones after, using all of exec.
template <class Exec, class N>
void parallel_select(Exec const& exec, N* work, N* tmp, std::int64_t b, std::int64_t e, std::int64_t k, int d) {
  KeyLess<N> const less{d};
  std::int64_t const chunks = 4 * std::int64_t(exec.concurrency());
  std::vector<std::int64_t> counts(3 * chunks), offsets(3 * chunks);
  while (e - b > (std::int64_t(1) << 16)) {
    std::int64_t const m = e - b;
    constexpr int S = 1024; // evenly spaced sample: deterministic
    std::vector<N> sample(S);
    for (int i = 0; i < S; ++i) sample[i] = work[b + std::int64_t(i) * m / S];
    std::sort(sample.begin(), sample.end(), less);
    std::int64_t const pos = (k - b) * S / m;
    ClassCount<N> cc{work, b, e, (m + chunks - 1) / chunks, sample[std::max<std::int64_t>(0, pos - 16)],
                     sample[std::min<std::int64_t>(S - 1, pos + 16)], less, counts.data()};
    Kokkos::parallel_for("kdforge::build::select_count", Kokkos::RangePolicy<Exec>(exec, 0, chunks), cc);
    exec.fence();
    std::int64_t total[3] = {0, 0, 0};
    for (std::int64_t c = 0; c < chunks; ++c)
      for (int j = 0; j < 3; ++j) total[j] += counts[3 * c + j];
    std::int64_t run[3] = {0, total[0], total[0] + total[1]};
    for (std::int64_t c = 0; c < chunks; ++c)
      for (int j = 0; j < 3; ++j) {
        offsets[3 * c + j] = run[j];
        run[j] += counts[3 * c + j];
      }
    Kokkos::parallel_for("kdforge::build::select_scatter", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
                         ClassScatter<N>{cc, offsets.data(), tmp});
    Kokkos::parallel_for("kdforge::build::select_copy", Kokkos::RangePolicy<Exec>(exec, 0, m), CopyBack<N>{tmp, work, b});
    exec.fence();
    // the rank is in exactly one class; the others are already on their side
    if (k < b + total[0]) e = b + total[0];
    else if (k < b + total[0] + total[1]) {
      std::int64_t const nb = b + total[0];
      e = nb + total[1];
      b = nb;
    } else b = b + total[0] + total[1];
  }
  std::nth_element(work + b, work + k, work + e, less);
}

template <class Exec, class T, int D, class Index, class NP, class Dims>
struct Recurse {
  using N = PackedNode<T, D, Index>;
  static constexpr std::int64_t task_grain = 1 << 14; // smaller sub-trees: no new task
  Exec exec;
  N* work;
  NP node_point;
  Dims dims;
  std::int64_t n;
  bool widest;

  void operator()(std::int64_t s, std::int64_t begin, Box<T, D> box) const {
    std::int64_t const m = lb::subtree_size(s, n);
    if (m == 0) return;
    int const d = node_dim(widest, s, box);
    std::int64_t const k = begin + lb::subtree_size(lb::left_child(s), n);
    if (m > 1) std::nth_element(work + begin, work + k, work + begin + m, KeyLess<N>{d});
    node_point(s) = work[k].index;
    dims(s) = std::uint8_t(d);
    if (m == 1) return;
    Box<T, D> left, right;
    split_box(box, d, work[k].c[d], left, right);
    auto const go_left = [&] { (*this)(lb::left_child(s), begin, left); };
    auto const go_right = [&] { (*this)(lb::right_child(s), k + 1, right); };
    if (m > task_grain) backend::fork_join(exec, go_left, go_right);
    else {
      go_left();
      go_right();
    }
  }
};
} // namespace recursive_detail

/// Returns node_point (as build_left_balanced_partition) and fills dims(s)
/// for every node. Host execution spaces only.
template <class Exec, class T, int D, class Index>
Kokkos::View<Index*, typename Exec::memory_space>
build_left_balanced_recursive(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& pts,
                              SplitPolicy policy, Box<T, D> const& bounds,
                              Kokkos::View<std::uint8_t*, typename Exec::memory_space> const& dims) {
  using MS = typename Exec::memory_space;
  static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible,
                "kdforge: the recursive_select builder runs on host execution spaces only");
  using N = PackedNode<T, D, Index>;
  std::int64_t const n = std::int64_t(pts.extent(0));
  auto node_point = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::node_point"), n);
  if (n == 0) return node_point;
  auto work = backend::allocate<Kokkos::View<N*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::select_work"), n);
  Kokkos::parallel_for("kdforge::build::select_fill", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       recursive_detail::Fill<std::decay_t<decltype(pts)>, N>{pts, work.data()});
  exec.fence();
  bool const widest = policy == SplitPolicy::widest_dimension;
  using Rec = recursive_detail::Recurse<Exec, T, D, Index, decltype(node_point), Kokkos::View<std::uint8_t*, MS>>;
  Rec const rec{exec, work.data(), node_point, dims, n, widest};

  // Top levels, breadth first, while there are fewer sub-trees than cores and
  // they are large: one machine-wide selection per node.
  struct Pending {
    std::int64_t s, begin;
    Box<T, D> box;
  };
  std::vector<Pending> level{{0, 0, bounds}};
  std::int64_t const cores = std::int64_t(exec.concurrency());
  if (cores > 1) {
    auto tmp = backend::allocate<Kokkos::View<N*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::select_tmp"), n);
    while (std::int64_t(level.size()) < cores && lb::subtree_size(level.front().s, n) > (std::int64_t(1) << 17)) {
      std::vector<Pending> next;
      for (auto const& p : level) {
        std::int64_t const m = lb::subtree_size(p.s, n);
        int const d = recursive_detail::node_dim(widest, p.s, p.box);
        std::int64_t const k = p.begin + lb::subtree_size(lb::left_child(p.s), n);
        recursive_detail::parallel_select(exec, work.data(), tmp.data(), p.begin, p.begin + m, k, d);
        node_point(p.s) = work(k).index;
        dims(p.s) = std::uint8_t(d);
        Box<T, D> left, right;
        recursive_detail::split_box(p.box, d, work(k).c[d], left, right);
        if (lb::left_child(p.s) < n) next.push_back({lb::left_child(p.s), p.begin, left});
        if (lb::right_child(p.s) < n) next.push_back({lb::right_child(p.s), k + 1, right});
      }
      level.swap(next);
    }
  }
  // Then every remaining sub-tree depth first, as parallel tasks.
  struct Spread {
    Exec exec;
    Rec const& rec;
    std::vector<Pending> const& level;
    void operator()(std::size_t lo, std::size_t hi) const {
      if (hi - lo == 1) {
        rec(level[lo].s, level[lo].begin, level[lo].box);
        return;
      }
      std::size_t const mid = lo + (hi - lo) / 2;
      backend::fork_join(exec, [&] { (*this)(lo, mid); }, [&] { (*this)(mid, hi); });
    }
  };
  if (!level.empty()) Spread{exec, rec, level}(0, level.size());
  return node_point;
}

} // namespace kdforge::kernels
