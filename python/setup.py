"""Builds the `tessera._tessera` extension and the bundled CLI with the project's CMake.

Environment:
  TESSERA_CMAKE_BUILD_DIR  an already configured build directory (absolute path, configured with
                           -DTESSERA_PYTHON=ON) to build in and take the artifacts from, instead
                           of a fresh one under build/ here; CI uses its Release build this way.
  TESSERA_CMAKE_ARGS       extra arguments for the configure step (space separated).
  TESSERA_BUILD_JOBS       parallel compile jobs (default: the CPU count).
"""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parent  # the repository root (CMakeLists.txt)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        given = os.environ.get("TESSERA_CMAKE_BUILD_DIR")
        build_dir = pathlib.Path(given or HERE / "build" / "cmake").resolve()
        if given and not (build_dir / "CMakeCache.txt").exists():
            # pip runs this script from another directory: a relative path would silently start a
            # fresh full build somewhere else.
            raise SystemExit(f"TESSERA_CMAKE_BUILD_DIR={given}: no configured build there "
                             "(give an absolute path to a build configured with -DTESSERA_PYTHON=ON)")
        if not (build_dir / "CMakeCache.txt").exists():
            args = ["cmake", "-S", str(SOURCE), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                    "-DTESSERA_PYTHON=ON", "-DTESSERA_BUILD_TESTS=OFF", "-DTESSERA_BUILD_FUZZ=OFF",
                    "-DTESSERA_BUILD_BENCH=OFF", f"-DPython_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja"):
                args += ["-G", "Ninja"]
            args += os.environ.get("TESSERA_CMAKE_ARGS", "").split()
            subprocess.run(args, check=True)
        jobs = os.environ.get("TESSERA_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_tessera", "-j", jobs], check=True)
        package = build_dir / "python" / "tessera"
        built = next(package.glob("_tessera*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)
        cli = target.parent / "_bin" / "tessera"
        cli.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(package / "_bin" / "tessera", cli)


setup(ext_modules=[CMakeExtension("tessera._tessera")], cmdclass={"build_ext": CMakeBuild})
