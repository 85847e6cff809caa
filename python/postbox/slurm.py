"""``postbox run`` inside a Slurm allocation (salloc, sbatch): the job runs
as a step of the allocation, through srun, which starts the tasks and serves
them PMI-2 itself (docs/launch.md).  POSTBOX_LAUNCHER=local runs the job on
this host instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from typing import List, Optional

from postbox.launchopts import (EXIT_CANNOT_EXECUTE, EXIT_TIMEOUT, EXIT_USAGE,
                                FORWARDED_SIGNALS, RESERVED, SCRUBBED, Options)


def slurm_allocation(opts: Options) -> Optional[str]:
    """The Slurm job id when this launcher runs inside an allocation (salloc,
    sbatch) and the job is to go through srun: no hosts, virtual nodes or
    universe asked for, and POSTBOX_LAUNCHER is not "local"; else None."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job or os.environ.get("POSTBOX_LAUNCHER", "") == "local":
        return None
    if opts.hosts or opts.nodes > 1 or opts.netns or opts.universe is not None:
        return None
    return job


def srun_argv(opts: Options, srun: str) -> List[str]:
    """The srun command that runs the job of @opts as a step of the
    allocation: PMI-2 (Postbox's client speaks it to slurmstepd), the step
    ended when a task fails, output labelled like --tag-output."""
    argv = [srun, "--mpi=pmi2", "--ntasks=%d" % opts.size, "--kill-on-bad-exit=1",
            "--export=ALL"]
    if opts.tag_output:
        argv.append("--label")
    return argv + [opts.program] + list(opts.args)


def run_under_srun(opts: Options, job: str, prog: str) -> int:
    """Run the job as a step of Slurm job @job; srun's exit status, 124 after
    --timeout, 128+signal when the launcher was signalled."""
    srun = shutil.which("srun")
    if srun is None:
        print("%s: inside Slurm allocation %s but srun is not on PATH (POSTBOX_LAUNCHER=local "
              "runs the job on this host instead)" % (prog, job), file=sys.stderr)
        return EXIT_USAGE
    env = dict(os.environ)
    for name in SCRUBBED + RESERVED:
        env.pop(name, None)
    env.update(dict(opts.env))
    argv = srun_argv(opts, srun)
    signals: List[int] = []
    old = {signum: signal.signal(signum, lambda s, f: signals.append(s))
           for signum in FORWARDED_SIGNALS}
    try:
        step = subprocess.Popen(argv, env=env)
        deadline = None if opts.timeout is None else time.monotonic() + opts.timeout
        code: Optional[int] = None
        while step.poll() is None:
            if signals:
                code = 128 + signals[0]
                step.send_signal(signal.SIGTERM)   # srun cancels the step
                signals.clear()
            if deadline is not None and time.monotonic() >= deadline:
                print("%s: the job did not finish within %g s (--timeout); cancelling the "
                      "step" % (prog, opts.timeout), file=sys.stderr)
                code, deadline = EXIT_TIMEOUT, None
                step.send_signal(signal.SIGTERM)
            try:
                step.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
        status = step.returncode if step.returncode >= 0 else 128 - step.returncode
        if status != 0 and code is None:
            print("%s: the job step of Slurm job %s ended with status %d (srun's messages "
                  "above name the task)" % (prog, job, status), file=sys.stderr)
        return code if code is not None else status
    except OSError as exc:
        print("%s: cannot start %s: %s" % (prog, srun, exc.strerror or exc), file=sys.stderr)
        return EXIT_CANNOT_EXECUTE
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
