// Iterative Closest Point (core/include/kdforge/icp.hpp): known rigid
// transforms (rotations up to 30 degrees, translations up to 10% of the
// extent) recovered from noiseless and noisy clouds, point to point and point
// to plane, exact and approximate search; the same transform on every
// backend; a planar source reported degenerate (and a solid one not); too
// few correspondences and empty clouds refused with a clear error;
// track_frame's crop giving the whole scan's registration, and its
// fallbacks to the whole scan. Fixed seeds throughout.
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace kdforge;

namespace {

using P = Point<float, 3>;
constexpr double pi = 3.14159265358979323846;

// A piston-like object, about 0.7 across: the side and top of a cylinder
// (radius 0.25, height 0.5) and the surface of a box beside it, so no
// rotation maps it onto itself. Gaussian noise of `sigma` per coordinate.
std::vector<P> piston(std::size_t n, std::uint64_t seed, double sigma) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<P> pts(n);
  for (auto& p : pts) {
    double x, y, z;
    double const pick = u(rng);
    if (pick < 0.5) { // cylinder side
      double const a = 2 * pi * u(rng);
      x = 0.25 * std::cos(a), y = 0.25 * std::sin(a), z = 0.5 * u(rng);
    } else if (pick < 0.65) { // top cap
      double const a = 2 * pi * u(rng), r = 0.25 * std::sqrt(u(rng));
      x = r * std::cos(a), y = r * std::sin(a), z = 0.5;
    } else { // box [0.15, 0.45] x [-0.08, 0.08] x [0.1, 0.6]: one of its faces, by area
      double const lo[3] = {0.15, -0.08, 0.1}, hi[3] = {0.45, 0.08, 0.6};
      double const area[3] = {(hi[1] - lo[1]) * (hi[2] - lo[2]), (hi[0] - lo[0]) * (hi[2] - lo[2]),
                              (hi[0] - lo[0]) * (hi[1] - lo[1])};
      double const t = u(rng) * (area[0] + area[1] + area[2]);
      int const axis = t < area[0] ? 0 : t < area[0] + area[1] ? 1 : 2;
      double c[3];
      for (int d = 0; d < 3; ++d) c[d] = lo[d] + (hi[d] - lo[d]) * u(rng);
      c[axis] = u(rng) < 0.5 ? lo[axis] : hi[axis];
      x = c[0], y = c[1], z = c[2];
    }
    p[0] = float(x + sigma * g(rng));
    p[1] = float(y + sigma * g(rng));
    p[2] = float(z + sigma * g(rng));
  }
  return pts;
}

std::vector<P> moved_by(RigidTransform const& x, std::vector<P> const& pts) {
  std::vector<P> out(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    double const a[3] = {pts[i][0], pts[i][1], pts[i][2]};
    double b[3];
    x.apply(a, b);
    for (int d = 0; d < 3; ++d) out[i][d] = float(b[d]);
  }
  return out;
}

// A rotation of `degrees` about a random axis and a translation of `fraction`
// of the extent (0.7) in a random direction.
RigidTransform random_motion(double degrees, double fraction, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  double axis[3] = {g(rng), g(rng), g(rng)}, dir[3] = {g(rng), g(rng), g(rng)};
  double const l = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
  double t[3];
  for (int d = 0; d < 3; ++d) t[d] = dir[d] / l * fraction * 0.7;
  return RigidTransform::from_axis_angle(axis, degrees * pi / 180.0, t);
}

struct Errors {
  double degrees, translation;
};
// How far `got` is from `want`: the angle of got * want^-1 and the distance
// of their translations.
Errors errors(RigidTransform const& got, RigidTransform const& want) {
  RigidTransform const d = got * want.inverse();
  double t = 0;
  for (int i = 0; i < 3; ++i) t += (got.translation[i] - want.translation[i]) * (got.translation[i] - want.translation[i]);
  return {d.angle() * 180.0 / pi, std::sqrt(t)};
}

// Registers source onto target on Exec with a split-and-sort tree.
template <class Exec>
IcpResult run_icp(std::vector<P> const& target, std::vector<P> const& source, IcpOptions const& o,
                  RigidTransform const& initial = {}) {
  Exec exec;
  auto const t = test::to_device<Exec>(target, "target");
  auto const s = test::to_device<Exec>(source, "source");
  auto const tree = build_split_sort(exec, t);
  return icp(exec, tree, t, s, initial, o);
}

IcpOptions options_for(IcpMethod m) {
  IcpOptions o;
  o.method = m;
  o.max_iterations = 100;
  o.relative_rmse = 1e-7;
  o.rotation_epsilon = 1e-7;
  o.translation_epsilon = 1e-7;
  return o;
}

} // namespace

TEST_CASE_TEMPLATE("ICP recovers known rigid transforms from noiseless clouds", Exec, KDFORGE_TEST_SPACES) {
  auto const target = piston(6000, 11, 0.0);
  for (IcpMethod m : {IcpMethod::point_to_point, IcpMethod::point_to_plane}) {
    for (int c = 0; c < 4; ++c) {
      double const degrees = 7.5 * (c + 1), fraction = 0.025 * (c + 1); // up to 30 degrees, 10%
      RigidTransform const truth = random_motion(degrees, fraction, 100 + c);
      // the source: every third target point, moved away by truth^-1
      std::vector<P> sub;
      for (std::size_t i = 0; i < target.size(); i += 3) sub.push_back(target[i]);
      auto const source = moved_by(truth.inverse(), sub);
      CAPTURE(c);
      CAPTURE(int(m));
      auto const r = run_icp<Exec>(target, source, options_for(m));
      auto const e = errors(r.transform, truth);
      CHECK(r.status == IcpStatus::converged);
      CHECK(e.degrees < 0.01);
      CHECK(e.translation < 1e-4);
      CHECK(r.rmse < 1e-4);
      CHECK(r.fitness == 1.0);
      CHECK_FALSE(r.degenerate);
      CHECK(r.rmse_history.front() > 100 * r.rmse); // it did move
    }
  }
}

