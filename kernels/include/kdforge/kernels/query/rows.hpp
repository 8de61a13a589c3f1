#pragma once
// Writing results: rows of M x k Views, CSR segments, sorted candidate lists
// into rows, heap rows sorted in place, result Views kept when they fit.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/host/huge_pages.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/query/candidates.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kdforge::detail {

template <class View2D>
struct Row {
  View2D v;
  std::int64_t row;
  KOKKOS_FORCEINLINE_FUNCTION typename View2D::reference_type operator()(int j) const { return v(row, j); }
};
template <class View1D>
struct Segment {
  View1D v;
  std::int64_t begin;
  KOKKOS_FORCEINLINE_FUNCTION typename View1D::reference_type operator()(int j) const { return v(begin + j); }
};

/// Writes the k results of a sorted candidate list into row qi, empty slots
/// as (-1, +inf).
template <class Result>
struct WriteRow {
  Result const& res;
  std::int64_t qi;
  template <class N>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(int j, N const& r) const {
    using Index = typename decltype(res.indices)::non_const_value_type;
    using T = typename decltype(res.sq_distances)::non_const_value_type;
    bool const missing = r.index == kernels::empty_slot_index<Index>();
    res.indices(qi, j) = missing ? invalid_index<Index>() : r.index;
    res.sq_distances(qi, j) = missing ? infinity<T>() : r.sq_dist;
  }
};
template <class Result, class Cand>
KOKKOS_FORCEINLINE_FUNCTION void write_sorted_row(Result const& res, std::int64_t qi, Cand const& cand, int k) {
  cand.for_each_result(k, WriteRow<Result>{res, qi});
}

/// Sorts CSR row [b, b + len) by (squared distance, index).
template <class Result>
KOKKOS_FORCEINLINE_FUNCTION void sort_csr_row(Result const& res, std::int64_t b, int len) {
  using T = typename decltype(res.sq_distances)::non_const_value_type;
  using Index = typename decltype(res.indices)::non_const_value_type;
  using IS = Segment<decltype(res.indices)>;
  using DS = Segment<decltype(res.sq_distances)>;
  kernels::RowHeapOps<T, Index, IS, DS> heap{IS{res.indices, b}, DS{res.sq_distances, b}, len};
  heap.make_heap();
  heap.sort_heap();
}

/// Sorts the heap kept in row qi and marks its empty slots (-1, +inf).
template <class Result, class Cand>
KOKKOS_FORCEINLINE_FUNCTION void finish_heap_row(Result const& res, std::int64_t qi, Cand& cand, int k) {
  using Index = typename decltype(res.indices)::non_const_value_type;
  using T = typename decltype(res.sq_distances)::non_const_value_type;
  cand.heap.sort_heap();
  for (int j = 0; j < k; ++j) {
    if (res.indices(qi, j) == kernels::empty_slot_index<Index>()) {
      res.indices(qi, j) = invalid_index<Index>();
      res.sq_distances(qi, j) = infinity<T>();
    }
  }
}

/// v keeps its allocation when it already has extent e0 (x e1); otherwise a
/// new one (contents undefined, huge pages asked for on hosts: every query
/// writes its row at its caller's position) replaces it. v is left as it
/// was when the allocation fails.
template <class V>
void ensure_extents(V& v, char const* label, std::int64_t e0) {
  if (v.data() != nullptr && std::int64_t(v.extent(0)) == e0) return;
  v = backend::allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), e0);
  advise_huge_pages(v);
}
template <class V>
void ensure_extents(V& v, char const* label, std::int64_t e0, std::int64_t e1) {
  if (v.data() != nullptr && std::int64_t(v.extent(0)) == e0 && std::int64_t(v.extent(1)) == e1) return;
  v = backend::allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), e0, e1);
  advise_huge_pages(v);
}

/// v itself when it has extent e0 (x e1), else a new View of those extents
/// (as ensure_extents makes it); v is not changed. The entry points write
/// into such a copy of the caller's result and assign it back once every
/// allocation of the call has succeeded, so a failed allocation leaves the
/// caller's earlier results as they were.
template <class V>
V same_or_new(V const& v, char const* label, std::int64_t e0) {
  V w = v;
  ensure_extents(w, label, e0);
  return w;
}
template <class V>
V same_or_new(V const& v, char const* label, std::int64_t e0, std::int64_t e1) {
  V w = v;
  ensure_extents(w, label, e0, e1);
  return w;
}

/// A 1-D View read and written as the single column of an M x 1 result, so
/// closest point shares the kNN kernels.
template <class V>
struct Column {
  using non_const_value_type = typename V::non_const_value_type;
  V v;
  KOKKOS_FORCEINLINE_FUNCTION typename V::reference_type operator()(std::int64_t i, int) const { return v(i); }
};
template <class IV, class DV>
struct ColumnResult {
  Column<IV> indices;
  Column<DV> sq_distances;
};

template <class R>
struct is_column_result : std::false_type {};
template <class IV, class DV>
struct is_column_result<ColumnResult<IV, DV>> : std::true_type {};

} // namespace kdforge::detail
