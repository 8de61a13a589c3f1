#pragma once
// The API boundary: every public entry point runs its work through
// detail::api_call, which names the entry point for the messages of the
// allocations made inside it and turns what escapes as std::bad_alloc
// (host containers, Kokkos 3's raw allocation failure) or as Kokkos'
// allocation std::runtime_error (its own scratch: reductions, scans, host
// mirrors) into kdforge::OutOfMemoryError. kdforge's own allocations
// already fail that way (backend::allocate, backends/memory.hpp), with the
// exact size; these get the size Kokkos reports, or none.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/memory.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace kdforge::detail {

/// Names the entry point running on this thread while in scope (nested
/// entry points keep the outermost name).
class EntryPoint {
public:
  explicit EntryPoint(char const* name) : m_outer(current_entry_point()) {
    if (!m_outer) current_entry_point() = name;
  }
  ~EntryPoint() { current_entry_point() = m_outer; }
  EntryPoint(EntryPoint const&) = delete;
  EntryPoint& operator=(EntryPoint const&) = delete;

private:
  char const* m_outer;
};

/// The size in a Kokkos allocation message ("Allocation of size 1.5 G",
/// "failed to allocate 33.47 GiB"), in bytes; 0 if there is none.
inline std::size_t size_in_message(char const* what) {
  std::string const w = what;
  for (char const* key : {"Allocation of size ", "failed to allocate "}) {
    auto const at = w.find(key);
    if (at == std::string::npos) continue;
    char* end = nullptr;
    double v = std::strtod(w.c_str() + at + std::strlen(key), &end);
    if (end == w.c_str() + at + std::strlen(key)) continue;
    while (*end == ' ') ++end;
    double scale = 1;
    switch (*end) {
    case 'K': scale = 1024.0; break;
    case 'M': scale = 1024.0 * 1024; break;
    case 'G': scale = 1024.0 * 1024 * 1024; break;
    case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
    }
    return std::size_t(v * scale);
  }
  return 0;
}

/// Runs f() as the public entry point `where` on memory space MS: kdforge
/// errors pass through; allocation failures become OutOfMemoryError.
template <class MS, class F>
decltype(auto) api_call(char const* where, F&& f) {
  EntryPoint scope(where);
  try {
    return std::forward<F>(f)();
  } catch (Error const&) {
    throw;
  } catch (std::bad_alloc const& e) {
#if KOKKOS_VERSION < 40000
    if (auto const* raw = dynamic_cast<Kokkos::Experimental::RawMemoryAllocationFailure const*>(&e))
      throw_out_of_memory(where, "an allocation", MS::name(), raw->attempted_size(), backend::available_bytes_in<MS>(),
                          raw->get_error_message());
#endif
    // the standard library's containers: host memory
    throw_out_of_memory(where, "an allocation", Kokkos::HostSpace::name(), size_in_message(e.what()),
                        backend::available_bytes_in<Kokkos::HostSpace>(), e.what());
  } catch (std::runtime_error const& e) {
    if (!backend::detail::is_kokkos_allocation_failure(e)) throw;
    throw_out_of_memory(where, "an allocation", MS::name(), size_in_message(e.what()),
                        backend::available_bytes_in<MS>(), e.what());
  }
}

} // namespace kdforge::detail