TEST_CASE_TEMPLATE("ICP recovers known rigid transforms from noisy clouds", Exec, KDFORGE_TEST_SPACES) {
  double const sigma = 0.002; // 0.3% of the extent
  auto const target = piston(12000, 21, sigma);
  auto const model = piston(3000, 22, sigma); // other samples of the same surface
  for (IcpMethod m : {IcpMethod::point_to_point, IcpMethod::point_to_plane}) {
    for (int c = 0; c < 3; ++c) {
      double const degrees = 10.0 * (c + 1), fraction = 0.1 * (c + 1) / 3.0;
      RigidTransform const truth = random_motion(degrees, fraction, 200 + c);
      auto const source = moved_by(truth.inverse(), model);
      CAPTURE(c);
      CAPTURE(int(m));
      IcpOptions o = options_for(m);
      o.max_correspondence_distance = 0.2;
      auto const r = run_icp<Exec>(target, source, o);
      auto const e = errors(r.transform, truth);
      CHECK(e.degrees < 0.5);
      CHECK(e.translation < 0.004);
      CHECK(r.rmse < 3 * sigma * std::sqrt(3.0)); // about the noise of both clouds
      CHECK_FALSE(r.degenerate);
    }
  }
}

TEST_CASE_TEMPLATE("ICP gives the same transform on every backend", Exec, KDFORGE_TEST_SPACES) {
#if defined(KOKKOS_ENABLE_SERIAL)
  using Ref = Kokkos::Serial;
#else
  using Ref = Kokkos::DefaultHostExecutionSpace;
#endif
  // Sums are reduced in another order per backend; the transforms agree to
  // within 1e-6 (rotation entries) and 1e-6 of the extent (translation).
  auto const target = piston(8000, 31, 0.002);
  auto const source = moved_by(random_motion(25, 0.08, 32).inverse(), piston(2000, 33, 0.002));
  for (IcpMethod m : {IcpMethod::point_to_point, IcpMethod::point_to_plane}) {
    IcpOptions o = options_for(m);
    o.max_iterations = 40;
    auto const a = run_icp<Exec>(target, source, o);
    auto const b = run_icp<Ref>(target, source, o);
    CAPTURE(int(m));
    CHECK(a.iterations == b.iterations);
    CHECK(a.correspondences == b.correspondences);
    CHECK(std::fabs(a.rmse - b.rmse) < 1e-6);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) CHECK(std::fabs(a.transform.rotation[i][j] - b.transform.rotation[i][j]) < 1e-6);
      CHECK(std::fabs(a.transform.translation[i] - b.transform.translation[i]) < 0.7e-6);
    }
  }
}

TEST_CASE_TEMPLATE("ICP with approximate search: Wehr's bounded queue", Exec, KDFORGE_TEST_SPACES) {
  auto const target = piston(10000, 41, 0.002);
  RigidTransform const truth = random_motion(20, 0.05, 42);
  auto const source = moved_by(truth.inverse(), piston(2500, 43, 0.002));
  IcpOptions o = options_for(IcpMethod::point_to_point);
  o.max_iterations = 60;
  auto const exact = run_icp<Exec>(target, source, o);
  o.search = IcpSearch::approximate;
  o.approximate.queue_capacity = 1 << 20; // never full: the exact answers
  auto const full = run_icp<Exec>(target, source, o);
  CHECK(full.iterations == exact.iterations);
  CHECK(full.correspondences == exact.correspondences);
  CHECK(std::fabs(full.rmse - exact.rmse) < 1e-9);
  // the same transform to rounding (the two searches' sums may differ in
  // their last bits; an angle from acos cannot resolve that: 1e-6 degrees)
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) CHECK(std::fabs(full.transform.rotation[i][j] - exact.transform.rotation[i][j]) < 1e-12);
    CHECK(std::fabs(full.transform.translation[i] - exact.transform.translation[i]) < 1e-12);
  }
  for (int q : {4, 16}) { // small queues still track
    o.approximate.queue_capacity = q;
    auto const r = run_icp<Exec>(target, source, o);
    auto const e = errors(r.transform, truth);
    CAPTURE(q);
    CHECK(e.degrees < 0.5);
    CHECK(e.translation < 0.004);
    CHECK(r.rmse >= exact.rmse * 0.999); // an approximate neighbour is never nearer than the true one
  }
}

TEST_CASE_TEMPLATE("ICP reports a planar source as degenerate", Exec, KDFORGE_TEST_SPACES) {
  // A square patch of a plane: with closest-point correspondences the
  // rotation about its normal (and sliding in it) is not fixed by the data.
  std::mt19937_64 rng(51);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<P> plane(4000);
  for (auto& p : plane) p = P{{float(u(rng)), float(u(rng)), 0.2f}};
  double const z[3] = {0, 0, 1}, t[3] = {0.02, -0.01, 0.0};
  auto const source = moved_by(RigidTransform::from_axis_angle(z, 5 * pi / 180.0, t), std::vector<P>(plane.begin(), plane.begin() + 1000));
  auto const r = run_icp<Exec>(plane, source, options_for(IcpMethod::point_to_point));
  CHECK(r.degenerate);
  CHECK(std::fabs(std::fabs(r.unconstrained_axis[2]) - 1.0) < 1e-3); // about the normal
  CHECK(r.singular_values[2] < 1e-3 * r.singular_values[0]);
  auto const pl = run_icp<Exec>(plane, source, options_for(IcpMethod::point_to_plane));
  CHECK(pl.degenerate); // a plane fixes only one translation and two rotations
  // a solid object is not degenerate, nor is the plane's own check fooled by a thin box
  auto const solid = piston(3000, 52, 0.0);
  auto const rs = run_icp<Exec>(solid, moved_by(random_motion(5, 0.01, 53), solid), options_for(IcpMethod::point_to_point));
  CHECK_FALSE(rs.degenerate);
  CHECK(rs.unconstrained_axis[0] == 0.0);
  CHECK(rs.unconstrained_axis[1] == 0.0);
  CHECK(rs.unconstrained_axis[2] == 0.0);
}

