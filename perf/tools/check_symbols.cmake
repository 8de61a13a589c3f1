# Build step: the timer library must export every callback Kokkos looks up;
# one missing is silently never called (nvcc once gave those taking a
# struct of internal linkage internal linkage too).
execute_process(COMMAND ${NM} -D --defined-only ${LIB} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D ${LIB} failed")
endif()
foreach(f init_library finalize_library begin_parallel_for end_parallel_for begin_parallel_reduce
          end_parallel_reduce begin_parallel_scan end_parallel_scan begin_fence end_fence begin_deep_copy
          end_deep_copy push_profile_region pop_profile_region allocate_data deallocate_data)
  if(NOT syms MATCHES " T kokkosp_${f}\n")
    message(FATAL_ERROR "${LIB} does not export kokkosp_${f}: Kokkos would never call it")
  endif()
endforeach()
