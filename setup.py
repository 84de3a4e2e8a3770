"""The one thing pyproject.toml cannot say: the C row kernels (reasoning/native/_ckernels.c,
the module, and its units _ck_*.c) as an optional extension, built by setuptools at install
time (a wheel, `pip install .` or `pip install -e .`), never at import or run time.  Where
no C compiler or Python headers exist the install goes on without it and the numpy kernels
stand in (one line says so)."""
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed kernel build into one line instead of a failed install."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 (no compiler: distutils raises several kinds)
            self._notice(e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self._notice(e)

    @staticmethod
    def _notice(e):
        first = (str(e).strip().splitlines() or ["unknown error"])[0]
        print(f"hypo: the C kernels were not built ({first}); the numpy kernels stand in",
              file=sys.stderr)


def _numpy_include():
    import numpy

    return numpy.get_include()


# the module (method table, PyInit) and one unit a job; _ck_common.h is what they share
_NATIVE = "reasoning/native/"
_SOURCES = [_NATIVE + f for f in (
    "_ckernels.c", "_ck_arrays.c", "_ck_join.c", "_ck_hashindex.c", "_ck_scan.c",
    "_ck_format.c", "_ck_deadlines.c", "_ck_strsigs.c", "_ck_lines.c")]

setup(
    ext_modules=[Extension("reasoning.native._ckernels", _SOURCES,
                           depends=[_NATIVE + "_ck_common.h"],
                           include_dirs=[_numpy_include()],
                           extra_compile_args=["-O3", "-std=c99"],
                           define_macros=[("HK_NAME", "_ckernels")],
                           optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
