"""Where the programs and files the tool uses are.

The tool runs in one of two places:

- **the source tree**: the package is ``<repo>/python/postbox`` (``make``
  installs it, editable, into ``build/venv``), so the repository root is two
  levels above this directory and the build tree is ``<repo>/build``;
- **an install prefix** (``cmake --install``): the package is
  ``<prefix>/lib/postbox/python/postbox`` and carries ``_installed.py``,
  written at install time, which says where the prefix is relative to the
  package and where each part of it is.  The prefix is found from this
  file's own location, so a moved prefix still works.

``POSTBOX_BUILD_DIR`` names a build tree to use instead of either (its
programs are in ``$POSTBOX_BUILD_DIR/bin``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

try:
    from postbox import _installed
except ImportError:  # the source tree: no _installed.py
    _installed = None

BUILD_DIR_VARIABLE = "POSTBOX_BUILD_DIR"


class MissingProgram(Exception):
    """A program of the build tree (or of the prefix) is not there."""


def installed_prefix() -> Optional[Path]:
    """The install prefix this package is part of; None when it runs from
    the source tree, or when POSTBOX_BUILD_DIR names a build tree."""
    if _installed is None or os.environ.get(BUILD_DIR_VARIABLE):
        return None
    return (Path(__file__).resolve().parent / _installed.PREFIX_FROM_PACKAGE).resolve()


def _in_prefix(directory: str) -> Path:
    prefix = installed_prefix()
    assert prefix is not None
    return prefix / directory


def repo_root() -> Path:
    """The source tree this package is in (meaningless for an installed one)."""
    return Path(__file__).resolve().parent.parent.parent


def build_dir() -> Path:
    """$POSTBOX_BUILD_DIR, else the source tree's build/."""
    override = os.environ.get(BUILD_DIR_VARIABLE)
    if override:
        return Path(override).resolve()
    return repo_root() / "build"


def bin_dir() -> Path:
    """The directory of the user's programs: build/bin, or the prefix's bin."""
    if installed_prefix() is not None:
        return _in_prefix(_installed.BINDIR)
    return build_dir() / "bin"


def lib_dir() -> Path:
    """The directory of libpostbox and libmpi_abi."""
    if installed_prefix() is not None:
        return _in_prefix(_installed.LIBDIR)
    return build_dir() / "lib"


def data_dir() -> Path:
    """The directory of build-info.json: share/postbox of the build tree or
    of the prefix."""
    if installed_prefix() is not None:
        return _in_prefix(_installed.DATADIR)
    return build_dir() / "share" / "postbox"


def _program_dirs() -> list[Path]:
    if installed_prefix() is not None:
        # the tool's helpers (postbox-config-dump, ...) are in libexec/postbox
        return [_in_prefix(_installed.HELPERDIR), bin_dir()]
    return [bin_dir()]


def program(name: str) -> Path:
    """The path of program @name (build/bin, or the prefix's helper and bin
    directories); MissingProgram if it is not there."""
    dirs = _program_dirs()
    for directory in dirs:
        path = directory / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    if installed_prefix() is not None:
        hint = "not installed in %s; it is a program of the build tree (set %s)" % (
            installed_prefix(), BUILD_DIR_VARIABLE)
    elif os.environ.get(BUILD_DIR_VARIABLE):
        hint = "check %s=%s" % (BUILD_DIR_VARIABLE, os.environ[BUILD_DIR_VARIABLE])
    else:
        hint = "run `make` at the top of the repository"
    raise MissingProgram("%s not found (%s)" % (dirs[0] / name, hint))
