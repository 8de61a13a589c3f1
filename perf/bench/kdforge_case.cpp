// kdforge-bench: one (dtype, dim) case of the Kokkos runs. perf/CMakeLists.txt
// compiles this file once per case with KDFORGE_BENCH_T / KDFORGE_BENCH_D set,
// so the cases compile separately (and in parallel).
#include "kdforge_runner.hpp"

#if !defined(KDFORGE_BENCH_T) || !defined(KDFORGE_BENCH_D)
#error "compile with -DKDFORGE_BENCH_T=float|double -DKDFORGE_BENCH_D=<dim>"
#endif

namespace kdforge_bench {
template void run_workload<KDFORGE_BENCH_T, KDFORGE_BENCH_D>(Workload const&, Sink&);
} // namespace kdforge_bench
