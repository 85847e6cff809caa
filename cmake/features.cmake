# Platform feature detection, in one place.  Each result is a PB_HAVE_*
# macro that is always defined to 0 or 1 (test it with #if, -Wundef catches
# typos) in the generated header postbox/config.h.
include(CheckSymbolExists)
include(CheckIncludeFile)

set(CMAKE_REQUIRED_DEFINITIONS -D_GNU_SOURCE)

check_symbol_exists(memfd_create "sys/mman.h" PB_HAVE_MEMFD_CREATE)
check_symbol_exists(SYS_futex_waitv "sys/syscall.h" PB_HAVE_FUTEX_WAITV)
check_symbol_exists(process_vm_readv "sys/uio.h" PB_HAVE_PROCESS_VM_READV)
check_include_file("linux/futex.h" PB_HAVE_LINUX_FUTEX_H)

if(NOT PB_HAVE_MEMFD_CREATE OR NOT PB_HAVE_LINUX_FUTEX_H)
  message(FATAL_ERROR "Postbox needs Linux with memfd_create and futex")
endif()

foreach(var PB_HAVE_MEMFD_CREATE PB_HAVE_FUTEX_WAITV PB_HAVE_PROCESS_VM_READV
            PB_HAVE_LINUX_FUTEX_H)
  if(${var})
    set(${var} 1)
  else()
    set(${var} 0)
  endif()
endforeach()

set(POSTBOX_CONFIG_DIR ${CMAKE_BINARY_DIR}/generated)
configure_file(${CMAKE_SOURCE_DIR}/cmake/config.h.in
               ${POSTBOX_CONFIG_DIR}/postbox/config.h)
