#pragma once
// Running out of memory: the error kdforge throws for it, and the
// process-wide memory limit.
//
// Every allocation kdforge makes goes through one helper
// (backends/memory.hpp: kdforge::backend::allocate) and every public entry
// point through one wrapper (core/detail/boundary.hpp), so a failed
// allocation, on a GPU or a host, reaches the caller as an
// OutOfMemoryError naming the bytes asked for and the bytes available,
// never as std::bad_alloc or Kokkos' std::runtime_error. The memory limit
// makes the helper refuse any single allocation larger than it as if the
// memory space were full: a cap for codes that share a device with other
// work, and how the tests drive every allocation failure on a CPU.
#include <kdforge/base/error.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kdforge {

/// An allocation failed (or would exceed set_memory_limit). Thrown by every
/// entry point in place of std::bad_alloc and of Kokkos' allocation errors.
/// The tree and the results passed in stay as they were unless the entry
/// point's documentation says otherwise.
class OutOfMemoryError : public Error {
public:
  OutOfMemoryError(std::string const& message, std::size_t requested, std::size_t available)
      : Error(message), m_requested(requested), m_available(available) {}
  /// Bytes of the allocation that failed (0 when unknown).
  std::size_t requested_bytes() const { return m_requested; }
  /// Bytes the memory space had available when it failed, within the
  /// memory limit (the largest size_t when unknown).
  std::size_t available_bytes() const { return m_available; }

private:
  std::size_t m_requested;
  std::size_t m_available;
};

namespace detail {
inline std::atomic<std::size_t>& memory_limit_bytes() {
  static std::atomic<std::size_t> limit{0};
  return limit;
}
// Allocations left before the one that fails (< 0: none fails), and the
// count made so far; for tests that fail each allocation of a call in turn.
inline std::atomic<std::int64_t>& allocations_before_failure() {
  static std::atomic<std::int64_t> left{-1};
  return left;
}
inline std::atomic<std::int64_t>& allocation_counter() {
  static std::atomic<std::int64_t> count{0};
  return count;
}
} // namespace detail

/// Caps every allocation kdforge makes at `bytes` (0: no cap): a larger one
/// fails as if the memory space were full, with an OutOfMemoryError, and
/// the memory kdforge reports available (build checks, error messages) is
/// at most this. Process-wide; applies to every memory space.
inline void set_memory_limit(std::size_t bytes) { detail::memory_limit_bytes().store(bytes); }
/// The cap set by set_memory_limit (0: none).
inline std::size_t memory_limit() { return detail::memory_limit_bytes().load(); }

namespace detail {

/// For tests: the allocation after the next `n` that kdforge makes, and
/// every one after it, fail as a full memory space would (so a retry fails
/// too), until fail_allocation_after(-1) (n < 0: none fails).
inline void fail_allocation_after(std::int64_t n) { allocations_before_failure().store(n); }
/// Allocations kdforge has made (or attempted) in this process.
inline std::int64_t allocations_made() { return allocation_counter().load(); }

/// The public entry point running on this thread (for the messages of
/// allocations made deep inside it); set by core/detail/boundary.hpp.
inline char const*& current_entry_point() {
  static thread_local char const* name = nullptr;
  return name;
}

/// The number of bytes, written with digit groups and a binary unit
/// ("1234567890 bytes (1.15 GiB)").
inline std::string describe_bytes(std::size_t bytes) {
  std::string s = std::to_string(bytes) + " bytes";
  if (bytes >= (std::size_t(1) << 20)) {
    static char const* const units[] = {"MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = double(bytes) / double(std::size_t(1) << 20);
    int u = 0;
    while (v >= 1024 && u < 4) {
      v /= 1024;
      ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.2f %s)", v, units[u]);
    s += buf;
  }
  return s;
}

/// Throws the OutOfMemoryError of an allocation of `requested` bytes
/// (`what`: its label, or what was being allocated) in memory space
/// `space`, where `available` bytes were available.
[[noreturn]] inline void throw_out_of_memory(char const* where, std::string const& what, char const* space,
                                             std::size_t requested, std::size_t available,
                                             std::string const& cause = {}) {
  std::string msg = std::string("kdforge::") + (where ? where : current_entry_point() ? current_entry_point() : "allocate") +
                    ": out of memory: " + what + " needs " + (requested ? describe_bytes(requested) : "an unknown size") +
                    " of " + space + " memory, ";
  if (available == std::size_t(-1)) msg += "available memory unknown";
  else msg += describe_bytes(available) + " available";
  std::size_t const limit = memory_limit();
  if (limit > 0) msg += " (kdforge::set_memory_limit: " + describe_bytes(limit) + ")";
  if (!cause.empty()) msg += " [" + cause + "]";
  msg += "; free memory (results, workspaces or trees no longer needed), or process fewer points or queries per call";
  throw OutOfMemoryError(msg, requested, available);
}

} // namespace detail
} // namespace kdforge
