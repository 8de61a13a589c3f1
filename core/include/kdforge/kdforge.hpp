#pragma once
// kdforge: k-d trees and nearest-neighbour queries on GPUs and CPUs, one code
// base on Kokkos. Include this header for the whole public API.
#include <kdforge/build.hpp>
#include <kdforge/error.hpp>
#include <kdforge/options.hpp>
#include <kdforge/points.hpp>
#include <kdforge/query.hpp>
#include <kdforge/tree.hpp>
#include <kdforge/types.hpp>
#include <kdforge/version.hpp>
