"""One version for the C library and the Python tools."""

import re

import pytest

from conftest import REPO
from postbox import __version__

pytestmark = pytest.mark.short


def test_python_version_matches_cmake_project():
    text = (REPO / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*postbox\s+VERSION\s+([0-9.]+)", text)
    assert match, "no project(postbox VERSION ...) in CMakeLists.txt"
    assert __version__ == match.group(1), (
        "python/postbox/__init__.py says %s, CMakeLists.txt says %s"
        % (__version__, match.group(1)))
