#pragma once
// Where the Python module's trees live: Kokkos' default execution space (the
// backend the build chose) and whether it reads host memory.
#include "trees.hpp"

#include <Kokkos_Core.hpp>

namespace kdforge_python {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using HostExec = Kokkos::DefaultHostExecutionSpace;
constexpr bool exec_on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;

/// Throws kdforge::Error unless the GPU array `a` is on the GPU kdforge runs on.
void check_device_of(ArrayRef const& a, char const* what);

} // namespace kdforge_python
