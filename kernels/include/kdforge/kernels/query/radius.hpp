#pragma once
// Radius count and radius search (CSR) on level-order trees: one thread per
// query walks the tree with a counting or recording visitor.
//
// How a search finds its rows without guessing their sizes:
//  - count, exclusive scan, fill (two walks, no scratch: the GPU default);
//  - one walk with per-query scratch slots (RadiusOptions::buffer_size):
//    rows that fit are copied, only longer ones are walked again;
//  - CPUs: one walk whose chunks of queries append their rows to growing
//    host buffers, copied into place after the scan.
// max_neighbors >= 0 keeps the nearest ones of each row in a max-heap in the
// output row. The radius is one for all queries or one per query (SqRadii).
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/order.hpp>
#include <kdforge/kernels/query/rows.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace kdforge::detail {

/// The squared search radius of each query: one for all (`scalar`), or one
/// per query (`per_query`, by the caller's query index) when that is not
/// empty. Gathering radii differ per query (photon maps, SPH smoothing
/// lengths).
template <class T, class MemorySpace>
struct SqRadii {
  T scalar = T(0);
  Kokkos::View<T const*, MemorySpace> per_query = {};
  KOKKOS_FORCEINLINE_FUNCTION T operator()(std::int64_t qi) const {
    return per_query.extent(0) ? per_query(qi) : scalar;
  }
};

template <class Tree>
using SqRadiiFor = SqRadii<typename Tree::coordinate_type, typename Tree::memory_space>;

/// The tree a radius walk runs on: `tree` with its node boxes left aside
/// (walk_tree_without_boxes), unless the rows keep only their nearest
/// neighbours (`nearest_only`, RadiusOptions::max_neighbors >= 0: a bound
/// that shrinks, whose ties the boxes' smallest indices prune). A radius
/// walk's bound is fixed, so a box prunes only a sub-tree whose cell
/// reaches into the ball while its points do not; measured on an H200 and
/// on 2 CPU cores (docs/performance.md, Geometry), loading and testing the
/// boxes cost more than that saves on every distribution, uniform to LiDAR.
/// Results do not change: boxes are lower bounds, and radius rows keep the
/// plane order.
template <class Exec, class Tree>
Tree radius_walk_tree(Tree const& tree, bool nearest_only) {
  if (nearest_only) return tree;
  return walk_tree_without_boxes<Exec>(tree);
}

template <class Tree>
struct CountVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  T sq_r;
  std::int64_t cap; // < 0: none
  std::int64_t count = 0;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return cap >= 0 && count >= cap; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index, T d2) { count += d2 <= sq_r ? 1 : 0; }
  /// The count, at most cap: the walks ask done() after a visit, so a cap
  /// of 0 (done before the first) would otherwise let one point through.
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t result() const { return cap >= 0 && count > cap ? cap : count; }
};

template <class Tree, class QV, class OV, class Counts>
struct RadiusCountFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  OV order;
  Counts counts;
  SqRadiiFor<Tree> sq_r;
  std::int64_t cap;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    CountVisitor<Tree> v{sq_r(qi), cap};
    traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
    counts(qi) = v.result();
  }
};

template <class Tree, class Idx, class Dist>
struct FillVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Idx idx;
  Dist dist;
  T sq_r;
  std::int64_t pos;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index index, T d2) {
    if (d2 <= sq_r) {
      idx(pos) = index;
      dist(pos) = d2;
      ++pos;
    }
  }
};

template <class Tree, class QV, class OV, class Result>
struct RadiusFillFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  SqRadiiFor<Tree> sq_r;
  bool capped;
  bool sort;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    std::int64_t const b = res.offsets(qi);
    std::int64_t const len = res.offsets(qi + 1) - b; // rows may exceed 2^31 where the tree has more points
    using IS = Segment<decltype(res.indices)>;
    using DS = Segment<decltype(res.sq_distances)>;
    if (capped) {
      // the nearest `len` (<= max_neighbors <= 2^30) within the radius: a max-heap in the output row
      kernels::RowHeapCandidates<Tree, IS, DS> cand(tree, IS{res.indices, b}, DS{res.sq_distances, b}, int(len), sq_r(qi));
      traverse(walk, tree, typename Tree::point_type(queries(qi)), cand);
      cand.heap.sort_heap();
    } else {
      FillVisitor<Tree, decltype(res.indices), decltype(res.sq_distances)> v{res.indices, res.sq_distances, sq_r(qi), b};
      traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
      if (sort) sort_csr_row(res, b, int(len)); // sorted rows are < 2^31 long (checked before the fill)
    }
  }
};

