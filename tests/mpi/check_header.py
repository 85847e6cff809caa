#!/usr/bin/env python3
"""Checks of include/mpi.h, the MPI-5.0 standard ABI header.

    check_header.py pmpi      [--header H]
        every MPI_ prototype has a PMPI_ twin with the same type (both are
        written by src/mpi/api/gen_bindings.py)
    check_header.py compile   [--header H] --cc CC [--cxx CXX] --work DIR
        the header compiles as C99, C11 and C++ with -Wall -Wextra -pedantic
        -Werror, alone and in a file that uses every constant it defines
    check_header.py mpich     [--header H] --cc CC --work DIR --mpich-header M [M ...]
        against MPICH's ABI header (mpi_abi.h, the first M that exists): the
        same constant and handle names, each with the same value and kind;
        the same MPI_Status layout and type sizes; the same functions, each
        with a compatible prototype (ours are redeclared after MPICH's
        header, and the C compiler rejects any conflict).  Exits 77 (CTest:
        skipped) when no M exists.

Exit status 0 when the check passes, 1 when it fails (with the reasons).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

SKIP = 77
HERE = Path(__file__).resolve().parent
DEFAULT_HEADER = HERE.parent.parent / "include" / "mpi.h"


# names an ABI header may carry that are not part of the standard
IGNORED_PREFIXES = ("MPIX_", "MPICH_", "PMPIX_")


# ---- reading a header ------------------------------------------------------

def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def code_without_preprocessor(text: str) -> str:
    """The C declarations of @text: no comments, no # lines (continued lines
    included)."""
    lines, out, skipping = strip_comments(text).split("\n"), [], False
    for line in lines:
        if skipping or line.lstrip().startswith("#"):
            skipping = line.rstrip().endswith("\\")
            continue
        out.append(line)
    return "\n".join(out)


def statements(code: str) -> list[str]:
    """Top-level declarations of @code, split at the semicolons outside
    braces, whitespace collapsed.  The extern "C" wrapper of C++ is dropped
    (its closing brace is the only line that is a lone brace)."""
    code = re.sub(r'extern\s+"C"\s*\{', " ", code)
    code = re.sub(r"(?m)^\s*\}\s*$", " ", code)
    out, depth, start = [], 0, 0
    for i, ch in enumerate(code):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            text = " ".join(code[start:i].split())
            if text:
                out.append(text)
            start = i + 1
    return out


PROTOTYPE = re.compile(r"^(?P<ret>[\w\s\*]+?)\s*\b(?P<name>P?MPI_\w+)\s*\((?P<args>.*)\)$", re.S)


def prototypes(text: str) -> dict[str, str]:
    """name -> normalized declaration of each MPI_/PMPI_ function in @text."""
    found = {}
    for decl in statements(code_without_preprocessor(text)):
        if decl.startswith("typedef"):
            continue
        match = PROTOTYPE.match(decl)
        if match:
            found[match.group("name")] = decl
    return found


def signature(decl: str) -> str:
    """@decl without the function's name, spacing made uniform."""
    match = PROTOTYPE.match(decl)
    text = "%s (%s)" % (match.group("ret"), match.group("args"))
    text = re.sub(r"\s*([\*\(\)\[\],])\s*", r"\1", text)
    return " ".join(text.split())


def typedefs(text: str) -> list[str]:
    """The typedefs of @text that may be repeated after another ABI header
    (C11 allows a typedef again with the same type): function and pointer
    types, not struct or enum definitions."""
    return [decl for decl in statements(code_without_preprocessor(text))
            if decl.startswith("typedef") and "{" not in decl]


DEFINE = re.compile(r"^\s*#\s*define\s+(?P<name>MPI_\w+)(?P<fn>\()?(?P<value>.*)$")
UNDEF = re.compile(r"^\s*#\s*undef\s+(MPI_\w+)")
ENUMERATOR = re.compile(r"\b(MPI_\w+)\s*=")


def constants(text: str) -> list[str]:
    """The names of the constants of @text: object-like macros with a value
    that stay defined, and enumerators."""
    names, undefined = [], set()
    for line in strip_comments(text).split("\n"):
        match = DEFINE.match(line)
        if match and not match.group("fn") and match.group("value").strip():
            names.append(match.group("name"))
        match = UNDEF.match(line)
        if match:
            undefined.add(match.group(1))
    for decl in statements(code_without_preprocessor(text)):
        if "{" in decl and "enum" in decl:
            names.extend(ENUMERATOR.findall(decl))
    seen, out = set(), []
    for name in names:
        if name not in seen and name not in undefined and not name.startswith(IGNORED_PREFIXES):
            seen.add(name)
            out.append(name)
    return out


# ---- pmpi --------------------------------------------------------------------

