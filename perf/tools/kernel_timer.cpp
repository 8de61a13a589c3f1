// kdforge-kernel-timer: a Kokkos Tools library that says where a program's
// time goes, for machines without a timeline profiler (nsys).
//
//   export KOKKOS_PROFILE_LIBRARY=build/perf/tools/libkdforge-kernel-timer.so
//   KDFORGE_KERNEL_TIMER_OUT=timer.tsv program ...
//
// Every kernel (parallel_for, reduce, scan), deep copy and fence is timed
// alone: the device is synchronised (cuCtxSynchronize, where libcuda is
// loaded) before it starts and after it ends, so each one's time is its own
// and nothing overlaps. The time between two of them, on the host (launch
// gaps, allocation and deallocation, MPI, CUB calls, host loops), is
// counted as "host" under the innermost profiling region. Allocations are
// counted per label; allocations and copies carry their bytes. Synchronising after every kernel adds its own cost
// (tens of microseconds per launch on a GPU): the times say where the time
// goes, not the program's speed, which the program's own timers measure
// without the tool.
//
// At the end the tool writes one line per (outermost region, kind, name):
// calls, total ms, mean us, sorted by total, to KDFORGE_KERNEL_TIMER_OUT
// (".<rank>" appended under MPI launchers) or to stderr.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Stat {
  std::uint64_t calls = 0;
  double seconds = 0;
  std::uint64_t bytes = 0;
};

struct Open {
  std::string kind, name;
  Clock::time_point start;
  std::uint64_t bytes = 0; // a deep copy's
};

struct Timer {
  std::mutex lock;
  int (*sync)() = nullptr; // cuCtxSynchronize
  std::vector<std::string> regions;
  std::unordered_map<std::uint64_t, Open> open;
  std::uint64_t next_id = 1;
  Clock::time_point last_end = Clock::now();
  std::map<std::tuple<std::string, std::string, std::string>, Stat> stats;
  std::vector<Open> copies; // deep copies have no id: a stack

  // libcuda is looked for until the program has loaded it (the CUDA
  // runtime loads it when it starts, which may follow the tool's start)
  void find_sync() {
    if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD))
      sync = reinterpret_cast<int (*)()>(dlsym(cuda, "cuCtxSynchronize"));
  }
  std::string outer() const { return regions.empty() ? "(no region)" : regions.front(); }
  std::string inner() const { return regions.empty() ? "(no region)" : regions.back(); }
  Clock::time_point synced() {
    if (!sync) find_sync();
    if (sync) sync();
    return Clock::now();
  }
  void add(std::string const& kind, std::string const& name, double s, std::uint64_t bytes = 0) {
    Stat& st = stats[{outer(), kind, name}];
    ++st.calls;
    st.seconds += s;
    st.bytes += bytes;
  }
  // the host time since the last event, then the event's start
  Clock::time_point begin() {
    auto const now = synced();
    add("host", inner(), std::chrono::duration<double>(now - last_end).count());
    return now;
  }
  void end(Open const& o) {
    auto const now = synced();
    add(o.kind, o.name, std::chrono::duration<double>(now - o.start).count(), o.bytes);
    last_end = now;
  }
  void begin_kernel(char const* kind, char const* name, std::uint64_t* id) {
    std::lock_guard<std::mutex> g(lock);
    *id = next_id++;
    open[*id] = Open{kind, name ? name : "(unnamed)", begin()};
  }
  void end_kernel(std::uint64_t id) {
    std::lock_guard<std::mutex> g(lock);
    auto it = open.find(id);
    if (it == open.end()) return;
    end(it->second);
    open.erase(it);
  }
  void write() {
    std::lock_guard<std::mutex> g(lock);
    std::string file;
    if (char const* f = std::getenv("KDFORGE_KERNEL_TIMER_OUT")) {
      file = f;
      for (char const* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
        if (char const* r = std::getenv(v)) {
          file += std::string(".") + r;
          break;
        }
    }
    std::FILE* out = file.empty() ? stderr : std::fopen(file.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "kdforge-kernel-timer: cannot write %s\n", file.c_str());
      return;
    }
    std::vector<std::pair<std::tuple<std::string, std::string, std::string>, Stat>> rows(stats.begin(), stats.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](auto const& a, auto const& b) { return a.second.seconds > b.second.seconds; });
    std::fprintf(out, "# kdforge-kernel-timer (device %s after every event)\n",
                 sync ? "synchronised" : "not synchronised: no libcuda in the process");
    std::fprintf(out, "region\tkind\tcalls\ttotal_ms\tmean_us\tbytes\tname\n");
    for (auto const& [key, st] : rows)
      std::fprintf(out, "%s\t%s\t%llu\t%.3f\t%.1f\t%llu\t%s\n", std::get<0>(key).c_str(), std::get<1>(key).c_str(),
                   static_cast<unsigned long long>(st.calls), st.seconds * 1e3,
                   st.calls ? st.seconds * 1e6 / double(st.calls) : 0.0, static_cast<unsigned long long>(st.bytes),
                   std::get<2>(key).c_str());
    if (out != stderr) std::fclose(out);
  }
};