TEST_CASE_TEMPLATE("ICP refuses too few correspondences and empty clouds", Exec, KDFORGE_TEST_SPACES) {
  auto const target = piston(2000, 61, 0.0);
  IcpOptions o;
  // two source points only
  std::vector<P> two(target.begin(), target.begin() + 2);
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, two, o), doctest::Contains("only 2 correspondences"), Error);
  // a source far from the target: nothing within the distance
  double const t[3] = {5, 0, 0}, axis[3] = {0, 0, 1};
  auto const far = moved_by(RigidTransform::from_axis_angle(axis, 0.0, t), piston(500, 62, 0.0));
  o.max_correspondence_distance = 0.5;
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, far, o), doctest::Contains("only 0 correspondences"), Error);
  o.search = IcpSearch::approximate;
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, far, o), doctest::Contains("at least 3"), Error);
  // without the limit the same clouds register (nearest points always exist)
  o.max_correspondence_distance = std::numeric_limits<double>::infinity();
  o.search = IcpSearch::exact;
  CHECK_NOTHROW(run_icp<Exec>(target, far, o));
  // empty frames
  std::vector<P> const none;
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, none, o), doctest::Contains("source cloud is empty"), Error);
  CHECK_THROWS_WITH_AS(run_icp<Exec>(none, target, o), doctest::Contains("target cloud is empty"), Error);
  // options
  o.max_correspondence_distance = 0;
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, target, o), doctest::Contains("max_correspondence_distance"), Error);
  o = IcpOptions{};
  o.method = IcpMethod::point_to_plane;
  o.normal_neighbors = 2;
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, target, o), doctest::Contains("normal_neighbors"), Error);
}

TEST_CASE_TEMPLATE("ICP normals: PCA of the nearest neighbours", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  // points on the plane x + y + z = 1: every normal is (1, 1, 1) / sqrt(3), up to sign
  std::mt19937_64 rng(71);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<P> pts(3000);
  for (auto& p : pts) {
    double const a = u(rng), b = u(rng);
    p = P{{float(a), float(b), float(1 - a - b)}};
  }
  auto const d = test::to_device<Exec>(pts);
  auto const tree = build_split_sort(exec, d);
  auto const n = test::to_host(estimate_normals(exec, tree, d, 8));
  double worst = 1;
  for (auto const& v : n) worst = std::fmin(worst, std::fabs(double(v[0]) + v[1] + v[2]) / std::sqrt(3.0));
  CHECK(worst > 0.9999);
  // a line has no normal
  std::vector<P> line(100);
  for (std::size_t i = 0; i < line.size(); ++i) line[i] = P{{float(i) * 0.01f, 0.f, 0.f}};
  auto const dl = test::to_device<Exec>(line);
  auto const nl = test::to_host(estimate_normals(exec, build_split_sort(exec, dl), dl, 8));
  int nonzero = 0;
  for (auto const& v : nl) nonzero += v[0] != 0 || v[1] != 0 || v[2] != 0;
  CHECK(nonzero == 0);
}

// ---- the device loop against the host reference loop ----

namespace {

// The device loop (icp) and the host reference loop (detail::icp_reference)
// on the same tree and clouds.
template <class Exec>
std::pair<IcpResult, IcpResult> both_loops(std::vector<P> const& target, std::vector<P> const& source,
                                           IcpOptions const& o, RigidTransform const& initial = {}) {
  Exec exec;
  auto const t = test::to_device<Exec>(target, "target");
  auto const s = test::to_device<Exec>(source, "source");
  auto const tree = build_split_sort(exec, t);
  return {icp(exec, tree, t, s, initial, o), detail::icp_reference(exec, tree, t, s, initial, o)};
}

// |a - b| <= tol * max(|b|, floor): relative, with an absolute floor for
// values near 0.
bool near(double a, double b, double tol, double floor = 1.0) {
  return std::fabs(a - b) <= tol * std::fmax(std::fabs(b), floor);
}

// The device loop's result is the reference's: the same iterations, status,
// correspondences and flags, transforms and measures within 1e-9 relative.
void check_same(IcpResult const& d, IcpResult const& h) {
  CHECK(d.iterations == h.iterations);
  CHECK(d.status == h.status);
  CHECK(d.correspondences == h.correspondences);
  CHECK(d.degenerate == h.degenerate);
  CHECK(near(d.rmse, h.rmse, 1e-9, 0.0));
  CHECK(near(d.fitness, h.fitness, 1e-12, 0.0));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) CHECK(near(d.transform.rotation[i][j], h.transform.rotation[i][j], 1e-9));
    CHECK(near(d.transform.translation[i], h.transform.translation[i], 1e-9));
    CHECK(near(d.unconstrained_axis[i], h.unconstrained_axis[i], 1e-9));
    // a singular value near 0 (degenerate) against the largest one
    CHECK(near(d.singular_values[i], h.singular_values[i], 1e-9, h.singular_values[0]));
  }
  REQUIRE(d.rmse_history.size() == h.rmse_history.size());
  for (std::size_t i = 0; i < d.rmse_history.size(); ++i) {
    CAPTURE(i);
    CAPTURE(d.rmse_history[i]);
    CAPTURE(h.rmse_history[i]);
    CHECK(near(d.rmse_history[i], h.rmse_history[i], 1e-9, 0.0));
  }
}

// Horn's solve and the 6x6 solve run in a one-thread kernel on Exec.
template <class Exec>
std::pair<kernels::registration::Step, kernels::registration::Step>
device_solves(kernels::registration::Sums<kernels::registration::point_sums> const& sp,
              kernels::registration::Sums<kernels::registration::plane_sums> const& sn, double const c[3],
              double scale, double ratio) {
  namespace reg = kernels::registration;
  using MS = typename Exec::memory_space;
  Kokkos::View<reg::Step*, MS> out("steps", 2);
  double const c0 = c[0], c1 = c[1], c2 = c[2];
  Kokkos::parallel_for(
      "solves", Kokkos::RangePolicy<Exec>(0, 1), KOKKOS_LAMBDA(int) {
        double const cc[3] = {c0, c1, c2};
        out(0) = reg::solve_point_to_point(sp, cc);
        out(1) = reg::solve_point_to_plane(sn, cc, scale, ratio);
      });
  auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  return {h(0), h(1)};
}

