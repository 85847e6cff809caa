"""Postbox command-line tools.

The version below must equal the ``project(postbox VERSION ...)`` line of the
top-level CMakeLists.txt (tests/python/test_version.py checks it).
"""

__version__ = "0.1.0"
