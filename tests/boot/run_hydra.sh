#!/bin/sh
# Run postbox-job-view under MPICH's Hydra in every PMI mode Postbox speaks:
# PMI-1 and PMI-2, each over PMI_FD (the default) and PMI_PORT+PMI_ID
# (-pmi-port), then two virtual nodes (POSTBOX_VNODE per rank group), then
# a POSTBOX_JOB_SECRET left in the environment (not used: a fresh one is made).
# Exits 77 (CTest: skipped) when mpiexec.hydra is not installed (Debian
# package: mpich).
set -u
VIEW=$1
HYDRA=$(command -v mpiexec.hydra 2>/dev/null) || {
    echo "SKIP: mpiexec.hydra not found (apt-get install mpich)"
    exit 77
}
failed=0

# check OUTPUT SIZE NODES: SIZE lines, ranks 0..SIZE-1 once each, one job id
check() {
    out=$1 size=$2 nodes=$3 what=$4
    n=$(printf '%s\n' "$out" | grep -c "^rank [0-9]* size $size node [0-9]* nodes $nodes name .* job pmi-")
    ranks=$(printf '%s\n' "$out" | sed -n 's/^rank \([0-9]*\) .*/\1/p' | sort -n | tr '\n' ' ')
    jobs=$(printf '%s\n' "$out" | sed -n 's/.* job \(.*\)$/\1/p' | sort -u | wc -l)
    want=$(seq 0 $((size - 1)) | tr '\n' ' ')
    if [ "$n" -ne "$size" ] || [ "$ranks" != "$want" ] || [ "$jobs" -ne 1 ]; then
        echo "FAIL $what:"
        printf '%s\n' "$out"
        failed=1
    else
        echo "PASS $what"
    fi
}

for version in 1 2; do
    for mode in fd port; do
        flag=
        [ $mode = port ] && flag=-pmi-port
        out=$(POSTBOX_PMI_VERSION=$version timeout 30 "$HYDRA" $flag -n 4 "$VIEW" 2>&1)
        check "$out" 4 1 "pmi-$version $mode"
    done
done

out=$(timeout 30 "$HYDRA" -n 2 -env POSTBOX_VNODE 0 "$VIEW" : -n 2 -env POSTBOX_VNODE 1 "$VIEW" 2>&1)
check "$out" 4 2 "two virtual nodes"
if ! printf '%s\n' "$out" | grep -q "^rank 3 size 4 node 1 nodes 2 name [^ ]*/1 local 2,3 "; then
    echo "FAIL two virtual nodes: rank 3 is not on node 1 with ranks 2,3"
    failed=1
fi
# a secret in the user's environment is not the job's: each job makes its own
out=$(POSTBOX_JOB_SECRET=00112233445566778899aabbccddeeff timeout 30 "$HYDRA" -n 2 "$VIEW" 2>&1)
check "$out" 2 1 "an inherited POSTBOX_JOB_SECRET"
if [ "$(printf '%s\n' "$out" | grep -c "ignoring POSTBOX_JOB_SECRET from the environment")" -ne 1 ]; then
    echo "FAIL an inherited POSTBOX_JOB_SECRET: rank 0 did not say it makes a fresh secret"
    printf '%s\n' "$out"
    failed=1
fi
exit $failed
