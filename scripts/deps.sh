#!/usr/bin/env bash
# Check the tools Postbox builds with; install them on Debian when we can.
#
#   scripts/deps.sh [PYTHON]
#
# Needs: cmake >= 3.18, a C compiler, python3 >= 3.9 that can make a venv
# with pip (Debian: python3-venv).  Ninja is used when present.  When
# something is missing and we are root on a system with apt-get, installs
# the Debian packages; otherwise prints what to install and exits 1.
set -euo pipefail

PYTHON=${1:-python3}
PACKAGES="build-essential cmake ninja-build python3 python3-venv python3-pip clang-format"
# optional: libfabric (the ofi transport is built when pkg-config finds it)
# and libpmix-dev (the PMIx client; without it the build leaves it out)
OPTIONAL_PACKAGES="pkg-config libfabric-dev libpmix-dev"
missing=()

have() { command -v "$1" >/dev/null 2>&1; }

check_cmake() {
    have cmake || return 1
    local version
    version=$(cmake --version | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p')
    [ -n "$version" ] || return 1
    # 3.18 or newer: 3.18 sorts first
    [ "$(printf '3.18\n%s\n' "$version" | sort -V | head -n1)" = "3.18" ]
}

check_cc() {
    local cc=${CC:-cc}
    have "$cc" || have gcc || have clang
}

check_make() { have make; }

# python3 >= 3.9 able to create a venv with pip (Debian splits ensurepip out)
check_python() {
    have "$PYTHON" || return 1
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || return 1
    local tmp
    tmp=$(mktemp -d)
    if "$PYTHON" -m venv "$tmp/venv" >/dev/null 2>&1 && "$tmp/venv/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$tmp"
        return 0
    fi
    rm -rf "$tmp"
    return 1
}

check_all() {
    missing=()
    check_cmake || missing+=("cmake (3.18 or newer)")
    check_cc || missing+=("a C compiler (gcc or clang)")
    check_make || missing+=("make")
    check_python || missing+=("$PYTHON (3.9 or newer, with the venv module and pip)")
}

# The optional packages: installed when we can, else named; never fatal.
check_optional() {
    if have pkg-config && pkg-config --exists libfabric && [ -e /usr/include/pmix.h -o -d /usr/lib/x86_64-linux-gnu/pmix2/include ]; then
        return 0
    fi
    if [ "$(id -u)" = 0 ] && have apt-get; then
        echo "deps: installing the optional Debian packages: $OPTIONAL_PACKAGES"
        # shellcheck disable=SC2086
        if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $OPTIONAL_PACKAGES; then
            return 0
        fi
    fi
    echo "deps: libfabric or PMIx not found: the ofi transport or the PMIx client will not be built (apt-get install $OPTIONAL_PACKAGES)"
}

check_all
check_optional
if [ ${#missing[@]} -eq 0 ]; then
    have ninja || echo "deps: ninja not found; building with make (apt-get install ninja-build for faster builds)"
    echo "deps: ok (cmake, C compiler, $PYTHON with venv)"
    exit 0
fi

printf 'deps: missing: %s\n' "${missing[@]}" >&2
if [ "$(id -u)" = 0 ] && have apt-get; then
    echo "deps: installing Debian packages: $PACKAGES"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $PACKAGES
    check_all
    if [ ${#missing[@]} -eq 0 ]; then
        echo "deps: ok"
        exit 0
    fi
    printf 'deps: still missing after apt-get: %s\n' "${missing[@]}" >&2
    exit 1
fi

cat >&2 <<MSG
deps: Postbox cannot be built until these are installed.
  On Debian or Ubuntu, as root:
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES
  Elsewhere: cmake >= 3.18, a C11 compiler, make, ninja (optional) and
  python3 >= 3.9 with the venv module and pip.
MSG
exit 1
