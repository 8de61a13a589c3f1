// FLANN and faiss runs of kdforge-descriptors-bench (see baselines.hpp).
#include "baselines.hpp"

#include <chrono>
#include <stdexcept>

#if KDFORGE_HAVE_FLANN
#include <flann/flann.hpp>
#endif
#if KDFORGE_HAVE_FAISS
#include <faiss/IndexFlat.h>
#endif

namespace descriptors {

namespace {
// Unused when neither FLANN nor faiss is found.
[[maybe_unused]] double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

bool have_flann() { return KDFORGE_HAVE_FLANN != 0; }
bool have_faiss() { return KDFORGE_HAVE_FAISS != 0; }

#if KDFORGE_HAVE_FLANN
namespace {
BaselineRun flann_run(std::string name, flann::IndexParams const& ip, flann::SearchParams sp,
                      std::vector<float> const& pts, std::int64_t n, int dim, std::vector<float> const& qs,
                      std::int64_t m, int k) {
  BaselineRun r;
  r.name = std::move(name);
  flann::Matrix<float> data(const_cast<float*>(pts.data()), std::size_t(n), std::size_t(dim));
  flann::Matrix<float> query(const_cast<float*>(qs.data()), std::size_t(m), std::size_t(dim));
  auto t0 = std::chrono::steady_clock::now();
  flann::Index<flann::L2<float>> index(data, ip);
  index.buildIndex();
  r.build_ms = ms_since(t0);
  std::vector<std::size_t> idx(std::size_t(m) * std::size_t(k));
  r.sq_distances.resize(std::size_t(m) * std::size_t(k));
  flann::Matrix<std::size_t> im(idx.data(), std::size_t(m), std::size_t(k));
  flann::Matrix<float> dm(r.sq_distances.data(), std::size_t(m), std::size_t(k));
  sp.cores = 0; // all cores
  t0 = std::chrono::steady_clock::now();
  index.knnSearch(query, im, dm, std::size_t(k), sp);
  r.search_ms = ms_since(t0);
  r.indices.assign(idx.begin(), idx.end());
  return r;
}
} // namespace

BaselineRun flann_single_exact(std::vector<float> const& pts, std::int64_t n, int dim, std::vector<float> const& qs,
                               std::int64_t m, int k) {
  flann::SearchParams sp(flann::FLANN_CHECKS_UNLIMITED, 0.0f, true);
  return flann_run("FLANN single k-d tree, exact", flann::KDTreeSingleIndexParams(8), sp, pts, n, dim, qs, m, k);
}

BaselineRun flann_forest(std::vector<float> const& pts, std::int64_t n, int dim, std::vector<float> const& qs,
                         std::int64_t m, int k, int trees, int checks) {
  flann::SearchParams sp(checks, 0.0f, true);
  return flann_run("FLANN " + std::to_string(trees) + "-tree forest, checks " + std::to_string(checks),
                   flann::KDTreeIndexParams(trees), sp, pts, n, dim, qs, m, k);
}
#else
BaselineRun flann_single_exact(std::vector<float> const&, std::int64_t, int, std::vector<float> const&, std::int64_t, int) {
  throw std::runtime_error("built without FLANN (Debian: libflann-dev)");
}
BaselineRun flann_forest(std::vector<float> const&, std::int64_t, int, std::vector<float> const&, std::int64_t, int, int,
                         int) {
  throw std::runtime_error("built without FLANN (Debian: libflann-dev)");
}
#endif

#if KDFORGE_HAVE_FAISS
BaselineRun faiss_flat(std::vector<float> const& pts, std::int64_t n, int dim, std::vector<float> const& qs,
                       std::int64_t m, int k) {
  BaselineRun r;
  r.name = "faiss IndexFlatL2 (CPU brute force)";
  auto t0 = std::chrono::steady_clock::now();
  faiss::IndexFlatL2 index(dim);
  index.add(n, pts.data());
  r.build_ms = ms_since(t0);
  std::vector<faiss::Index::idx_t> idx(std::size_t(m) * std::size_t(k));
  r.sq_distances.resize(std::size_t(m) * std::size_t(k));
  t0 = std::chrono::steady_clock::now();
  index.search(m, qs.data(), k, r.sq_distances.data(), idx.data());
  r.search_ms = ms_since(t0);
  r.indices.assign(idx.begin(), idx.end());
  return r;
}
#else
BaselineRun faiss_flat(std::vector<float> const&, std::int64_t, int, std::vector<float> const&, std::int64_t, int) {
  throw std::runtime_error("built without faiss (Debian: libfaiss-dev)");
}
#endif

} // namespace descriptors
