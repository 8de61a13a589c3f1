# What the Python module (python/) needs: a Python interpreter that has
# NumPy, its headers (FindPython3's Development.Module) and pybind11.
#
# kdforge_python_find() sets KDFORGE_PYTHON_FOUND, and KDFORGE_PYTHON_MISSING
# (why not) when it is false. The interpreter: KDFORGE_PYTHON_INTERPRETER if
# given, taken as it is (pip's builds: the module is built for the Python
# that installs it, which needs NumPy only at run time); Python3_EXECUTABLE
# if given and it has NumPy;
# else, of `python3` on PATH and the system's /usr/bin/python3, the first
# with NumPy, SciPy and pytest (what the module's tests need), or failing
# that the first with NumPy. (On Debian 12 with pyenv, `python3` may be a
# Python without NumPy while Debian's own has NumPy, SciPy and pytest from
# apt.) pybind11: its CMake package (Debian's pybind11-dev), or the one the
# interpreter has (`python3 -m pybind11 --cmakedir`, pip's pybind11).

function(_kdforge_python_score exe out)
  set(score 0)
  execute_process(COMMAND "${exe}" -c "import numpy" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(score 1)
    execute_process(COMMAND "${exe}" -c "import scipy.spatial, pytest" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(score 2)
    endif()
  endif()
  set(${out} ${score} PARENT_SCOPE)
endfunction()

macro(kdforge_python_find)
  set(KDFORGE_PYTHON_FOUND OFF)
  set(KDFORGE_PYTHON_MISSING "")
  if(CMAKE_VERSION VERSION_LESS 3.18)
    set(KDFORGE_PYTHON_MISSING "CMake ${CMAKE_VERSION} is older than 3.18 (FindPython3's Development.Module)")
  else()
    set(_kdforge_py_given_score 0)
    if(KDFORGE_PYTHON_INTERPRETER)
      set(Python3_EXECUTABLE "${KDFORGE_PYTHON_INTERPRETER}" CACHE FILEPATH "The Python interpreter of the kdforge module" FORCE)
      set(_kdforge_py_given_score 1)
    elseif(Python3_EXECUTABLE)
      _kdforge_python_score("${Python3_EXECUTABLE}" _kdforge_py_given_score)
    endif()
    # a cached interpreter without NumPy (e.g. found by an earlier configure
    # for the layer check alone) is replaced by one with NumPy when there is one
    if(_kdforge_py_given_score LESS 1)
      set(_kdforge_py_best "")
      set(_kdforge_py_best_score 0)
      unset(_kdforge_py_path CACHE)
      find_program(_kdforge_py_path NAMES python3)
      set(_kdforge_py_candidates)
      if(_kdforge_py_path)
        list(APPEND _kdforge_py_candidates "${_kdforge_py_path}")
      endif()
      unset(_kdforge_py_path CACHE)
      list(APPEND _kdforge_py_candidates /usr/bin/python3)
      foreach(_exe IN LISTS _kdforge_py_candidates)
        if(EXISTS "${_exe}")
          _kdforge_python_score("${_exe}" _s)
          if(_s GREATER _kdforge_py_best_score)
            set(_kdforge_py_best "${_exe}")
            set(_kdforge_py_best_score ${_s})
          endif()
        endif()
      endforeach()
      if(_kdforge_py_best)
        if(Python3_EXECUTABLE AND NOT Python3_EXECUTABLE STREQUAL _kdforge_py_best)
          message(STATUS "kdforge: ${Python3_EXECUTABLE} has no NumPy; the Python module is built for ${_kdforge_py_best}")
        endif()
        set(Python3_EXECUTABLE "${_kdforge_py_best}" CACHE FILEPATH
            "The Python interpreter of the kdforge module and its tests (one with NumPy)" FORCE)
      endif()
    endif()
    if(Python3_EXECUTABLE)
      find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
    endif()
    if(NOT Python3_EXECUTABLE)
      set(KDFORGE_PYTHON_MISSING "no Python interpreter with NumPy (python3 on PATH, /usr/bin/python3); install python3-numpy or pass -DPython3_EXECUTABLE=")
    elseif(NOT Python3_FOUND OR NOT Python3_Development.Module_FOUND)
      set(KDFORGE_PYTHON_MISSING "the headers of ${Python3_EXECUTABLE} were not found (Debian: python3-dev)")
    else()
      _kdforge_python_score("${Python3_EXECUTABLE}" _s)
      if(_s LESS 1 AND NOT KDFORGE_PYTHON_INTERPRETER)
        set(KDFORGE_PYTHON_MISSING "${Python3_EXECUTABLE} has no NumPy (Debian: python3-numpy)")
      else()
        if(NOT pybind11_FOUND)
          find_package(pybind11 2.6 CONFIG QUIET)
        endif()
        if(NOT pybind11_FOUND)
          execute_process(COMMAND "${Python3_EXECUTABLE}" -m pybind11 --cmakedir OUTPUT_VARIABLE _kdforge_pb_dir
                          RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
          if(_rc EQUAL 0 AND EXISTS "${_kdforge_pb_dir}")
            set(pybind11_DIR "${_kdforge_pb_dir}" CACHE PATH "pybind11's CMake package" FORCE)
            find_package(pybind11 2.6 CONFIG QUIET)
          endif()
        endif()
        if(NOT pybind11_FOUND)
          set(KDFORGE_PYTHON_MISSING "pybind11 was not found (Debian: pybind11-dev; or pip's pybind11 for ${Python3_EXECUTABLE})")
        else()
          set(KDFORGE_PYTHON_FOUND ON)
        endif()
      endif()
    endif()
  endif()
endmacro()
