#!/usr/bin/env bash
# expect.sh REGEX COMMAND [ARG...]: run COMMAND, showing its output as it
# comes; succeed only when it exits 0 and its output (stdout and stderr,
# trailing newlines dropped) matches the extended regular expression REGEX
# (bash's =~: ^ and $ anchor the whole output).  For CTest, which ignores
# the exit status of a test that has a PASS_REGULAR_EXPRESSION.
set -u -o pipefail
if [ $# -lt 2 ]; then
    echo "usage: expect.sh REGEX COMMAND [ARG...]" >&2
    exit 2
fi
regex=$1
shift
output=$("$@" 2>&1 | tee /dev/stderr)
status=$?
if [ $status -ne 0 ]; then
    echo "expect.sh: $1 exited with status $status" >&2
    exit 1
fi
if ! [[ $output =~ $regex ]]; then
    echo "expect.sh: the output of $1 does not match: $regex" >&2
    exit 1
fi
