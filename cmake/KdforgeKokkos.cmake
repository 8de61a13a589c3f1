# Find or bootstrap Kokkos for the requested kdforge backend.
#
# Included twice from the top-level CMakeLists.txt:
#   kdforge_kokkos_select_compiler()  before project(): for Cuda, Kokkos 3.x
#       needs its nvcc_wrapper as the C++ compiler, which must be known before
#       the language is enabled.
#   kdforge_kokkos_find()             after project(): find_package(Kokkos)
#       and check that its enabled backends match KDFORGE_BACKEND.

set(_kdforge_bootstrap_script "${CMAKE_CURRENT_LIST_DIR}/kokkos-bootstrap.sh")

# Runs the bootstrap script (cached build of Debian's Kokkos 3.4.1 + patches)
# and sets Kokkos_ROOT in the cache.
function(kdforge_kokkos_bootstrap)
  message(STATUS "kdforge: no Kokkos given (-DKokkos_ROOT); bootstrapping Kokkos 3.4.1 for ${KDFORGE_BACKEND}")
  execute_process(
    COMMAND bash "${_kdforge_bootstrap_script}" "${KDFORGE_BACKEND}" "${KDFORGE_CUDA_ARCH}"
    OUTPUT_VARIABLE _out RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR
      "kdforge: bootstrapping Kokkos failed (see the messages above).\n"
      "Either fix the cause, or point the build at an installed Kokkos with "
      "-DKokkos_ROOT=<prefix> (Kokkos 3.4+ with the ${KDFORGE_BACKEND} backend enabled).")
  endif()
  string(REGEX REPLACE ".*\n" "" _prefix "${_out}")
  set(Kokkos_ROOT "${_prefix}" CACHE PATH "Kokkos install prefix (bootstrapped by kdforge)" FORCE)
  set(KDFORGE_BOOTSTRAPPED_KOKKOS_ROOT "${_prefix}" CACHE INTERNAL "the Kokkos kdforge bootstrapped for this build")
endfunction()

macro(kdforge_kokkos_select_compiler)
  if(KDFORGE_BACKEND STREQUAL "Cuda" AND NOT CMAKE_CXX_COMPILER)
    if(NOT Kokkos_ROOT AND NOT DEFINED ENV{Kokkos_ROOT} AND KDFORGE_BOOTSTRAP_KOKKOS)
      kdforge_kokkos_bootstrap()
    endif()
    if(NOT Kokkos_ROOT AND DEFINED ENV{Kokkos_ROOT})
      set(Kokkos_ROOT "$ENV{Kokkos_ROOT}")
    endif()
    if(Kokkos_ROOT AND EXISTS "${Kokkos_ROOT}/bin/nvcc_wrapper")
      set(CMAKE_CXX_COMPILER "${Kokkos_ROOT}/bin/nvcc_wrapper" CACHE FILEPATH "C++ compiler (Kokkos' nvcc_wrapper)")
      message(STATUS "kdforge: Cuda backend, using ${CMAKE_CXX_COMPILER} as the C++ compiler")
    endif()
  endif()
endmacro()

macro(kdforge_kokkos_find)
  # Inside a project that already has Kokkos (add_subdirectory(kokkos) or
  # find_package(Kokkos) before add_subdirectory(kdforge)): use that one,
  # bootstrap nothing, and take the backend from it unless given.
  if(TARGET Kokkos::kokkos)
    if(NOT KDFORGE_BACKEND_GIVEN)
      if(Kokkos_ENABLE_CUDA OR KOKKOS_ENABLE_CUDA OR "CUDA" IN_LIST Kokkos_DEVICES)
        set(KDFORGE_BACKEND Cuda)
      elseif(Kokkos_ENABLE_OPENMP OR KOKKOS_ENABLE_OPENMP OR "OPENMP" IN_LIST Kokkos_DEVICES)
        set(KDFORGE_BACKEND OpenMP)
      elseif(Kokkos_ENABLE_THREADS OR KOKKOS_ENABLE_THREADS OR "THREADS" IN_LIST Kokkos_DEVICES)
        set(KDFORGE_BACKEND Threads)
      else()
        set(KDFORGE_BACKEND Serial)
      endif()
    endif()
    message(STATUS "kdforge: using the project's Kokkos ${Kokkos_VERSION}; backend ${KDFORGE_BACKEND}")
  else()
    kdforge_kokkos_find_or_bootstrap()
  endif()
endmacro()

macro(kdforge_kokkos_find_or_bootstrap)
  # A bootstrapped Kokkos is keyed by its patch set: when cmake/patches
  # changed since this build tree was configured, bootstrap (or reuse) the
  # matching one instead of keeping the old one the cache points at.
  if(KDFORGE_BOOTSTRAP_KOKKOS AND KDFORGE_BOOTSTRAPPED_KOKKOS_ROOT AND
     "${Kokkos_ROOT}" STREQUAL "${KDFORGE_BOOTSTRAPPED_KOKKOS_ROOT}")
    set(_kdforge_old_root "${Kokkos_ROOT}")
    kdforge_kokkos_bootstrap()
    if(NOT "${Kokkos_ROOT}" STREQUAL "${_kdforge_old_root}")
      message(STATUS "kdforge: the Kokkos patch set changed; now using ${Kokkos_ROOT}")
      unset(Kokkos_DIR CACHE)
    endif()
  endif()
  find_package(Kokkos CONFIG QUIET)
  if(NOT Kokkos_FOUND)
    if(NOT KDFORGE_BOOTSTRAP_KOKKOS)
      message(FATAL_ERROR
        "kdforge: Kokkos was not found and KDFORGE_BOOTSTRAP_KOKKOS is OFF.\n"
        "Pass -DKokkos_ROOT=<prefix of an installed Kokkos> or turn the bootstrap on.")
    endif()
    kdforge_kokkos_bootstrap()
    find_package(Kokkos CONFIG REQUIRED)
  endif()
  message(STATUS "kdforge: Kokkos ${Kokkos_VERSION} at ${Kokkos_DIR}, devices: ${Kokkos_DEVICES}")

  # The backend the user asked for must be enabled in that Kokkos.
  string(TOUPPER "${KDFORGE_BACKEND}" _want)
  set(_alt "${_want}")
  if(_want STREQUAL "THREADS")
    set(_alt "PTHREAD") # Kokkos 3.x spells it PTHREAD, 4.x THREADS
  endif()
  if(NOT _want IN_LIST Kokkos_DEVICES AND NOT _alt IN_LIST Kokkos_DEVICES)
    message(FATAL_ERROR
      "kdforge: KDFORGE_BACKEND=${KDFORGE_BACKEND}, but the Kokkos at ${Kokkos_DIR} "
      "was built with the devices '${Kokkos_DEVICES}'.\n"
      "Either choose one of those with -DKDFORGE_BACKEND=..., or give a Kokkos built with "
      "${KDFORGE_BACKEND} (-DKokkos_ROOT=...), or remove Kokkos_ROOT to let kdforge bootstrap one.")
  endif()
  if(_want STREQUAL "CUDA" AND NOT CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper|clang")
    message(WARNING "kdforge: the Cuda backend with Kokkos ${Kokkos_VERSION} expects "
      "CMAKE_CXX_COMPILER to be Kokkos' nvcc_wrapper (found ${CMAKE_CXX_COMPILER}).")
  endif()
endmacro()
