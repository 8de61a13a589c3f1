# ctest helper: runs EXE with ARGS and passes when the exit status is CODE and
# the output (stdout + stderr) matches REGEX. A crash (signal) never passes.
#   cmake -DEXE=... -DARGS="a|b" -DCODE=2 -DREGEX=... -P expect_exit.cmake   (arguments split at |)
string(REPLACE "|" ";" ARGS "${ARGS}")
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "${CODE}")
  message(FATAL_ERROR "expected exit status ${CODE}, got '${rc}'")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match '${REGEX}'")
endif()
