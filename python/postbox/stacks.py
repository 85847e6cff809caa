"""Where a hung job's ranks stand: the processes of a rank's process group
and the stacks of their threads, read with gdb (``postbox run
--timeout-stacks``, docs/launch.md)."""

from __future__ import annotations

import os
import subprocess
from typing import List

GDB_SECONDS = 30  # the longest one process's stacks may take


def group_pids(pgid: int) -> List[int]:
    """The processes of process group @pgid (read from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # after the command's closing parenthesis: state, ppid, pgrp
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            pids.append(int(entry))
    return sorted(pids)


def thread_stacks(gdb: str, pid: int) -> List[str]:
    """The "Thread ..." and "#n ..." lines of every thread's stack of
    process @pid; raises subprocess.TimeoutExpired after GDB_SECONDS."""
    out = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt 30"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=GDB_SECONDS).stdout
    return [line for line in out.decode("utf-8", "replace").splitlines()
            if line.startswith(("#", "Thread "))]
