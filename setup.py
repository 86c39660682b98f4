"""Builds the compiled core: kernels/*.pyx -> fastsched.engine._kernels, fastsched.io._numscan (metadata is in pyproject.toml)."""
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(
        "fastsched.engine._kernels",
        ["kernels/_kernels.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
    ),
    Extension(
        "fastsched.io._numscan",
        ["kernels/_numscan.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
    ),
]

setup(ext_modules=cythonize(extensions, compiler_directives={"language_level": "3"}))
