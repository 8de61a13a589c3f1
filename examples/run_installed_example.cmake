# ctest driver: install kdforge from the build tree into a scratch prefix,
# then configure, build and run one example against it.
#   -DBUILD=<kdforge build tree> -DWORK=<scratch folder> -DSRC=<example folder>
#   -DCXX=<compiler> -DGENERATOR=<generator> -DRUN=ON|OFF
#   -DEXE=<executable> [-DARGS="<arguments separated by spaces>"]
#   [-DLAUNCHER="<launcher and its arguments>"] (e.g. mpirun -np 2)
foreach(var BUILD WORK SRC CXX GENERATOR EXE)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_installed_example.cmake: -D${var}=... is required")
  endif()
endforeach()
separate_arguments(args UNIX_COMMAND "${ARGS}")
separate_arguments(launcher UNIX_COMMAND "${LAUNCHER}")

file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${WORK}/prefix" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${WORK}/build" -G "${GENERATOR}"
                "-DCMAKE_CXX_COMPILER=${CXX}" "-Dkdforge_ROOT=${WORK}/prefix" "-DCMAKE_BUILD_TYPE=Release"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring ${SRC} against the installed package failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}/build" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building ${SRC} failed")
endif()
if(RUN)
  # Run in the build folder: files an example writes stay in the scratch folder.
  execute_process(COMMAND ${launcher} "${WORK}/build/${EXE}" ${args} WORKING_DIRECTORY "${WORK}/build" RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "the example ${EXE} ${ARGS} failed (${rc})")
  endif()
endif()
