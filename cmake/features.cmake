# Platform feature detection, in one place.  Postbox needs every feature
# checked here: a missing one stops the configuration.  An optional feature
# would become a PB_HAVE_* macro always defined to 0 or 1 (tested with #if,
# -Wundef catches typos) in the generated header postbox/build.h, which
# today holds the version only.
include(CheckSymbolExists)
include(CheckIncludeFile)

set(CMAKE_REQUIRED_DEFINITIONS -D_GNU_SOURCE)

check_symbol_exists(memfd_create "sys/mman.h" PB_HAVE_MEMFD_CREATE)
check_symbol_exists(SYS_futex_waitv "sys/syscall.h" PB_HAVE_FUTEX_WAITV)
check_include_file("linux/futex.h" PB_HAVE_LINUX_FUTEX_H)

# futex_waitv (Linux 5.16 headers): rsm_intr_signal_wait_pollfd waits on
# several event words at once
if(NOT PB_HAVE_MEMFD_CREATE OR NOT PB_HAVE_LINUX_FUTEX_H OR NOT PB_HAVE_FUTEX_WAITV)
  message(FATAL_ERROR "Postbox needs Linux with memfd_create, futex and futex_waitv")
endif()

# libfabric (Debian libfabric-dev), optional: the ofi transport is built
# when pkg-config finds it
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(LIBFABRIC QUIET IMPORTED_TARGET libfabric)
endif()
if(LIBFABRIC_FOUND)
  set(PB_HAVE_OFI 1)
  message(STATUS "ofi transport: built (libfabric ${LIBFABRIC_VERSION})")
else()
  set(PB_HAVE_OFI 0)
  message(STATUS "ofi transport: not built (libfabric-dev missing)")
endif()

set(POSTBOX_CONFIG_DIR ${CMAKE_BINARY_DIR}/generated)
configure_file(${CMAKE_SOURCE_DIR}/cmake/build.h.in
               ${POSTBOX_CONFIG_DIR}/postbox/build.h)