/// Counts every point within the radius and records the first `cap` of them,
/// in traversal order, in a scratch row.
template <class Tree, class Idx, class Dist>
struct BufferVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Idx idx;
  Dist dist;
  T sq_r;
  std::int64_t row, cap;
  std::int64_t count = 0;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index index, T d2) {
    if (d2 <= sq_r) {
      if (count < cap) {
        idx(row, count) = index;
        dist(row, count) = d2;
      }
      ++count;
    }
  }
};

template <class Tree, class QV, class OV, class Counts, class BI, class BD>
struct RadiusBufferFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  OV order;
  Counts counts;
  BI bidx;
  BD bdist;
  SqRadiiFor<Tree> sq_r;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    BufferVisitor<Tree, BI, BD> v{bidx, bdist, sq_r(qi), i, std::int64_t(bidx.extent(1))};
    traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
    counts(qi) = v.count;
  }
};

/// Rows that fit the scratch are copied; the others are traversed again.
template <class Tree, class QV, class OV, class Result, class BI, class BD>
struct RadiusCopyFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  BI bidx;
  BD bdist;
  SqRadiiFor<Tree> sq_r;
  bool sort;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    std::int64_t const b = res.offsets(qi);
    std::int64_t const len = res.offsets(qi + 1) - b;
    if (len <= std::int64_t(bidx.extent(1))) {
      for (std::int64_t j = 0; j < len; ++j) {
        res.indices(b + j) = bidx(i, j);
        res.sq_distances(b + j) = bdist(i, j);
      }
    } else {
      FillVisitor<Tree, decltype(res.indices), decltype(res.sq_distances)> v{res.indices, res.sq_distances, sq_r(qi), b};
      traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
    }
    if (sort) sort_csr_row(res, b, int(len)); // sorted rows are < 2^31 long (checked before the fill)
  }
};

/// Records every point within the radius, in traversal order, at the end
/// of a host buffer. Host execution spaces only; the device pass of a GPU
/// compiler sees an empty visit (the traversals are host-and-device code).
template <class Tree>
struct AppendVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  std::vector<Neighbor<T, Index>>* out;
  T sq_r;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index index, T d2) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    if (d2 <= sq_r) out->push_back({d2, index});
#else
    (void)index;
    (void)d2;
#endif
  }
};

/// CPUs: radius_search in one traversal. Chunk c of the processing order
/// appends its rows, one after the other, to its own buffer (*rows)[c] and
/// writes each query's count; after the scan of the counts, CopyRowsFunctor
/// moves every row to its CSR place. The GPU alternatives (count then fill,
/// or fixed per-query scratch) traverse twice or spend M x slots of memory;
/// here the extra memory is the results' size and each thread's appends stay
/// in its own cache (the fastest of the three on CPUs: docs/performance.md).
/// The buffers' growth is counted against the bytes available when the call
/// began (the host's MemAvailable, within kdforge::set_memory_limit): a
/// search whose rows would not fit stops there instead of driving the host
/// into swap or its out-of-memory killer.
template <class Tree, class QV, class OV, class Counts>
struct RadiusAppendFunctor {
  using T = typename Tree::coordinate_type;
  using N = Neighbor<T, typename Tree::index_type>;
  Tree tree;
  QV queries;
  OV order;
  Counts counts;
  SqRadiiFor<Tree> sq_r;
  Walk walk;
  std::int64_t m, chunk;
  std::vector<std::vector<N>>* rows;
  // An exception must not leave a parallel region (OpenMP would terminate
  // the program): a chunk whose buffer cannot grow raises the flag and gives
  // its memory back, the other chunks stop at their next query, and the
  // caller throws after the region.
  std::atomic<bool>* out_of_memory;
  std::atomic<std::size_t>* held; // bytes of all chunks' buffers
  std::size_t budget;
  void operator()(std::int64_t c) const {
    auto& out = (*rows)[c];
    std::int64_t const end = (c + 1) * chunk < m ? (c + 1) * chunk : m;
    try {
      for (std::int64_t i = c * chunk; i < end && !out_of_memory->load(std::memory_order_relaxed); ++i) {
        std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
        std::size_t const before = out.size(), capacity = out.capacity();
        AppendVisitor<Tree> v{&out, sq_r(qi)};
        traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
        counts(qi) = std::int64_t(out.size() - before);
        if (out.capacity() != capacity &&
            held->fetch_add((out.capacity() - capacity) * sizeof(N)) + (out.capacity() - capacity) * sizeof(N) > budget)
          throw std::bad_alloc();
      }
    } catch (std::bad_alloc const&) {
      out_of_memory->store(true, std::memory_order_relaxed);
      std::vector<N>().swap(out);
    }
  }
};

