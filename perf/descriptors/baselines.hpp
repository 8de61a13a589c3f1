#pragma once
// FLANN and faiss beside kdforge in kdforge-descriptors-bench: host code
// compiled without Kokkos (and without nvcc in Cuda builds), each library
// only where CMake found it.
#include <cstdint>
#include <string>
#include <vector>

namespace descriptors {

/// One baseline's answer: row-major n_queries x k indices and squared
/// distances, and its times in milliseconds.
struct BaselineRun {
  std::string name;
  double build_ms = 0;
  double search_ms = 0;
  std::vector<std::int64_t> indices;
  std::vector<float> sq_distances;
};

bool have_flann();
bool have_faiss();

/// FLANN 1.9's single k-d tree (leaves of 8 points), exact search on all cores.
BaselineRun flann_single_exact(std::vector<float> const& pts, std::int64_t n, int dim, std::vector<float> const& qs,
                               std::int64_t m, int k);
/// FLANN's randomized k-d forest (`trees` trees), `checks` leaves per query.
BaselineRun flann_forest(std::vector<float> const& pts, std::int64_t n, int dim, std::vector<float> const& qs,
                         std::int64_t m, int k, int trees, int checks);
/// faiss 1.7's IndexFlatL2: exact brute force on the CPU (BLAS).
BaselineRun faiss_flat(std::vector<float> const& pts, std::int64_t n, int dim, std::vector<float> const& qs,
                       std::int64_t m, int k);

} // namespace descriptors
