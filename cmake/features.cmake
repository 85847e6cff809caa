# Platform feature detection, in one place.  Postbox needs every feature
# checked here but the optional ones: a missing one stops the
# configuration.  An optional feature becomes a PB_HAVE_* macro always
# defined to 0 or 1 (tested with #if, -Wundef catches typos) in the
# generated header postbox/build.h, which holds the version and
# PB_HAVE_PMIX.
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

# PMIx (optional): the PMIx flavour of the boot layer's PMI client needs
# pmix.h at build time (Debian: libpmix-dev); the library itself is loaded
# with dlopen when a PMIx launcher starts the process (src/boot/pmix.c
# says why).  Without the header the flavour is not built, and a process
# under a PMIx launcher says so.
option(POSTBOX_PMIX "Build the PMIx client when pmix.h is found" ON)
set(PB_HAVE_PMIX 0)
if(POSTBOX_PMIX)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(PB_PMIX QUIET pmix)
  endif()
  find_path(PB_PMIX_INCLUDE_DIR pmix.h HINTS ${PB_PMIX_INCLUDE_DIRS}
            PATH_SUFFIXES pmix2/include ${CMAKE_LIBRARY_ARCHITECTURE}/pmix2/include)
  if(PB_PMIX_INCLUDE_DIR)
    set(PB_HAVE_PMIX 1)
    message(STATUS "PMIx client: built (pmix.h in ${PB_PMIX_INCLUDE_DIR}; libpmix.so.2 loaded at run time)")
  else()
    message(STATUS "PMIx client: not built (no pmix.h: apt-get install libpmix-dev)")
  endif()
endif()
# pb_target_add_pmix(TARGET): compile the PMIx client (src/boot/pmix.c)
# into TARGET, which also compiles src/boot/pmi.c and pmi_join.c
function(pb_target_add_pmix target)
  target_sources(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src/boot/pmix.c)
  target_include_directories(${target} PRIVATE ${POSTBOX_CONFIG_DIR})
  if(PB_HAVE_PMIX)
    target_include_directories(${target} PRIVATE ${PB_PMIX_INCLUDE_DIR})
  endif()
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
endfunction()
# libfabric (Debian libfabric-dev), optional: the ofi transport is built
# when pkg-config finds it (its headers; libfabric.so.1 is loaded at run
# time, by the first process that asks for the ofi controller)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(LIBFABRIC QUIET IMPORTED_TARGET libfabric)
endif()
if(LIBFABRIC_FOUND)
  set(PB_HAVE_OFI 1)
  message(STATUS "ofi transport: built (libfabric ${LIBFABRIC_VERSION} headers; libfabric.so.1 loaded at run time)")
else()
  set(PB_HAVE_OFI 0)
  message(STATUS "ofi transport: not built (libfabric-dev missing)")
endif()

set(POSTBOX_CONFIG_DIR ${CMAKE_BINARY_DIR}/generated)
configure_file(${CMAKE_SOURCE_DIR}/cmake/build.h.in
               ${POSTBOX_CONFIG_DIR}/postbox/build.h)
