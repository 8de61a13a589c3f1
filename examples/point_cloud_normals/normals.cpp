// Surface normals of a point cloud: the 16 nearest neighbours of every point
// (kdforge::knn), then the direction in which they spread least (principal
// component analysis of their covariance), all on the device.
// Usage: normals [in.ply] [out.ply]. Without an input it samples a sphere and
// checks every normal against the exact one. Writes x y z nx ny nz as ASCII PLY.
#include <kdforge/kdforge.hpp>

#include "ply.hpp" // read_ply: x y z of the vertices of an ASCII or binary PLY file

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using Exec = Kokkos::DefaultExecutionSpace;
using P = kdforge::Point<float, 3>;

// Eigenvector of the smallest eigenvalue of the symmetric 3x3 matrix a
// (destroyed): Jacobi rotations zero the off-diagonal entries in turn; a few
// sweeps converge, with none of the closed form's trouble at equal eigenvalues.
KOKKOS_INLINE_FUNCTION void smallest_eigenvector(double a[3][3], double v[3]) {
  double e[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}; // columns: the eigenvectors so far
  int const ps[3] = {0, 0, 1}, qs[3] = {1, 2, 2};
  for (int sweep = 0; sweep < 10; ++sweep)
    for (int r = 0; r < 3; ++r) {
      int const p = ps[r], q = qs[r];
      if (fabs(a[p][q]) <= 1e-15 * (fabs(a[p][p]) + fabs(a[q][q]))) continue; // already diagonal there
      double const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
      double const t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
      double const c = 1 / sqrt(t * t + 1), s = t * c;
      for (int k = 0; k < 3; ++k) { // a = a J and e = e J (columns p and q) ...
        double const ap = a[k][p], aq = a[k][q], ep = e[k][p], eq = e[k][q];
        a[k][p] = c * ap - s * aq, a[k][q] = s * ap + c * aq, e[k][p] = c * ep - s * eq, e[k][q] = s * ep + c * eq;
      }
      for (int k = 0; k < 3; ++k) { // ... then a = J^T a (rows p and q)
        double const ap = a[p][k], aq = a[q][k];
        a[p][k] = c * ap - s * aq, a[q][k] = s * ap + c * aq;
      }
    }
  int m = a[1][1] < a[0][0] ? 1 : 0;
  m = a[2][2] < a[m][m] ? 2 : m;
  for (int i = 0; i < 3; ++i) v[i] = e[i][m];
}

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  bool const sphere = argc < 2;
  char const* out_path = argc > 2 ? argv[2] : "normals.ply";
  std::vector<double> xyz;
  std::mt19937 rng(7);
  std::normal_distribution<double> gauss; // normalised Gaussian vectors are uniform on the sphere
  for (int i = 0; sphere && i < 20000; ++i) {
    double p[3] = {gauss(rng), gauss(rng), gauss(rng)}, len = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    xyz.insert(xyz.end(), {p[0] / len, p[1] / len, p[2] / len});
  }
  try {
    if (!sphere) xyz = read_ply(argv[1]);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "normals: %s: %s\n", argv[1], e.what());
    return 2;
  }
  std::size_t const n = xyz.size() / 3;
  if (n < 3) { // fewer points span no plane
    std::fprintf(stderr, "normals: %s: %zu points; normals need at least 3\n", argv[1], n);
    return 2;
  }

  // The tree holds float coordinates relative to the centroid: floats halve
  // the memory traffic, and centring keeps their precision for clouds far
  // from the origin (scans in map coordinates). The output keeps the doubles.
  double mid[3] = {0, 0, 0};
  for (std::size_t i = 0; i < 3 * n; ++i) mid[i % 3] += xyz[i] / double(n);
  Kokkos::View<P*, Exec::memory_space> points("points", n);
  auto hp = Kokkos::create_mirror_view(points);
  for (std::size_t i = 0; i < 3 * n; ++i) hp(i / 3)[i % 3] = float(xyz[i] - mid[i % 3]);
  Kokkos::deep_copy(points, hp);

  Kokkos::Timer timer;
  int const k = 16;
  Kokkos::View<float* [3], Exec::memory_space> normals("normals", n);
  try { // a NaN or infinite coordinate makes the build throw kdforge::Error
    auto tree = kdforge::build_left_balanced(Exec{}, points);
    auto nn = kdforge::knn(Exec{}, tree, points, k); // each point's neighbourhood, the point included
    Kokkos::parallel_for("normals", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(std::size_t i) {
      double mean[3] = {0, 0, 0}, a[3][3] = {}, v[3], d[3];
      int found = 0; // clouds of fewer than k points leave slots empty (index -1, at the end)
      for (; found < k && nn.indices(i, found) >= 0; ++found)
        for (int c = 0; c < 3; ++c) mean[c] += points(nn.indices(i, found))[c];
      for (int c = 0; c < 3; ++c) mean[c] /= found;
      for (int j = 0; j < found; ++j) { // covariance (unnormalised: the eigenvectors are the same)
        for (int c = 0; c < 3; ++c) d[c] = points(nn.indices(i, j))[c] - mean[c];
        for (int r = 0; r < 3; ++r) for (int c = 0; c < 3; ++c) a[r][c] += d[r] * d[c];
      }
      smallest_eigenvector(a, v);
      // PCA leaves the sign open; away from the centroid (the origin here) is
      // right for closed, roughly convex shapes.
      double const side = v[0] * points(i)[0] + v[1] * points(i)[1] + v[2] * points(i)[2];
      for (int c = 0; c < 3; ++c) normals(i, c) = float(side < 0 ? -v[c] : v[c]);
    });
    Kokkos::fence();
  } catch (std::exception const& e) {
    std::fprintf(stderr, "normals: %s\n", e.what());
    return 2;
  }
  auto hn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, normals);
  std::printf("normals on %s: %zu points (%s), k = %d: tree, kNN and normals in %.1f ms\n", Exec::name(), n,
              sphere ? "sampled unit sphere" : argv[1], k, timer.seconds() * 1e3);

  int status = 0;
  if (sphere) { // on the unit sphere around the origin the exact normal is the point itself
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double const dot = hn(i, 0) * xyz[3 * i] + hn(i, 1) * xyz[3 * i + 1] + hn(i, 2) * xyz[3 * i + 2];
      worst = std::fmax(worst, std::acos(std::fmin(1.0, dot)) * 180 / std::acos(-1.0));
    }
    status = worst <= 5 ? 0 : 1;
    std::printf("largest angle to the exact normal: %.3f degrees (allowed: 5): %s\n", worst, status ? "FAILED" : "ok");
  }
  std::FILE* out = std::fopen(out_path, "w");
  if (!out) { std::fprintf(stderr, "normals: cannot write %s\n", out_path); return 2; }
  std::fprintf(out, "ply\nformat ascii 1.0\nelement vertex %zu\nproperty double x\nproperty double y\n"
               "property double z\nproperty float nx\nproperty float ny\nproperty float nz\nend_header\n", n);
  for (std::size_t i = 0; i < n; ++i)
    std::fprintf(out, "%.17g %.17g %.17g %.7g %.7g %.7g\n", xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], hn(i, 0),
                 hn(i, 1), hn(i, 2));
  if (std::fclose(out) != 0) { std::fprintf(stderr, "normals: writing %s failed\n", out_path); return 2; }
  std::printf("wrote %s\n", out_path);
  return status;
}
