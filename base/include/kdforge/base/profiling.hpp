#pragma once
// Kokkos Tools regions around kdforge's phases and vendor calls, so profilers
// that read Kokkos Tools (the Kokkos kernel timer, kdforge-bench --trace)
// see CUB sorts and scans, which launch no Kokkos kernel, and can attribute
// kernels to calls. Costs a flag test when no tool is loaded.
#include <Kokkos_Core.hpp>

namespace kdforge::detail {

class Region {
public:
  explicit Region(char const* name) { Kokkos::Profiling::pushRegion(name); }
  ~Region() { Kokkos::Profiling::popRegion(); }
  Region(Region const&) = delete;
  Region& operator=(Region const&) = delete;
};

} // namespace kdforge::detail
