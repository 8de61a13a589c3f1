#pragma once
// The tree types kdforge builds, the distance function they share, and the
// tree concept a new tree type satisfies to be searched by the walks
// (kdforge/kernels/trees/concept.hpp says what it asks).
#include <kdforge/kernels/common/distance.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>
#include <kdforge/kernels/trees/concept.hpp>
#include <kdforge/kernels/trees/left_balanced_tree.hpp>
#include <kdforge/kernels/trees/median_tree.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>
#include <kdforge/kernels/trees/vvh_tree.hpp>
