#pragma once
// Candidate lists of kNN queries. Both keep the k smallest (squared distance,
// original index) pairs; the pair order breaks distance ties by smaller index,
// so results are deterministic and the same on every backend.
//
// SortedCandidates<CAP>: a sorted array in registers for small k (all indices
// compile-time constants after unrolling). For k < CAP the first CAP - k slots
// hold sentinels smaller than any real pair and are never evicted, so the
// bound is always the last slot and no run-time index is needed.
// RowHeap: a max-heap kept directly in the caller's output row (global
// memory), for any k without allocating.
#include <kdforge/kernels/trees/packed_node.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace kdforge::kernels {

template <class Index>
KOKKOS_FORCEINLINE_FUNCTION constexpr Index empty_slot_index() {
  return Index(~(std::make_unsigned_t<Index>(1) << (sizeof(Index) * 8 - 1))); // max of Index
}

/// How a candidate list stores (squared distance, index) pairs. Generic: a
/// Neighbor, compared field by field.
template <class T, class Index>
struct PairKeys {
  using Key = Neighbor<T, Index>;
  KOKKOS_FORCEINLINE_FUNCTION static Key make(T d2, Index i) { return {d2, i}; }
  KOKKOS_FORCEINLINE_FUNCTION static Key lowest() { return {T(-1), Index(-1)}; }
  KOKKOS_FORCEINLINE_FUNCTION static T dist(Key const& k) { return k.sq_dist; }
  KOKKOS_FORCEINLINE_FUNCTION static Key const& neighbor(Key const& k) { return k; }
};
/// float distances with 32-bit indices: one 64-bit word, distance bits high
/// and index low. Squared distances are >= +0, whose IEEE bits order like
/// unsigned integers, and real indices are >= 0, so one unsigned compare
/// orders (distance, index) as Neighbor does, in two instructions instead
/// of three compares and their logic (the kNN kernels are issue-bound).
template <>
struct PairKeys<float, std::int32_t> {
  using Key = std::uint64_t;
  KOKKOS_FORCEINLINE_FUNCTION static Key make(float d2, std::int32_t i) {
    std::uint32_t b;
    std::memcpy(&b, &d2, sizeof b);
    return (Key(b) << 32) | std::uint32_t(i);
  }
  // below every real pair; insertions compare strictly, so a real (+0, 0)
  // still lands after these
  KOKKOS_FORCEINLINE_FUNCTION static Key lowest() { return 0; }
  KOKKOS_FORCEINLINE_FUNCTION static float dist(Key k) {
    std::uint32_t const b = std::uint32_t(k >> 32);
    float d;
    std::memcpy(&d, &b, sizeof d);
    return d;
  }
  KOKKOS_FORCEINLINE_FUNCTION static Neighbor<float, std::int32_t> neighbor(Key k) {
    return {dist(k), std::int32_t(std::uint32_t(k))};
  }
};

template <class Tree, int CAP>
struct SortedCandidates {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using coordinate_type = T;
  using index_type = Index;
  using Keys = PairKeys<T, Index>;
  using Key = typename Keys::Key;
  Key c[CAP];

