#pragma once
// Serial backend: the standard-library forms of kdforge's primitives. They
// serve every host execution space that has no specialised overload (the
// Serial build, and the host side of a Cuda build) and are the reference the
// tests compare the other backends against.
#ifndef KDFORGE_BACKENDS_PRIMITIVES_INCLUDED
static_assert(false, "Include <kdforge/backends/primitives.hpp>, not a backend's file.");
#endif
#include <kdforge/backends/serial/radix_sort.hpp>

#include <cstddef>

namespace kdforge::backend::detail {

template <class Exec, class K, class V>
void sort_by_key_impl(Exec const&, K* keys, V* vals, std::size_t n, int begin_bit, int end_bit) {
  lsd_radix_sort_pairs(keys, vals, n, begin_bit, end_bit, 1, SerialBlocks{});
}

template <class Exec, class K, class V, class O>
void segmented_sort_by_key_impl(Exec const&, K* keys, V* vals, std::size_t /*n*/, O const* offsets,
                                std::size_t num_segments, int begin_bit, int end_bit) {
  for (std::size_t s = 0; s < num_segments; ++s) {
    std::size_t const b = std::size_t(offsets[s]), e = std::size_t(offsets[s + 1]);
    lsd_radix_sort_pairs(keys + b, vals + b, e - b, begin_bit, end_bit, 1, SerialBlocks{});
  }
}

template <class Exec, class T>
T exclusive_scan_impl(Exec const&, T const* in, T* out, std::size_t n) {
  return sequential_exclusive_scan(in, out, n);
}

template <class Exec, class F, class G>
void fork_join_impl(Exec const&, F const& f, G const& g) {
  f();
  g();
}

template <class Exec, class T, int D>
Box<T, D> bounding_box_impl(Exec const&, Point<T, D> const* pts, std::size_t n) {
  Box<T, D> box = Box<T, D>::empty();
  for (std::size_t i = 0; i < n; ++i) box.extend(pts[i]);
  return box;
}

} // namespace kdforge::backend::detail
