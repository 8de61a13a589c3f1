#pragma once
// Open3D's registration_icp and PCL's IterativeClosestPoint on the same
// clouds, initial poses and convergence criteria as kdforge::icp (point to
// point). Each call builds the library's own k-d tree of the scan, as
// kdforge rebuilds its tree every frame; the conversion of the clouds into
// the library's types is done beforehand and not timed.
#include <kdforge/base/registration.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kdforge_icp {

struct Criteria {
  int max_iterations = 30;
  double max_distance = 0.02;
  double relative_rmse = 0; ///< 0: exactly max_iterations iterations
};

struct BaselineResult {
  kdforge::RigidTransform transform;
  double rmse = 0;     ///< the library's own RMSE of its correspondences
  double seconds = 0;  ///< tree build + registration
};

/// One library's ICP: prepare() converts a scan (and the model) once,
/// register_frame() runs and times the registration.
class Baseline {
public:
  virtual ~Baseline() = default;
  virtual std::string name() const = 0;
  virtual void prepare(std::vector<float> const& scan, std::vector<float> const& model) = 0;
  virtual BaselineResult register_frame(kdforge::RigidTransform const& initial, Criteria const& c) = 0;
};

/// The baselines this build has (none where neither library was found).
std::vector<std::unique_ptr<Baseline>> make_baselines(bool open3d, bool pcl);

} // namespace kdforge_icp
