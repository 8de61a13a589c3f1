// kdforge-icp-bench: ICP object tracking on simulated range-camera scans, the
// application of Wehr & Radkowski 2018 (sections I and V). Per frame: the
// scan's tree is rebuilt (split-and-sort, the paper's, by default; or the
// left-balanced builder) and the object model registered to it from the
// previous frame's true pose; reported: time per frame (build + ICP; the
// build and the ICP alone), iterations, the ICP's RMSE, and the error
// against the true pose (rotation, translation, and the RMS distance of the
// model points between the estimated and the true pose). For approximate
// search (Wehr's bounded queue, capacity Q): the recall of the first
// neighbour and the tracking error against Q, the paper's Table III
// question. Open3D's and PCL's ICP on the same frames where this build has
// them; with --host-loop, kdforge's reference loop (one host round trip per
// iteration) beside the device loop. With --track, kdforge::track_frame
// too: the tree built over the scan points the model can reach (and the
// baselines given the same cropped scans).
//
//   kdforge-icp-bench --frames 30 --queues 1,2,4,8,16,32 --open3d --pcl
//   kdforge-icp-bench --frames 30 --builder split_sort,left_balanced --host-loop
//   kdforge-icp-bench --frames 30 --builder left_balanced --queues 2 --track --open3d
//   kdforge-icp-bench --target scan.ply --source model.ply --max-distance 0.05   # your own clouds
#include "baselines.hpp"
#include "bench/pointset.hpp"
#include "range_camera.hpp"

#include <kdforge/kdforge.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

using namespace kdforge_icp;
using Exec = Kokkos::DefaultExecutionSpace;
using P = kdforge::Point<float, 3>;
using Cloud = Kokkos::View<P*, Exec::memory_space>;

namespace {

constexpr double pi = 3.14159265358979323846;

Cloud upload(std::vector<float> const& xyz, char const* label) {
  std::size_t const n = xyz.size() / 3;
  Cloud d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
  Kokkos::View<P const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      reinterpret_cast<P const*>(xyz.data()), n);
  Kokkos::deep_copy(d, h);
  return d;
}

struct PoseError {
  double degrees = 0, mm = 0, rms_mm = 0; // rotation, translation, RMS model point displacement
};

PoseError pose_error(RigidTransform const& est, RigidTransform const& truth, std::vector<float> const& model) {
  PoseError e;
  e.degrees = (est * truth.inverse()).angle() * 180 / pi;
  double s = 0;
  for (int i = 0; i < 3; ++i) s += (est.translation[i] - truth.translation[i]) * (est.translation[i] - truth.translation[i]);
  e.mm = 1000 * std::sqrt(s);
  double sum = 0;
  std::size_t const n = model.size() / 3;
  for (std::size_t i = 0; i < n; ++i) {
    double const p[3] = {model[3 * i], model[3 * i + 1], model[3 * i + 2]};
    double a[3], b[3];
    est.apply(p, a);
    truth.apply(p, b);
    sum += (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
  }
  e.rms_mm = n ? 1000 * std::sqrt(sum / double(n)) : 0;
  return e;
}

struct Frame {
  std::vector<float> scan, model; // model: the part facing the camera at the initial pose (object frame)
  RigidTransform truth, initial;
};

struct Summary {
  std::string method;
  std::vector<double> ms, build_ms;
  std::vector<double> icp_ms;
  double iterations = 0, rmse_mm = 0, recall = -1;
  double worst_deg = 0, worst_mm = 0, mean_rms_mm = 0, worst_rms_mm = 0;
  int frames = 0;
  void add(double seconds, double build_seconds, double it, double rmse, PoseError const& e) {
    ms.push_back(1000 * seconds);
    build_ms.push_back(1000 * build_seconds);
    icp_ms.push_back(build_seconds >= 0 ? 1000 * (seconds - build_seconds) : 1000 * seconds);
    iterations += it;
    rmse_mm += 1000 * rmse;
    worst_deg = std::max(worst_deg, e.degrees);
    worst_mm = std::max(worst_mm, e.mm);
    mean_rms_mm += e.rms_mm;
    worst_rms_mm = std::max(worst_rms_mm, e.rms_mm);
    ++frames;
  }
  void print() const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    double const median = s.empty() ? 0 : s[s.size() / 2];
    std::vector<double> b = build_ms;
    std::sort(b.begin(), b.end());
    char build_text[32] = "-";
    if (!b.empty() && b[b.size() / 2] >= 0) std::snprintf(build_text, sizeof build_text, "%.2f", b[b.size() / 2]);
    std::vector<double> ic = icp_ms;
    std::sort(ic.begin(), ic.end());
    char icp_text[32] = "-";
    if (!ic.empty() && !b.empty() && b[b.size() / 2] >= 0)
      std::snprintf(icp_text, sizeof icp_text, "%.3f", ic[ic.size() / 2]);
    double const mean = s.empty() ? 0 : std::accumulate(s.begin(), s.end(), 0.0) / double(s.size());
    char recall_text[32] = "-";
    if (recall >= 0) std::snprintf(recall_text, sizeof recall_text, "%.4f", recall);
    char it_text[32] = "-";
    if (iterations >= 0) std::snprintf(it_text, sizeof it_text, "%.1f", iterations / frames);
    std::printf("%-46s %9.2f %9.2f %9s %9s %8.1f %6s %9.4f %8.3f %8.3f %9.3f %8s\n", method.c_str(), median, mean,
                build_text, icp_text, median > 0 ? 1000 / median : 0.0, it_text, rmse_mm / frames, worst_deg, worst_mm,
                mean_rms_mm / frames, recall_text);
  }
};

