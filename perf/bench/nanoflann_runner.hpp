#pragma once
// kdforge-bench: the nanoflann CPU baseline (nanoflann_runner.cpp): the same
// points and queries, a single-threaded build (nanoflann builds serially) and
// OpenMP-parallel queries, checked against the same brute-force reference.
#include "options.hpp"
#include "verify.hpp"

#include <vector>

namespace kdforge_bench {

template <class T, int D>
void run_nanoflann(Workload const& w, Sink& sink, std::vector<HostPoint<T, D>> const& pts,
                   std::vector<HostPoint<T, D>> const& queries, Reference const& ref);

/// Relative tolerance of nanoflann's distances against the brute force.
template <class T>
constexpr double nanoflann_tolerance() {
  return 8 * double(std::numeric_limits<T>::epsilon());
}

} // namespace kdforge_bench