def check_pmpi(header: Path) -> int:
    text = header.read_text()
    protos = prototypes(text)
    problems = []
    for name, decl in protos.items():
        twin = ("P" + name) if name.startswith("MPI_") else name[1:]
        if twin not in protos:
            problems.append("%s has no %s" % (name, twin))
        elif name.startswith("MPI_") and signature(protos[twin]) != signature(decl):
            problems.append("%s and %s differ:\n    %s\n    %s" % (name, twin, decl, protos[twin]))
    for problem in problems:
        print("FAIL:", problem)
    count = sum(1 for name in protos if name.startswith("MPI_"))
    if not problems:
        print("PASS: %d MPI_ functions, each with its PMPI_ twin" % count)
    return 1 if problems else 0


# ---- compile -----------------------------------------------------------------

STRICT = ["-Wall", "-Wextra", "-pedantic", "-Werror", "-Wundef", "-Wshadow", "-Wcast-qual",
          "-Wredundant-decls"]


def use_every_constant(names: list[str]) -> str:
    """A translation unit (valid C and C++) that evaluates every constant."""
    body = "\n".join("    (void)(%s);" % name for name in names)
    return """#include <mpi.h>

/* a reduction callback of the standard type */
static void sum_ints(void *in, void *inout, int *len, MPI_Datatype *datatype)
{
    int *a = (int *)in, *b = (int *)inout, i;
    (void)datatype;
    for (i = 0; i < *len; i++)
        b[i] += a[i];
}

int main(void)
{
    MPI_Status status;
    MPI_User_function *fn = sum_ints;
    MPI_Comm comm = MPI_COMM_WORLD;
    status.MPI_SOURCE = MPI_ANY_SOURCE;
    status.MPI_TAG = MPI_ANY_TAG;
    status.MPI_ERROR = MPI_SUCCESS;
    (void)fn;
    (void)status;
    if (comm == MPI_COMM_NULL)
        return 1;
%s
    return sizeof(MPI_Status) == 8 * sizeof(int) ? 0 : 1;
}
""" % body


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True)


