"""The Spack recipe of Postbox, kept in Postbox's own repository.

    spack repo add <postbox clone>/packaging/spack
    spack install postbox@main            # or postbox@main +mpi, ~tests

``git`` is the clone this file is in (four directories up), so the recipe
builds the ``main`` branch of the repository it came with; a site that
mirrors Postbox elsewhere changes that one line.  docs/install.md explains
the variants and why ``mpi`` is provided only with ``+mpi``.
"""

from pathlib import Path

from spack.package import *  # noqa: F401,F403 (Spack's recipe API: version, depends_on, ...)

try:  # Spack 1.0 on: the build systems are classes of the builtin repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage, generator
except ImportError:  # Spack 0.x: spack.package has them
    pass


class Postbox(CMakePackage):
    """Postbox: remote shared memory (the RSM API) over shm and tcp
    transports, an MPI library on it with the MPI-5.0 standard ABI
    (libmpi_abi.so.1, mpi.h), its launcher (postbox run, also mpirun and
    mpiexec) and compiler wrapper (postbox-cc, also mpicc), and the
    postbox command (info, bench, report)."""

    git = "file://" + str(Path(__file__).resolve().parents[4])

    version("main", branch="main")

    # The test programs are most of the build; Spack's --test=root runs
    # them through CTest when they are built.
    variant("tests", default=False,
            description="Build the test programs (tests/) and register them with CTest")
    # Spack's mpi virtual stands for a complete MPI: dependents take
    # spec["mpi"].mpicxx and .mpifc, and many use MPI-IO.  Postbox has the C
    # API of the standard ABI with mpicc only: no C++ or Fortran wrappers,
    # no Fortran bindings, no MPI-IO (docs/mpi.md, Limits).  Providing mpi
    # unconditionally would let the concretizer choose it for packages it
    # cannot build; +mpi is the user's statement that the dependents at
    # hand are C programs of the ABI's functions.
    variant("mpi", default=False,
            description="Provide the mpi virtual package (C only: mpicc, no C++ or Fortran "
                        "wrappers, no MPI-IO) and install mpi.pc beside postbox.pc")
    provides("mpi@:5.0", when="+mpi")

    generator("ninja")

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("ninja", type="build")
    # build: the manual pages are generated from the commands' help; run:
    # the postbox command (and with it mpirun, mpiexec) is a Python program
    depends_on("python@3.9:", type=("build", "run"))

    # mpicc runs the compiler Postbox was built with, and build-info.json
    # names it: after the install, Spack's compiler wrappers there are
    # replaced by the compilers they stand for
    filter_compiler_wrappers("postbox-cc", relative_root="bin")
    filter_compiler_wrappers("build-info.json", relative_root="share/postbox")

    def cmake_args(self):
        return [
            # the interpreter of the installed postbox command (its #! line)
            self.define("POSTBOX_PYTHON", self.spec["python"].command.path),
            self.define_from_variant("POSTBOX_BUILD_TESTS", "tests"),
            self.define_from_variant("POSTBOX_INSTALL_MPI_PC", "mpi"),
        ]

    def setup_dependent_package(self, module, dependent_spec):
        # what a dependent's recipe reads from spec["mpi"]
        self.spec.mpicc = join_path(self.prefix.bin, "mpicc")

    def setup_dependent_build_environment(self, env, dependent_spec):
        env.set("MPICC", join_path(self.prefix.bin, "mpicc"))
