#pragma once
// kdforge-bench --trace: the timeline of one call of each measured operation,
// from Kokkos Tools callbacks. Every kernel launch (parallel_for/reduce/scan)
// and every profiling region (kdforge marks its vendor calls, e.g. the CUB
// sorts and scans, as regions) is bracketed by a fence, so each event's time
// is its own work and the gaps between events are host work (allocations,
// launches, copies). Untimed: the fences serialise what the timed runs
// overlap, so the sum is an upper bound of the timed call.
#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kdforge_bench {

class Tracer {
public:
  /// Runs f() once with the hooks on and prints its timeline under `title`.
  template <class F>
  static void run(std::string const& title, F&& f) {
    events().clear();
    stack().clear();
    Kokkos::fence();
    namespace KT = Kokkos::Tools::Experimental;
    KT::set_begin_parallel_for_callback(&begin_kernel);
    KT::set_end_parallel_for_callback(&end_kernel);
    KT::set_begin_parallel_reduce_callback(&begin_kernel);
    KT::set_end_parallel_reduce_callback(&end_kernel);
    KT::set_begin_parallel_scan_callback(&begin_kernel);
    KT::set_end_parallel_scan_callback(&end_kernel);
    KT::set_push_region_callback(&push_region);
    KT::set_pop_region_callback(&pop_region);
    origin() = Clock::now();
    f();
    sync();
    double const total = ms_since_origin();
    KT::set_begin_parallel_for_callback(nullptr);
    KT::set_end_parallel_for_callback(nullptr);
    KT::set_begin_parallel_reduce_callback(nullptr);
    KT::set_end_parallel_reduce_callback(nullptr);
    KT::set_begin_parallel_scan_callback(nullptr);
    KT::set_end_parallel_scan_callback(nullptr);
    KT::set_push_region_callback(nullptr);
    KT::set_pop_region_callback(nullptr);
    print(title, total);
  }

private:
  using Clock = std::chrono::steady_clock;
  struct Event {
    std::string name;
    int depth;
    double start, end; // ms since the call began
  };
  static std::vector<Event>& events() {
    static std::vector<Event> e;
    return e;
  }
  static std::vector<std::size_t>& stack() { // open regions
    static std::vector<std::size_t> s;
    return s;
  }
  static Clock::time_point& origin() {
    static Clock::time_point t;
    return t;
  }
  static bool& busy() { // the fence of a hook must not recurse into the hooks
    static bool b = false;
    return b;
  }
  static double ms_since_origin() { return std::chrono::duration<double, std::milli>(Clock::now() - origin()).count(); }
  static void sync() {
    busy() = true;
    Kokkos::DefaultExecutionSpace().fence();
    busy() = false;
  }
  static std::size_t open(char const* name) {
    sync();
    events().push_back({name, int(stack().size()), ms_since_origin(), -1});
    return events().size() - 1;
  }
  static void close(std::size_t i) {
    sync();
    if (i < events().size()) events()[i].end = ms_since_origin();
  }
  static void begin_kernel(char const* name, std::uint32_t, std::uint64_t* id) {
    if (busy()) return;
    *id = open(name);
  }
  static void end_kernel(std::uint64_t id) {
    if (busy()) return;
    close(std::size_t(id));
  }
  static void push_region(char const* name) {
    if (busy()) return;
    stack().push_back(open(name));
  }
  static void pop_region() {
    if (busy() || stack().empty()) return;
    close(stack().back());
    stack().pop_back();
  }
  static void print(std::string const& title, double total) {
    std::printf("trace: %s: %.3f ms in all (fenced per event)\n", title.c_str(), total);
    std::printf("trace:   %9s %9s %9s  %s\n", "start ms", "gap ms", "ms", "event (gap: host work before it)");
    double last_end = 0, inside = 0;
    for (auto const& e : events()) {
      double const gap = e.start - last_end;
      std::string const name = std::string(std::size_t(2 * e.depth), ' ') + e.name;
      std::printf("trace:   %9.3f %9.3f %9.3f  %s\n", e.start, gap > 0 ? gap : 0.0, e.end - e.start, name.c_str());
      if (e.depth == 0) inside += e.end - e.start;
      last_end = e.end > last_end ? e.end : last_end;
    }
    std::printf("trace:   outside events: %.3f ms\n", total - inside);
    std::fflush(stdout);
  }
};

} // namespace kdforge_bench
