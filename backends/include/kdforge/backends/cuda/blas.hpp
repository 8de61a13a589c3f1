#pragma once
// CUDA backend of backend::gemm_abt: cuBLAS on the Kokkos::Cuda instance's
// stream. One cuBLAS handle per device, made on first use and destroyed
// when Kokkos finalises. The handle keeps cuBLAS's default math mode, which
// never rounds FP32 products to TF32: kdforge's GEMM brute force bounds the
// rounding error of the product (kernels/query/brute_force_gemm.hpp), and
// TF32's 10-bit mantissa would break that bound.
#ifndef KDFORGE_BACKENDS_PRIMITIVES_INCLUDED
static_assert(false, "Include <kdforge/backends/primitives.hpp>, not a backend's file.");
#endif
#include <kdforge/backends/gemm_support.hpp>
#include <kdforge/base/error.hpp>

#include <Kokkos_Core.hpp>
#include <cublas_v2.h>

#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <type_traits>

namespace kdforge::backend::detail {

inline void cublas_check(cublasStatus_t s, char const* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  if (s == CUBLAS_STATUS_ALLOC_FAILED)
    ::kdforge::detail::fail("backend::cuda", what, " failed: cuBLAS could not allocate its workspace (out of GPU memory)");
  ::kdforge::detail::fail("backend::cuda", what, " failed: cuBLAS status ", int(s));
}

inline cublasHandle_t cublas_handle(int device) {
  static std::mutex mutex;
  static std::map<int, cublasHandle_t>* handles = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!handles) {
    handles = new std::map<int, cublasHandle_t>;
    Kokkos::push_finalize_hook([] {
      std::lock_guard<std::mutex> l(mutex);
      for (auto& h : *handles) cublasDestroy(h.second);
      delete handles;
      handles = nullptr;
    });
  }
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  cublasHandle_t h = nullptr;
  cublas_check(cublasCreate(&h), "cublasCreate");
  cublas_check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  handles->emplace(device, h);
  return h;
}

inline int cublas_int(std::int64_t v, char const* what) {
  KDFORGE_REQUIRE(v >= 0 && v <= std::int64_t(INT_MAX), "backend::gemm_abt", what, " = ", v,
                  " exceeds cuBLAS's 32-bit integers");
  return int(v);
}

/// Row-major C = A B^T is column-major C^T = B A^T: gemm(T, N) on the
/// column-major depth x rows views of A and B. Asynchronous on the stream.
template <class T>
void gemm_abt_impl(Kokkos::Cuda const& exec, std::int64_t ra, std::int64_t rb, std::int64_t depth, T const* a,
                   std::int64_t lda, T const* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  int current = 0;
  cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  cublasHandle_t const h = cublas_handle(current);
  cublas_check(cublasSetStream(h, exec.cuda_stream()), "cublasSetStream");
  int const m = cublas_int(rb, "rows of B"), n = cublas_int(ra, "rows of A"), k = cublas_int(depth, "depth");
  int const la = cublas_int(lda, "lda"), lb = cublas_int(ldb, "ldb"), lc = cublas_int(ldc, "ldc");
  T const one = 1, zero = 0;
  if constexpr (std::is_same<T, float>::value)
    cublas_check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, b, lb, a, la, &zero, c, lc), "cublasSgemm");
  else
    cublas_check(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, b, lb, a, la, &zero, c, lc), "cublasDgemm");
}

template <>
struct has_gemm_impl<Kokkos::Cuda, void> : std::true_type {};

} // namespace kdforge::backend::detail
