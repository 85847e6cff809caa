#!/bin/sh
# ofi_not_linked.sh LIBRARY: LIBRARY (libpostbox) neither needs libfabric
# nor leaves a libfabric function for the dynamic linker to find; the ofi
# transport loads it with dlopen (src/rsm/ofi/lib.c).
lib=$1
needed=$(readelf -d "$lib") || exit 1
if printf '%s\n' "$needed" | grep -i 'NEEDED.*libfabric'; then
    echo "FAIL: $lib needs libfabric"
    exit 1
fi
undefined=$(nm -D --undefined-only "$lib") || exit 1
if printf '%s\n' "$undefined" | grep -E '[[:space:]]fi_[a-z_]+'; then
    echo "FAIL: $lib leaves the libfabric functions above undefined"
    exit 1
fi
echo "ok: $lib neither needs libfabric nor calls it directly"
