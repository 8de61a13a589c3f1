// The range-camera simulator (range_camera.hpp has what it models and why).
#include "range_camera.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>

namespace kdforge_icp {

namespace {

constexpr double pi = 3.14159265358979323846;

void rotate(RigidTransform const& x, double const v[3], double out[3]) {
  for (int i = 0; i < 3; ++i) out[i] = x.rotation[i][0] * v[0] + x.rotation[i][1] * v[1] + x.rotation[i][2] * v[2];
}
void rotate_back(RigidTransform const& x, double const v[3], double out[3]) {
  for (int i = 0; i < 3; ++i) out[i] = x.rotation[0][i] * v[0] + x.rotation[1][i] * v[1] + x.rotation[2][i] * v[2];
}

RigidTransform placed(double x, double y, double z, double axis_x, double axis_y, double axis_z, double degrees) {
  double const axis[3] = {axis_x, axis_y, axis_z}, t[3] = {x, y, z};
  return RigidTransform::from_axis_angle(axis, degrees * pi / 180.0, t);
}

Primitive box(double cx, double cy, double cz, double hx, double hy, double hz, double yaw_deg = 0, int object = 0) {
  Primitive p;
  p.kind = Primitive::box;
  p.half[0] = hx, p.half[1] = hy, p.half[2] = hz;
  p.pose = placed(cx, cy, cz, 0, 0, 1, yaw_deg);
  p.object = object;
  return p;
}

Primitive cylinder(RigidTransform const& pose, double r, double z0, double z1, int object) {
  Primitive p;
  p.kind = Primitive::cylinder;
  p.radius = r, p.z0 = z0, p.z1 = z1;
  p.pose = pose;
  p.object = object;
  return p;
}

// Nearest hit t in (tmin, tbest) of the ray o + t d (world) with p; the
// outward normal (world) in n. False when none.
bool intersect(Primitive const& p, double const o[3], double const d[3], double tmin, double& tbest, double n[3]) {
  double ow[3] = {o[0] - p.pose.translation[0], o[1] - p.pose.translation[1], o[2] - p.pose.translation[2]};
  double ol[3], dl[3], nl[3] = {0, 0, 0};
  rotate_back(p.pose, ow, ol);
  rotate_back(p.pose, d, dl);
  double t = tbest;
  bool hit = false;
  if (p.kind == Primitive::box) {
    double t0 = -HUGE_VAL, t1 = HUGE_VAL;
    int axis0 = -1;
    double sign0 = 0;
    for (int a = 0; a < 3; ++a) {
      if (dl[a] == 0) {
        if (ol[a] < -p.half[a] || ol[a] > p.half[a]) return false;
        continue;
      }
      double ta = (-p.half[a] - ol[a]) / dl[a], tb = (p.half[a] - ol[a]) / dl[a];
      double sa = -1;
      if (ta > tb) std::swap(ta, tb), sa = 1;
      if (ta > t0) t0 = ta, axis0 = a, sign0 = sa;
      t1 = std::min(t1, tb);
    }
    if (t0 <= t1 && t0 > tmin && t0 < t && axis0 >= 0) {
      t = t0;
      nl[axis0] = sign0;
      hit = true;
    }
  } else {
    double const a = dl[0] * dl[0] + dl[1] * dl[1], b = 2 * (ol[0] * dl[0] + ol[1] * dl[1]),
                 c = ol[0] * ol[0] + ol[1] * ol[1] - p.radius * p.radius;
    if (a > 0) {
      double const disc = b * b - 4 * a * c;
      if (disc >= 0) {
        double const s = std::sqrt(disc);
        for (double ts : {(-b - s) / (2 * a), (-b + s) / (2 * a)}) {
          double const z = ol[2] + ts * dl[2];
          if (ts > tmin && ts < t && z >= p.z0 && z <= p.z1) {
            t = ts;
            nl[0] = (ol[0] + ts * dl[0]) / p.radius, nl[1] = (ol[1] + ts * dl[1]) / p.radius, nl[2] = 0;
            hit = true;
            break;
          }
        }
      }
    }
    if (dl[2] != 0)
      for (double zc : {p.z0, p.z1}) {
        double const tc = (zc - ol[2]) / dl[2];
        double const x = ol[0] + tc * dl[0], y = ol[1] + tc * dl[1];
        if (tc > tmin && tc < t && x * x + y * y <= p.radius * p.radius) {
          t = tc;
          nl[0] = nl[1] = 0, nl[2] = zc == p.z0 ? -1 : 1;
          hit = true;
        }
      }
  }
  if (!hit) return false;
  tbest = t;
  rotate(p.pose, nl, n);
  return true;
}

// Nearest hit of the ray against a list of primitives placed by `pose`.
bool cast(std::vector<Primitive> const& prims, RigidTransform const& pose, double const o[3], double const d[3],
          double& t, double n[3]) {
  RigidTransform const inv = pose.inverse();
  double ol[3], dl[3], nl[3];
  inv.apply(o, ol);
  rotate(inv, d, dl);
  bool hit = false;
  for (auto const& p : prims)
    if (intersect(p, ol, dl, 1e-9, t, nl)) {
      rotate(pose, nl, n);
      hit = true;
    }
  return hit;
}

} // namespace

Camera Camera::of_resolution(int width, int height) {
  Camera c;
  c.width = width, c.height = height;
  if (width == 512 && height == 424) c.fx = c.fy = 365;
  else if (!(width == 640 && height == 480)) {
    c.fx = c.fy = 525.0 * width / 640.0;
  }
  c.cx = 0.5 * (width - 1), c.cy = 0.5 * (height - 1);
  return c;
}

void Camera::look_at(double const eye[3], double const at[3]) {
  double z[3] = {at[0] - eye[0], at[1] - eye[1], at[2] - eye[2]};
  double l = std::sqrt(z[0] * z[0] + z[1] * z[1] + z[2] * z[2]);
  for (double& v : z) v /= l;
  double const up[3] = {0, 0, 1};
  // x = z cross up (image right), y = z cross x (image down)
  double x[3] = {z[1] * up[2] - z[2] * up[1], z[2] * up[0] - z[0] * up[2], z[0] * up[1] - z[1] * up[0]};
  l = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
  for (double& v : x) v /= l;
  double const y[3] = {z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]};
  for (int i = 0; i < 3; ++i) {
    pose.rotation[i][0] = x[i], pose.rotation[i][1] = y[i], pose.rotation[i][2] = z[i];
    pose.translation[i] = eye[i];
  }
}

