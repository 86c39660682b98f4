"""Builds the compiled core: kernels/*.pyx -> fastsched.engine._kernels (the counts
model's loop) and fastsched.io._numscan (the SWF tokenizer); metadata is in
pyproject.toml."""
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup


def _extension(name: str, source: str) -> Extension:
    return Extension(name, [source], include_dirs=[numpy.get_include()],
                     define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                     extra_compile_args=["-O3"])


extensions = [_extension("fastsched.engine._kernels", "kernels/_kernels.pyx"),
              _extension("fastsched.io._numscan", "kernels/_numscan.pyx")]

setup(ext_modules=cythonize(extensions, compiler_directives={"language_level": "3"}))
