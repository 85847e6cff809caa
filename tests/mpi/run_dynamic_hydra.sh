#!/bin/sh
# Run pbt-mpi-dynamic (ports, accept/connect, the name service, join) under
# MPICH's Hydra, a foreign launcher, with PMI-1 and PMI-2: Hydra serves the
# name service itself.  Exits 77 (CTest: skipped) when mpiexec.hydra is not
# installed (Debian package: mpich).
set -u
PROGRAM=$1
HYDRA=$(command -v mpiexec.hydra 2>/dev/null) || {
    echo "SKIP: mpiexec.hydra not found (apt-get install mpich)"
    exit 77
}
failed=0
for version in 1 2; do
    out=$(POSTBOX_PMI_VERSION=$version timeout 60 "$HYDRA" -n 3 "$PROGRAM" 2>&1)
    if printf '%s\n' "$out" | grep -q '^dynamic: ok$'; then
        echo "PASS pmi-$version"
    else
        echo "FAIL pmi-$version:"
        printf '%s\n' "$out"
        failed=1
    fi
done
exit $failed
