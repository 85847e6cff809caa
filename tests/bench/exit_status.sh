#!/usr/bin/env bash
# exit_status.sh N COMMAND [ARG...]: run COMMAND, its output passed through;
# succeed (exit 0) only when it exits with status N.  For a program whose
# expected outcome is a given non-zero status, under expect.sh.
set -u
if [ $# -lt 2 ]; then
    echo "usage: exit_status.sh N COMMAND [ARG...]" >&2
    exit 2
fi
want=$1
shift
"$@"
status=$?
if [ "$status" -ne "$want" ]; then
    echo "exit_status.sh: $1 exited with status $status, not $want" >&2
    exit 1
fi
