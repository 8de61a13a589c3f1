#pragma once
// Host backend of backend::gemm_abt: the BLAS found when kdforge was
// configured (OpenBLAS on Debian), through its Fortran interface, which
// every BLAS exports under the same names (cblas.h sits in a different
// folder for each BLAS a Debian machine may hold). Compiled only where
// KDFORGE_USE_BLAS is 1; without it kdforge's brute force keeps its own
// tiled kernel on host spaces.
#include <kdforge/backends/gemm_support.hpp>
#include <kdforge/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <climits>
#include <cstdint>
#include <type_traits>

extern "C" {
void sgemm_(char const* transa, char const* transb, int const* m, int const* n, int const* k, float const* alpha,
            float const* a, int const* lda, float const* b, int const* ldb, float const* beta, float* c,
            int const* ldc);
void dgemm_(char const* transa, char const* transb, int const* m, int const* n, int const* k, double const* alpha,
            double const* a, int const* lda, double const* b, int const* ldb, double const* beta, double* c,
            int const* ldc);
}

namespace kdforge::backend::detail {

inline int blas_int(std::int64_t v, char const* what) {
  KDFORGE_REQUIRE(v >= 0 && v <= std::int64_t(INT_MAX), "backend::gemm_abt", what, " = ", v,
                  " exceeds the BLAS's 32-bit integers");
  return int(v);
}

/// Host execution spaces: the BLAS, on the calling thread (it runs its own
/// threads). Row-major C = A B^T is column-major C^T = B A^T: with A and B
/// read as column-major depth x rows matrices, that is gemm('T', 'N').
template <class Exec, class T>
std::enable_if_t<Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible>
gemm_abt_impl(Exec const& exec, std::int64_t ra, std::int64_t rb, std::int64_t depth, T const* a, std::int64_t lda,
              T const* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  exec.fence(); // the operands were written by kernels on exec
  int const m = blas_int(rb, "rows of B"), n = blas_int(ra, "rows of A"), k = blas_int(depth, "depth");
  int const la = blas_int(lda, "lda"), lb = blas_int(ldb, "ldb"), lc = blas_int(ldc, "ldc");
  T const one = 1, zero = 0;
  char const t = 'T', nt = 'N';
  if constexpr (std::is_same<T, float>::value) sgemm_(&t, &nt, &m, &n, &k, &one, b, &lb, a, &la, &zero, c, &lc);
  else dgemm_(&t, &nt, &m, &n, &k, &one, b, &lb, a, &la, &zero, c, &lc);
}

template <class Exec>
struct has_gemm_impl<Exec, std::enable_if_t<Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible>>
    : std::true_type {};

} // namespace kdforge::backend::detail
