#pragma once
// Surface normals by principal component analysis of each point's k nearest
// neighbours (Hoppe et al. 1992): the eigenvector of the neighbourhood's
// covariance with the smallest eigenvalue. Point-to-plane ICP
// (kernels/registration/icp.hpp) measures its residuals along them.
// One thread per point; the 3x3 eigenproblem by cyclic Jacobi rotations in
// double, which stays accurate where eigenvalues coincide (the closed form
// does not). The sign is left as PCA gives it: point-to-plane residuals do
// not depend on it.
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace kdforge::kernels::registration {

/// Unit eigenvector of the smallest eigenvalue of the symmetric 3x3 matrix a
/// (destroyed).
KOKKOS_INLINE_FUNCTION void smallest_eigenvector(double a[3][3], double v[3]) {
  double e[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}; // columns: the eigenvectors so far
  int const ps[3] = {0, 0, 1}, qs[3] = {1, 2, 2};
  for (int sweep = 0; sweep < 12; ++sweep)
    for (int r = 0; r < 3; ++r) {
      int const p = ps[r], q = qs[r];
      if (::fabs(a[p][q]) <= 1e-15 * (::fabs(a[p][p]) + ::fabs(a[q][q]))) continue;
      double const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
      double const t = (theta >= 0 ? 1 : -1) / (::fabs(theta) + ::sqrt(theta * theta + 1));
      double const c = 1 / ::sqrt(t * t + 1), s = t * c;
      for (int k = 0; k < 3; ++k) {
        double const ap = a[k][p], aq = a[k][q], ep = e[k][p], eq = e[k][q];
        a[k][p] = c * ap - s * aq;
        a[k][q] = s * ap + c * aq;
        e[k][p] = c * ep - s * eq;
        e[k][q] = s * ep + c * eq;
      }
      for (int k = 0; k < 3; ++k) {
        double const ap = a[p][k], aq = a[q][k];
        a[p][k] = c * ap - s * aq;
        a[q][k] = s * ap + c * aq;
      }
    }
  int m = a[1][1] < a[0][0] ? 1 : 0;
  m = a[2][2] < a[m][m] ? 2 : m;
  for (int i = 0; i < 3; ++i) v[i] = e[i][m];
}

/// normals(i): PCA normal of point i from its neighbours (rows of idx, -1
/// for missing); zero where fewer than 3 neighbours were found or they lie
/// on a line (no plane to speak of).
template <class Exec, class T, class Pts, class Idx, class Normals>
void pca_normals(Exec const& exec, Pts const& pts, Idx const& idx, Normals const& normals) {
  int const k = int(idx.extent(1));
  Kokkos::parallel_for(
      "kdforge::normals::pca", Kokkos::RangePolicy<Exec>(exec, 0, pts.extent(0)), KOKKOS_LAMBDA(std::int64_t i) {
        Point<T, 3> const o = pts(i); // about the point itself: no cancellation at large offsets
        double s[3] = {0, 0, 0}, a[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
        int found = 0;
        for (int j = 0; j < k; ++j) {
          auto const n = idx(i, j);
          if (n < 0) continue;
          Point<T, 3> const p = pts(n);
          double const d[3] = {double(p[0]) - double(o[0]), double(p[1]) - double(o[1]), double(p[2]) - double(o[2])};
          for (int u = 0; u < 3; ++u) {
            s[u] += d[u];
            for (int w = 0; w < 3; ++w) a[u][w] += d[u] * d[w];
          }
          ++found;
        }
        Point<T, 3> out;
        out[0] = out[1] = out[2] = T(0);
        if (found >= 3) {
          double trace = 0;
          for (int u = 0; u < 3; ++u) {
            for (int w = 0; w < 3; ++w) a[u][w] -= s[u] * s[w] / found;
            trace += a[u][u];
          }
          if (trace > 0) {
            double b[3][3];
            for (int u = 0; u < 3; ++u)
              for (int w = 0; w < 3; ++w) b[u][w] = a[u][w];
            double v[3];
            smallest_eigenvector(b, v);
            // the middle eigenvalue: a line has only one non-zero one
            double av[3];
            for (int u = 0; u < 3; ++u) av[u] = a[u][0] * v[0] + a[u][1] * v[1] + a[u][2] * v[2];
            double const lmin = av[0] * v[0] + av[1] * v[1] + av[2] * v[2];
            double const fro2 = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2] +
                                2 * (a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2]);
            // eigenvalues l1 >= l2 >= lmin: l1 + l2 = trace - lmin, l1^2 + l2^2 = fro2 - lmin^2
            double const sum = trace - lmin, sq = fro2 - lmin * lmin;
            double const l1l2 = 0.5 * (sum * sum - sq); // l1 * l2
            bool const planar_enough = l1l2 > 1e-12 * sum * sum;
            if (planar_enough)
              for (int u = 0; u < 3; ++u) out[u] = T(v[u]);
          }
        }
        normals(i) = out;
      });
}

} // namespace kdforge::kernels::registration
