#!/bin/sh
# Run `pbt-mpi-spawn fatal` under MPICH's Hydra, a launcher that gives
# Postbox no universe of slots: MPI_Comm_spawn must end the job with a
# message that says so and names `postbox run --universe`.  PMI-1 only:
# Hydra's PMI-2 server knows no abort, and ends at once, losing the output
# (pbt-mpi-dynamic checks the error class under Hydra's PMI-2).  Exits 77
# (CTest: skipped) when mpiexec.hydra is not installed.
set -u
PROGRAM=$1
HYDRA=$(command -v mpiexec.hydra 2>/dev/null) || {
    echo "SKIP: mpiexec.hydra not found (apt-get install mpich)"
    exit 77
}
failed=0
for version in 1; do
    out=$(POSTBOX_PMI_VERSION=$version timeout 60 "$HYDRA" -n 2 "$PROGRAM" fatal 2>&1)
    status=$?
    if [ $status -ne 0 ] && printf '%s\n' "$out" |
        grep -q 'MPI_Comm_spawn: .*not `postbox run`.*`postbox run -n N --universe U`'; then
        echo "PASS pmi-$version"
    else
        echo "FAIL pmi-$version (status $status):"
        printf '%s\n' "$out"
        failed=1
    fi
done
exit $failed
