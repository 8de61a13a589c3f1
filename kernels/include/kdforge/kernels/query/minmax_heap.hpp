#pragma once
// A min-max heap (Atkinson, Sack, Santoro & Strothotte 1986, "Min-max heaps
// and generalized priority queues"): a complete binary tree in an array
// whose even levels are min levels (each node <= its descendants) and odd
// levels max levels (each node >= its descendants). The minimum is the root,
// the maximum one of the root's children, both found in O(1) and removed in
// O(log n). Wehr & Radkowski 2018 (section III-E) use it as the bounded
// double-ended priority queue of their approximate nearest-neighbour search:
// when the queue is full, a closer pending node replaces the farthest one.
//
// Storage is any accessor with `E& operator()(int)` (a fixed array in
// registers/local memory, or a row of a View), so one device function serves
// small and large capacities.
#include <Kokkos_Core.hpp>

namespace kdforge::kernels {

template <class E, int CAP>
struct LocalStorage {
  E a[CAP];
  KOKKOS_FORCEINLINE_FUNCTION E& operator()(int i) { return a[i]; }
};

template <class E, class Storage>
class MinMaxHeap {
public:
  KOKKOS_FUNCTION MinMaxHeap(Storage s, int capacity) : m_a(s), m_cap(capacity) {}

  KOKKOS_FORCEINLINE_FUNCTION int size() const { return m_n; }
  KOKKOS_FORCEINLINE_FUNCTION int capacity() const { return m_cap; }
  KOKKOS_FORCEINLINE_FUNCTION bool empty() const { return m_n == 0; }
  KOKKOS_FORCEINLINE_FUNCTION bool full() const { return m_n >= m_cap; }

  KOKKOS_FORCEINLINE_FUNCTION E const& min() { return m_a(0); }
  KOKKOS_FORCEINLINE_FUNCTION E const& max() { return m_a(max_index()); }

  /// Inserts x (the heap must not be full).
  KOKKOS_FUNCTION void push(E const& x) {
    int const i = m_n++;
    m_a(i) = x;
    bubble_up(i);
  }
  /// Removes and returns the minimum (the heap must not be empty).
  KOKKOS_FUNCTION E pop_min() {
    E const r = m_a(0);
    remove_at(0);
    return r;
  }
  /// Removes and returns the maximum (the heap must not be empty).
  KOKKOS_FUNCTION E pop_max() {
    int const m = max_index();
    E const r = m_a(m);
    remove_at(m);
    return r;
  }
  /// Bounded insert: inserts x if there is room; otherwise x replaces the
  /// maximum when x < maximum, else x is dropped. Returns false when
  /// something (x or the old maximum) was dropped.
  KOKKOS_FUNCTION bool push_bounded(E const& x) {
    if (m_cap <= 0) return false;
    if (!full()) {
      push(x);
      return true;
    }
    int const m = max_index();
    if (x < m_a(m)) {
      remove_at(m);
      push(x);
    }
    return false;
  }

private:
  Storage m_a;
  int m_cap;
  int m_n = 0;

  KOKKOS_FORCEINLINE_FUNCTION static bool min_level(int i) {
    int d = 0;
    for (unsigned v = unsigned(i) + 1; v > 1; v >>= 1) ++d;
    return (d & 1) == 0;
  }
  KOKKOS_FORCEINLINE_FUNCTION void swap(int i, int j) {
    E const t = m_a(i);
    m_a(i) = m_a(j);
    m_a(j) = t;
  }
  KOKKOS_FORCEINLINE_FUNCTION int max_index() {
    if (m_n <= 1) return 0;
    if (m_n == 2) return 1;
    return m_a(1) < m_a(2) ? 2 : 1;
  }
  KOKKOS_FUNCTION void remove_at(int i) {
    --m_n;
    if (i == m_n) return;
    m_a(i) = m_a(m_n);
    trickle_down(i);
    bubble_up(i); // the moved element may also belong above i (removal of a max-level node)
  }

  template <bool MIN>
  KOKKOS_FORCEINLINE_FUNCTION bool before(E const& a, E const& b) const {
    return MIN ? a < b : b < a;
  }
  template <bool MIN>
  KOKKOS_FUNCTION void bubble_up_grand(int i) {
    while (i >= 3) {
      int const g = ((i - 1) / 2 - 1) / 2;
      if (!before<MIN>(m_a(i), m_a(g))) break;
      swap(i, g);
      i = g;
    }
  }
  KOKKOS_FUNCTION void bubble_up(int i) {
    if (i == 0) return;
    int const p = (i - 1) / 2;
    if (min_level(i)) {
      if (m_a(p) < m_a(i)) {
        swap(i, p);
        bubble_up_grand<false>(p);
      } else bubble_up_grand<true>(i);
    } else {
      if (m_a(i) < m_a(p)) {
        swap(i, p);
        bubble_up_grand<true>(p);
      } else bubble_up_grand<false>(i);
    }
  }
  template <bool MIN>
  KOKKOS_FUNCTION void trickle(int i) {
    while (true) {
      int const c = 2 * i + 1;
      if (c >= m_n) return;
      // the smallest (MIN) / largest of the children and grandchildren
      int m = c;
      int const cand[5] = {c + 1, 2 * c + 1, 2 * c + 2, 2 * c + 3, 2 * c + 4};
      for (int j = 0; j < 5; ++j)
        if (cand[j] < m_n && before<MIN>(m_a(cand[j]), m_a(m))) m = cand[j];
      if (!before<MIN>(m_a(m), m_a(i))) return;
      swap(m, i);
      if (m <= c + 1) return; // a child: done
      int const p = (m - 1) / 2;
      if (before<MIN>(m_a(p), m_a(m))) swap(m, p);
      i = m;
    }
  }
  KOKKOS_FUNCTION void trickle_down(int i) {
    if (min_level(i)) trickle<true>(i);
    else trickle<false>(i);
  }
};

} // namespace kdforge::kernels
