#pragma once
// Memory a host execution space can still allocate: MemAvailable of
// /proc/meminfo on Linux (what the kernel can hand out without swapping),
// unknown (the largest size_t) elsewhere.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>

namespace kdforge::backend::detail {

inline std::size_t host_available_bytes() {
#if defined(__linux__)
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long long kb = 0;
      if (std::strncmp(line, "MemAvailable:", 13) == 0 && std::sscanf(line + 13, "%llu", &kb) == 1) {
        std::fclose(f);
        return std::size_t(kb) * 1024;
      }
    }
    std::fclose(f);
  }
#endif
  return std::numeric_limits<std::size_t>::max();
}

} // namespace kdforge::backend::detail