def check_compile(header: Path, cc: str, cxx: str | None, work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    include = str(header.parent)
    alone = work / "alone.c"
    alone.write_text("#include <mpi.h>\n#include <mpi.h>\nint main(void) { return 0; }\n")
    every = work / "every.c"
    every.write_text(use_every_constant(constants(header.read_text())))
    runs = []
    for std in ("c99", "c11"):
        for source in (alone, every):
            runs.append([cc, "-std=" + std, *STRICT, "-Wstrict-prototypes", "-I", include,
                         "-fsyntax-only", str(source)])
    if cxx:
        for std in ("c++11", "c++17"):
            for source in (alone, every):
                runs.append([cxx, "-std=" + std, *STRICT, "-I", include, "-fsyntax-only",
                             "-x", "c++", str(source)])
    failed = 0
    for argv in runs:
        result = run(argv)
        what = " ".join(argv)
        if result.returncode != 0:
            failed += 1
            print("FAIL: %s\n%s%s" % (what, result.stdout, result.stderr))
        else:
            print("PASS: %s" % what)
    if not cxx:
        print("NOTE: no C++ compiler given: the C++ checks did not run")
    return 1 if failed else 0


# ---- mpich -------------------------------------------------------------------

HANDLE_TYPES = ["MPI_Comm", "MPI_Group", "MPI_Win", "MPI_File", "MPI_Session", "MPI_Message",
                "MPI_Info", "MPI_Errhandler", "MPI_Request", "MPI_Datatype", "MPI_Op",
                "MPI_T_enum", "MPI_T_cvar_handle", "MPI_T_pvar_handle", "MPI_T_pvar_session"]


def dump_program(names: list[str]) -> str:
    """A C11 program that prints, with the mpi.h it is compiled with, each of
    @names as 'NAME KIND VALUE' and the sizes the ABI fixes."""
    kinds = ",\\\n        ".join('%s: "%s"' % (t, t) for t in HANDLE_TYPES)
    lines = ['    printf("%%s %%s %%lld\\n", "%s", KIND(%s), (long long)(intptr_t)(%s));'
             % (name, name, name) for name in names]
    layout = [("sizeof(MPI_Status)", "sizeof(MPI_Status)"),
              ("offsetof(MPI_Status, MPI_SOURCE)", "offsetof(MPI_Status, MPI_SOURCE)"),
              ("offsetof(MPI_Status, MPI_TAG)", "offsetof(MPI_Status, MPI_TAG)"),
              ("offsetof(MPI_Status, MPI_ERROR)", "offsetof(MPI_Status, MPI_ERROR)"),
              ("sizeof(MPI_Aint)", "sizeof(MPI_Aint)"),
              ("sizeof(MPI_Offset)", "sizeof(MPI_Offset)"),
              ("sizeof(MPI_Count)", "sizeof(MPI_Count)"),
              ("signed(MPI_Aint)", "(MPI_Aint)-1 < 0"),
              ("signed(MPI_Offset)", "(MPI_Offset)-1 < 0"),
              ("signed(MPI_Count)", "(MPI_Count)-1 < 0")]
    layout += [("sizeof(%s)" % t, "sizeof(%s)" % t) for t in HANDLE_TYPES]
    lines += ['    printf("%%s layout %%lld\\n", "%s", (long long)(%s));' % (label, expr)
              for label, expr in layout]
    return """#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include HEADER

#define KIND(x) _Generic((x), \\
        int: "int", \\
        long: "long", \\
        long long: "long long", \\
        void *: "void*", \\
        char **: "char**", \\
        char ***: "char***", \\
        int *: "int*", \\
        MPI_Status *: "MPI_Status*", \\
        %s, \\
        default: "other")

int main(void)
{
%s
    return 0;
}
""" % (kinds, "\n".join(lines))


def compile_and_run(cc: str, source: Path, header: Path, exe: Path) -> tuple[bool, str]:
    result = run([cc, "-std=c11", "-DHEADER=<%s>" % header.name, "-I", str(header.parent),
                  "-o", str(exe), str(source)])
    if result.returncode != 0:
        return False, result.stdout + result.stderr
    result = run([str(exe)])
    if result.returncode != 0:
        return False, "%s exited with %d\n%s" % (exe, result.returncode, result.stderr)
    return True, result.stdout


def check_mpich(header: Path, cc: str, work: Path, candidates: list[str]) -> int:
    mpich = next((Path(c) for c in candidates if c and Path(c).is_file()), None)
    if mpich is None:
        print("SKIP: MPICH's ABI header mpi_abi.h not found (looked at %s); `postbox bench` "
              "installs the mpich wheel into build/mpi/mpich, or `pip install mpich` into a venv "
              "and pass its include/mpi_abi.h" % ", ".join(candidates))
        return SKIP
    print("comparing %s with %s" % (header, mpich))
    work.mkdir(parents=True, exist_ok=True)
    ours_text, theirs_text = header.read_text(), mpich.read_text()
    failures = []

    # the same names
    ours, theirs = constants(ours_text), constants(theirs_text)
    missing = [n for n in theirs if n not in ours]
    extra = [n for n in ours if n not in theirs]
    if missing:
        failures.append("constants MPICH defines and we do not: " + " ".join(missing))
    if extra:
        failures.append("constants we define and MPICH does not: " + " ".join(extra))

    # the same values, kinds and layout
    common = [n for n in ours if n in theirs]
    source = work / "dump_constants.c"
    source.write_text(dump_program(common))
    dumps = {}
    for label, h in (("ours", header), ("mpich", mpich)):
        ok, out = compile_and_run(cc, source, h, work / ("dump_" + label))
        if not ok:
            failures.append("the constant dump does not build or run with %s:\n%s" % (h, out))
            break
        dumps[label] = dict(line.split(" ", 1) for line in out.splitlines())
    if len(dumps) == 2:
        for name, value in dumps["ours"].items():
            if dumps["mpich"].get(name) != value:
                failures.append("%s: ours is '%s', MPICH's is '%s'"
                                % (name, value, dumps["mpich"].get(name)))
        print("compared %d constants and %d layout facts"
              % (len(common), len(dumps["ours"]) - len(common)))

    # the same functions, with compatible prototypes
    our_protos, their_protos = prototypes(ours_text), prototypes(theirs_text)
    their_names = {n for n in their_protos if not n.startswith(IGNORED_PREFIXES)}
    missing = sorted(their_names - set(our_protos))
    extra = sorted(set(our_protos) - their_names)
    if missing:
        failures.append("functions MPICH declares and we do not: " + " ".join(missing))
    if extra:
        failures.append("functions we declare and MPICH does not: " + " ".join(extra))
    redeclare = work / "redeclare.c"
    redeclare.write_text("#include <%s>\n\n/* our typedefs */\n%s\n\n/* our prototypes */\n%s\n"
                         % (mpich.name, "\n".join(d + ";" for d in typedefs(ours_text)),
                            "\n".join(d + ";" for d in our_protos.values())))
    result = run([cc, "-std=c11", "-Werror", "-fsyntax-only", "-I", str(mpich.parent),
                  str(redeclare)])
    if result.returncode != 0:
        failures.append("our prototypes or typedefs conflict with MPICH's (%s):\n%s"
                        % (redeclare, result.stderr))
    else:
        print("redeclared our %d prototypes and %d typedefs after MPICH's header: no conflict"
              % (len(our_protos), len(typedefs(ours_text))))

    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print("PASS: include/mpi.h matches %s" % mpich)
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("pmpi", "compile", "mpich"))
    parser.add_argument("--header", type=Path, default=DEFAULT_HEADER)
    parser.add_argument("--cc", default=os.environ.get("CC", "cc"))
    parser.add_argument("--cxx", default=None)
    parser.add_argument("--work", type=Path, default=Path("check_header.d"))
    parser.add_argument("--mpich-header", nargs="*", default=[])
    args = parser.parse_args(argv)
    header = args.header.resolve()
    if args.what == "pmpi":
        return check_pmpi(header)
    if args.what == "compile":
        return check_compile(header, args.cc, args.cxx, args.work)
    return check_mpich(header, args.cc, args.work, args.mpich_header)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
