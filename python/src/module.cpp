// The Python module kdforge._kdforge (pybind11): the trees of trees.hpp for
// the pure-Python layer (python/kdforge/), which turns scipy's arguments into
// these calls. What the binding itself adds:
//   - every Kokkos call runs on one worker thread the module owns, which
//     initialised Kokkos: Kokkos 3's OpenMP backend answers only the thread
//     that initialised it (its instance is thread-local), and Python may call
//     from any thread. Calls from several Python threads queue there, one at
//     a time (the default execution space instance is shared);
//   - the calling thread waits with the GIL released (copies of Python
//     objects are made before), and looks for a pending Ctrl-C every 50 ms;
//     the worker stops at the next checkpoint between the phases of the call
//     (input copy, build or query, result conversion), so the call unwinds
//     cleanly as KeyboardInterrupt and the tree stays usable;
//   - kdforge::Error becomes ValueError (bad input) or MemoryError (kdforge
//     ran out of memory), Kokkos' allocation failures MemoryError, each with
//     its message;
//   - every tree registers itself, so finalize() can release their Views
//     before Kokkos::finalize at interpreter exit.
#include "trees.hpp"

#include <kdforge/base/error.hpp>
#include <kdforge/base/memory.hpp>
#include <kdforge/base/version.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace kdforge_python;

namespace {

/// The thread every Kokkos call runs on, started on first use.
class Worker {
public:
  ~Worker() { stop(); }

  /// Runs f on the worker and returns its result (or rethrows its
  /// exception). Called with the GIL held; waits without it.
  template <class F>
  auto run(F&& f) -> decltype(f()) {
    using R = decltype(f());
    if (forked)
      throw std::runtime_error("kdforge: this process was forked after kdforge started its runtime in the parent; "
                               "kdforge cannot run in the child (use multiprocessing's 'spawn' start method)");
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    // shared with the queue: the worker may still be leaving task() when the caller sees the result
    auto task = std::make_shared<std::packaged_task<R()>>([f = std::forward<F>(f), cancel]() mutable {
      current_cancel = cancel.get();
      struct Reset {
        ~Reset() { current_cancel = nullptr; }
      } reset;
      return f();
    });
    std::future<R> done = task->get_future();
    bool interrupted = false;
    {
      py::gil_scoped_release nogil;
      {
        std::lock_guard<std::mutex> lock(m_mutex);
        start_locked();
        m_tasks.emplace_back([task] { (*task)(); });
      }
      m_wake.notify_one();
      while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        if (interrupted) continue;
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
          interrupted = true; // the KeyboardInterrupt stays pending
          cancel->store(true);
        }
      }
    }
    if (interrupted) {
      try {
        done.get();
      } catch (...) {
      }
      throw py::error_already_set();
    }
    try {
      return done.get();
    } catch (Interrupted const&) { // cancelled without a pending error: cannot happen, but be safe
      throw std::runtime_error("kdforge: the call was interrupted");
    }
  }

  /// The checkpoint of the task running now: throws Interrupted once the
  /// caller saw Ctrl-C. Worker thread only.
  static void checkpoint() {
    if (current_cancel && current_cancel->load()) throw Interrupted{};
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (!m_thread.joinable()) return;
      m_stop = true;
    }
    m_wake.notify_one();
    if (forked) {
      m_thread.detach(); // the parent's thread; nothing to join here
      return;
    }
    m_thread.join();
  }

  static inline std::atomic<bool> forked{false};

private:
  void start_locked() {
    if (m_thread.joinable()) return;
    m_stop = false;
    m_thread = std::thread([this] { loop(); });
  }

  void loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    while (true) {
      m_wake.wait(lock, [this] { return m_stop || !m_tasks.empty(); });
      if (m_tasks.empty()) return; // stopping, and nothing left to do
      std::function<void()> t = std::move(m_tasks.front());
      m_tasks.pop_front();
      lock.unlock();
      t();
      lock.lock();
    }
  }

  static inline thread_local std::atomic<bool>* current_cancel = nullptr;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<std::function<void()>> m_tasks;
  std::thread m_thread;
  bool m_stop = false;
};

Worker& worker() {
  static Worker* w = new Worker; // never destroyed by static destruction: finalize() stops it
  return *w;
}

bool g_finalized = false;

class PyTree;
std::set<PyTree*> g_trees; // guarded by the GIL

void check_signals() { Worker::checkpoint(); }

void ensure_runtime() {
  if (g_finalized)
    throw std::runtime_error("kdforge: the runtime was finalised (at interpreter exit, or by kdforge.finalize()); "
                             "no tree can be built or queried after that");
  worker().run([] {
    if (!is_initialized()) initialize(-1, -1);
  });
}

