#pragma once
// kdforge: k-d trees and nearest-neighbour queries on GPUs and CPUs, one code
// base on Kokkos. Include this header for the whole public API.
#include <kdforge/base/access.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/memory.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/ray.hpp>
#include <kdforge/base/registration.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/base/version.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/build_bucket_tree.hpp>
#include <kdforge/build_left_balanced.hpp>
#include <kdforge/build_median_in_place.hpp>
#include <kdforge/build_sah_tree.hpp>
#include <kdforge/build_split_sort.hpp>
#include <kdforge/build_vvh_tree.hpp>
#include <kdforge/closest_point.hpp>
#include <kdforge/icp.hpp>
#include <kdforge/knn.hpp>
#include <kdforge/knn_approximate.hpp>
#include <kdforge/knn_brute_force.hpp>
#include <kdforge/radius.hpp>
#include <kdforge/range_knn.hpp>
#include <kdforge/rays.hpp>
#include <kdforge/trees.hpp>
