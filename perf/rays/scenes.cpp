// Procedural scenes. The paper's scenes (Toys, Museum, Robots, Kitchen, Fairy
// Forest, Dragon) are public models we do not ship; these stand in for them
// with the same triangle counts (within a few per cent), lights and
// bounces, and with the same kinds of content: a few smooth objects on a
// floor, a room with mirrors and glass, many small articulated figures, a
// cluttered room, thin foliage over terrain, one dense scanned-like object.
#include "scenes.hpp"

#include <kdforge/base/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kdforge_rays {
namespace {

using V3 = std::array<float, 3>;
constexpr float pi = 3.14159265358979f;

V3 add(V3 a, V3 b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
V3 mul(V3 a, float s) { return {a[0] * s, a[1] * s, a[2] * s}; }

struct Random {
  std::uint64_t s;
  float next() { // uniform in [0, 1)
    s += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return float((z ^ (z >> 31)) >> 40) / float(1ull << 24);
  }
  float range(float a, float b) { return a + (b - a) * next(); }
};

// Appends shapes to a scene; `motion` applies to the vertices added next.
struct Builder {
  Scene& s;
  std::uint8_t material = 0;
  V3 motion{0, 0, 0};

  std::int32_t vertex(V3 p, V3 m) {
    for (float c : p) s.mesh.vertices.push_back(c);
    for (float c : m) s.motion.push_back(c);
    return std::int32_t(s.mesh.vertex_count() - 1);
  }
  std::int32_t vertex(V3 p) { return vertex(p, motion); }
  void tri(std::int32_t a, std::int32_t b, std::int32_t c) {
    s.mesh.triangles.insert(s.mesh.triangles.end(), {a, b, c});
    s.mesh.material.push_back(material);
  }
  // a parametric surface on an (nu+1) x (nv+1) vertex grid; f(u, v) in [0,1]^2
  template <class F>
  void surface(int nu, int nv, F f) {
    std::int32_t const base = std::int32_t(s.mesh.vertex_count());
    for (int j = 0; j <= nv; ++j)
      for (int i = 0; i <= nu; ++i) vertex(f(float(i) / float(nu), float(j) / float(nv)));
    auto at = [&](int i, int j) { return base + j * (nu + 1) + i; };
    for (int j = 0; j < nv; ++j)
      for (int i = 0; i < nu; ++i) {
        tri(at(i, j), at(i + 1, j), at(i + 1, j + 1));
        tri(at(i, j), at(i + 1, j + 1), at(i, j + 1));
      }
  }
  void quad(V3 o, V3 u, V3 v, int nu, int nv) {
    surface(nu, nv, [&](float a, float b) { return add(o, add(mul(u, a), mul(v, b))); });
  }
  void box(V3 lo, V3 hi) {
    V3 const d{hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    quad(lo, {d[0], 0, 0}, {0, d[1], 0}, 1, 1);
    quad(lo, {0, 0, d[2]}, {d[0], 0, 0}, 1, 1);
    quad(lo, {0, d[1], 0}, {0, 0, d[2]}, 1, 1);
    quad(hi, {0, -d[1], 0}, {-d[0], 0, 0}, 1, 1);
    quad(hi, {-d[0], 0, 0}, {0, 0, -d[2]}, 1, 1);
    quad(hi, {0, 0, -d[2]}, {0, -d[1], 0}, 1, 1);
  }
  // a sphere with radial displacement amp * bumps(theta, phi)
  void sphere(V3 c, float r, int rings, int segs, float amp = 0, float freq = 0) {
    surface(segs, rings, [&](float a, float b) {
      float const phi = 2 * pi * a, th = pi * b;
      float const bump = amp * std::sin(freq * phi) * std::sin(freq * th) * std::sin(th);
      float const rr = r * (1 + bump);
      return V3{c[0] + rr * std::sin(th) * std::cos(phi), c[1] + rr * std::cos(th), c[2] + rr * std::sin(th) * std::sin(phi)};
    });
  }
  void torus(V3 c, float big, float small, int nu, int nv) {
    surface(nu, nv, [&](float a, float b) {
      float const p = 2 * pi * a, q = 2 * pi * b;
      float const rr = big + small * std::cos(q);
      return V3{c[0] + rr * std::cos(p), c[1] + small * std::sin(q), c[2] + rr * std::sin(p)};
    });
  }
  // an open cylinder (or cone when r1 != r0) along +y
  void cylinder(V3 base, float r0, float r1, float h, int segs, int stacks = 1) {
    surface(segs, stacks, [&](float a, float b) {
      float const p = 2 * pi * a, r = r0 + (r1 - r0) * b;
      return V3{base[0] + r * std::cos(p), base[1] + h * b, base[2] + r * std::sin(p)};
    });
  }
};

Scene toys() { // Fig. 4(a): 11K triangles, 1 light, no bounces
  Scene s;
  s.paper_scene = "Toys";
  s.materials = {{{0.8f, 0.8f, 0.75f}, 0.1f, 10, 0, 0, 1}, {{0.9f, 0.2f, 0.2f}, 0.6f, 40, 0, 0, 1},
                 {{0.2f, 0.5f, 0.9f}, 0.6f, 40, 0, 0, 1}, {{0.9f, 0.8f, 0.2f}, 0.8f, 60, 0, 0, 1}};
  Builder b{s};
  b.quad({-4, 0, -4}, {8, 0, 0}, {0, 0, 8}, 40, 40);
  b.material = 1;
  b.motion = {0, 0.3f, 0};
  b.sphere({-1.5f, 1, 0}, 1, 32, 48);
  b.material = 2;
  b.motion = {0.2f, 0, 0};
  b.torus({1.5f, 0.5f, 0.5f}, 0.9f, 0.35f, 64, 24);
  b.material = 3;
  b.motion = {0, 0.2f, 0.1f};
  b.sphere({0.3f, 0.6f, -1.8f}, 0.6f, 24, 36, 0.1f, 6);
  s.lights = {{{3, 6, 4}, {1, 1, 1}}};
  s.camera = {{0, 3.5f, 7}, {0, 0.8f, 0}, {0, 1, 0}, 45};
  s.bounces = 0;
  return s;
}

void room(Builder& b, float w, float h, float d, int n) {
  b.quad({-w, 0, -d}, {2 * w, 0, 0}, {0, 0, 2 * d}, n, n);       // floor
  b.quad({-w, h, -d}, {0, 0, 2 * d}, {2 * w, 0, 0}, n / 2, n / 2); // ceiling
  b.quad({-w, 0, -d}, {0, h, 0}, {2 * w, 0, 0}, n / 2, n / 2);     // back wall
  b.quad({-w, 0, -d}, {0, 0, 2 * d}, {0, h, 0}, n / 2, n / 2);     // left
  b.quad({w, 0, -d}, {0, h, 0}, {0, 0, 2 * d}, n / 2, n / 2);      // right
}

Scene museum() { // Fig. 4(b): 27K triangles, 2 lights, 2 bounces
  Scene s;
  s.paper_scene = "Museum";
  s.materials = {{{0.75f, 0.72f, 0.68f}, 0.05f, 8, 0, 0, 1},  {{0.6f, 0.6f, 0.62f}, 0.3f, 20, 0, 0, 1},
                 {{0.9f, 0.9f, 0.9f}, 0.9f, 80, 0.8f, 0, 1},  {{0.95f, 0.95f, 1}, 0.9f, 100, 0, 0.9f, 1.5f},
                 {{0.7f, 0.5f, 0.3f}, 0.4f, 30, 0.2f, 0, 1}};
  Builder b{s};
  room(b, 6, 5, 6, 40);
  Random rnd{7};
  for (int i = 0; i < 4; ++i) {
    float const x = -4.5f + 3 * float(i);
    b.material = 1;
    b.motion = {0, 0, 0};
    b.box({x - 0.6f, 0, -2.6f}, {x + 0.6f, 1.2f, -1.4f});
    b.material = std::uint8_t(i % 2 == 0 ? 2 : 4);
    b.motion = {0, 0.15f, 0};
    b.sphere({x, 2, -2}, 0.7f, 32, 48, rnd.range(0.05f, 0.15f), float(3 + i));
  }
  b.material = 3;
  b.motion = {0.2f, 0, 0.2f};
  b.sphere({0, 1.2f, 1.5f}, 1.2f, 48, 64);
  b.material = 2;
  b.motion = {0, 0, 0};
  b.torus({-3, 1, 2}, 0.8f, 0.25f, 48, 24);
  s.lights = {{{-3, 4.5f, 3}, {0.7f, 0.7f, 0.65f}}, {{3, 4.5f, 3}, {0.6f, 0.6f, 0.7f}}};
  s.camera = {{0, 2.8f, 5.8f}, {0, 1.4f, -1}, {0, 1, 0}, 60};
  s.bounces = 2;
  return s;
}

Scene robots() { // Fig. 4(c): 71K triangles, 3 lights, 1 bounce
  Scene s;
  s.paper_scene = "Robots";
  s.materials = {{{0.5f, 0.55f, 0.5f}, 0.05f, 8, 0, 0, 1}, {{0.7f, 0.7f, 0.75f}, 0.8f, 60, 0.4f, 0, 1},
                 {{0.9f, 0.4f, 0.1f}, 0.5f, 30, 0, 0, 1}, {{0.2f, 0.3f, 0.8f}, 0.5f, 30, 0, 0, 1}};
  Builder b{s};
  b.quad({-12, 0, -12}, {24, 0, 0}, {0, 0, 24}, 50, 50);
  for (int gx = 0; gx < 6; ++gx)
    for (int gz = 0; gz < 6; ++gz) {
      float const x = -9 + 3.6f * float(gx), z = -9 + 3.6f * float(gz);
      b.material = 1;
      b.motion = {0, 0, 0};
      b.cylinder({x, 1.2f, z}, 0.5f, 0.45f, 1.3f, 32, 4); // torso
      b.material = std::uint8_t(2 + (gx + gz) % 2);
      b.motion = {0, 0.05f, 0};
      b.sphere({x, 2.9f, z}, 0.4f, 14, 24); // head
      b.material = 1;
      b.motion = {0, 0, 0.3f}; // swinging limbs
      for (float side : {-1.f, 1.f}) {
        b.cylinder({x + 0.75f * side, 1.3f, z}, 0.13f, 0.1f, 1.1f, 16, 4);  // arm
        b.cylinder({x + 0.25f * side, 0, z}, 0.16f, 0.14f, 1.2f, 16, 4);   // leg
        b.sphere({x + 0.75f * side, 1.25f, z}, 0.16f, 8, 12);              // hand
      }
      b.motion = {0, 0, 0};
      b.box({x - 0.5f, 2.45f, z - 0.3f}, {x + 0.5f, 2.55f, z + 0.3f});
    }
  s.lights = {{{-8, 10, 8}, {0.5f, 0.5f, 0.5f}}, {{8, 10, 8}, {0.5f, 0.45f, 0.4f}}, {{0, 12, -10}, {0.3f, 0.3f, 0.4f}}};
  s.camera = {{0, 9, 16}, {0, 1, 0}, {0, 1, 0}, 50};
  s.bounces = 1;
  return s;
}

Scene kitchen() { // Fig. 4(d): 111K triangles, 6 lights, 8 bounces
  Scene s;
  s.paper_scene = "Kitchen";
  s.materials = {{{0.8f, 0.78f, 0.7f}, 0.05f, 8, 0, 0, 1},   {{0.55f, 0.35f, 0.2f}, 0.3f, 20, 0.1f, 0, 1},
                 {{0.9f, 0.9f, 0.95f}, 0.9f, 90, 0.7f, 0, 1}, {{0.95f, 1, 0.95f}, 0.9f, 100, 0, 0.85f, 1.5f},
                 {{0.8f, 0.2f, 0.2f}, 0.5f, 40, 0, 0, 1},    {{0.9f, 0.9f, 0.8f}, 0.6f, 50, 0.3f, 0, 1}};
  Builder b{s};
  room(b, 8, 5, 8, 64);
  b.material = 1;
  b.box({-4, 1.6f, -3}, {4, 1.8f, 1}); // table top
  for (float x : {-3.7f, 3.7f})
    for (float z : {-2.7f, 0.7f}) b.cylinder({x, 0, z}, 0.12f, 0.12f, 1.6f, 16, 2);
  Random rnd{11};
  for (int i = 0; i < 60; ++i) {
    float const x = rnd.range(-3.6f, 3.6f), z = rnd.range(-2.6f, 0.6f);
    int const kind = i % 4;
    b.material = std::uint8_t(2 + kind);
    b.motion = {0, 0.05f * float(kind), 0};
    if (kind == 0) b.torus({x, 1.95f, z}, 0.3f, 0.08f, 40, 16);
    else if (kind == 1) b.cylinder({x, 1.8f, z}, 0.15f, 0.2f, 0.5f, 40, 12); // glass
    else if (kind == 2) b.sphere({x, 2.05f, z}, 0.25f, 24, 36);
    else b.sphere({x, 2.0f, z}, 0.2f, 24, 36, 0.1f, 5);
  }
  b.material = 2;
  b.motion = {0, 0, 0};
  b.quad({-7.9f, 1, -7.9f}, {0, 3, 0}, {6, 0, 0}, 8, 8); // mirror on the back wall
  for (int k = 0; k < 3; ++k) b.sphere({-5 + 5 * float(k), 4.4f, -2}, 0.3f, 32, 48); // lamps
  s.lights = {{{-5, 4, -2}, {0.25f, 0.25f, 0.22f}}, {{0, 4, -2}, {0.25f, 0.25f, 0.22f}}, {{5, 4, -2}, {0.25f, 0.25f, 0.22f}},
              {{-5, 4, 4}, {0.2f, 0.2f, 0.2f}},    {{5, 4, 4}, {0.2f, 0.2f, 0.2f}},    {{0, 4.5f, 6}, {0.2f, 0.2f, 0.25f}}};
  s.camera = {{0, 3.8f, 7.5f}, {0, 1.8f, -1}, {0, 1, 0}, 55};
  s.bounces = 8;
  return s;
}

Scene forest() { // Fig. 4(e): 178K triangles, 2 lights, no bounces
  Scene s;
  s.paper_scene = "Fairy Forest";
  s.materials = {{{0.35f, 0.5f, 0.25f}, 0.02f, 4, 0, 0, 1}, {{0.4f, 0.28f, 0.15f}, 0.05f, 8, 0, 0, 1},
                 {{0.2f, 0.65f, 0.2f}, 0.2f, 16, 0, 0, 1},  {{0.85f, 0.3f, 0.6f}, 0.5f, 30, 0, 0, 1}};
  Builder b{s};
  b.surface(120, 120, [](float u, float v) {
    float const x = -20 + 40 * u, z = -20 + 40 * v;
    return V3{x, 0.4f * std::sin(0.5f * x) * std::cos(0.4f * z), z};
  });
  Random rnd{5};
  for (int t = 0; t < 120; ++t) {
    float const x = rnd.range(-18, 18), z = rnd.range(-18, 18), h = rnd.range(2, 5);
    float const y0 = 0.4f * std::sin(0.5f * x) * std::cos(0.4f * z) - 0.1f;
    b.material = 1;
    b.motion = {0, 0, 0};
    b.cylinder({x, y0, z}, 0.2f, 0.08f, h, 12, 3);
    b.material = 2;
    for (int l = 0; l < 790; ++l) { // leaves: small triangles swaying with height
      float const a = rnd.range(0, 2 * pi), r = rnd.range(0.2f, 1.4f), y = y0 + h * rnd.range(0.45f, 1.05f);
      V3 const c{x + r * std::cos(a), y, z + r * std::sin(a)};
      V3 const m{0.08f * (y - y0) / h, 0, 0.05f * (y - y0) / h};
      std::int32_t const p = b.vertex(c, m);
      std::int32_t const q = b.vertex({c[0] + rnd.range(-0.2f, 0.2f), c[1] + 0.15f, c[2] + rnd.range(-0.2f, 0.2f)}, m);
      std::int32_t const w = b.vertex({c[0] + rnd.range(-0.2f, 0.2f), c[1] - 0.05f, c[2] + rnd.range(-0.2f, 0.2f)}, m);
      b.tri(p, q, w);
    }
  }
  for (int f = 0; f < 30; ++f) { // mushrooms
    float const x = rnd.range(-15, 15), z = rnd.range(-15, 15);
    b.material = 3;
    b.motion = {0, 0, 0};
    b.sphere({x, 0.5f, z}, 0.4f, 24, 32, 0.05f, 4);
  }
  s.lights = {{{-10, 20, 10}, {0.8f, 0.75f, 0.6f}}, {{10, 15, -5}, {0.3f, 0.3f, 0.45f}}};
  s.camera = {{0, 7, 22}, {0, 1.5f, 0}, {0, 1, 0}, 50};
  s.bounces = 0;
  return s;
}

// one dense displaced object on a floor (Fig. 4(f), and the scaling scenes)
Scene blob(int rings, int segs, char const* paper) {
  Scene s;
  s.paper_scene = paper;
  s.materials = {{{0.7f, 0.7f, 0.7f}, 0.05f, 8, 0, 0, 1}, {{0.3f, 0.7f, 0.35f}, 0.6f, 50, 0, 0, 1}};
  Builder b{s};
  b.quad({-3, -1.2f, -3}, {6, 0, 0}, {0, 0, 6}, 10, 10);
  b.material = 1;
  std::int32_t const first = std::int32_t(s.mesh.vertex_count());
  b.sphere({0, 0, 0}, 1, rings, segs, 0.12f, 9);
  // radial motion: the object breathes
  for (std::int64_t v = first; v < s.mesh.vertex_count(); ++v)
    for (int d = 0; d < 3; ++d) s.motion[std::size_t(3 * v + d)] = 0.06f * s.mesh.vertices[std::size_t(3 * v + d)];
  s.lights = {{{2, 4, 3}, {1, 1, 1}}};
  s.camera = {{0, 0.8f, 3.6f}, {0, -0.2f, 0}, {0, 1, 0}, 45};
  s.bounces = 0;
  return s;
}

// Fig. 7(a): a metal ring on a table, about 3K triangles; light reflected
// inside the ring draws a cardioid on the table (200K photons, k = 50)
Scene ring() {
  Scene s;
  s.paper_scene = "Ring";
  s.materials = {{{0.75f, 0.72f, 0.65f}, 0.05f, 8, 0, 0, 1}, {{0.95f, 0.85f, 0.6f}, 0.9f, 80, 0.9f, 0, 1}};
  Builder b{s};
  b.quad({-3, 0, -3}, {6, 0, 0}, {0, 0, 6}, 20, 20);
  b.material = 1;
  b.motion = {0, 0, 0.05f};
  b.cylinder({0, 0, 0}, 1, 1, 0.45f, 180, 8);
  s.lights = {{{-5, 2.2f, 0.3f}, {0.9f, 0.9f, 0.85f}}};
  s.camera = {{0.6f, 3.4f, 2.6f}, {0, 0, 0}, {0, 1, 0}, 45};
  s.bounces = 2;
  s.caustic_photons = 200000;
  s.gather_k = 50;
  s.caustic_scale = 1;
  return s;
}

// Fig. 7(b): a glass of champagne, about 19K triangles; light refracted
// through the glass's walls and the wine (400K photons, k = 40)
Scene champagne() {
  Scene s;
  s.paper_scene = "Champagne";
  s.materials = {{{0.7f, 0.7f, 0.72f}, 0.05f, 8, 0, 0, 1}, {{0.97f, 0.97f, 1}, 0.9f, 120, 0, 0.92f, 1.5f},
                 {{1, 0.88f, 0.55f}, 0.8f, 90, 0, 0.9f, 1.33f}};
  Builder b{s};
  b.quad({-3, 0, -3}, {6, 0, 0}, {0, 0, 6}, 24, 24);
  b.material = 1;
  b.cylinder({0, 0.62f, 0}, 0.5f, 0.56f, 1.2f, 192, 16);   // the bowl, outside
  b.cylinder({0, 0.64f, 0}, 0.47f, 0.53f, 1.18f, 192, 16); // and inside
  b.torus({0, 1.82f, 0}, 0.545f, 0.015f, 192, 6);         // its lip
  b.cylinder({0, 0.02f, 0}, 0.05f, 0.05f, 0.6f, 64, 4);    // the stem
  b.cylinder({0, 0.01f, 0}, 0.35f, 0.05f, 0.02f, 128, 2);  // the foot
  b.material = 2;
  b.motion = {0, 0.01f, 0};
  b.cylinder({0, 0.65f, 0}, 0.465f, 0.5f, 0.7f, 192, 4);   // the wine
  b.surface(192, 4, [](float u, float v) {                 // its surface, a disc
    float const p = 2 * pi * u, r = 0.5f * (1 - v);
    return V3{r * std::cos(p), 1.35f, r * std::sin(p)};
  });
  s.lights = {{{-3.5f, 4, 1}, {0.9f, 0.9f, 0.85f}}};
  s.camera = {{2.2f, 2.6f, 3}, {0, 0.7f, 0}, {0, 1, 0}, 45};
  s.bounces = 6;
  s.caustic_photons = 400000;
  s.gather_k = 40;
  s.caustic_scale = 1;
  return s;
}

Scene from_file(std::string const& file) {
  Scene s;
  s.mesh = read_mesh(file);
  s.motion.assign(s.mesh.vertices.size(), 0.f);
  s.materials = {{{0.75f, 0.75f, 0.75f}, 0.3f, 30, 0, 0, 1}};
  V3 lo{std::numeric_limits<float>::max(), std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
  V3 hi{-lo[0], -lo[1], -lo[2]};
  for (std::int64_t v = 0; v < s.mesh.vertex_count(); ++v)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], s.mesh.vertices[std::size_t(3 * v + d)]);
      hi[d] = std::max(hi[d], s.mesh.vertices[std::size_t(3 * v + d)]);
    }
  V3 const c{(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2};
  float const r = std::max(1e-6f, 0.5f * std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                                    (hi[2] - lo[2]) * (hi[2] - lo[2])));
  s.camera = {{c[0] + 0.4f * r, c[1] + 0.6f * r, c[2] + 2.2f * r}, {c[0], c[1], c[2]}, {0, 1, 0}, 45};
  s.lights = {{{c[0] + 2 * r, c[1] + 3 * r, c[2] + 2 * r}, {1, 1, 1}}};
  s.name = file;
  return s;
}

// area-weighted vertex normals, for smooth shading of tessellated surfaces
void add_normals(Scene& s) {
  auto const& v = s.mesh.vertices;
  auto const& t = s.mesh.triangles;
  std::vector<double> n(v.size(), 0.0);
  for (std::size_t f = 0; f + 2 < t.size(); f += 3) {
    double e1[3], e2[3];
    for (int d = 0; d < 3; ++d) {
      e1[d] = double(v[3 * std::size_t(t[f + 1]) + d]) - v[3 * std::size_t(t[f]) + d];
      e2[d] = double(v[3 * std::size_t(t[f + 2]) + d]) - v[3 * std::size_t(t[f]) + d];
    }
    double const c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    for (int k = 0; k < 3; ++k)
      for (int d = 0; d < 3; ++d) n[3 * std::size_t(t[f + std::size_t(k)]) + d] += c[d];
  }
  s.normals.resize(v.size());
  for (std::size_t i = 0; i < v.size(); i += 3) {
    double const l = std::sqrt(n[i] * n[i] + n[i + 1] * n[i + 1] + n[i + 2] * n[i + 2]);
    for (int d = 0; d < 3; ++d) s.normals[i + std::size_t(d)] = l > 0 ? float(n[i + std::size_t(d)] / l) : 0.f;
  }
}

} // namespace

std::vector<std::string> scene_names() {
  return {"toys", "museum", "robots", "kitchen", "forest", "dragon", "blob-1m", "blob-5m", "ring", "champagne"};
}

Scene make_scene(std::string const& name) {
  Scene s;
  if (name == "toys") s = toys();
  else if (name == "museum") s = museum();
  else if (name == "robots") s = robots();
  else if (name == "kitchen") s = kitchen();
  else if (name == "forest") s = forest();
  else if (name == "dragon") s = blob(350, 360, "Dragon");
  else if (name == "blob-1m") s = blob(700, 714, "");
  else if (name == "blob-5m") s = blob(1580, 1582, "");
  else if (name == "ring") s = ring();
  else if (name == "champagne") s = champagne();
  else if (name.find('.') != std::string::npos) s = from_file(name);
  else {
    std::string all;
    for (auto const& n : scene_names()) all += " " + n;
    throw kdforge::Error("kdforge: unknown scene '" + name + "' (scenes:" + all + "; or a .obj / .ply file)");
  }
  s.name = name;
  add_normals(s);
  return s;
}

} // namespace kdforge_rays