template <class OV, class Result, class N>
struct CopyRowsFunctor {
  OV order;
  Result res;
  bool sort;
  std::int64_t m, chunk;
  std::vector<std::vector<N>>* rows;
  void operator()(std::int64_t c) const {
    auto& in = (*rows)[c];
    std::size_t pos = 0;
    std::int64_t const end = (c + 1) * chunk < m ? (c + 1) * chunk : m;
    for (std::int64_t i = c * chunk; i < end; ++i) {
      std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
      std::int64_t const b = res.offsets(qi);
      std::int64_t const len = res.offsets(qi + 1) - b;
      for (std::int64_t j = 0; j < len; ++j) {
        res.indices(b + j) = in[pos + std::size_t(j)].index;
        res.sq_distances(b + j) = in[pos + std::size_t(j)].sq_dist;
      }
      pos += std::size_t(len);
      if (sort) sort_csr_row(res, b, int(len)); // sorted rows are < 2^31 long (checked before the copy)
    }
    std::vector<N>().swap(in); // give the memory back as soon as the chunk is copied
  }
};

/// radius_count's work once its arguments are checked.
template <class Exec, class Tree, class QV, class Counts>
void run_radius_count(Exec const& exec, Tree const& tree, QV const& q, SqRadiiFor<Tree> const& sq_r,
                      Counts const& counts, std::int64_t cap, QueryOrder order_option, bool check, Walk const& walk,
                      QueryWorkspace<typename Exec::memory_space>& workspace) {
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  Region region("kdforge::radius_count");
  auto order = prepare_queries(exec, tree, q, order_option, workspace, check);
  with_fixed_split<Exec>(radius_walk_tree<Exec>(tree, false), [&](auto const& t) {
    using FT = std::decay_t<decltype(t)>;
    Kokkos::parallel_for("kdforge::radius::count", QueryPolicy<Exec>(exec, 0, m),
                         RadiusCountFunctor<FT, QV, decltype(order), Counts>{t, q, order, counts, sq_r, cap, walk});
  });
  throw_if_bad_query(exec, workspace, q, check, "radius_count");
}

template <class Counts>
struct MaxCount {
  Counts counts;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& v) const { v = counts(i) > v ? counts(i) : v; }
};

/// Refuses rows RadiusOptions::sort cannot sort: a sorted row is sorted by
/// a heap of 32-bit positions.
template <class Exec, class Counts>
void require_sortable_rows(Exec const& exec, Counts const& counts, std::int64_t m) {
  if (m == 0) return;
  std::int64_t longest = 0;
  Kokkos::parallel_reduce("kdforge::radius::longest_row", Kokkos::RangePolicy<Exec>(exec, 0, m),
                          MaxCount<Counts>{counts}, Kokkos::Max<std::int64_t>(longest));
  KDFORGE_REQUIRE(longest <= std::int64_t(0x7fffffff), "radius_search", "a row of ", longest,
                  " neighbours cannot be sorted (RadiusOptions::sort sorts rows of up to 2^31 - 1); leave sort off, "
                  "or use a smaller radius or RadiusOptions::max_neighbors");
}

