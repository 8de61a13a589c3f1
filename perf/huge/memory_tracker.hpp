#pragma once
// Bytes held in each Kokkos memory space, now and at their peak, from Kokkos
// Tools' allocation callbacks (Kokkos 3.4 and 4.x report every View and
// every kokkos_malloc, with its size, to them). kdforge allocates all its
// memory as Views (backends/memory.hpp), so the peak of a build or a query
// is read here, on every backend. Not counted: memory the CUDA runtime
// or a vendor library takes outside Kokkos (kdforge gives CUB its
// temporary storage as Views, so CUB's is counted).
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace kdforge_huge {

class MemoryTracker {
public:
  struct Space {
    std::int64_t now = 0, peak = 0;
  };

  /// Starts counting (from zero: Views made before are not seen).
  static void start() {
    namespace KT = Kokkos::Tools::Experimental;
    KT::set_allocate_data_callback(&on_allocate);
    KT::set_deallocate_data_callback(&on_deallocate);
  }
  static void stop() {
    namespace KT = Kokkos::Tools::Experimental;
    KT::set_allocate_data_callback(nullptr);
    KT::set_deallocate_data_callback(nullptr);
  }
  /// Peaks measured from now on start from what is held now.
  static void reset_peaks() {
    std::lock_guard<std::mutex> lock(mutex());
    for (auto& s : spaces()) s.second.peak = s.second.now;
  }
  static std::map<std::string, Space> snapshot() {
    std::lock_guard<std::mutex> lock(mutex());
    return spaces();
  }

private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<std::string, Space>& spaces() {
    static std::map<std::string, Space> s;
    return s;
  }
  static void on_allocate(Kokkos::Tools::SpaceHandle space, char const*, void const*, std::uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex());
    auto& s = spaces()[space.name];
    s.now += std::int64_t(bytes);
    if (s.now > s.peak) s.peak = s.now;
  }
  static void on_deallocate(Kokkos::Tools::SpaceHandle space, char const*, void const*, std::uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex());
    spaces()[space.name].now -= std::int64_t(bytes);
  }
};

} // namespace kdforge_huge