  KOKKOS_FUNCTION SortedCandidates(Tree const&, int k, T sq_cutoff) {
KDFORGE_UNROLL
    for (int i = 0; i < CAP; ++i) c[i] = i < CAP - k ? Keys::lowest() : Keys::make(sq_cutoff, empty_slot_index<Index>());
  }
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return Keys::dist(c[CAP - 1]); }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  /// Whether no point at squared distance >= lb with input index >=
  /// min_index could enter the list (one compare of packed keys).
  KOKKOS_FORCEINLINE_FUNCTION bool beyond(T lb, Index min_index) const {
    return !(Keys::make(lb, min_index) < c[CAP - 1]);
  }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index index, T d2) {
    Key const x = Keys::make(d2, index);
    if (!(x < c[CAP - 1])) return;
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    // CPUs: every slot from the old list alone, new c[i] = max(c[i-1],
    // min(c[i], x)), no data-dependent branch (the shifting loop below
    // compiles to branches on x's position, mispredicted ~22 times per
    // kNN k = 8 query), and the slots are independent of each other.
    KDFORGE_UNROLL
    for (int i = CAP - 1; i >= 1; --i) {
      Key const lo = c[i] < x ? c[i] : x;
      c[i] = c[i - 1] < lo ? lo : c[i - 1];
    }
    c[0] = c[0] < x ? c[0] : x;
#else
    // GPUs: go = "x goes before old c[i]", carried down the slots as one
    // chained compare per slot (x < c[i - 1] and go: the AND is the compare
    // instruction's own predicate input); a slot x goes before takes its
    // lower neighbour if x goes before that one too, else x. Written as
    // "if (!placed) { x < c[i - 1] ? shift : place }", nvcc compared x
    // with c[i - 1] twice per slot (once chained for the next slot, once
    // unchained for the select): 44 SASS instructions for CAP 8, all on
    // the integer pipe that ncu showed as the kernel's busiest (80%); this
    // form takes 32 (16 compares, 16 selects): kNN k = 8 6% and k = 16
    // 14% faster on an H100 (docs/performance.md).
    bool go = true; // x < c[CAP - 1], tested above
KDFORGE_UNROLL
    for (int i = CAP - 1; i >= 1; --i) {
      bool const next = go & (x < c[i - 1]);
      if (go) c[i] = next ? c[i - 1] : x;
      go = next;
    }
    if (go) c[0] = x;
#endif
  }
  /// f(j, neighbour) for the j-th nearest, j = 0 .. k-1. Slots are visited
  /// with compile-time indices: indexing c by a run-time value would move the
  /// whole list to local memory on GPUs.
  template <class F>
  KOKKOS_FORCEINLINE_FUNCTION void for_each_result(int k, F const& f) const {
KDFORGE_UNROLL
    for (int i = 0; i < CAP; ++i)
      if (i >= CAP - k) f(i - (CAP - k), Keys::neighbor(c[i]));
  }
};

template <class T, class Index, class IndexRow, class DistRow>
struct RowHeapOps {
  IndexRow idx;
  DistRow dist;
  int size;
  KOKKOS_FORCEINLINE_FUNCTION Neighbor<T, Index> get(int i) const { return {dist(i), idx(i)}; }
  KOKKOS_FORCEINLINE_FUNCTION void set(int i, Neighbor<T, Index> const& v) const {
    dist(i) = v.sq_dist;
    idx(i) = v.index;
  }
  KOKKOS_FUNCTION void sift_down(int i, int m, Neighbor<T, Index> const v) const {
    while (true) {
      int child = 2 * i + 1;
      if (child >= m) break;
      Neighbor<T, Index> cv = get(child);
      if (child + 1 < m) {
        auto const rv = get(child + 1);
        if (cv < rv) {
          ++child;
          cv = rv;
        }
      }
      if (!(v < cv)) break;
      set(i, cv);
      i = child;
    }
    set(i, v);
  }
  /// Turns the max-heap into an ascending row.
  KOKKOS_FUNCTION void sort_heap() const {
    for (int m = size - 1; m > 0; --m) {
      auto const top = get(0);
      auto const last = get(m);
      set(m, top);
      sift_down(0, m, last);
    }
  }
  KOKKOS_FUNCTION void make_heap() const {
    for (int i = size / 2 - 1; i >= 0; --i) sift_down(i, size, get(i));
  }
};

template <class Tree, class IndexRow, class DistRow>
struct RowHeapCandidates {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using coordinate_type = T;
  using index_type = Index;
  using N = Neighbor<T, Index>;
  RowHeapOps<T, Index, IndexRow, DistRow> heap;
  T top_d2;

  KOKKOS_FUNCTION RowHeapCandidates(Tree const&, IndexRow idx, DistRow dist, int k, T sq_cutoff)
      : heap{idx, dist, k}, top_d2(sq_cutoff) {
    for (int i = 0; i < k; ++i) heap.set(i, N{sq_cutoff, empty_slot_index<Index>()});
  }
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return top_d2; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FUNCTION bool beyond(T lb, Index min_index) const {
    return lb > top_d2 || heap.size == 0 || !(N{lb, min_index} < heap.get(0));
  }
  KOKKOS_FUNCTION void visit(Index index, T d2) {
    if (d2 > top_d2 || heap.size == 0) return;
    N const x{d2, index};
    if (!(x < heap.get(0))) return;
    heap.sift_down(0, heap.size, x);
    top_d2 = heap.get(0).sq_dist;
  }
};

} // namespace kdforge::kernels
