#pragma once
// kdforge: k-d trees and nearest-neighbour queries on GPUs and CPUs, one code
// base on Kokkos. Include this header for the whole public API.
#include <kdforge/approximate.hpp>
#include <kdforge/build.hpp>
#include <kdforge/error.hpp>
#include <kdforge/median_tree.hpp>
#include <kdforge/options.hpp>
#include <kdforge/points.hpp>
#include <kdforge/query.hpp>
#include <kdforge/split_sort.hpp>
#include <kdforge/tree.hpp>
#include <kdforge/types.hpp>
#include <kdforge/version.hpp>
