#pragma once
// Procedural scenes at the sizes of Zhou et al. 2008's test scenes (their
// Fig. 4: 11K, 27K, 71K, 111K, 178K and 252K triangles, with the paper's
// light and bounce counts), larger ones for scaling, and any mesh file.
// Every scene moves: each vertex has a motion vector, and frame time t
// places it at base + motion * sin(t + phase(base)), so a frame sequence
// deforms the mesh and the tree is rebuilt for each frame.
#include "mesh.hpp"

#include <string>
#include <vector>

namespace kdforge_rays {

struct Material {
  float color[3];    // diffuse reflectance
  float specular;    // Blinn-Phong highlight strength
  float shininess;   // its exponent
  float reflect;     // share of light a mirror bounce brings (0: none)
  float transmit;    // share a refracted ray brings (0: opaque); takes precedence over reflect
  float ior;         // index of refraction of a transmissive material
};

struct Light {
  float position[3];
  float color[3];
};

struct Camera {
  float eye[3];
  float target[3];
  float up[3];
  float fov_degrees; // vertical field of view
};

struct Scene {
  std::string name;
  Mesh mesh;
  std::vector<float> motion;  // 3 per vertex
  std::vector<float> normals; // 3 per vertex: the area-weighted mean of its triangles' normals at time 0
  std::vector<Material> materials;
  std::vector<Light> lights;
  Camera camera;
  int bounces = 0;           // reflection/refraction bounces the paper rendered it with
  std::string paper_scene;   // the scene of Zhou et al.'s Fig. 4 or 7 it stands in for ("" for none)
  // caustics (section 5.3): photons shot from the first light at the mirror
  // and glass objects each frame, stored where they land on diffuse
  // surfaces, gathered by eye rays with the k nearest (0 photons: none)
  int caustic_photons = 0;
  int gather_k = 50;
  float caustic_scale = 1.f; // exposure of the photons' radiance estimate
};

/// The procedural scenes, smallest first: toys, museum, robots, kitchen,
/// forest, dragon (the paper's six sizes), blob-1m, blob-5m, and the
/// caustic scenes of its Fig. 7: ring, champagne.
std::vector<std::string> scene_names();

/// A procedural scene by name, or a mesh file (.obj, .ply) in a plain
/// setting (a grey material, one light, a camera looking at its box, no
/// motion). Throws kdforge::Error for an unknown name.
Scene make_scene(std::string const& name_or_file);

} // namespace kdforge_rays
