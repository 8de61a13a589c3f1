// Left-balanced and split-sort trees of one coordinate type and dimension:
// python/CMakeLists.txt compiles this file once per (type, dimension) of
// KDFORGE_PYTHON_DIMENSIONS, so the pairs compile separately (and in
// parallel), each defining the factory the registry names.
#include "tree_impl.hpp"

#if !defined(KDFORGE_PY_T) || !defined(KDFORGE_PY_D) || !defined(KDFORGE_PY_FACTORY)
#error "compile with -DKDFORGE_PY_T=float|double -DKDFORGE_PY_D=<dim> -DKDFORGE_PY_FACTORY=<name>"
#endif

namespace kdforge_python {
std::unique_ptr<Tree> KDFORGE_PY_FACTORY(BuildRequest const& request, Checkpoint const& check) {
  return build_fixed<KDFORGE_PY_T, KDFORGE_PY_D>(request, check);
}
} // namespace kdforge_python
