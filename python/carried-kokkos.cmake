# Included right after project() (CMAKE_PROJECT_INCLUDE) by
# python/build-on-gpu-machine.sh. A Kokkos install carried over from another
# machine names that machine's CUDA runtime and libdl by absolute path: its
# KokkosConfig.cmake defines CUDA::cudart, CUDA::cuda_driver and Kokkos::LIBDL
# unless they exist already. Define them from this machine's toolkit first.
if(KDFORGE_BACKEND STREQUAL "Cuda" AND NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit REQUIRED)
endif()
if(NOT TARGET Kokkos::LIBDL)
  add_library(Kokkos::LIBDL INTERFACE IMPORTED)
  set_target_properties(Kokkos::LIBDL PROPERTIES INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
endif()
