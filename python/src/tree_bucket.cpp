// Bucket trees (any dimension, known at run time) of one coordinate type:
// compiled once per type by python/CMakeLists.txt.
#include "tree_impl.hpp"

#if !defined(KDFORGE_PY_T) || !defined(KDFORGE_PY_FACTORY)
#error "compile with -DKDFORGE_PY_T=float|double -DKDFORGE_PY_FACTORY=<name>"
#endif

namespace kdforge_python {
std::unique_ptr<Tree> KDFORGE_PY_FACTORY(BuildRequest const& request, Checkpoint const& check) {
  return build_bucket<KDFORGE_PY_T>(request, check);
}
} // namespace kdforge_python
