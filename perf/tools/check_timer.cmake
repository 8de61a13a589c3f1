# ctest helper: runs EXE with the kernel timer LIB loaded, its table written
# to OUT, and checks the table.
file(REMOVE ${OUT})
execute_process(COMMAND ${CMAKE_COMMAND} -E env KOKKOS_PROFILE_LIBRARY=${LIB} KDFORGE_KERNEL_TIMER_OUT=${OUT}
                        ${EXE} --n 3000 --m 500 --k 4 --ops knn --reps 1 --warmup 0 --verify 50 --quiet
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "the benchmark with the timer loaded exited ${rc}:\n${out}${err}")
endif()
if(NOT EXISTS ${OUT})
  message(FATAL_ERROR "the timer wrote no ${OUT}:\n${out}${err}")
endif()
file(READ ${OUT} table)
message("${table}")
foreach(re "^# kdforge-kernel-timer" "\nregion\tkind\tcalls\ttotal_ms\tmean_us\tbytes\tname\n"
           "\nkdforge::knn\tfor\t[1-9][0-9]*\t[0-9.]+\t[0-9.]+\t0\tkdforge::knn::k4\n"
           "\nkdforge::knn\tregion\t[1-9][0-9]*\t[0-9.]+\t[0-9.]+\t0\tkdforge::knn\n"
           "\nkdforge::knn\thost\t[1-9][0-9]*\t" "\talloc\t[1-9][0-9]*\t0.000\t0.0\t[1-9][0-9]*\t"
           "\tcopy\t[1-9][0-9]*\t[0-9.]+\t[0-9.]+\t[1-9][0-9]*\t")
  if(NOT table MATCHES "${re}")
    message(FATAL_ERROR "the table does not match '${re}'")
  endif()
endforeach()
