# Installing Postbox, and the files other builds use to find it.
#
#   cmake --install <build> --prefix <dir>   puts into <dir>:
#     lib/libmpi_abi.so.1, lib/libpostbox.so.0   (and their .so links)
#     include/mpi.h, include/postbox/*.h
#     bin/postbox-cc, bin/mpicc, bin/postbox, bin/mpirun, bin/mpiexec,
#     lib/postbox/python/, libexec/postbox/, share/postbox/build-info.json,
#     share/man/man1/, share/modulefiles/postbox/ (tools/CMakeLists.txt)
#     lib/pkgconfig/postbox.pc                   pkg-config --cflags --libs postbox
#     lib/pkgconfig/mpi.pc                       the same, with POSTBOX_INSTALL_MPI_PC=ON
#     lib/cmake/Postbox/                         find_package(Postbox): Postbox::mpi
#                                                (and Postbox::postbox, the RSM API)
#
# The build tree has the same two files at the same places, so a build can
# use Postbox without installing it: PKG_CONFIG_PATH=<build>/lib/pkgconfig,
# or CMAKE_PREFIX_PATH=<build> (or Postbox_DIR=<build>/lib/cmake/Postbox).
# postbox.pc describes the MPI library only; docs/mpi.md says why it is not
# called mpi.pc.

include(CMakePackageConfigHelpers)

set(PB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Postbox)
set(PB_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS postbox postbox_mpi EXPORT PostboxTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/postbox DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- pkg-config: postbox.pc ------------------------------------------------

set(PB_PC_EXTRA_LIBS "")
if(POSTBOX_SANITIZE)
  set(PB_PC_EXTRA_LIBS " -fsanitize=address,undefined")
endif()

# in the build tree: absolute paths to the source headers and built libraries
set(PB_PC_PREFIX ${CMAKE_BINARY_DIR})
set(PB_PC_INCLUDEDIR ${CMAKE_SOURCE_DIR}/include)
set(PB_PC_LIBDIR ${CMAKE_BINARY_DIR}/lib)
configure_file(${CMAKE_SOURCE_DIR}/cmake/postbox.pc.in
               ${CMAKE_BINARY_DIR}/lib/pkgconfig/postbox.pc @ONLY)

# installed: relative to the .pc file itself, so the prefix can move
file(RELATIVE_PATH pb_pc_to_prefix "/prefix/${PB_PKGCONFIG_DIR}" "/prefix")
string(REGEX REPLACE "/$" "" pb_pc_to_prefix "${pb_pc_to_prefix}")
set(PB_PC_PREFIX "\${pcfiledir}/${pb_pc_to_prefix}")
set(PB_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
set(PB_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/postbox.pc.in
               ${CMAKE_BINARY_DIR}/package/postbox.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/postbox.pc DESTINATION ${PB_PKGCONFIG_DIR})

# mpi.pc: the same file under the name build systems ask pkg-config for
# ("mpi"), for a prefix that is Postbox's own (an HPC module, a Spack
# prefix).  Off by default: in a shared prefix (/usr/local) that name may be
# another MPI's (Debian's mpi alternative), and docs/mpi.md says why
# postbox.pc is not called mpi.pc.
option(POSTBOX_INSTALL_MPI_PC "Also install postbox.pc as lib/pkgconfig/mpi.pc" OFF)
if(POSTBOX_INSTALL_MPI_PC)
  install(FILES ${CMAKE_BINARY_DIR}/package/postbox.pc DESTINATION ${PB_PKGCONFIG_DIR}
          RENAME mpi.pc)
endif()

# ---- CMake: find_package(Postbox) ------------------------------------------

configure_file(${CMAKE_SOURCE_DIR}/cmake/PostboxConfig.cmake.in
               ${CMAKE_BINARY_DIR}/${PB_CMAKE_DIR}/PostboxConfig.cmake @ONLY)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/${PB_CMAKE_DIR}/PostboxConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
export(EXPORT PostboxTargets NAMESPACE Postbox::
       FILE ${CMAKE_BINARY_DIR}/${PB_CMAKE_DIR}/PostboxTargets.cmake)

install(EXPORT PostboxTargets NAMESPACE Postbox:: DESTINATION ${PB_CMAKE_DIR})
install(FILES ${CMAKE_BINARY_DIR}/${PB_CMAKE_DIR}/PostboxConfig.cmake
              ${CMAKE_BINARY_DIR}/${PB_CMAKE_DIR}/PostboxConfigVersion.cmake
        DESTINATION ${PB_CMAKE_DIR})
