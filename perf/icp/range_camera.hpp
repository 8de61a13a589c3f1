#pragma once
// A range-camera simulator over a procedural work scene, for ICP tracking
// (Wehr & Radkowski 2018, sections I and V: a rigid object tracked in
// range-camera scans of up to 280,000 points per frame).
//
// The scene: a floor, a back wall, a table with four legs, three boxes on
// it and a piston-like object (crown, pin, rod, big end: cylinders and
// boxes, no symmetry that maps it onto itself) that moves on the table along
// a known path. The camera: a pinhole (640 x 480 by default, or 512 x 424)
// casting one ray per pixel against the primitives analytically; depth noise
// grows with the square of the distance (the Kinect model of Nguyen, Izadi &
// Lovell 2012: sigma(z) = 0.0012 + 0.0019 (z - 0.4)^2 m along the optical
// axis); returns go missing at grazing incidence (dropped with a
// probability rising from 0 at 70 degrees to 1 at 80 degrees) and outside
// the range [0.4 m, 4.5 m]. Everything in metres, world frame (z up).
// The reference model of the object: its surface as virtual scans from 42
// directions see it (outer surfaces only), with normals, subsampled.
#include <cstdint>
#include <string>
#include <vector>

#include <kdforge/base/registration.hpp>

namespace kdforge_icp {

using kdforge::RigidTransform;

/// A box (half extents, about its centre) or a capped cylinder (local z
/// axis, radius, z from z0 to z1), placed by `pose` (local -> world).
struct Primitive {
  enum Kind { box, cylinder } kind = box;
  double half[3] = {0, 0, 0}; ///< box
  double radius = 0, z0 = 0, z1 = 0; ///< cylinder
  RigidTransform pose;
  int object = 0; ///< 0: the static scene, 1: the tracked object
};

struct Camera {
  int width = 640, height = 480;
  double fx = 525, fy = 525, cx = 319.5, cy = 239.5;
  RigidTransform pose; ///< camera -> world; the camera looks along its +z, image y down
  double min_range = 0.4, max_range = 4.5;
  bool noise = true;
  /// 640 x 480 (Kinect v1 style) or 512 x 424 (Kinect v2 style, fx = fy = 365).
  static Camera of_resolution(int width, int height);
  /// Places the camera at `eye` looking at `at`, world z up.
  void look_at(double const eye[3], double const at[3]);
};

struct Scan {
  std::vector<float> xyz;          ///< N x 3, world frame
  std::vector<std::uint8_t> object; ///< N: 1 where the point lies on the tracked object
  std::int64_t size() const { return std::int64_t(xyz.size() / 3); }
};

struct Model {
  std::vector<float> xyz;     ///< N x 3, object frame
  std::vector<float> normals; ///< N x 3, outward
  std::int64_t size() const { return std::int64_t(xyz.size() / 3); }
};

/// The work scene: static primitives and the object's (in its own frame).
struct WorkScene {
  std::vector<Primitive> fixed;
  std::vector<Primitive> object; ///< object frame; placed by a pose per frame
  /// `scale` multiplies the object's size (1: a 0.15 m tall piston).
  static WorkScene make(double scale = 2.0);
  /// The object's pose at frame f: it slides on the table along a closed
  /// path and turns about the vertical, about `step_mm` millimetres and
  /// `step_deg` degrees per frame.
  RigidTransform object_pose(int frame, double step_mm = 4.0, double step_deg = 1.0) const;
};

/// One frame: every pixel's ray against the scene with the object at
/// `object_pose`; `seed` fixes the noise and the dropouts.
Scan render(WorkScene const& scene, RigidTransform const& object_pose, Camera const& cam, std::uint64_t seed);

/// The object's outer surface in its own frame, `count` points (and
/// normals) from noiseless virtual scans around it.
Model object_model(WorkScene const& scene, std::int64_t count, std::uint64_t seed);

/// The model points a camera at `eye` sees when the object is at `pose`:
/// facing it at less than 75 degrees of incidence and hidden by nothing of
/// the object or the scene (the part a scan can show).
std::vector<float> visible_part(Model const& model, WorkScene const& scene, RigidTransform const& pose,
                                double const eye[3]);

/// Binary little-endian PLY with vertex x, y, z as float.
void write_ply(std::string const& path, std::vector<float> const& xyz);

} // namespace kdforge_icp
