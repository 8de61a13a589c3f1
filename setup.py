"""Builds kdforge's Python module with CMake (pyproject.toml; python/README.md).

Environment:
  KDFORGE_BACKEND      OpenMP (default), Serial, Threads or Cuda
  KDFORGE_CMAKE_ARGS   more configure arguments, e.g. "-DKokkos_ROOT=/opt/kokkos -DKDFORGE_PYTHON_DIMENSIONS=2;3;4"
  KDFORGE_BUILD_DIR    the CMake build tree (default: build-pip beside this file, kept for later builds)
  KDFORGE_BUILD_JOBS   parallel compile jobs (default: all cores)
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    text = open(os.path.join(ROOT, "base/include/kdforge/base/version.hpp")).read()
    parts = [re.search(rf"#define KDFORGE_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("KDFORGE_BUILD_DIR") or os.path.join(ROOT, "build-pip")
        jobs = os.environ.get("KDFORGE_BUILD_JOBS") or str(os.cpu_count() or 2)
        args = [
            f"-DKDFORGE_BACKEND={os.environ.get('KDFORGE_BACKEND', 'OpenMP')}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DKDFORGE_ENABLE_PYTHON=ON",
            f"-DKDFORGE_PYTHON_INTERPRETER={sys.executable}",
            "-DKDFORGE_ENABLE_TESTS=OFF",
            "-DKDFORGE_ENABLE_PERF=OFF",
            "-DKDFORGE_ENABLE_EXAMPLES=OFF",
        ]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("KDFORGE_CMAKE_ARGS", ""))
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build] + args)
        subprocess.check_call(["cmake", "--build", build, "--target", "kdforge_python", "--parallel", jobs])
        built = glob.glob(os.path.join(build, "python", "kdforge", "_kdforge*"))
        if len(built) != 1:
            raise RuntimeError(f"kdforge: expected one module in {build}/python/kdforge, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(version=version(), ext_modules=[Extension("kdforge._kdforge", sources=[])], cmdclass={"build_ext": CMakeBuild})
