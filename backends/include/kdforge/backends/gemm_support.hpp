#pragma once
// Which execution spaces have a vendor GEMM behind backend::gemm_abt: the
// trait's primary form says none; backends/host/blas.hpp (host spaces, when
// a BLAS was found at configure time) and backends/cuda/blas.hpp (cuBLAS)
// specialise it.
#include <type_traits>

namespace kdforge::backend::detail {
template <class Exec, class = void>
struct has_gemm_impl : std::false_type {};
} // namespace kdforge::backend::detail

namespace kdforge::backend::detail {
/// The name gemm_abt calls, for builds with no GEMM at all (KDFORGE_ENABLE_BLAS
/// off, or no BLAS found): never selected, since gemm_abt asserts has_gemm
/// first; the BLAS headers add the real overloads.
struct NoGemm {};
template <class... Args>
void gemm_abt_impl(NoGemm, Args const&...) {}
} // namespace kdforge::backend::detail
