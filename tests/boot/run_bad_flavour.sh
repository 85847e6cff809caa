#!/bin/sh
# A process whose PMI flavour cannot be had ends with a message saying why
# and a plain error status, never a crash, whether it joins the job through
# postbox_job_init (VIEW) or MPI_Init (MPI):
#   run_bad_flavour.sh VIEW MPI
# (the environment names no launcher: POSTBOX_PMI=pmix finds no PMIx server
# variables, POSTBOX_PMI=bogus is no flavour)
set -u
failed=0
unset PMI_FD PMI_PORT PMIX_NAMESPACE PMIX_RANK
for program in "$1" "$2"; do
    for case in "bogus:POSTBOX_PMI='bogus': use pmi1, pmi2 or pmix" \
                "pmix:POSTBOX_PMI=pmix, but the launcher set no PMIX_NAMESPACE"; do
        value=${case%%:*} want=${case#*:}
        out=$(POSTBOX_PMI=$value timeout 30 "$program" 2>&1)
        status=$?
        if [ $status -eq 0 ] || [ $status -ge 124 ]; then
            echo "FAIL POSTBOX_PMI=$value $program: exit status $status (a crash or none)"
            printf '%s\n' "$out"
            failed=1
        elif ! printf '%s\n' "$out" | grep -qF "$want"; then
            echo "FAIL POSTBOX_PMI=$value $program: the output does not say \"$want\""
            printf '%s\n' "$out"
            failed=1
        else
            echo "PASS POSTBOX_PMI=$value $(basename "$program") (status $status)"
        fi
    done
done
exit $failed
