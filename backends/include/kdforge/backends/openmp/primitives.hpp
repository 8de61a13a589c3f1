#pragma once
// Primitives of the OpenMP backend that use OpenMP itself rather than oneTBB.
// fork_join: OpenMP tasks. Kokkos' OpenMP backend asks for OMP_PROC_BIND,
// which pins the calling thread to one core; oneTBB sizes its thread pool
// from that thread's affinity mask and its workers inherit it, so TBB tasks
// started from a bound master thread run on that one core. OpenMP tasks run
// on the OpenMP team Kokkos uses, bound or not.
#ifndef KDFORGE_BACKENDS_PRIMITIVES_INCLUDED
#error "include <kdforge/backends/primitives.hpp> instead"
#endif

#include <Kokkos_Core.hpp>

#include <omp.h>

namespace kdforge::backend::detail {

template <class F, class G>
void fork_join_impl(Kokkos::OpenMP const& exec, F const& f, G const& g) {
  if (omp_in_parallel()) {
#pragma omp task default(shared)
    f();
    g();
#pragma omp taskwait
  } else {
    // The first fork opens the team; nested forks become tasks of it.
#pragma omp parallel num_threads(exec.concurrency())
#pragma omp single
    fork_join_impl(exec, f, g);
  }
}

} // namespace kdforge::backend::detail
