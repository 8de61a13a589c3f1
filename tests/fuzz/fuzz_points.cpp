// Fuzz target: a point-file reader of the command-line tools
// (perf/bench/point_files.cpp) on arbitrary bytes, one target per format
// (KDFORGE_FUZZ_FORMAT: ply, xyz or raw_float32). The right answers: points
// that are all finite, dim per point, at least one; or a UsageError naming
// the problem. Anything else (a crash, another exception, an allocation the
// file's size does not justify, a hang) is a defect.
#include "bench/point_files.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<char const*>(data), size));
  int const dim = 3;
  try {
    auto const ps = kdforge_bench::parse_points(in, "fuzz", kdforge_bench::PointFormat::KDFORGE_FUZZ_FORMAT, dim);
    if (ps.dim != dim || ps.coords.empty() || ps.coords.size() % dim != 0) {
      std::fprintf(stderr, "fuzz_points: %zu coordinates for dim %d\n", ps.coords.size(), ps.dim);
      std::abort();
    }
    for (double x : ps.coords)
      if (!std::isfinite(x)) {
        std::fprintf(stderr, "fuzz_points: a non-finite coordinate was accepted\n");
        std::abort();
      }
  } catch (kdforge_bench::UsageError const& e) {
    if (std::string(e.what()).rfind("point file 'fuzz': ", 0) != 0) {
      std::fprintf(stderr, "fuzz_points: message does not name the file: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