// The same step: count, error and spectra, and the increments move the
// cloud's points alike. A rotation about the axis of a line (or of two
// points) is not fixed by them: only well-posed clouds compare matrices.
void check_same_step(kernels::registration::Step const& d, kernels::registration::Step const& h,
                     std::vector<P> const& cloud, bool well_posed) {
  CHECK(d.count == h.count);
  CHECK(near(d.sq_error, h.sq_error, 1e-12, 0.0));
  for (int i = 0; i < 3; ++i) {
    if (well_posed) {
      for (int j = 0; j < 3; ++j) CHECK(near(d.increment.rotation[i][j], h.increment.rotation[i][j], 1e-12));
      CHECK(near(d.increment.translation[i], h.increment.translation[i], 1e-12));
    }
    // compared as squares against the system's scale: point to point's are
    // square roots of eigenvalues (a root near 0 magnifies the eigenvalue's
    // last-bit differences, a GPU's fused multiply-adds, to sqrt(u)), and
    // point to plane's smallest eigenvalues of a rank-deficient system are
    // rounding noise of its largest
    double const ds = d.singular_values[i] * d.singular_values[i], hs = h.singular_values[i] * h.singular_values[i];
    double const scale = h.singular_values[0] * h.singular_values[0] + h.largest_eigenvalue * h.largest_eigenvalue;
    CHECK(std::fabs(ds - hs) <= 1e-12 * scale + 1e-300);
  }
  CHECK(near(d.largest_eigenvalue, h.largest_eigenvalue, 1e-12, 0.0));
  double worst = 0;
  for (auto const& p : cloud) {
    double const a[3] = {p[0], p[1], p[2]};
    double x[3], y[3];
    d.increment.apply(a, x);
    h.increment.apply(a, y);
    for (int u = 0; u < 3; ++u) worst = std::fmax(worst, std::fabs(x[u] - y[u]));
  }
  CHECK(worst < 1e-12);
}

} // namespace

TEST_CASE_TEMPLATE("ICP's device loop gives the host reference loop's results", Exec, KDFORGE_TEST_SPACES) {
  double const sigma = 0.002;
  auto const target = piston(12000, 81, sigma);
  auto const model = piston(3000, 82, sigma);
  RigidTransform const truth = random_motion(20, 0.06, 83);
  auto const source = moved_by(truth.inverse(), model);
  for (IcpMethod m : {IcpMethod::point_to_point, IcpMethod::point_to_plane}) {
    for (int q : {0, 4, 64}) { // exact; Wehr's queue in registers (Q <= 32) and in a scratch View
      IcpOptions o = options_for(m);
      o.max_iterations = 40;
      o.max_correspondence_distance = 0.2;
      if (q > 0) {
        o.search = IcpSearch::approximate;
        o.approximate.queue_capacity = q;
      }
      CAPTURE(int(m));
      CAPTURE(q);
      auto const [d, h] = both_loops<Exec>(target, source, o);
      check_same(d, h);
      CHECK(errors(d.transform, truth).degrees < 0.5);
    }
  }
  // a fixed iteration count (no criterion met), and none at all
  IcpOptions o = options_for(IcpMethod::point_to_point);
  o.relative_rmse = o.rotation_epsilon = o.translation_epsilon = 0;
  o.max_iterations = 7;
  auto const [d7, h7] = both_loops<Exec>(target, source, o);
  check_same(d7, h7);
  CHECK(d7.iterations == 7);
  CHECK(d7.status == IcpStatus::max_iterations);
  o.max_iterations = 0;
  auto const [d0, h0] = both_loops<Exec>(target, source, o);
  check_same(d0, h0);
  CHECK(d0.iterations == 0);
  CHECK(d0.rmse_history.empty());
  CHECK(d0.rmse > 0);
  // the processing order as given
  o.max_iterations = 30;
  o.exact.order = QueryOrder::as_given;
  auto const [da, ha] = both_loops<Exec>(target, source, o);
  check_same(da, ha);
}

TEST_CASE_TEMPLATE("ICP's device loop on degenerate clouds and too few correspondences", Exec, KDFORGE_TEST_SPACES) {
  // a planar patch: both loops report the same unconstrained rotation
  std::mt19937_64 rng(91);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<P> plane(4000);
  for (auto& p : plane) p = P{{float(u(rng)), float(u(rng)), 0.2f}};
  double const z[3] = {0, 0, 1}, t[3] = {0.02, -0.01, 0.0};
  auto const source =
      moved_by(RigidTransform::from_axis_angle(z, 5 * pi / 180.0, t), std::vector<P>(plane.begin(), plane.begin() + 1000));
  for (IcpMethod m : {IcpMethod::point_to_point, IcpMethod::point_to_plane}) {
    CAPTURE(int(m));
    auto const [d, h] = both_loops<Exec>(plane, source, options_for(m));
    CHECK(d.degenerate);
    check_same(d, h);
  }
  // a line: rank 1
  std::vector<P> line(500);
  for (std::size_t i = 0; i < line.size(); ++i) line[i] = P{{float(i) * 0.002f, 0.1f, 0.1f}};
  double const shift[3] = {0.003, 0, 0}, x[3] = {1, 0, 0};
  auto const [dl, hl] = both_loops<Exec>(line, moved_by(RigidTransform::from_axis_angle(x, 0.0, shift), line),
                                         options_for(IcpMethod::point_to_point));
  CHECK(dl.degenerate);
  check_same(dl, hl);
  // fewer than 3 correspondences: the same error from both, at the same iteration
  auto const target = piston(2000, 92, 0.0);
  IcpOptions o;
  std::vector<P> const two(target.begin(), target.begin() + 2);
  for (IcpSearch s : {IcpSearch::exact, IcpSearch::approximate}) {
    o.search = s;
    std::string dm, hm;
    Exec exec;
    auto const td = test::to_device<Exec>(target);
    auto const tree = build_split_sort(exec, td);
    auto const sd = test::to_device<Exec>(two);
    try {
      icp(exec, tree, td, sd, {}, o);
    } catch (Error const& e) {
      dm = e.what();
    }
    try {
      detail::icp_reference(exec, tree, td, sd, {}, o);
    } catch (Error const& e) {
      hm = e.what();
    }
    CHECK(dm.find("only 2 correspondences") != std::string::npos);
    CHECK(dm == hm);
  }
  // a source overlapping the target by two points only
  std::vector<P> strip;
  for (int i = 0; i < 40; ++i) strip.push_back(P{{float(i) * 0.01f, 0.f, 0.f}});
  std::vector<P> far_source;
  for (int i = 0; i < 40; ++i) far_source.push_back(P{{float(i) * 0.01f + 0.395f, 0.f, 0.f}});
  o = IcpOptions{};
  o.max_correspondence_distance = 0.02;
  o.max_iterations = 50;
  std::string dm, hm;
  try {
    both_loops<Exec>(strip, far_source, o);
  } catch (Error const& e) {
    dm = e.what();
  }
  {
    Exec exec;
    auto const td = test::to_device<Exec>(strip);
    auto const tree = build_split_sort(exec, td);
    try {
      detail::icp_reference(exec, tree, td, test::to_device<Exec>(far_source), {}, o);
    } catch (Error const& e) {
      hm = e.what();
    }
  }
  CHECK(dm.find("only 2 correspondences") != std::string::npos);
  CHECK(dm == hm);
}