WorkScene WorkScene::make(double s) {
  WorkScene w;
  w.fixed = {box(0, 0, -0.05, 4, 4, 0.05),        // floor
             box(0, 2.0, 1.5, 4, 0.05, 1.5),      // back wall
             box(-2.5, 0, 1.5, 0.05, 4, 1.5),     // side wall
             box(0, 0, 0.735, 0.8, 0.5, 0.015),   // table top, at z = 0.75
             box(0.75, 0.45, 0.36, 0.03, 0.03, 0.36), box(-0.75, 0.45, 0.36, 0.03, 0.03, 0.36),
             box(0.75, -0.45, 0.36, 0.03, 0.03, 0.36), box(-0.75, -0.45, 0.36, 0.03, 0.03, 0.36),
             box(-0.5, 0.25, 0.85, 0.15, 0.1, 0.1, 20),   // boxes on the table
             box(0.55, 0.3, 0.81, 0.1, 0.12, 0.06, -10), box(0.5, -0.3, 0.9, 0.06, 0.06, 0.15)};
  // The piston, base at the origin, z up: big end (axis y), rod, crown, pin
  // (axis x) through the crown, a notch on the crown off its axis.
  w.object = {cylinder(placed(0, 0, 0.022 * s, 1, 0, 0, 90), 0.022 * s, -0.012 * s, 0.012 * s, 1),
              box(0, 0, 0.067 * s, 0.010 * s, 0.006 * s, 0.045 * s, 0, 1),
              cylinder(RigidTransform{}, 0.045 * s, 0.09 * s, 0.15 * s, 1),
              cylinder(placed(0, 0, 0.105 * s, 0, 1, 0, 90), 0.011 * s, -0.055 * s, 0.055 * s, 1),
              box(0.02 * s, 0.01 * s, 0.156 * s, 0.012 * s, 0.012 * s, 0.006 * s, 0, 1)};
  return w;
}

RigidTransform WorkScene::object_pose(int f, double step_mm, double step_deg) const {
  double const a = 0.25, b = 0.12;                           // the path: an ellipse on the table
  double const phi = f * (step_mm / 1000.0) / (0.5 * (a + b)); // about step_mm per frame
  double const yaw = f * step_deg, tilt = 3.0 * std::sin(0.1 * f);
  RigidTransform const base = placed(a * std::cos(phi) - a, b * std::sin(phi), 0.75, 0, 0, 1, yaw);
  RigidTransform const lean = placed(0, 0, 0, 1, 0, 0, tilt);
  return base * lean;
}

