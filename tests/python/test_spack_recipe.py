"""The Spack recipe, packaging/spack/packages/postbox/package.py, without
Spack: it compiles; run against a stand-in for Spack's recipe API (the
directives record what they are given) it declares class Postbox, a
CMakePackage with version main from the git branch main of the clone it is
in, the variants tests and mpi, mpi provided only with +mpi, the build
dependencies (c, cmake, ninja) and Python at build and run time, mpicc
freed of Spack's compiler wrappers; and its cmake_args name CMake options
the project has."""

from __future__ import annotations

import ast
import py_compile
import re
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
RECIPE = REPO / "packaging" / "spack" / "packages" / "postbox" / "package.py"

pytestmark = pytest.mark.short


def test_recipe_compiles(tmp_path):
    py_compile.compile(str(RECIPE), cfile=str(tmp_path / "package.pyc"), doraise=True)
    tree = ast.parse(RECIPE.read_text())
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    assert [c.name for c in classes] == ["Postbox"]
    assert [ast.unparse(base) for base in classes[0].bases] == ["CMakePackage"]
    methods = {node.name for node in classes[0].body if isinstance(node, ast.FunctionDef)}
    assert "cmake_args" in methods


def test_repository_descriptor():
    text = (REPO / "packaging" / "spack" / "repo.yaml").read_text()
    assert re.search(r"^repo:\n  namespace: postbox$", text, re.M)


class Recorder:
    """Spack's directives as plain functions that record their calls."""

    def __init__(self):
        self.calls: list = []

    def directive(self, name):
        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))
        return record

    def named(self, name) -> list:
        return [(args, kwargs) for call, args, kwargs in self.calls if call == name]


@pytest.fixture
def recipe(monkeypatch):
    """(the Postbox class, the recorded directives), the recipe executed
    against a stand-in spack.package."""
    recorder = Recorder()
    spack = types.ModuleType("spack")
    package = types.ModuleType("spack.package")

    class CMakePackage:
        pass

    package.CMakePackage = CMakePackage
    package.join_path = lambda *parts: "/".join(parts)
    for name in ("version", "variant", "provides", "depends_on", "generator", "conflicts",
                 "filter_compiler_wrappers"):
        setattr(package, name, recorder.directive(name))
    package.__all__ = [name for name in vars(package) if not name.startswith("_")]
    spack.package = package
    monkeypatch.setitem(sys.modules, "spack", spack)
    monkeypatch.setitem(sys.modules, "spack.package", package)
    namespace = {"__file__": str(RECIPE), "__name__": "postbox_recipe"}
    exec(compile(RECIPE.read_text(), str(RECIPE), "exec"), namespace)
    return namespace["Postbox"], recorder


def test_recipe_declares_what_it_must(recipe):
    cls, rec = recipe
    assert cls.git == "file://" + str(REPO), "git must be the clone the recipe is in"
    assert rec.named("version") == [(("main",), {"branch": "main"})]
    variants = {args[0]: kwargs for args, kwargs in rec.named("variant")}
    assert set(variants) == {"tests", "mpi"}
    assert variants["tests"]["default"] is False and variants["mpi"]["default"] is False
    assert rec.named("provides") == [(("mpi@:5.0",), {"when": "+mpi"})]
    assert rec.named("generator") == [(("ninja",), {})]
    depends = {args[0].split("@")[0]: kwargs.get("type") for args, kwargs in
               rec.named("depends_on")}
    assert depends["c"] == "build" and depends["cmake"] == "build"
    assert depends["ninja"] == "build"
    assert set(depends["python"]) == {"build", "run"}
    # the installed mpicc must not run Spack's build-time compiler wrapper
    assert (("postbox-cc",), {"relative_root": "bin"}) in rec.named("filter_compiler_wrappers")
    cmake_min = [args[0] for args, _ in rec.named("depends_on") if args[0].startswith("cmake")]
    required = re.search(r"cmake_minimum_required\(VERSION ([0-9.]+)\)",
                         (REPO / "CMakeLists.txt").read_text()).group(1)
    assert cmake_min == ["cmake@%s:" % required]


class FakeSpec:
    """What cmake_args reads of self.spec."""

    def __init__(self, variants):
        self.variants = variants

    def __getitem__(self, name):
        assert name == "python"
        return types.SimpleNamespace(command=types.SimpleNamespace(path="/spack/python3"))


def test_cmake_args_name_the_project_options(recipe):
    cls, _ = recipe
    pkg = cls.__new__(cls)
    pkg.spec = FakeSpec({"tests": False, "mpi": True})
    pkg.define = lambda name, value: "-D%s=%s" % (name, value)
    pkg.define_from_variant = lambda name, variant: "-D%s=%s" % (
        name, "ON" if pkg.spec.variants[variant] else "OFF")
    args = cls.cmake_args(pkg)
    assert args == ["-DPOSTBOX_PYTHON=/spack/python3", "-DPOSTBOX_BUILD_TESTS=OFF",
                    "-DPOSTBOX_INSTALL_MPI_PC=ON"]
    # each is an option or cache variable of the project
    cmake_text = "".join(path.read_text() for path in
                         [REPO / "CMakeLists.txt", *REPO.glob("cmake/*.cmake"),
                          REPO / "tools" / "CMakeLists.txt"])
    for arg in args:
        name = arg[2:].split("=")[0]
        assert re.search(r"(option|set)\(%s\b" % name, cmake_text), name


def test_dependents_get_mpicc(recipe):
    cls, _ = recipe
    pkg = cls.__new__(cls)
    pkg.prefix = types.SimpleNamespace(bin="/spack/postbox/bin")
    pkg.spec = types.SimpleNamespace()
    cls.setup_dependent_package(pkg, None, None)
    assert pkg.spec.mpicc == "/spack/postbox/bin/mpicc"
    env = {}
    cls.setup_dependent_build_environment(pkg, types.SimpleNamespace(
        set=lambda k, v: env.__setitem__(k, v)), None)
    assert env == {"MPICC": "/spack/postbox/bin/mpicc"}