void print_header() {
  std::printf("%-46s %9s %9s %9s %9s %8s %6s %9s %8s %8s %9s %8s\n", "method", "median ms", "mean ms", "build ms", "icp ms",
              "frames/s", "iters", "rmse mm", "max deg", "max mm", "gt rms mm", "recall");
}

// First-neighbour recall of knn_approximate with queue capacity q against
// closest_point, for the model at its true pose (distance ties count).
template <class Tree>
double recall(Exec const& exec, Cloud const& scan, Tree const& tree,
              std::vector<float> const& model, RigidTransform const& truth, int q) {
  std::vector<float> moved(model.size());
  for (std::size_t i = 0; i < model.size() / 3; ++i) {
    double const p[3] = {model[3 * i], model[3 * i + 1], model[3 * i + 2]};
    double w[3];
    truth.apply(p, w);
    for (int d = 0; d < 3; ++d) moved[3 * i + d] = float(w[d]);
  }
  auto const qv = upload(moved, "queries");
  auto const exact = kdforge::closest_point(exec, tree, qv);
  kdforge::ApproximateOptions ao;
  ao.queue_capacity = q;
  auto const apx = kdforge::knn_approximate(exec, tree, qv, 1, ao);
  auto const he = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, exact.sq_distances);
  auto const ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, apx.sq_distances);
  std::size_t hit = 0;
  for (std::size_t i = 0; i < he.extent(0); ++i) hit += ha(i, 0) == he(i);
  (void)scan;
  return he.extent(0) ? double(hit) / double(he.extent(0)) : 1.0;
}