Scan render(WorkScene const& scene, RigidTransform const& object_pose, Camera const& cam, std::uint64_t seed) {
  std::vector<std::vector<float>> rows(cam.height);
  std::vector<std::vector<std::uint8_t>> masks(cam.height);
  double const cos70 = std::cos(70 * pi / 180), cos80 = std::cos(80 * pi / 180);
#pragma omp parallel for schedule(dynamic, 8)
  for (int v = 0; v < cam.height; ++v) {
    std::mt19937_64 rng(seed * 1000003ull + std::uint64_t(v));
    std::normal_distribution<double> gauss(0.0, 1.0);
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    auto& row = rows[v];
    for (int u = 0; u < cam.width; ++u) {
      double const dc[3] = {(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, 1.0}; // t along it is the depth z
      double d[3];
      rotate(cam.pose, dc, d);
      double const* o = cam.pose.translation;
      double t = HUGE_VAL, n[3];
      bool const on_fixed = cast(scene.fixed, RigidTransform{}, o, d, t, n);
      bool const on_object = cast(scene.object, object_pose, o, d, t, n);
      if (!on_fixed && !on_object) continue;
      if (t < cam.min_range || t > cam.max_range) continue;
      double const dl = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      double const cosi = std::fabs(d[0] * n[0] + d[1] * n[1] + d[2] * n[2]) / dl;
      double const r = uni(rng);
      if (cosi < cos70 && r < (cos70 - cosi) / (cos70 - cos80)) continue; // grazing: no return
      double z = t;
      if (cam.noise) z += (0.0012 + 0.0019 * (t - 0.4) * (t - 0.4)) * gauss(rng);
      for (int i = 0; i < 3; ++i) row.push_back(float(o[i] + z * d[i]));
      masks[v].push_back(on_object ? 1 : 0);
    }
  }
  Scan s;
  for (int v = 0; v < cam.height; ++v) {
    s.xyz.insert(s.xyz.end(), rows[v].begin(), rows[v].end());
    s.object.insert(s.object.end(), masks[v].begin(), masks[v].end());
  }
  return s;
}

Model object_model(WorkScene const& scene, std::int64_t count, std::uint64_t seed) {
  // 42 virtual cameras on a sphere of 1 m about the object's middle
  // (Fibonacci points), 256 x 256, no noise, no dropouts.
  double zmax = 0;
  for (auto const& p : scene.object) zmax = std::max(zmax, p.pose.translation[2] + (p.kind == Primitive::box ? p.half[2] : p.z1));
  double const mid[3] = {0, 0, 0.5 * zmax};
  std::vector<float> xyz, nrm;
  int const views = 42;
  for (int k = 0; k < views; ++k) {
    double const zc = 1 - 2 * (k + 0.5) / views, r = std::sqrt(1 - zc * zc), a = k * pi * (3 - std::sqrt(5.0));
    double const eye[3] = {mid[0] + r * std::cos(a), mid[1] + r * std::sin(a), mid[2] + zc};
    Camera cam = Camera::of_resolution(256, 256);
    cam.fx = cam.fy = 600;
    cam.look_at(eye, mid);
    if (std::fabs(zc) > 0.999) continue; // look_at needs a horizontal image axis
    for (int v = 0; v < cam.height; ++v)
      for (int u = 0; u < cam.width; ++u) {
        double const dc[3] = {(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, 1.0};
        double d[3];
        rotate(cam.pose, dc, d);
        double t = HUGE_VAL, n[3];
        if (!cast(scene.object, RigidTransform{}, cam.pose.translation, d, t, n)) continue;
        for (int i = 0; i < 3; ++i) {
          xyz.push_back(float(cam.pose.translation[i] + t * d[i]));
          nrm.push_back(float(n[i]));
        }
      }
  }
  std::int64_t const all = std::int64_t(xyz.size() / 3);
  std::vector<std::int64_t> pick(all);
  std::iota(pick.begin(), pick.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(pick.begin(), pick.end(), rng);
  pick.resize(std::min(count, all));
  Model m;
  for (std::int64_t i : pick)
    for (int d = 0; d < 3; ++d) {
      m.xyz.push_back(xyz[3 * i + d]);
      m.normals.push_back(nrm[3 * i + d]);
    }
  return m;
}

std::vector<float> visible_part(Model const& model, WorkScene const& scene, RigidTransform const& pose,
                                double const eye[3]) {
  double const cos75 = std::cos(75 * pi / 180);
  std::vector<float> out;
  for (std::int64_t i = 0; i < model.size(); ++i) {
    double const p[3] = {model.xyz[3 * i], model.xyz[3 * i + 1], model.xyz[3 * i + 2]};
    double const nl[3] = {model.normals[3 * i], model.normals[3 * i + 1], model.normals[3 * i + 2]};
    double pw[3], nw[3];
    pose.apply(p, pw);
    rotate(pose, nl, nw);
    double const d[3] = {pw[0] - eye[0], pw[1] - eye[1], pw[2] - eye[2]}; // t = 1 at the point
    double const len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (-(d[0] * nw[0] + d[1] * nw[1] + d[2] * nw[2]) / len < cos75) continue; // back face, or grazing
    double t = 1 - 2e-3 / len, n[3]; // anything in front of the point (by more than 2 mm) hides it
    if (cast(scene.object, pose, eye, d, t, n) || cast(scene.fixed, RigidTransform{}, eye, d, t, n)) continue;
    out.insert(out.end(), {float(p[0]), float(p[1]), float(p[2])});
  }
  return out;
}

void write_ply(std::string const& path, std::vector<float> const& xyz) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << "ply\nformat binary_little_endian 1.0\nelement vertex " << xyz.size() / 3
    << "\nproperty float x\nproperty float y\nproperty float z\nend_header\n";
  f.write(reinterpret_cast<char const*>(xyz.data()), std::streamsize(xyz.size() * sizeof(float)));
  if (!f) throw std::runtime_error("error writing " + path);
}

} // namespace kdforge_icp
