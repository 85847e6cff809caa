#!/bin/sh
# Run an RSM test program over the ofi transport with one libfabric
# provider, or skip (status 77) when this libfabric does not offer it.
#   ofi_run.sh PROBE PROVIDER PROGRAM [ARGS...]
# PROVIDER spells ';' as '+' (tcp+ofi_rxm), as a CMake list cannot hold it.
probe=$1
provider=$(printf '%s' "$2" | tr '+' ';')
shift 2
"$probe" "$provider" || exit $?
POSTBOX_OFI_PROVIDER=$provider
export POSTBOX_OFI_PROVIDER
exec "$@"
