#pragma once
// Brute-force references on the host, using the same squared-distance
// function as the library (so equal inputs give bit-equal distances).
#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kdforge::test {

template <class T, int D>
std::vector<Neighbor<T, std::int64_t>> brute_knn(std::vector<Point<T, D>> const& pts, Point<T, D> const& q, int k,
                                                 T sq_cutoff) {
  std::vector<Neighbor<T, std::int64_t>> all;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    T const d2 = sq_distance(q, pts[i]);
    if (d2 <= sq_cutoff) all.push_back({d2, std::int64_t(i)});
  }
  std::sort(all.begin(), all.end());
  if (int(all.size()) > k) all.resize(k);
  return all;
}

template <class T, int D>
std::vector<Neighbor<T, std::int64_t>> brute_radius(std::vector<Point<T, D>> const& pts, Point<T, D> const& q, T sq_r) {
  return brute_knn(pts, q, int(pts.size()), sq_r);
}

} // namespace kdforge::test
