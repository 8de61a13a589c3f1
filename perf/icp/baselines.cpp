// Open3D and PCL ICP baselines (baselines.hpp); each compiled only where
// CMake found the library (KDFORGE_ICP_OPEN3D, KDFORGE_ICP_PCL).
#include "baselines.hpp"

#include <chrono>
#include <cmath>
#include <limits>

#if defined(KDFORGE_ICP_OPEN3D)
#include <open3d/geometry/PointCloud.h>
#include <open3d/pipelines/registration/Registration.h>
#include <open3d/pipelines/registration/TransformationEstimation.h>
#endif
#if defined(KDFORGE_ICP_PCL)
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/registration/icp.h>
#endif

namespace kdforge_icp {

namespace {

template <class M>
M to_matrix(kdforge::RigidTransform const& x) {
  M m = M::Identity();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m(i, j) = x.rotation[i][j];
    m(i, 3) = x.translation[i];
  }
  return m;
}

template <class M>
kdforge::RigidTransform from_matrix(M const& m) {
  kdforge::RigidTransform x;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) x.rotation[i][j] = double(m(i, j));
    x.translation[i] = double(m(i, 3));
  }
  return x;
}

#if defined(KDFORGE_ICP_OPEN3D) || defined(KDFORGE_ICP_PCL)
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
#endif

#if defined(KDFORGE_ICP_OPEN3D)
class Open3dIcp : public Baseline {
  open3d::geometry::PointCloud m_scan, m_model;
  static void fill(open3d::geometry::PointCloud& c, std::vector<float> const& xyz) {
    c.points_.resize(xyz.size() / 3);
    for (std::size_t i = 0; i < c.points_.size(); ++i) c.points_[i] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
  }

public:
  std::string name() const override { return "Open3D registration_icp"; }
  void prepare(std::vector<float> const& scan, std::vector<float> const& model) override {
    fill(m_scan, scan);
    fill(m_model, model);
  }
  BaselineResult register_frame(kdforge::RigidTransform const& initial, Criteria const& c) override {
    namespace reg = open3d::pipelines::registration;
    // Open3D stops when both the fitness and the RMSE change by less than
    // their thresholds, as absolute changes (the RMSE's in metres), where
    // kdforge's is relative; 0 never stops early, in both.
    reg::ICPConvergenceCriteria crit(c.relative_rmse, c.relative_rmse, c.max_iterations);
    auto const t0 = std::chrono::steady_clock::now();
    auto const r = reg::RegistrationICP(m_model, m_scan, c.max_distance, to_matrix<Eigen::Matrix4d>(initial),
                                        reg::TransformationEstimationPointToPoint(false), crit);
    BaselineResult out;
    out.seconds = seconds_since(t0);
    out.transform = from_matrix(r.transformation_);
    out.rmse = r.inlier_rmse_;
    return out;
  }
};
#endif

#if defined(KDFORGE_ICP_PCL)
class PclIcp : public Baseline {
  pcl::PointCloud<pcl::PointXYZ>::Ptr m_scan{new pcl::PointCloud<pcl::PointXYZ>},
      m_model{new pcl::PointCloud<pcl::PointXYZ>};
  static void fill(pcl::PointCloud<pcl::PointXYZ>& c, std::vector<float> const& xyz) {
    c.resize(xyz.size() / 3);
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = pcl::PointXYZ(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
  }

public:
  std::string name() const override { return "PCL IterativeClosestPoint"; }
  void prepare(std::vector<float> const& scan, std::vector<float> const& model) override {
    fill(*m_scan, scan);
    fill(*m_model, model);
  }
  BaselineResult register_frame(kdforge::RigidTransform const& initial, Criteria const& c) override {
    pcl::IterativeClosestPoint<pcl::PointXYZ, pcl::PointXYZ> icp;
    auto const t0 = std::chrono::steady_clock::now();
    icp.setInputSource(m_model);
    icp.setInputTarget(m_scan); // the k-d tree of the scan is built in align(): timed, as kdforge's rebuild
    icp.setMaxCorrespondenceDistance(c.max_distance);
    icp.setMaximumIterations(c.max_iterations);
    // PCL's criteria: the squared translation of an increment, the absolute
    // and the relative change of the MSE. 0 never stops early.
    icp.setTransformationEpsilon(c.relative_rmse > 0 ? 1e-12 : 0.0);
    icp.setEuclideanFitnessEpsilon(0.0);
    icp.getConvergeCriteria()->setRelativeMSE(c.relative_rmse > 0 ? 2 * c.relative_rmse : 0.0);
    pcl::PointCloud<pcl::PointXYZ> aligned;
    icp.align(aligned, to_matrix<Eigen::Matrix4f>(initial));
    BaselineResult out;
    out.seconds = seconds_since(t0);
    out.transform = from_matrix(icp.getFinalTransformation());
    out.rmse = std::sqrt(icp.getFitnessScore(c.max_distance));
    return out;
  }
};
#endif

} // namespace

std::vector<std::unique_ptr<Baseline>> make_baselines(bool open3d, bool pcl) {
  std::vector<std::unique_ptr<Baseline>> b;
#if defined(KDFORGE_ICP_OPEN3D)
  if (open3d) b.emplace_back(new Open3dIcp);
#endif
#if defined(KDFORGE_ICP_PCL)
  if (pcl) b.emplace_back(new PclIcp);
#endif
  (void)open3d;
  (void)pcl;
  return b;
}

} // namespace kdforge_icp
