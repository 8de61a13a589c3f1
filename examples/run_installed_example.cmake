# ctest driver: install kdforge from the build tree into a scratch prefix,
# then configure, build and run examples/find_package against it.
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${WORK}/prefix" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${WORK}/build" -G "${GENERATOR}"
                "-DCMAKE_CXX_COMPILER=${CXX}" "-Dkdforge_ROOT=${WORK}/prefix" "-DCMAKE_BUILD_TYPE=Release"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the example against the installed package failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}/build" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the example failed")
endif()
if(RUN)
  execute_process(COMMAND "${WORK}/build/nearest" RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "the example failed")
  endif()
endif()
