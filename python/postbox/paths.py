"""Where the build tree and its programs are.

The package lives in ``<repo>/python/postbox``, so the repository root is two
levels above this directory and the build tree is ``<repo>/build``.
``POSTBOX_BUILD_DIR`` overrides the build tree (its programs are in
``$POSTBOX_BUILD_DIR/bin``).
"""

from __future__ import annotations

import os
from pathlib import Path

BUILD_DIR_VARIABLE = "POSTBOX_BUILD_DIR"


class MissingProgram(Exception):
    """A program of the build tree is not there (the build has not run)."""


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent.parent


def build_dir() -> Path:
    override = os.environ.get(BUILD_DIR_VARIABLE)
    if override:
        return Path(override).resolve()
    return repo_root() / "build"


def bin_dir() -> Path:
    return build_dir() / "bin"


def program(name: str) -> Path:
    """The path of build/bin/@name; MissingProgram if it is not built."""
    path = bin_dir() / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        hint = "run `make` at the top of the repository"
        if os.environ.get(BUILD_DIR_VARIABLE):
            hint = "check %s=%s" % (BUILD_DIR_VARIABLE, os.environ[BUILD_DIR_VARIABLE])
        raise MissingProgram("%s not found (%s)" % (path, hint))
    return path