/// An exception's message without Kokkos' trailer about tracebacks.
std::string message_of(std::exception const& e) {
  std::string m = e.what();
  std::string const trailer = "Traceback functionality not available";
  auto const at = m.find(trailer);
  if (at != std::string::npos) m.erase(at, trailer.size());
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

bool is_memory_message(char const* what) {
  return std::strstr(what, "out of memory") || std::strstr(what, "bytes are free") ||
         std::strstr(what, "failed to allocate") || std::strstr(what, "Memory allocation error");
}

class PyTree {
public:
  PyTree(ArrayRef const& points, std::string const& builder, std::int64_t leafsize) {
    ensure_runtime();
    BuildRequest req{points, builder, leafsize};
    m_tree = worker().run([&] { return build_tree(req, check_signals); });
    g_trees.insert(this);
  }
  PyTree(PyTree const&) = delete;
  PyTree& operator=(PyTree const&) = delete;
  ~PyTree() {
    g_trees.erase(this);
    release();
  }

  /// Frees the tree's Kokkos allocations (on the worker, after the calls
  /// queued before).
  void release() {
    if (!m_tree) return;
    std::shared_ptr<Tree> t(std::move(m_tree));
    if (Worker::forked) return; // the parent's memory: left alone
    worker().run([t] { t->release(); });
  }

  Tree& tree() {
    if (!m_tree)
      throw std::runtime_error("kdforge: this tree was released (kdforge.finalize() ran, or the interpreter is "
                               "exiting)");
    return *m_tree;
  }

  std::int64_t n() { return tree().size(); }
  int m() { return tree().dim(); }
  std::string dtype() { return std::string(1, tree().dtype()); }
  std::string builder() { return tree().builder(); }

  void knn(ArrayRef const& q, std::vector<std::int64_t> const& ks, double upper_bound, ArrayRef const& out_d,
           ArrayRef const& out_i) {
    Tree& t = tree();
    if (ks.empty()) throw std::invalid_argument("kdforge: k must name at least one neighbour");
    worker().run([&] { t.knn(q, ks, upper_bound, out_d, out_i, check_signals); });
  }

  void radius_count(ArrayRef const& q, ArrayRef const& radii, double r, ArrayRef const& out) {
    Tree& t = tree();
    worker().run([&] { t.radius_count(q, radii, r, out, check_signals); });
  }

  std::vector<std::int64_t> count_pairs(ArrayRef const& q, std::vector<double> const& rs) {
    Tree& t = tree();
    return worker().run([&] { return t.count_pairs(q, rs, check_signals); });
  }

  /// scipy's query_ball_point rows: a 1-D object array of M lists of int.
  py::array radius_lists(ArrayRef const& q, ArrayRef const& radii, double r, bool sort_by_index) {
    Tree& t = tree();
    Csr const csr = worker().run([&] { return t.radius_search(q, radii, r, sort_by_index, false, check_signals); });
    std::int64_t const m = std::int64_t(csr.offsets.size()) - 1;
    py::array out(py::dtype("O"), std::vector<py::ssize_t>{py::ssize_t(m)});
    auto** slots = static_cast<PyObject**>(out.mutable_data());
    for (std::int64_t i = 0; i < m; ++i) {
      std::int64_t const b = csr.offsets[std::size_t(i)], e = csr.offsets[std::size_t(i) + 1];
      PyObject* row = PyList_New(py::ssize_t(e - b));
      if (!row) throw py::error_already_set();
      for (std::int64_t j = b; j < e; ++j) {
        PyObject* v = PyLong_FromLongLong(csr.indices[std::size_t(j)]);
        if (!v) {
          Py_DECREF(row);
          throw py::error_already_set();
        }
        PyList_SET_ITEM(row, py::ssize_t(j - b), v);
      }
      Py_XDECREF(slots[i]); // numpy filled the object array with None
      slots[i] = row;
      if ((i & 0xffff) == 0xffff && PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    return out;
  }

  /// Radius search rows as CSR arrays: (offsets, indices, distances or None).
  py::tuple radius_csr(ArrayRef const& q, ArrayRef const& radii, double r, bool sort_by_index, bool distances) {
    Tree& t = tree();
    Csr csr = worker().run([&] { return t.radius_search(q, radii, r, sort_by_index, distances, check_signals); });
    py::object d = py::none();
    if (distances) d = to_numpy(std::move(csr.distances));
    return py::make_tuple(to_numpy(std::move(csr.offsets)), to_numpy(std::move(csr.indices)), d);
  }

private:
  template <class V>
  static py::array to_numpy(std::vector<V>&& v) {
    auto* owned = new std::vector<V>(std::move(v));
    py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<V>*>(p); });
    return py::array_t<V>({py::ssize_t(owned->size())}, {py::ssize_t(sizeof(V))}, owned->data(), owner);
  }

  std::unique_ptr<Tree> m_tree;
};

/// Releases every tree's Views, then finalises Kokkos (if this module
/// initialised it). Trees used afterwards raise RuntimeError.
void finalize_runtime() {
  if (g_finalized) return;
  g_finalized = true;
  if (Worker::forked) return;
  for (PyTree* t : g_trees) t->release();
  worker().run([] { finalize(); });
  py::gil_scoped_release nogil;
  worker().stop();
}

} // namespace

