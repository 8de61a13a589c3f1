// Fuzz target: a mesh reader of the renderer and the ray benchmark
// (perf/rays/mesh.cpp) on arbitrary bytes, one target per format
// (KDFORGE_FUZZ_FORMAT: obj or ply). The right answers: a mesh with at least
// one triangle, every corner index inside the vertex list, every vertex
// finite; or a kdforge::Error naming the file and the problem. Anything else
// is a defect.
#include "rays/mesh.hpp"

#include <kdforge/base/error.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace {
[[noreturn]] void defect(char const* what) {
  std::fprintf(stderr, "fuzz_mesh: %s\n", what);
  std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<char const*>(data), size));
  try {
    auto const mesh = kdforge_rays::parse_mesh(in, "fuzz", kdforge_rays::MeshFormat::KDFORGE_FUZZ_FORMAT);
    if (mesh.triangle_count() < 1) defect("a mesh without triangles was accepted");
    if (mesh.vertices.size() % 3 != 0 || mesh.triangles.size() % 3 != 0) defect("ragged arrays");
    if (std::int64_t(mesh.material.size()) != mesh.triangle_count()) defect("one material per triangle expected");
    for (float x : mesh.vertices)
      if (!std::isfinite(x)) defect("a non-finite vertex was accepted");
    for (auto i : mesh.triangles)
      if (i < 0 || i >= mesh.vertex_count()) defect("a corner index outside the vertex list");
  } catch (kdforge::Error const& e) {
    if (std::string(e.what()).rfind("kdforge: mesh file fuzz: ", 0) != 0) defect(e.what());
  }
  return 0;
}
