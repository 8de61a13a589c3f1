#pragma once
// The Python module's bridge between pybind11 (module.cpp) and kdforge
// (tree_impl.hpp): plain C++ with neither Python nor Kokkos in sight, so the
// translation units that instantiate kdforge's kernels never parse pybind11
// and the one that binds to Python never parses a kernel (in a Cuda build
// both go through nvcc; keeping them apart keeps each simple for it).
//
// Arrays cross this boundary as ArrayRef: a pointer with its shape and
// strides, in the host's memory or on the GPU (CuPy, PyTorch CUDA tensors);
// the Python layer keeps the arrays alive for the duration of each call.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kdforge_python {

/// A caller's array, not owned: rank 1 (cols = 1, s1 = 0) or rank 2.
struct ArrayRef {
  std::uintptr_t ptr = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 1;
  std::int64_t s0 = 1; ///< strides in elements, not bytes
  std::int64_t s1 = 1;
  char dtype = 'd'; ///< 'f': float32, 'd': float64, 'q': int64
  bool device = false; ///< on the GPU (a CUDA device pointer)
};

/// Called between the phases of a call (on the module's worker thread):
/// throws Interrupted once the caller saw Ctrl-C.
using Checkpoint = std::function<void()>;

/// Thrown by a Checkpoint; the Python error (KeyboardInterrupt) is pending.
struct Interrupted {};

/// Radius search results on the host, CSR: row q is [offsets[q], offsets[q+1]).
struct Csr {
  std::vector<std::int64_t> offsets;
  std::vector<std::int64_t> indices;
  std::vector<double> distances; ///< unsquared; filled when asked for
};

/// One kdforge tree over the caller's points, of any builder, coordinate
/// type and dimension.
class Tree {
public:
  virtual ~Tree() = default;
  virtual std::int64_t size() const = 0;
  virtual int dim() const = 0;
  virtual char dtype() const = 0;
  virtual std::string builder() const = 0;

  /// The k-th nearest neighbours for each k of `ks` (1-based, any order):
  /// out_d(q, c) the unsquared distance of the ks[c]-th neighbour of query
  /// q, out_i(q, c) its index; missing neighbours (fewer points, or none
  /// strictly nearer than `upper_bound`) are (inf, size()). out_d and
  /// out_i are C-ordered, in the memory `queries` is in.
  virtual void knn(ArrayRef const& queries, std::vector<std::int64_t> const& ks, double upper_bound,
                   ArrayRef const& out_d, ArrayRef const& out_i, Checkpoint const& check) = 0;

  /// The number of points within distance r (inclusive) of each query:
  /// radii (one per query, float64) when radii.ptr != 0, else r.
  virtual void radius_count(ArrayRef const& queries, ArrayRef const& radii, double r, ArrayRef const& out,
                            Checkpoint const& check) = 0;

  /// The sum over the queries of radius_count for each radius of rs.
  virtual std::vector<std::int64_t> count_pairs(ArrayRef const& queries, std::vector<double> const& rs,
                                                Checkpoint const& check) = 0;

  /// The points within distance r (inclusive) of each query, each row
  /// sorted by index when sort_by_index; with distances when asked.
  virtual Csr radius_search(ArrayRef const& queries, ArrayRef const& radii, double r, bool sort_by_index,
                            bool distances, Checkpoint const& check) = 0;

  /// Frees every Kokkos allocation of the tree (before Kokkos::finalize).
  virtual void release() = 0;
};

struct BuildRequest {
  ArrayRef points;
  std::string builder; ///< "left-balanced", "split-sort" or "bucket"
  std::int64_t leafsize = 0; ///< bucket size of bucket trees; 0: kdforge's default
};

/// Builds a tree over request.points (throws kdforge::Error on bad input).
std::unique_ptr<Tree> build_tree(BuildRequest const& request, Checkpoint const& check);

/// The dimensions with a compiled left-balanced / split-sort tree.
std::vector<int> fast_dimensions();

// --- the Kokkos runtime ---------------------------------------------------
struct RuntimeInfo {
  std::string backend;      ///< "OpenMP", "Cuda", "Serial", "Threads"
  bool gpu = false;         ///< results live on a GPU
  int concurrency = 0;      ///< threads of the pool, or the GPU's concurrency
  int device_id = -1;       ///< the GPU kdforge runs on
  std::string kokkos_version;
};

/// Initialises Kokkos (once; num_threads <= 0 and device_id < 0: Kokkos'
/// defaults, i.e. OMP_NUM_THREADS and the first GPU).
void initialize(int num_threads, int device_id);
bool is_initialized();
/// Finalises Kokkos if this module initialised it. Trees must have been
/// released first.
void finalize();
RuntimeInfo runtime_info();
/// The backend the module was compiled for (without initialising Kokkos).
std::string compiled_backend();
bool compiled_for_gpu();

/// Waits for the work queued on a CUDA stream (a CuPy or PyTorch stream
/// that produced an input), so kdforge reads finished data; no-op without
/// a GPU or for stream 0.
void synchronize_stream(std::uintptr_t stream);
/// The CUDA device a device pointer belongs to (-1 if none).
int device_of_pointer(std::uintptr_t ptr);

} // namespace kdforge_python