PYBIND11_MODULE(_kdforge, m) {
  m.doc() = "kdforge's k-d trees (C++ core of the kdforge package; use kdforge.KDTree)";
  m.attr("__version__") = kdforge::version();

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (py::builtin_exception const&) {
      throw; // pybind11's own (value_error, ...): its translator
    } catch (kdforge::OutOfMemoryError const& e) {
      PyErr_SetString(PyExc_MemoryError, message_of(e).c_str());
    } catch (kdforge::Error const& e) {
      PyErr_SetString(is_memory_message(e.what()) ? PyExc_MemoryError : PyExc_ValueError, message_of(e).c_str());
    } catch (std::invalid_argument const& e) {
      PyErr_SetString(PyExc_ValueError, message_of(e).c_str());
    } catch (std::bad_alloc const& e) {
      PyErr_SetString(PyExc_MemoryError, ("kdforge: out of memory (" + message_of(e) + ")").c_str());
    } catch (std::runtime_error const& e) { // Kokkos' errors, its allocation failures among them
      PyErr_SetString(is_memory_message(e.what()) ? PyExc_MemoryError : PyExc_RuntimeError, message_of(e).c_str());
    }
  });

  py::class_<ArrayRef>(m, "ArrayRef", "A caller's array as the C++ core reads it (pointer, shape, strides)")
      .def(py::init([](std::uintptr_t ptr, std::int64_t rows, std::int64_t cols, std::int64_t s0, std::int64_t s1,
                       std::string const& dtype, bool device) {
             if (dtype.size() != 1 || std::string("fdq").find(dtype[0]) == std::string::npos)
               throw std::invalid_argument("kdforge: ArrayRef dtype must be 'f', 'd' or 'q'");
             ArrayRef a;
             a.ptr = ptr;
             a.rows = rows;
             a.cols = cols;
             a.s0 = s0;
             a.s1 = s1;
             a.dtype = dtype[0];
             a.device = device;
             return a;
           }),
           py::arg("ptr"), py::arg("rows"), py::arg("cols"), py::arg("s0"), py::arg("s1"), py::arg("dtype"),
           py::arg("device"))
      .def_readonly("rows", &ArrayRef::rows)
      .def_readonly("cols", &ArrayRef::cols);

  py::class_<PyTree>(m, "Tree")
      .def(py::init<ArrayRef const&, std::string const&, std::int64_t>(), py::arg("points"), py::arg("builder"),
           py::arg("leafsize"))
      .def_property_readonly("n", &PyTree::n)
      .def_property_readonly("m", &PyTree::m)
      .def_property_readonly("dtype", &PyTree::dtype)
      .def_property_readonly("builder", &PyTree::builder)
      .def("knn", &PyTree::knn)
      .def("radius_count", &PyTree::radius_count)
      .def("count_pairs", &PyTree::count_pairs)
      .def("radius_lists", &PyTree::radius_lists)
      .def("radius_csr", &PyTree::radius_csr)
      .def("release", &PyTree::release);

  m.def("initialize", [](int num_threads, int device_id) {
    if (g_finalized) throw std::runtime_error("kdforge: the runtime was finalised and cannot start again");
    worker().run([&] {
      if (!is_initialized()) initialize(num_threads, device_id);
    });
  });
  m.def("is_initialized", [] { return !Worker::forked && worker().run([] { return is_initialized(); }); });
  m.def("finalize", &finalize_runtime);
  m.def("is_finalized", [] { return g_finalized; });
  m.def("runtime_info", [] {
    RuntimeInfo const i = worker().run([] { return runtime_info(); });
    py::dict d;
    d["backend"] = i.backend;
    d["gpu"] = i.gpu;
    d["initialized"] = i.concurrency > 0;
    d["concurrency"] = i.concurrency;
    d["device_id"] = i.device_id;
    d["kokkos_version"] = i.kokkos_version;
    d["fast_dimensions"] = fast_dimensions();
    return d;
  });
  m.def("compiled_for_gpu", &compiled_for_gpu);
  m.def("synchronize_stream", [](std::uintptr_t s) {
    py::gil_scoped_release nogil;
    synchronize_stream(s); // plain CUDA runtime: any thread
  });
  pthread_atfork(nullptr, nullptr, [] { Worker::forked = true; });
}
