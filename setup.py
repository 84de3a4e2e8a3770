"""The one thing pyproject.toml cannot say: the C row kernels (reasoning/native/_ckernels.c)
as an optional extension, built by setuptools at install time (a wheel, `pip install .` or
`pip install -e .`), never at import or run time.  Where no C compiler or Python headers
exist the install goes on without it and the numpy kernels stand in (one line says so)."""
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


setup(
    ext_modules=[Extension("reasoning.native._ckernels", ["reasoning/native/_ckernels.c"],
                           include_dirs=[_numpy_include()],
                           extra_compile_args=["-O3", "-std=c99"],
                           define_macros=[("HK_NAME", "_ckernels")],
                           optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
