"""The one native part: pt-query-digest's fingerprint rules in C (perflab digest). The rest of
the project's metadata is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("perflab.digest._fingerprint",
                             ["src/perflab/digest/_fingerprint.c"],
                             extra_compile_args=["-O2"])])