/// The result `out` is to become, its row storage ready for `total`
/// neighbours: out's own when it holds that many (a loop allocates nothing
/// once it is large enough), else a new one with a quarter to spare (or,
/// when that does not fit, exactly `total`), allocated while out still
/// holds its old rows: a failure leaves `out` as it was. Offsets: out's
/// when they have extent m + 1, else new ones. Nothing is written.
template <class Result>
Result staged_rows(Result const& out, std::int64_t m, std::int64_t total) {
  Result res = out;
  res.offsets = same_or_new(out.offsets, "kdforge::radius::offsets", m + 1);
  if (std::int64_t(out.indices_storage.extent(0)) < total || std::int64_t(out.sq_distances_storage.extent(0)) < total) {
    using IV = decltype(res.indices_storage);
    using DV = decltype(res.sq_distances_storage);
    auto grow = [&](std::int64_t cap) {
      res.indices_storage = backend::allocate<IV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::indices"), cap);
      advise_huge_pages(res.indices_storage);
      res.sq_distances_storage =
          backend::allocate<DV>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::sq_distances"), cap);
      advise_huge_pages(res.sq_distances_storage);
    };
    try {
      grow(total + total / 4);
    } catch (OutOfMemoryError const&) {
      res.indices_storage = out.indices_storage; // the spare quarter did not fit: try without it
      res.sq_distances_storage = out.sq_distances_storage;
      grow(total);
    }
  }
  res.indices = Kokkos::subview(res.indices_storage, Kokkos::make_pair(std::int64_t(0), total));
  res.sq_distances = Kokkos::subview(res.sq_distances_storage, Kokkos::make_pair(std::int64_t(0), total));
  return res;
}