TEST_CASE_TEMPLATE("ICP's solves on the device give the host's", Exec, KDFORGE_TEST_SPACES) {
  namespace reg = kernels::registration;
  // the sums of real correspondences: a noisy piston, a plane, a line, and
  // fewer than 3 points (count 2: a degenerate Horn matrix)
  std::vector<std::vector<P>> clouds = {piston(500, 101, 0.002), {}, {}, {}};
  std::mt19937_64 rng(102);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (int i = 0; i < 300; ++i) clouds[1].push_back(P{{float(u(rng)), float(u(rng)), 0.3f}});
  for (int i = 0; i < 300; ++i) clouds[2].push_back(P{{float(u(rng)), 0.1f, 0.2f}});
  clouds[3] = {clouds[0][0], clouds[0][1]};
  RigidTransform const x = random_motion(8, 0.02, 103);
  double const c[3] = {0.05, -0.02, 0.2};
  for (std::size_t k = 0; k < clouds.size(); ++k) {
    auto const& a = clouds[k];
    auto const b = moved_by(x, a);
    reg::Sums<reg::point_sums> sp{};
    reg::Sums<reg::plane_sums> sn{};
    P const n{{0.6f, 0.f, 0.8f}};
    for (std::size_t i = 0; i < a.size(); ++i) {
      double const d2 = double(sq_distance(a[i], b[i]));
      reg::add_point_pair<float>(sp, a[i], b[i], d2, c);
      reg::add_plane_pair<float>(sn, a[i], b[i], n, d2, c, 1.0 / 0.3);
    }
    CAPTURE(k);
    auto const [dp, dn] = device_solves<Exec>(sp, sn, c, 0.3, 1e-3);
    check_same_step(dp, reg::solve_point_to_point(sp, c), a, k < 2);
    check_same_step(dn, reg::solve_point_to_plane(sn, c, 0.3, 1e-3), a, true); // pseudo-inverse: unique
    if (k == 0) { // the solve recovers the motion
      CHECK(errors(reg::solve_point_to_point(sp, c).increment, x).degrees < 1e-3);
    }
  }
}

TEST_CASE("Horn's quaternion by QCP equals Jacobi's, and leaves a multiple largest eigenvalue to Jacobi") {
  namespace reg = kernels::registration;
  std::mt19937_64 rng(171);
  std::normal_distribution<double> g(0.0, 1.0);
  // N = V diag(l) V^T with a random orthogonal V (Gram-Schmidt)
  auto with_eigenvalues = [&](double const (&l)[4], double (&N)[4][4], double (&top)[4]) {
    double v[4][4];
    for (int k = 0; k < 4; ++k) {
      for (int u = 0; u < 4; ++u) v[k][u] = g(rng);
      for (int j = 0; j < k; ++j) {
        double d = 0;
        for (int u = 0; u < 4; ++u) d += v[k][u] * v[j][u];
        for (int u = 0; u < 4; ++u) v[k][u] -= d * v[j][u];
      }
      double n = 0;
      for (int u = 0; u < 4; ++u) n += v[k][u] * v[k][u];
      for (int u = 0; u < 4; ++u) v[k][u] /= std::sqrt(n);
    }
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        N[i][j] = 0;
        for (int k = 0; k < 4; ++k) N[i][j] += l[k] * v[k][i] * v[k][j];
      }
    for (int u = 0; u < 4; ++u) top[u] = v[0][u];
  };
  auto agrees = [](double const (&a)[4], double const (&b)[4]) { // componentwise, up to the sign
    double plus = 0, minus = 0;
    for (int u = 0; u < 4; ++u) {
      plus = std::fmax(plus, std::fabs(a[u] - b[u]));
      minus = std::fmax(minus, std::fabs(a[u] + b[u]));
    }
    return std::fmin(plus, minus) < 1e-9;
  };
  int used = 0;
  for (int trial = 0; trial < 200; ++trial) {
    // Horn's matrix of a random cross-covariance, as solve_point_to_point builds it
    double h[3][3];
    for (auto& row : h)
      for (double& x : row) x = g(rng) * std::pow(10.0, double(trial % 7) - 3);
    double N[4][4] = {{h[0][0] + h[1][1] + h[2][2], h[1][2] - h[2][1], h[2][0] - h[0][2], h[0][1] - h[1][0]},
                      {h[1][2] - h[2][1], h[0][0] - h[1][1] - h[2][2], h[0][1] + h[1][0], h[2][0] + h[0][2]},
                      {h[2][0] - h[0][2], h[0][1] + h[1][0], -h[0][0] + h[1][1] - h[2][2], h[1][2] + h[2][1]},
                      {h[0][1] - h[1][0], h[2][0] + h[0][2], h[1][2] + h[2][1], -h[0][0] - h[1][1] + h[2][2]}};
    double a[4][4], w[4], v[4][4], q[4];
    std::copy(&N[0][0], &N[0][0] + 16, &a[0][0]);
    reg::symmetric_eigen<4>(a, w, v);
    double const jacobi[4] = {v[0][0], v[1][0], v[2][0], v[3][0]};
    CAPTURE(trial);
    if (reg::horn_quaternion(N, q)) {
      ++used;
      CHECK(agrees(q, jacobi));
    } else { // declined only where the largest eigenvalue is close to the next
      CHECK(w[0] - w[1] < 1e-2 * std::fabs(w[0]));
    }
  }
  CHECK(used >= 190);
  // eigenvalues given: separated, double, nearly double, and none at all
  double N[4][4], top[4], q[4] = {9, 9, 9, 9};
  with_eigenvalues({3.0, 1.0, -1.5, -2.5}, N, top);
  REQUIRE(reg::horn_quaternion(N, q));
  CHECK(agrees(q, top));
  for (double gap : {0.0, 1e-9, 1e-5, 1e-4, 1e-3}) { // declined: Jacobi answers
    CAPTURE(gap);
    double const l[4] = {2.0 + gap, 2.0, -1.0, -3.0 - gap};
    with_eigenvalues(l, N, top);
    q[0] = 9;
    CHECK_FALSE(reg::horn_quaternion(N, q));
    CHECK(q[0] == 9); // untouched
  }
  for (double gap : {1e-2, 1e-1, 1.0}) { // accepted, and accurate
    CAPTURE(gap);
    double const l[4] = {2.0 + gap, 2.0, -1.0, -3.0 - gap};
    with_eigenvalues(l, N, top);
    REQUIRE(reg::horn_quaternion(N, q));
    CHECK(agrees(q, top));
  }
  double const zero[4][4] = {};
  CHECK_FALSE(reg::horn_quaternion(zero, q));
}