// The scan points inside the box of the model at `initial` grown by
// `grow`: track_frame's crop (kernels/registration/crop.hpp) on the host,
// for the baselines.
std::vector<float> cropped_scan(std::vector<float> const& scan, std::vector<float> const& model,
                                RigidTransform const& initial, double grow) {
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (std::size_t i = 0; i < model.size() / 3; ++i) {
    double const p[3] = {model[3 * i], model[3 * i + 1], model[3 * i + 2]};
    double w[3];
    initial.apply(p, w);
    for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], w[d]), hi[d] = std::max(hi[d], w[d]);
  }
  std::vector<float> out;
  for (std::size_t i = 0; i < scan.size() / 3; ++i) {
    bool in = true;
    for (int d = 0; d < 3; ++d) in = in && scan[3 * i + d] >= lo[d] - grow && scan[3 * i + d] <= hi[d] + grow;
    if (in) out.insert(out.end(), scan.begin() + std::ptrdiff_t(3 * i), scan.begin() + std::ptrdiff_t(3 * i + 3));
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"kdforge-icp-bench: ICP object tracking on simulated range-camera scans (Wehr & Radkowski 2018)"};
  int frames = 30, iterations = 30, model_points = 20000;
  std::string resolution = "640x480", method = "point", write_dir, target_file, source_file;
  std::string node_boxes = "auto", walk = "auto";
  std::vector<std::string> builders{"split_sort"};
  double max_distance = 0.02, relative_rmse = 0, scale = 2.0, step_mm = 4.0, step_deg = 1.0;
  std::vector<int> queues;
  bool open3d = false, pcl = false, no_noise = false, host_loop = false, track = false;
  double expect_mm = 0;
  std::uint64_t seed = 1;
  app.add_option("--frames", frames, "frames of the sequence")->check(CLI::PositiveNumber);
  app.add_option("--resolution", resolution, "640x480 or 512x424 (other sizes: fx scaled from 525 at 640)");
  app.add_option("--model-points", model_points, "points of the whole object model (about half face the camera)");
  app.add_option("--scale", scale, "object size: 1 is a 0.16 m tall piston");
  app.add_option("--step-mm", step_mm, "object motion per frame (mm)");
  app.add_option("--turn-deg", step_deg, "object turn per frame (degrees)");
  app.add_option("--iterations", iterations, "ICP iterations at most");
  app.add_option("--relative-rmse", relative_rmse,
                 "stop when the RMSE changes by less than this fraction (0: always --iterations)");
  app.add_option("--max-distance", max_distance, "correspondence rejection distance (m)");
  app.add_option("--method", method, "point (point to point) or plane (point to plane; kdforge only)");
  app.add_option("--node-boxes", node_boxes, "kdforge's trees: boxes of the inner nodes' sub-trees")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--walk", walk, "kdforge's exact search: the walk")
      ->check(CLI::IsMember({"auto", "stack", "stack_free", "trail"}));
  app.add_option("--builder", builders,
                 "the scan's tree, one run each: split_sort (Wehr & Radkowski, the paper's) and/or left_balanced "
                 "(the default builder of build_left_balanced), e.g. split_sort,left_balanced")
      ->delimiter(',')
      ->check(CLI::IsMember({"split_sort", "left_balanced"}));
  app.add_flag("--host-loop", host_loop,
               "also run kdforge's reference loop (closest point per iteration, the solve on the host: one round trip "
               "per iteration) beside the device loop");
  app.add_flag("--track", track,
               "also kdforge::track_frame: the tree over the scan points the model can reach (max motion = "
               "--max-distance), and the baselines on the same cropped scans");
  app.add_option("--queues", queues, "approximate search: queue capacities Q to run, e.g. 1,2,4,8,16,32")->delimiter(',');
  app.add_flag("--open3d", open3d, "run Open3D's registration_icp on the same frames (where built with it)");
  app.add_flag("--pcl", pcl, "run PCL's IterativeClosestPoint on the same frames (where built with it)");
  app.add_flag("--no-noise", no_noise, "noiseless depth");
  app.add_option("--seed", seed, "noise and dropouts");
  app.add_option("--expect-mm", expect_mm,
                 "exit 1 (TRACKING LOST) when a kdforge run's RMS model displacement exceeds this in a frame (0: off)");
  app.add_option("--write-ply", write_dir, "write model.ply and scan_NNNN.ply (world frame) into this folder");
  app.add_option("--target", target_file, "register your own clouds: the target (scan) point file (.ply, .xyz, ...)");
  app.add_option("--source", source_file, "... and the source (model) point file, from the identity");
  CLI11_PARSE(app, argc, argv);

  Kokkos::ScopeGuard guard(argc, argv);
  Exec exec;
  kdforge::IcpOptions opt;
  opt.method = method == "plane" ? kdforge::IcpMethod::point_to_plane : kdforge::IcpMethod::point_to_point;
  opt.exact.traversal = walk == "stack"        ? kdforge::Traversal::stack
                        : walk == "stack_free" ? kdforge::Traversal::stack_free
                        : walk == "trail"      ? kdforge::Traversal::trail
                                               : kdforge::Traversal::automatic;
  kdforge::BuildOptions lb;
  kdforge::SplitSortOptions ss;
  lb.node_boxes = ss.node_boxes = node_boxes == "always" ? kdforge::NodeBoxPolicy::always
                                  : node_boxes == "never" ? kdforge::NodeBoxPolicy::never
                                                          : kdforge::NodeBoxPolicy::automatic;
  opt.max_iterations = iterations;
  opt.max_correspondence_distance = max_distance;
  opt.relative_rmse = relative_rmse;
  opt.rotation_epsilon = opt.translation_epsilon = relative_rmse > 0 ? 1e-6 : 0.0;

  try {
    if (!target_file.empty() || !source_file.empty()) { // the user's own clouds
      auto to_floats = [](kdforge_bench::PointSet const& s) { return std::vector<float>(s.coords.begin(), s.coords.end()); };
      auto const t = to_floats(kdforge_bench::read_points(target_file, 3));
      auto const s = to_floats(kdforge_bench::read_points(source_file, 3));
      auto const td = upload(t, "target"), sd = upload(s, "source");
      auto const t0 = std::chrono::steady_clock::now();
      auto const r = builders.front() == "left_balanced"
                         ? kdforge::icp(exec, kdforge::build_left_balanced(exec, td, lb), td, sd, {}, opt)
                         : kdforge::icp(exec, kdforge::build_split_sort(exec, td, ss), td, sd, {}, opt);
      Kokkos::fence();
      double const sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("target %zu points, source %zu points: %.2f ms, %d iterations, %s, rmse %.6g, fitness %.4f%s\n",
                  t.size() / 3, s.size() / 3, 1000 * sec, r.iterations,
                  r.status == kdforge::IcpStatus::converged ? "converged" : "max iterations", r.rmse, r.fitness,
                  r.degenerate ? ", degenerate (rotation about an axis unconstrained)" : "");
      for (int i = 0; i < 3; ++i)
        std::printf("  [% .6f % .6f % .6f % .6f]\n", r.transform.rotation[i][0], r.transform.rotation[i][1],
                    r.transform.rotation[i][2], r.transform.translation[i]);
      return 0;
    }

    int w = 640, h = 480;
    if (std::sscanf(resolution.c_str(), "%dx%d", &w, &h) != 2 || w < 8 || h < 8) {
      std::fprintf(stderr, "kdforge-icp-bench: --resolution %s: give WIDTHxHEIGHT, e.g. 640x480\n", resolution.c_str());
      return 2;
    }
    WorkScene const scene = WorkScene::make(scale);
    Camera cam = Camera::of_resolution(w, h);
    double const eye[3] = {0.3, -1.4, 1.5}, at[3] = {-0.1, 0.1, 0.8};
    cam.look_at(eye, at);
    cam.noise = !no_noise;
    Model const model = object_model(scene, model_points, seed);

    // The frames, rendered once for every method.
    std::vector<Frame> seq(frames);
    double mean_points = 0, mean_object = 0, mean_model = 0;
    for (int f = 0; f < frames; ++f) {
      Frame& fr = seq[f];
      fr.truth = scene.object_pose(f, step_mm, step_deg);
      if (f == 0) { // the first frame starts 3 degrees (about the object's base) and 1 cm off
        double const axis[3] = {1, 1, 0}, t[3] = {0.01, 0, 0};
        fr.initial = fr.truth * RigidTransform::from_axis_angle(axis, 3 * pi / 180, t);
      } else {
        fr.initial = seq[f - 1].truth;
      }
      Scan const s = render(scene, fr.truth, cam, seed + std::uint64_t(f));
      fr.scan = s.xyz;
      fr.model = visible_part(model, scene, fr.initial, eye);
      mean_points += double(s.size()) / frames;
      mean_object += double(std::count(s.object.begin(), s.object.end(), 1)) / frames;
      mean_model += double(fr.model.size() / 3) / frames;
      if (!write_dir.empty()) {
        char name[64];
        std::snprintf(name, sizeof name, "/scan_%04d.ply", f);
        write_ply(write_dir + name, fr.scan);
      }
    }
    if (!write_dir.empty()) write_ply(write_dir + "/model.ply", model.xyz);

    std::printf("kdforge-icp-bench: %s, %d frames %dx%d, %.0f points per scan (%.0f on the object), model %lld points "
                "(%.0f facing the camera), %s, max distance %.3g m, %s\n",
                Exec::name(), frames, w, h, mean_points, mean_object, (long long)model.size(), mean_model,
                opt.method == kdforge::IcpMethod::point_to_plane ? "point to plane" : "point to point", max_distance,
                relative_rmse > 0 ? ("to convergence (relative RMSE " + std::to_string(relative_rmse) + "), at most " +
                                     std::to_string(iterations) + " iterations")
                                        .c_str()
                                  : (std::to_string(iterations) + " iterations per frame").c_str());
    std::printf("times: tree build + ICP per frame (medians: frame, build, ICP); errors against the true pose; gt rms: RMS "
                "distance of the model points between the estimated and the true pose\n");
    print_header();

    // kdforge, exact and approximate, per builder; the device loop (and
    // the host reference loop with --host-loop)
    bool lost = false;
    std::vector<int> qs = {0};
    qs.insert(qs.end(), queues.begin(), queues.end());
    for (std::string const& builder : builders) {
      for (int loop = 0; loop < (host_loop ? 2 : 1) + (track ? 1 : 0); ++loop) {
        bool const tracking = track && loop == (host_loop ? 2 : 1);
        for (int q : qs) {
          kdforge::IcpOptions o = opt;
          Summary sum;
          std::string const tree_name = builder == "left_balanced" ? "left-balanced" : "split-and-sort";
          std::string const loop_name = tracking ? ", track_frame" : loop ? ", host loop" : "";
          if (q > 0) {
            o.search = kdforge::IcpSearch::approximate;
            o.approximate.queue_capacity = q;
            sum.method = "kdforge Q=" + std::to_string(q) + ", " + tree_name + loop_name;
            sum.recall = 0;
          } else {
            sum.method = "kdforge exact, " + tree_name + loop_name;
          }
          kdforge::IcpWorkspace<Exec::memory_space> workspace; // kept across the frames, as a tracker would
          kdforge::TrackingWorkspace<Exec::memory_space> tracking_workspace;
          if (tracking) sum.recall = -1; // recall is of the whole scan's tree: the rows above
          kdforge::TrackingOptions to;
          to.icp = o;
          to.tree = builder == "left_balanced" ? kdforge::TrackingTree::left_balanced : kdforge::TrackingTree::split_sort;
          to.left_balanced = lb;
          to.split_sort = ss;
          double kept = 0;
          int repeated = 0, whole = 0;
          for (int f = -1; f < frames; ++f) { // frame -1: frame 0 once, untimed (first-touch, allocations)
            Frame const& fr = seq[std::max(f, 0)];
            auto const scan = upload(fr.scan, "scan");
            auto const src = upload(fr.model, "model");
            Kokkos::fence();
            auto const t0 = std::chrono::steady_clock::now();
            auto track = [&](auto const& tree) {
              Kokkos::fence();
              double const built = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              auto const r = loop ? kdforge::detail::icp_reference(exec, tree, scan, src, fr.initial, o)
                                  : kdforge::icp(exec, tree, scan, src, fr.initial, o, workspace);
              Kokkos::fence();
              double const sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              if (f < 0) return;
              sum.add(sec, built, r.iterations, r.rmse, pose_error(r.transform, fr.truth, fr.model));
              if (q > 0) sum.recall += recall(exec, scan, tree, fr.model, fr.truth, q) / frames;
            };
            if (tracking) { // the build inside the call: the frame's time only
              auto const r = kdforge::track_frame(exec, scan, src, fr.initial, to, tracking_workspace);
              Kokkos::fence();
              double const sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              if (f < 0) continue;
              sum.add(sec, -0.001, r.iterations, r.rmse, pose_error(r.transform, fr.truth, fr.model));
              kept += double(r.tree_points) / frames;
              repeated += r.repeated;
              whole += !r.cropped;
              continue;
            }
            if (builder == "left_balanced") track(kdforge::build_left_balanced(exec, scan, lb));
            else track(kdforge::build_split_sort(exec, scan, ss));
          }
          sum.print();
          if (tracking)
            std::printf("  (track_frame: %.0f scan points in the tree on average; %d frames repeated over the whole "
                        "scan, %d registered over it)\n",
                        kept, repeated, whole);
          if (expect_mm > 0 && sum.worst_rms_mm > expect_mm) {
            std::printf("TRACKING LOST: %s moved the model points by %.3f mm RMS in a frame (--expect-mm %g)\n",
                        sum.method.c_str(), sum.worst_rms_mm, expect_mm);
            lost = true;
          }
        }
      }
    }

    auto baselines = make_baselines(open3d, pcl);
    if ((open3d || pcl) && baselines.size() < std::size_t(open3d + pcl))
      std::printf("(a requested baseline is not in this build: install libopen3d-dev / libpcl-dev and re-run cmake)\n");
    if (!baselines.empty() && opt.method == kdforge::IcpMethod::point_to_plane)
      std::printf("(baselines run point to point only)\n");
    Criteria crit;
    crit.max_iterations = iterations;
    crit.max_distance = max_distance;
    crit.relative_rmse = relative_rmse;
    for (int crop = 0; crop < (track ? 2 : 1); ++crop) for (auto& b : baselines) {
      if (opt.method == kdforge::IcpMethod::point_to_plane) break;
      Summary sum;
      sum.method = b->name() + (crop ? ", cropped scan" : "");
      sum.iterations = -1;
      for (int f = -1; f < frames; ++f) {
        Frame const& fr = seq[std::max(f, 0)];
        // track_frame's crop: max motion = the cutoff, and the cutoff
        b->prepare(crop ? cropped_scan(fr.scan, fr.model, fr.initial, 2 * max_distance) : fr.scan, fr.model);
        auto const r = b->register_frame(fr.initial, crit);
        if (f < 0) continue;
        sum.add(r.seconds, -0.001, 0, r.rmse, pose_error(r.transform, fr.truth, fr.model));
      }
      sum.iterations = -1;
      sum.print();
    }
    if (lost) return 1;
  } catch (kdforge::Error const& e) {
    std::fprintf(stderr, "kdforge-icp-bench: %s\n", e.what());
    return 1;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "kdforge-icp-bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
