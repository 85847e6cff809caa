"""Every exported MPI function takes the library lock of MPI_THREAD_MULTIPLE
(PB_MPI_THREAD_GUARD, src/mpi/engine/lock.h) as its first statement, but
the few that read no state another thread may change.  A function written
without it would race with the other threads' calls: this fails instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.short

SRC = Path(__file__).resolve().parents[2] / "src" / "mpi"

# read nothing another thread changes: the clock, constants, the life
# cycle's flags, and the lock-free handle registry's conversions
UNGUARDED = re.compile(
    r"PMPI_(Wtime|Wtick|Get_version|Get_library_version|Abi_get_version|Initialized|"
    r"Finalized|Query_thread|Is_thread_main|Aint_add|Aint_diff|\w+_toint|\w+_fromint)$")


def _exported() -> list[tuple[str, str, str]]:
    """(file, function, its first line) of every exported definition."""
    found = []
    for path in sorted(SRC.glob("*.c")):
        text = path.read_text()
        for m in re.finditer(r"^PB_EXPORT [^;{]*?\b(PMPI_\w+)\([^;{]*?\)\n\{\n([^\n]*)",
                             text, re.MULTILINE):
            found.append((path.name, m.group(1), m.group(2).strip()))
    return found


def test_every_exported_function_takes_the_guard():
    exported = _exported()
    assert len(exported) > 500, "found only %d exported functions" % len(exported)
    missing = [f"{file}: {name}" for file, name, first in exported
               if not UNGUARDED.match(name) and first != "PB_MPI_THREAD_GUARD;"]
    assert not missing, "without PB_MPI_THREAD_GUARD first:\n" + "\n".join(missing)


def test_the_unguarded_ones_take_no_guard():
    # the exceptions are deliberate: guarding them would only add contention
    extra = [f"{file}: {name}" for file, name, first in _exported()
             if UNGUARDED.match(name) and first == "PB_MPI_THREAD_GUARD;"]
    assert not extra, "guarded, yet listed as reading no shared state:\n" + "\n".join(extra)