// reduce_with_final (kernels/common/reduce_final.hpp), which runs the ICP
// loop's reductions on GPUs: sums of i and of 1 / (i + 1) (whose rounding
// depends on the order), the count and the largest i, written by the final
// step, which also counts how often it ran.
struct ReduceFinalValue {
  double sum, harmonic, count;
  std::int64_t largest;
};

template <class MS>
struct ReduceFinalProbe {
  using value_type = ReduceFinalValue;
  Kokkos::View<ReduceFinalValue, MS> out;
  Kokkos::View<int, MS> finals;
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.sum = v.harmonic = v.count = 0;
    v.largest = -1;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, value_type const& b) const {
    a.sum += b.sum;
    a.harmonic += b.harmonic;
    a.count += b.count;
    a.largest = b.largest > a.largest ? b.largest : a.largest;
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    a.sum += b.sum;
    a.harmonic += b.harmonic;
    a.count += b.count;
    a.largest = b.largest > a.largest ? b.largest : a.largest;
  }
#endif
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, value_type& v) const {
    v.sum += double(i);
    v.harmonic += 1.0 / double(i + 1);
    v.count += 1;
    v.largest = i > v.largest ? i : v.largest;
  }
  KOKKOS_INLINE_FUNCTION void final(value_type& v) const {
    out() = v;
    finals() += 1;
  }
};

TEST_CASE_TEMPLATE("reduce_with_final: every item once, one final step per launch, the same sum every time", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  Kokkos::View<char*, MS> scratch; // kept across the launches, as the ICP loop keeps it
  for (std::int64_t n : {0, 1, 31, 32, 33, 255, 256, 257, 8191, 100003}) {
    CAPTURE(n);
    ReduceFinalProbe<MS> f{Kokkos::View<ReduceFinalValue, MS>("out"), Kokkos::View<int, MS>("finals")};
    double harmonic = 0;
    for (int launch = 0; launch < 3; ++launch) {
      kernels::reduce_with_final(exec, "test::reduce_with_final", n, f, scratch);
      auto const v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f.out);
      CHECK(v().sum == double(n) * double(n - 1) / 2); // exact: every item once
      CHECK(v().count == double(n));
      CHECK(v().largest == n - 1);
      double exact = 0;
      for (std::int64_t i = n - 1; i >= 0; --i) exact += 1.0 / double(i + 1);
      CHECK(v().harmonic == doctest::Approx(exact).epsilon(1e-13));
      if (launch == 0) harmonic = v().harmonic;
      CHECK(v().harmonic == harmonic); // the same order of the joins every launch
    }
    auto const finals = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f.finals);
    CHECK(finals() == 3);
  }
}

TEST_CASE_TEMPLATE("ICP with a workspace kept across calls", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  IcpWorkspace<MS> ws;
  auto const target = piston(8000, 111, 0.002);
  auto const td = test::to_device<Exec>(target);
  auto const tree = build_split_sort(exec, td);
  // calls of growing and shrinking sizes, methods and searches share one workspace
  int const sizes[] = {3000, 500, 3000, 40};
  for (int c = 0; c < 4; ++c) {
    auto const source = moved_by(random_motion(10, 0.02, 112 + c).inverse(), piston(sizes[c], 113 + c, 0.002));
    auto const sd = test::to_device<Exec>(source);
    IcpOptions o = options_for(c % 2 ? IcpMethod::point_to_plane : IcpMethod::point_to_point);
    o.max_iterations = 20 + 10 * c;
    o.max_correspondence_distance = 0.2;
    if (c == 2) {
      o.search = IcpSearch::approximate;
      o.approximate.queue_capacity = 40;
    }
    CAPTURE(c);
    auto const a = icp(exec, tree, td, sd, {}, o, ws);
    auto const b = icp(exec, tree, td, sd, {}, o); // its own scratch
    check_same(a, b);
    CHECK(ws.bytes() > 0);
  }
  ws.release();
  CHECK(ws.bytes() == 0);
}

