#!/bin/sh
# Run a command across `postbox run --netns` virtual nodes over the ofi
# transport with one libfabric provider, or skip (status 77): --netns
# needs root and iproute2's `ip`; ofi_run.sh skips when this libfabric
# lacks the provider.
#   ofi_netns_run.sh PROBE PROVIDER COMMAND [ARGS...]
if [ "$(id -u)" != 0 ]; then
    echo "--netns needs root: skipped"
    exit 77
fi
if ! command -v ip >/dev/null 2>&1; then
    echo "--netns needs iproute2's ip: skipped"
    exit 77
fi
exec "$(dirname "$0")/ofi_run.sh" "$@"