Timer* timer = nullptr;

} // namespace

// Kokkos' Kokkos_Profiling_SpaceHandle. Outside the anonymous namespace:
// an extern "C" function taking a type of internal linkage gets internal
// linkage itself from some compilers (nvcc), and Kokkos would not find it.
struct KdforgeTimerSpaceHandle {
  char name[64];
};
using SpaceHandle = KdforgeTimerSpaceHandle;

extern "C" {

void kokkosp_init_library(int, std::uint64_t, std::uint32_t, void*) { timer = new Timer(); }
void kokkosp_finalize_library() {
  if (!timer) return;
  timer->write();
  delete timer;
  timer = nullptr;
}
void kokkosp_begin_parallel_for(char const* name, std::uint32_t, std::uint64_t* id) {
  timer->begin_kernel("for", name, id);
}
void kokkosp_end_parallel_for(std::uint64_t id) { timer->end_kernel(id); }
void kokkosp_begin_parallel_reduce(char const* name, std::uint32_t, std::uint64_t* id) {
  timer->begin_kernel("reduce", name, id);
}
void kokkosp_end_parallel_reduce(std::uint64_t id) { timer->end_kernel(id); }
void kokkosp_begin_parallel_scan(char const* name, std::uint32_t, std::uint64_t* id) {
  timer->begin_kernel("scan", name, id);
}
void kokkosp_end_parallel_scan(std::uint64_t id) { timer->end_kernel(id); }
void kokkosp_begin_fence(char const* name, std::uint32_t, std::uint64_t* id) { timer->begin_kernel("fence", name, id); }
void kokkosp_end_fence(std::uint64_t id) { timer->end_kernel(id); }

void kokkosp_begin_deep_copy(SpaceHandle dst_space, char const* dst, void const*, SpaceHandle src_space,
                             char const* src, void const*, std::uint64_t bytes) {
  std::lock_guard<std::mutex> g(timer->lock);
  std::string name = std::string(dst_space.name) + " " + (dst && *dst ? dst : "?") + " <- " + src_space.name + " " +
                     (src && *src ? src : "?");
  timer->copies.push_back(Open{"copy", name, timer->begin(), bytes});
}
void kokkosp_end_deep_copy() {
  std::lock_guard<std::mutex> g(timer->lock);
  if (timer->copies.empty()) return;
  timer->end(timer->copies.back());
  timer->copies.pop_back();
}

void kokkosp_push_profile_region(char const* name) {
  std::lock_guard<std::mutex> g(timer->lock);
  auto const now = timer->synced();
  timer->add("host", timer->inner(), std::chrono::duration<double>(now - timer->last_end).count());
  timer->last_end = now;
  timer->regions.emplace_back(name ? name : "(unnamed)");
  timer->open[~std::uint64_t(0) - timer->regions.size()] = Open{"region", timer->regions.back(), now};
}
void kokkosp_pop_profile_region() {
  std::lock_guard<std::mutex> g(timer->lock);
  if (timer->regions.empty()) return;
  auto const now = timer->synced();
  timer->add("host", timer->inner(), std::chrono::duration<double>(now - timer->last_end).count());
  timer->last_end = now;
  auto const key = ~std::uint64_t(0) - timer->regions.size();
  Open const o = timer->open[key];
  timer->open.erase(key);
  // the region's whole time, under its own name (and its outermost region)
  timer->add("region", o.name, std::chrono::duration<double>(now - o.start).count());
  timer->regions.pop_back();
}

void kokkosp_allocate_data(SpaceHandle space, char const* label, void const*, std::uint64_t bytes) {
  std::lock_guard<std::mutex> g(timer->lock);
  timer->add("alloc", std::string(space.name) + " " + (label && *label ? label : "?"), 0.0, bytes);
}
void kokkosp_deallocate_data(SpaceHandle, char const*, void const*, std::uint64_t) {}

} // extern "C"