TEST_CASE_TEMPLATE("ICP refuses a NaN or out-of-range source point and a NaN initial pose", Exec, KDFORGE_TEST_SPACES) {
  auto const target = piston(2000, 121, 0.0);
  auto source = piston(300, 122, 0.0);
  source[37][1] = std::numeric_limits<float>::quiet_NaN();
  source[120][0] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, source, IcpOptions{}), doctest::Contains("source point 37 has a NaN"),
                       Error);
  // a coordinate whose squares float cannot hold (base/types.hpp, max_sq_coordinate)
  auto far = piston(300, 124, 0.0);
  far[5][0] = 1e30f;
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, far, IcpOptions{}), doctest::Contains("source point 5 has the coordinate"),
                       Error);
  RigidTransform bad;
  bad.translation[2] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS(run_icp<Exec>(target, piston(300, 123, 0.0), IcpOptions{}, bad),
                       doctest::Contains("initial transform"), Error);
}

namespace {

// A scan of a scene: the piston (12,000 points), a floor 2 cm below it
// across 6 x 6 (40,000) and a box of clutter 2 away (8,000), shuffled so
// that the kept points are scattered through the scan's order.
std::vector<P> scene_scan(std::uint64_t seed) {
  std::vector<P> scan = piston(12000, seed, 0.001);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f), w(0.0f, 0.3f);
  for (int i = 0; i < 40000; ++i) scan.push_back(P{{u(rng), u(rng), -0.02f}});
  for (int i = 0; i < 8000; ++i) scan.push_back(P{{2.0f + w(rng), -2.0f + w(rng), w(rng)}});
  std::shuffle(scan.begin(), scan.end(), rng);
  return scan;
}

template <class Exec>
IcpResult whole_scan_icp(std::vector<P> const& scan, std::vector<P> const& model, RigidTransform const& initial,
                         TrackingOptions const& o) {
  Exec exec;
  auto const s = test::to_device<Exec>(scan, "scan");
  auto const m = test::to_device<Exec>(model, "model");
  if (o.tree == TrackingTree::split_sort) return icp(exec, build_split_sort(exec, s, o.split_sort), s, m, initial, o.icp);
  return icp(exec, build_left_balanced(exec, s, o.left_balanced), s, m, initial, o.icp);
}

// Point to point with rejection at 0.1, to a tight convergence.
TrackingOptions tracking_options(int iterations) {
  TrackingOptions o;
  o.icp = options_for(IcpMethod::point_to_point);
  o.icp.max_iterations = iterations;
  o.icp.max_correspondence_distance = 0.1;
  return o;
}

template <class Exec>
TrackingResult tracked(std::vector<P> const& scan, std::vector<P> const& model, RigidTransform const& initial,
                       TrackingOptions const& o) {
  Exec exec;
  return track_frame(exec, test::to_device<Exec>(scan, "scan"), test::to_device<Exec>(model, "model"), initial, o);
}

} // namespace

TEST_CASE_TEMPLATE("track_frame: the cropped scan gives the whole scan's registration", Exec, KDFORGE_TEST_SPACES) {
  auto const scan = scene_scan(131);
  RigidTransform const truth = random_motion(5, 0.02, 132);
  auto const model = moved_by(truth.inverse(), piston(3000, 133, 0.001));
  for (TrackingTree tree : {TrackingTree::left_balanced, TrackingTree::split_sort}) {
    for (int q : {0, 2}) {
      TrackingOptions o = tracking_options(40);
      o.tree = tree;
      if (q > 0) {
        o.icp.search = IcpSearch::approximate;
        o.icp.approximate.queue_capacity = q;
      }
      CAPTURE(int(tree));
      CAPTURE(q);
      auto const t = tracked<Exec>(scan, model, {}, o);
      CHECK(t.cropped);
      CHECK_FALSE(t.repeated);
      // the piston, and the floor under it: far fewer than the scan's 60,000
      CHECK(t.tree_points >= 12000);
      CHECK(t.tree_points < 15000);
      CHECK(errors(t.transform, truth).degrees < 0.5);
      if (q == 0) { // the same correspondences as a tree over the whole scan
        auto const ref = whole_scan_icp<Exec>(scan, model, {}, o);
        check_same(t, ref);
        o.crop = false;
        auto const w = tracked<Exec>(scan, model, {}, o);
        CHECK_FALSE(w.cropped);
        CHECK(w.tree_points == std::int64_t(scan.size()));
        check_same(t, w);
      }
    }
  }
}

// A scan on the plane z = 0 (flat bounds: on GPUs the walks keep node
// boxes there, and track_frame adds them to its cropped tree after the
// build) and a patch of it lifted and tilted: the same registration as
// with a tree over the whole scan.
TEST_CASE_TEMPLATE("track_frame on a flat scan gives the whole scan's registration", Exec, KDFORGE_TEST_SPACES) {
  std::mt19937_64 rng(151);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<P> scan(40000);
  for (auto& p : scan) p = P{{u(rng), u(rng), 0.0f}};
  std::vector<P> patch;
  for (std::size_t i = 0; i < scan.size() && patch.size() < 2000; ++i)
    if (std::fabs(scan[i][0]) < 0.3f && std::fabs(scan[i][1]) < 0.2f) patch.push_back(scan[i]);
  double const x[3] = {1, 0, 0};
  double const t[3] = {0.01, -0.005, 0.02};
  auto const model = moved_by(RigidTransform::from_axis_angle(x, 3 * pi / 180.0, t), patch);
  for (TrackingTree tree : {TrackingTree::left_balanced, TrackingTree::split_sort}) {
    CAPTURE(int(tree));
    TrackingOptions o = tracking_options(20);
    o.tree = tree;
    auto const r = tracked<Exec>(scan, model, {}, o);
    CHECK(r.cropped);
    CHECK(r.tree_points < std::int64_t(scan.size()) / 2);
    check_same(r, whole_scan_icp<Exec>(scan, model, {}, o));
  }
}