/// radius_search's work once its arguments are checked (see radius.hpp in
/// core for the contract): count, scan, allocate, fill, by the method the
/// options and the target pick. The counts go to the workspace; nothing is
/// written into `out` until every allocation has succeeded.
template <class Exec, class Tree, class QV>
void run_radius_search(Exec const& exec, Tree const& tree, QV const& q, SqRadiiFor<Tree> const& sq_r,
                       RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options, Walk const& walk,
                       QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using MS = typename Exec::memory_space;
  Region region("kdforge::radius_search");
  std::int64_t const m = std::int64_t(q.extent(0));
  auto order = prepare_queries(exec, tree, q, options.order, workspace, options.check_queries);
  Tree const walked = radius_walk_tree<Exec>(tree, options.max_neighbors >= 0);

  using Result = RadiusResultFor<Exec, Tree>;
  ensure_extents(workspace.radius_offsets, "kdforge::radius::counts", m + 1);
  auto const offsets = workspace.radius_offsets;
  auto counts = Kokkos::subview(offsets, Kokkos::make_pair(std::int64_t(0), m));
  // The scan runs over all M + 1 offsets, the last one 0 before it: the
  // total lands in offsets(M) on the device, and one read of it is the only
  // wait (a scan that returns its total reads the input's last element first
  // and waits for the counts, then again for the sum).
  auto const last = Kokkos::subview(offsets, m);
  Kokkos::deep_copy(exec, last, std::int64_t(0));
  bool const buffered = options.buffer_size > 0 && options.max_neighbors < 0;
  bool const appended = !runs_on_gpu<Exec>() && options.buffer_size < 0 && options.max_neighbors < 0;
  using N = Neighbor<T, Index>;
  std::vector<std::vector<N>> rows; // appended: one buffer per chunk of queries
  // chunks: ~16 per thread for balance, each large enough to amortise its buffer
  std::int64_t const chunk = std::max<std::int64_t>(256, m / (16 * std::int64_t(exec.concurrency())) + 1);
  std::int64_t const n_chunks = m > 0 ? (m + chunk - 1) / chunk : 0;
  using ChunkPolicy = QueryPolicy<Exec>; // host only here: the dynamic schedule
  // Scratch rows are indexed by processing position and stored slot-major
  // (LayoutLeft): slot j of a warp's 32 queries is one contiguous run, so
  // their writes and reads coalesce (row-major scratch measured slower than
  // two traversals on the H100).
  Kokkos::View<Index**, Kokkos::LayoutLeft, MS> bidx;
  Kokkos::View<T**, Kokkos::LayoutLeft, MS> bdist;
  if constexpr (!runs_on_gpu<Exec>()) {
    if (m > 0 && appended) {
      rows.resize(std::size_t(n_chunks));
      std::atomic<bool> out_of_memory{false};
      std::atomic<std::size_t> held{0};
      std::size_t const budget = backend::available_bytes_in<Kokkos::HostSpace>();
      Kokkos::parallel_for("kdforge::radius::count_and_append", ChunkPolicy(exec, 0, n_chunks),
                           RadiusAppendFunctor<Tree, QV, decltype(order), decltype(counts)>{
                               walked, q, order, counts, sq_r, walk, m, chunk, &rows, &out_of_memory, &held, budget});
      exec.fence();
      if (out_of_memory.load()) {
        std::size_t found = 0;
        for (auto const& r : rows) found += r.size();
        std::vector<std::vector<N>>().swap(rows);
        throw_out_of_memory("radius_search", "recording the neighbours (" + std::to_string(found) +
                                                 " recorded when it stopped, " + std::to_string(sizeof(N)) + " bytes each)",
                            "Host", held.load(), budget,
                            "use a smaller radius, RadiusOptions::max_neighbors, or fewer queries per call");
      }
    }
  }
  if (appended) {
    // counted and recorded above
  } else if (m > 0 && buffered) {
    bidx = backend::allocate<decltype(bidx)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::buffer_indices"), m, options.buffer_size);
    bdist = backend::allocate<decltype(bdist)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::buffer_sq_distances"), m, options.buffer_size);
    with_fixed_split<Exec>(walked, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::count_and_buffer", QueryPolicy<Exec>(exec, 0, m),
                           RadiusBufferFunctor<FT, QV, decltype(order), decltype(counts), decltype(bidx),
                                                       decltype(bdist)>{t, q, order, counts, bidx, bdist, sq_r, walk});
    });
  } else if (m > 0) {
    with_fixed_split<Exec>(walked, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::count", QueryPolicy<Exec>(exec, 0, m),
                           RadiusCountFunctor<FT, QV, decltype(order), decltype(counts)>{
                               t, q, order, counts, sq_r, options.max_neighbors, walk});
    });
  }
  // a bad query is reported before the rows are allocated
  throw_if_bad_query(exec, workspace, q, options.check_queries, "radius_search");
  if (options.sort) require_sortable_rows(exec, counts, m);
  backend::exclusive_scan_async(exec, offsets, offsets, workspace.scratch);
  std::int64_t total = 0;
  Kokkos::deep_copy(exec, Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&total), last);
  exec.fence();
  Result res = staged_rows(out, m, total);
  // every allocation made: from here on `out`'s storage may be written
  Kokkos::deep_copy(exec, res.offsets, offsets);
  if constexpr (!runs_on_gpu<Exec>()) {
    if (m > 0 && appended) {
      Kokkos::parallel_for("kdforge::radius::copy_rows", ChunkPolicy(exec, 0, n_chunks),
                           CopyRowsFunctor<decltype(order), Result, N>{order, res, options.sort, m, chunk, &rows});
    }
  }
  if (appended) {
    // copied above
  } else if (m > 0 && buffered) {
    with_fixed_split<Exec>(walked, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::copy", Kokkos::RangePolicy<Exec>(exec, 0, m),
                           RadiusCopyFunctor<FT, QV, decltype(order), Result, decltype(bidx), decltype(bdist)>{
                               t, q, order, res, bidx, bdist, sq_r, options.sort, walk});
    });
  } else if (m > 0) {
    with_fixed_split<Exec>(walked, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::fill", QueryPolicy<Exec>(exec, 0, m),
                           RadiusFillFunctor<FT, QV, decltype(order), Result>{
                               t, q, order, res, sq_r, options.max_neighbors >= 0, options.sort, walk});
    });
  }
  exec.fence();
  out = res;
}

} // namespace kdforge::detail
