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