TEST_CASE_TEMPLATE("track_frame: a point moving beyond max_motion repeats the frame over the whole scan", Exec,
                   KDFORGE_TEST_SPACES) {
  auto const scan = scene_scan(141);
  RigidTransform const truth = random_motion(5, 0.03, 142);
  auto const model = moved_by(truth.inverse(), piston(3000, 143, 0.001));
  TrackingOptions o = tracking_options(40);
  o.max_motion = 0.002; // the model moves about 2 cm
  auto const t = tracked<Exec>(scan, model, {}, o);
  CHECK(t.repeated);
  CHECK_FALSE(t.cropped);
  CHECK(t.tree_points == std::int64_t(scan.size()));
  check_same(t, whole_scan_icp<Exec>(scan, model, {}, o));
  // enough room: no repetition, the same result
  o.max_motion = 0.05;
  auto const c = tracked<Exec>(scan, model, {}, o);
  CHECK(c.cropped);
  CHECK_FALSE(c.repeated);
  check_same(c, t);
}

TEST_CASE_TEMPLATE("track_frame: the whole scan where a crop cannot promise the same answer", Exec,
                   KDFORGE_TEST_SPACES) {
  auto scan = scene_scan(151);
  RigidTransform const truth = random_motion(4, 0.02, 152);
  auto const model = moved_by(truth.inverse(), piston(2000, 153, 0.001));
  TrackingOptions o = tracking_options(30);
  SUBCASE("point to plane: normals estimated over the whole scan") {
    o.icp.method = IcpMethod::point_to_plane;
    auto const t = tracked<Exec>(scan, model, {}, o);
    CHECK_FALSE(t.cropped);
    check_same(t, whole_scan_icp<Exec>(scan, model, {}, o));
  }
  SUBCASE("no cutoff") {
    o.icp.max_correspondence_distance = std::numeric_limits<double>::infinity();
    auto const t = tracked<Exec>(scan, model, {}, o);
    CHECK_FALSE(t.cropped);
    check_same(t, whole_scan_icp<Exec>(scan, model, {}, o));
  }
  SUBCASE("a NaN scan point: refused as the builder refuses it, or dropped as the builder drops it") {
    scan[777][2] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH_AS(tracked<Exec>(scan, model, {}, o), doctest::Contains("NaN"), Error);
    o.left_balanced.non_finite = NonFinitePolicy::drop;
    auto const t = tracked<Exec>(scan, model, {}, o);
    CHECK(t.cropped);
    o.crop = false;
    check_same(t, tracked<Exec>(scan, model, {}, o));
  }
  SUBCASE("bad input: icp's errors") {
    auto bad = model;
    bad[37][1] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH_AS(tracked<Exec>(scan, bad, {}, o), doctest::Contains("source point 37 has a NaN"), Error);
    CHECK_THROWS_AS(tracked<Exec>(std::vector<P>{}, model, {}, o), Error);
    CHECK_THROWS_WITH_AS(tracked<Exec>(scan, std::vector<P>{}, {}, o), doctest::Contains("source cloud is empty"),
                         Error);
    o.max_motion = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH_AS(tracked<Exec>(scan, model, {}, o), doctest::Contains("max_motion"), Error);
    // a model far from the scan: nothing kept, and icp's own error
    o.max_motion = -1;
    RigidTransform away;
    away.translation[0] = 50;
    CHECK_THROWS_WITH_AS(tracked<Exec>(scan, model, away, o), doctest::Contains("correspondence"), Error);
  }
}

TEST_CASE_TEMPLATE("track_frame with a workspace kept across frames", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  TrackingWorkspace<MS> ws;
  auto const piece = piston(2000, 161, 0.001);
  TrackingOptions o;
  o.icp.max_correspondence_distance = 0.1;
  o.icp.max_iterations = 20;
  RigidTransform pose;
  for (int f = 0; f < 3; ++f) { // scans of growing and shrinking sizes; the model follows a moving object
    RigidTransform const truth = random_motion(2.0 * (f + 1), 0.005 * (f + 1), 162);
    auto scan = moved_by(truth, scene_scan(163 + std::uint64_t(f)));
    scan.resize(scan.size() - std::size_t(f == 1 ? 20000 : 0));
    auto const s = test::to_device<Exec>(scan, "scan");
    auto const m = test::to_device<Exec>(piece, "model");
    auto const kept_made = detail::allocations_made();
    auto const a = track_frame(exec, s, m, pose, o, ws);
    auto const fresh_made = detail::allocations_made();
    auto const b = track_frame(exec, s, m, pose, o);
    CAPTURE(f);
    CHECK(a.cropped);
    // after the first frame the tree and its builder's scratch come from
    // the workspace's arena, and so does most of what a frame allocates
    if (f > 0) CHECK(2 * (fresh_made - kept_made) < detail::allocations_made() - fresh_made);
    check_same(a, b);
    CHECK(ws.bytes() > 0);
    pose = a.transform;
  }
  ws.release();
  CHECK(ws.bytes() == 0);
}

TEST_CASE_TEMPLATE("track_frame keeps every scan point within the cutoff of the region", Exec, KDFORGE_TEST_SPACES) {
  // Four model points at the corners of the region (max_motion 0: the
  // model's box), each with its only scan point just within the cutoff
  // outside that box; one scan point inside the box, far from all four;
  // clutter far away. A crop short of the cutoff loses the four pairs.
  double const r = 0.1;
  std::vector<P> const model = {P{{0, 0, 0}}, P{{1, 0, 0}}, P{{0, 1, 0}}, P{{0, 0, 1}}};
  float const in = float(r * (1 - 1e-6));
  std::vector<P> scan = {P{{-in, 0, 0}}, P{{1 + in, 0, 0}}, P{{0, 1 + in, 0}}, P{{0, 0, 1 + in}},
                         P{{0.5f, 0.5f, 0.5f}}};
  for (int i = 0; i < 1000; ++i) scan.push_back(P{{5.0f + 0.001f * float(i), 5.0f, 5.0f}});
  TrackingOptions o;
  o.icp.max_correspondence_distance = r;
  o.icp.max_iterations = 0; // the correspondences at the initial pose
  o.max_motion = 0;
  auto const t = tracked<Exec>(scan, model, {}, o);
  CHECK(t.cropped);
  CHECK(t.tree_points == 5);
  CHECK(t.correspondences == 4);
  check_same(t, whole_scan_icp<Exec>(scan, model, {}, o));
}
