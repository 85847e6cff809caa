#!/usr/bin/env python3
"""The MPI C bindings, generated from one description of each function.

To add a function: end its line in functions.txt with the checks of its arguments
(":: comm, buf(...)"), write its pb_mpi_<name>_impl in src/mpi/, and run `make gen`.

    src/mpi/api/functions.txt  (read)   every function of the C API, in mpi.h's order
    include/mpi.h              (write)  the prototypes, MPI_ then PMPI_, between its
                                        @GENERATED-BEGIN@ and @GENERATED-END@ lines
    src/mpi/bindings.h         (write)  the prototype of each pb_mpi_<name>_impl
    src/mpi/bindings.c         (write)  PMPI_X (and PMPI_X_c), which take the thread guard
                                        (src/mpi/engine/lock.h), check the arguments and
                                        call pb_mpi_<name>_impl, and the weak MPI_ aliases

The lines of functions.txt ('#' lines are comments):

    == TITLE                  a chapter of mpi.h
    -- TEXT                   the comment above the functions that follow
    --                        a blank line before the functions that follow
    RET MPI_X(PARAMS)         a function, written as in C without the semicolon;
    RET MPI_X(PARAMS) :: CHECKS   ... with the checks of its arguments
        :: CHECKS             (indented) more checks of the function above
        TEXT                  (indented) what it does, the comment of PMPI_X

A parameter type "int|MPI_Count" (or int|MPI_Aint) is int in MPI_X and MPI_Count in
MPI_X_c, the large-count form, which a line declares when one of its types has a "|".
A _c form that is not MPI_X with wider types has a line of its own.

A function is bound when src/mpi/*.c defines `int pb_mpi_<name>_impl(` (<name> is X in
lower case): it takes `const char *func` (the name called, "MPI_X" or "MPI_X_c"), the
parameters of MPI_X_c (an array of two widths as a pb_mpi_counts_t or pb_mpi_displs_t of
src/mpi/check.h), and the communicator the comm check found, and is called once CHECKS
passed.  A function without an _impl is declared in mpi.h but not in the library.

A hot path (MPI_Send, MPI_Recv) defines its _impl `static inline int pb_mpi_<name>_impl(`
in a header src/mpi/*.h instead: bindings.h includes that header, and the binding, its
checks (inline in check.h) and the _impl compile into the one function PMPI_X.

CHECKS, a comma-separated list run in its order; each raises its error through
pb_mpi_raise on the function's communicator (the messages are in src/mpi/check.c).
A check takes the parameters it covers, which gives each its kind (a buffer is its
address, count and datatype together); the order is the library's, which decides the
message when two arguments are wrong:

    comm                     the MPI_Comm parameter (MPI_ERR_COMM); must come first
    win                      the MPI_Win parameter (MPI_ERR_WIN); must come first, and
                             the window (pb_win_t *w) goes to the _impl
    root(R)                  R is a rank of the communicator (MPI_ERR_ROOT)
    buf(B, N, T, "what")     N elements of T at B (MPI_ERR_COUNT, _TYPE, _BUFFER)
    block(B, N, T, "what")   the same, N elements for each rank
    vec(B, NS, DS, T, "what")  the counts NS and displacements DS of each rank (+ MPI_ERR_ARG)
    reduce(N, T, OP)         N, T and OP of a reduction (MPI_ERR_COUNT, _TYPE, _OP)
    alias(S, R, N)           send buffer S and receive buffer R are not the same memory
    data(B, N, T[, P])       the buffer of a send or receive (MPI_ERR_COUNT, _TYPE, _BUFFER) to
                             or from peer P, if named: toward MPI_PROC_NULL, a count of 0 of
                             MPI_DATATYPE_NULL is allowed (nothing moves)
    rank(R)                  R is a rank or MPI_PROC_NULL (MPI_ERR_RANK)
    source(R)                R is a rank, MPI_PROC_NULL or MPI_ANY_SOURCE (MPI_ERR_RANK)
    tag(T)                   T is not negative (MPI_ERR_TAG)
    anytag(T)                T is not negative, or MPI_ANY_TAG (MPI_ERR_TAG)
    ptr(P)                   the output argument P is not NULL (MPI_ERR_ARG)

and after a check's name: @root (only on the root: pb_mpi_is_root of check.h, MPI_ROOT
on an intercommunicator; alias@root on an intracommunicator's root only), ? (not when the buffer is MPI_IN_PLACE), ?root (not when the
buffer is MPI_IN_PLACE on the root; on an intercommunicator only in the group that sends
to the root: pb_mpi_leaf_buffer_used).

    gen_bindings.py          write the generated files
    gen_bindings.py --check  write nothing; exit 1 when a generated file is not what
                             functions.txt gives (the test mpi_header_bindings_generated)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FUNCTIONS = ROOT / "src/mpi/api/functions.txt"
HEADER = ROOT / "include/mpi.h"
BINDINGS_C = ROOT / "src/mpi/bindings.c"
BINDINGS_H = ROOT / "src/mpi/bindings.h"

BEGIN = ("/* @GENERATED-BEGIN@ by src/mpi/api/gen_bindings.py from src/mpi/api/functions.txt: "
         "do not edit */")
END = "/* @GENERATED-END@ */"
BANNER = ("/* generated by src/mpi/api/gen_bindings.py from src/mpi/api/functions.txt: "
          "do not edit */")
COLUMNS = 100

# the struct that carries an array of two widths to an _impl (src/mpi/check.h)
ARRAY_STRUCTS = {("int", "MPI_Count"): "pb_mpi_counts_t", ("int", "MPI_Aint"): "pb_mpi_displs_t"}

CHECK = re.compile(r"^(?P<kind>comm|win|root|buf|block|vec|reduce|alias|data|rank|source|tag|"
                   r"anytag|ptr)"
                   r"(?P<mod>@root|\?root|\?)?(?:\((?P<args>.*)\))?$")
ARITY = {"comm": 0, "win": 0, "root": 1, "buf": 4, "block": 4, "vec": 5, "reduce": 3, "alias": 3, "data": 3,
         "rank": 1, "source": 1, "tag": 1, "anytag": 1, "ptr": 1}
# the checks that need the communicator the comm check found
NEED_COMM = ("root", "vec", "rank", "source")


class Error(Exception):
    pass


# ---- reading functions.txt -------------------------------------------------------

class Param:
    def __init__(self, text: str):
        if text == "...":
            self.name, self.array, self.type, self.widths = "...", "", "", None
            return
        m = re.match(r"^(?P<type>.*?)(?P<name>\w+)(?P<array>(\[\w*\])+)?$", text.strip())
        if m is None:
            raise Error("cannot read the parameter %r" % text)
        self.name, self.array = m.group("name"), m.group("array") or ""
        self.type = m.group("type").strip()  # "const int|MPI_Count", "MPI_Count *"
        poly = re.search(r"(\w+)\|(\w+)", self.type)
        self.widths = poly.groups() if poly else None

    def decl(self, large: bool) -> str:
        """The parameter in MPI_X (@large false) or MPI_X_c."""
        t = self.type
        if self.widths:
            t = t.replace("%s|%s" % self.widths, self.widths[1] if large else self.widths[0])
        return "%s%s%s%s" % (t, "" if t.endswith("*") or not t else " ", self.name, self.array)

    def impl_decl(self) -> str:
        """The parameter as the _impl and the checks take it."""
        if self.widths and (self.array or "*" in self.type):
            struct = ARRAY_STRUCTS.get(self.widths) if self.array else None
            if struct is None:
                raise Error("%s: a pointer of two widths is not bound yet (extend "
                            "gen_bindings.py)" % self.name)
            return "%s %s" % (struct, self.name)
        return self.decl(True)

    def impl_arg(self, large: bool) -> str:
        """What MPI_X (@large false) or MPI_X_c passes for it to the checks."""
        if self.widths and self.array:
            pair = "%s, NULL" % self.name if not large else "NULL, %s" % self.name
            return "(%s){%s}" % (ARRAY_STRUCTS[self.widths], pair)
        return self.name


class Function:
    def __init__(self, line: str, lineno: int):
        proto, _, checks = line.partition("::")
        m = re.match(r"^(?P<ret>.*?)\b(?P<name>MPI_\w+)\((?P<params>.*)\)$", proto.strip())
        if m is None:
            raise Error("line %d: not a function: %r" % (lineno, line))
        self.ret, self.name = m.group("ret").strip(), m.group("name")
        params = m.group("params").strip()
        self.params = [] if params == "void" else [Param(p) for p in split_args(params)]
        self.large = any(p.widths for p in self.params)
        self.checks: list[tuple] = []
        self.add_checks(checks)
        self.doc: list[str] = []

    def add_checks(self, text: str) -> None:
        self.checks += [parse_check(c, self) for c in split_args(text)]

    def names(self) -> list[str]:
        return [self.name] + ([self.name + "_c"] if self.large else [])

    def prototype(self, name: str, large: bool) -> str:
        params = ", ".join(p.decl(large) for p in self.params) or "void"
        return "%s %s(%s)" % (self.ret, name, params)

    def lower(self) -> str:
        return self.name[len("MPI_"):].lower()

    def comm(self) -> str:
        comms = [p.name for p in self.params if p.type == "MPI_Comm"]
        return comms[0] if comms else "MPI_COMM_NULL"

    def win(self) -> str:
        wins = [p.name for p in self.params if p.type == "MPI_Win"]
        if not wins:
            raise Error("%s: the win check needs an MPI_Win parameter" % self.name)
        return wins[0]


def split_args(text: str) -> list[str]:
    """@text split at the commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_check(text: str, fn: Function) -> tuple:
    m = CHECK.match(text)
    if m is None:
        raise Error("%s: unknown check %r" % (fn.name, text))
    kind, mod = m.group("kind"), m.group("mod") or ""
    args = split_args(m.group("args") or "")
    if len(args) != ARITY[kind] and not (kind == "data" and len(args) == 4):
        raise Error("%s: %s takes %d arguments" % (fn.name, kind, ARITY[kind]))
    names = {p.name for p in fn.params}
    for a in args:
        if not a.startswith('"') and a not in names:
            raise Error("%s: %s: no parameter %s" % (fn.name, text, a))
    return kind, mod, args


def read_functions(path: Path) -> list:
    """The lines of functions.txt: ("==", title), ("--", text), Function."""
    items: list = []
    for lineno, line in enumerate(path.read_text().split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith(("== ", "-- ")) or line == "--":
            items.append((line[:2], line[3:]))
        elif line.startswith(" "):
            if not items or not isinstance(items[-1], Function):
                raise Error("line %d: an indented line that follows no function" % lineno)
            if line.strip().startswith("::"):
                items[-1].add_checks(line.strip()[2:])
            else:
                items[-1].doc.append(line.strip())
        else:
            items.append(Function(line, lineno))
    return items


# ---- writing C ----------------------------------------------------------------------

def wrap(head: str, args: list[str], tail: str, indent: str = "") -> str:
    """@head(args...)@tail in lines of COLUMNS, the arguments packed and aligned after
    the parenthesis, as clang-format writes them; or, as clang-format does when that
    takes fewer lines, packed on the lines after the parenthesis, indented 4 more."""
    aligned = pack(indent + head + "(", args, tail, " " * (len(indent) + len(head) + 1))
    if head.startswith("return ") and len(aligned) > 2:
        broken = pack("", args, tail, indent + " " * 4)
        if len(broken) + 1 < len(aligned):
            return "\n".join([indent + head + "("] + broken)
    return "\n".join(aligned)


def pack(first: str, args: list[str], tail: str, prefix: str) -> list[str]:
    """The arguments @args packed into lines of COLUMNS, the first starting with @first
    (or @prefix when it is empty), the others with @prefix."""
    lines, cur = [], first or prefix
    for i, arg in enumerate(args):
        piece = arg + (", " if i + 1 < len(args) else ")" + tail)
        if cur.endswith("(") or cur == prefix or len(cur + piece.rstrip()) <= COLUMNS:
            cur += piece
        else:
            lines.append(cur.rstrip())
            cur = prefix + piece
    if not args:
        cur += ")" + tail
    return lines + [cur.rstrip()]


def comment(text: list[str], indent: str = "") -> list[str]:
    """@text (words) as a C comment of lines no longer than COLUMNS."""
    words, lines, cur = " ".join(text).split(), [], ""
    for w in words:
        if cur and len(indent) + 3 + len(cur) + 1 + len(w) > COLUMNS - 3:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w) if cur else w
    lines.append(cur)
    if len(lines) == 1 and len(indent) + len(lines[0]) + 6 <= COLUMNS:
        return [indent + "/* " + lines[0] + " */"]
    out = [indent + "/* " + lines[0]] + [indent + " * " + s for s in lines[1:]]
    out[-1] += " */"
    return out


def ruler(title: str) -> str:
    head = "/* ---- %s " % title
    return head + "-" * (COLUMNS - 8 - len(head)) + " */"


def header_block(items: list) -> str:
    out = [BEGIN, ""]
    protos = []
    for item in items:
        if isinstance(item, Function):
            for name, large in zip(item.names(), (False, True)):
                text = item.prototype(name, large)
                m = re.match(r"^(.*?\()(.*)\)$", text)
                head = m.group(1)[:-1]
                out.append(wrap(head, split_args(m.group(2)), ";"))
                protos.append((head, split_args(m.group(2))))
        elif item[0] == "==":
            out += ["", ruler(item[1]), ""]
        else:
            if out[-1] != "":
                out.append("")
            out += comment([item[1]]) if item[1] else []
    out += ["", "/* ==== the profiling interface: every function again, as PMPI_ " +
            "=" * 28 + " */", ""]
    for head, args in protos:
        ret, name = head.rsplit(" ", 1)
        out.append(wrap("%s P%s" % (ret, name), args, ";"))
    out += [END]
    return re.sub(r"\n\n\n+", "\n\n", "\n".join(out))


def write_header(items: list, text: str) -> str:
    if BEGIN not in text or END not in text:
        raise Error("%s has no %s ... %s lines" % (HEADER, BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + header_block(items) + tail


# ---- the bindings ---------------------------------------------------------------------

IMPL = re.compile(r"^int pb_mpi_(\w+)_impl\(", re.M)
INLINE_IMPL = re.compile(r"^static inline int pb_mpi_(\w+)_impl\(", re.M)


def implemented(src: Path) -> tuple[set[str], dict[str, str]]:
    """The <name> of every pb_mpi_<name>_impl defined in src/mpi/*.c, and of every inline
    one of a header src/mpi/*.h, with the header ("mpi/x.h")."""
    found, inline = set(), {}
    for path in sorted(src.glob("*.c")):
        if path != BINDINGS_C:
            found.update(IMPL.findall(path.read_text()))
    for path in sorted(src.glob("*.h")):
        if path != BINDINGS_H:
            for name in INLINE_IMPL.findall(path.read_text()):
                inline[name] = "mpi/" + path.name
    return found | set(inline), inline


def check_code(fn: Function, kind: str, mod: str, args: list[str]) -> list[str]:
    """The lines of one check of @fn, in the body of its checked function."""
    comm = fn.comm()
    if kind == "comm":
        return ["    pb_comm_t *c;", "    int rc = pb_mpi_comm_check(%s, func, &c);" % comm, ""]
    if kind == "win":
        return ["    pb_win_t *w;", "    int rc = pb_mpi_win_check(%s, func, &w);" % fn.win(), ""]
    a = args
    if kind in ("buf", "block"):  # (B, N, T, what) -> (what, B, N, T)
        a = [a[3], a[0], a[1], a[2]]
    elif kind == "vec":  # (B, NS, DS, T, what) -> (what, B, NS, DS, T, c)
        a = [a[4], a[0], a[1], a[2], a[3], "c"]
    elif kind in ("root", "rank", "source"):
        a = [a[0], "c"]
    elif kind == "ptr":
        a = [a[0], '"%s"' % a[0]]
    elif kind == "data" and len(a) == 3:  # no peer
        a = a + ["MPI_UNDEFINED"]
    helper = {"reduce": "reduction", "alias": "aliased"}.get(kind, kind)
    call = ("pb_mpi_check_" + helper, [comm, "func"] + a)
    cond = ["rc == MPI_SUCCESS"]
    if mod == "@root" and kind == "alias":  # the root's send buffer: intracommunicators only
        cond.append("pb_mpi_is_root(c, %s) && !pb_mpi_comm_is_inter(c)" % root_of(fn))
    elif mod == "@root":
        cond.append("pb_mpi_is_root(c, %s)" % root_of(fn))
    elif mod == "?":
        cond.append("%s != MPI_IN_PLACE" % args[0])
    elif mod == "?root":
        cond.append("pb_mpi_leaf_buffer_used(c, %s, %s)" % (root_of(fn), args[0]))
    return ["    if (%s)" % " && ".join(cond), wrap("rc = " + call[0], call[1], ";", " " * 8)]


def root_of(fn: Function) -> str:
    roots = [c[2][0] for c in fn.checks if c[0] == "root"]
    if not roots:
        raise Error("%s: @root or ?root without a root check" % fn.name)
    return roots[0]


# the object the first check finds, passed on to the _impl: (check, parameter)
OBJECT_CHECKS = {"comm": "pb_comm_t *c", "win": "pb_win_t *w"}


def impl_params(fn: Function) -> list[str]:
    extra = [OBJECT_CHECKS[fn.checks[0][0]]] if fn.checks and fn.checks[0][0] in OBJECT_CHECKS \
        else []
    return ["const char *func"] + [p.impl_decl() for p in fn.params] + extra


def binding(fn: Function, inline: bool) -> str:
    if fn.ret != "int":
        raise Error("%s: only functions returning int are bound" % fn.name)
    if any(c[0] in OBJECT_CHECKS for c in fn.checks[1:]):
        raise Error("%s: comm or win must be the first check" % fn.name)
    if fn.checks[0][0] != "comm" and any(c[0] in NEED_COMM for c in fn.checks):
        raise Error("%s: %s need the comm check first" % (fn.name, ", ".join(NEED_COMM)))
    lower = fn.lower()
    body = []
    for kind, mod, args in fn.checks:
        body += check_code(fn, kind, mod, args)
    first = fn.checks[0][0] if fn.checks else None
    if first not in OBJECT_CHECKS:
        body = ["    int rc = MPI_SUCCESS;", ""] + body
    impl_args = ["func"] + [p.name for p in fn.params]
    if first in OBJECT_CHECKS:
        impl_args.append(OBJECT_CHECKS[first][-1])
    body += ["    if (rc != MPI_SUCCESS)", "        return rc;",
             wrap("return pb_mpi_%s_impl" % lower, impl_args, ";", " " * 4)]
    # an inline _impl is a hot path: its checks and work go into each PMPI_X whole
    static = "static PB_ALWAYS_INLINE int" if inline else "static int"
    out = [wrap("%s %s_checked" % (static, lower), impl_params(fn)[:-1] if first in OBJECT_CHECKS
                else impl_params(fn), ""), "{"]
    out += body
    out += ["}", ""]
    for name, large in zip(fn.names(), (False, True)):
        aint = any(p.widths == ("int", "MPI_Aint") for p in fn.params)
        doc = fn.doc if not large else ["%s with MPI_Count counts%s. Errors as %s." % (
            fn.name, " and MPI_Aint displacements" if aint else "", fn.name)]
        out += comment(doc) if doc else []
        proto = fn.prototype(name, large)
        m = re.match(r"^(.*?\()(.*)\)$", proto)
        out.append(wrap("PB_EXPORT int P" + name, split_args(m.group(2)), ""))
        call = ['"%s"' % name] + [p.impl_arg(large) for p in fn.params]
        out += ["{", "    PB_MPI_THREAD_GUARD;", "",
                wrap("return %s_checked" % lower, call, ";", " " * 4), "}",
                "PB_MPI_WEAK_ALIAS(%s, P%s);" % (name, name), ""]
    return "\n".join(out)


def impl_decl(fn: Function) -> str:
    names = " and ".join(fn.names())
    lines = comment(["The work of %s once the checks of functions.txt passed, @func the name "
                     "called: MPI_SUCCESS, or the error raised (pb_mpi_raise)." % names])
    return "\n".join(lines + [wrap("int pb_mpi_%s_impl" % fn.lower(), impl_params(fn), ";")])


def write_bindings(items: list, impls: set[str], inline: dict[str, str]) -> tuple[str, str]:
    functions = [i for i in items if isinstance(i, Function) and i.lower() in impls]
    known = {i.lower() for i in items if isinstance(i, Function)}
    for name in sorted(impls - known):
        raise Error("pb_mpi_%s_impl is defined but functions.txt has no MPI_ function %s"
                    % (name, name))
    for fn in functions:
        if not fn.checks:
            raise Error("%s has an _impl but no checks in functions.txt" % fn.name)
    c = [BANNER, "/*",
         " * Every PMPI_X here checks its arguments as src/mpi/api/functions.txt says, then",
         " * calls pb_mpi_<x>_impl (src/mpi/bindings.h); MPI_X is its weak alias.", " */",
         '#include "mpi/bindings.h"', ""]
    c += [binding(fn, fn.lower() in inline) for fn in functions]
    h = [BANNER, "/*",
         " * The functions behind the bindings of src/mpi/bindings.c, one per MPI function",
         " * and its large-count form, each written by hand in src/mpi/.", " */",
         "#ifndef PB_MPI_BINDINGS_H", "#define PB_MPI_BINDINGS_H", "",
         '#include "mpi/check.h"', '#include "mpi/engine/lock.h"', '#include "mpi/win.h"']
    h += ['#include "%s"' % name for name in sorted(set(inline.values()))] + [""]
    h += [impl_decl(fn) + "\n" for fn in functions if fn.lower() not in inline]
    h += ["#endif"]
    return "\n".join(c).rstrip("\n") + "\n", "\n".join(h) + "\n"


# ---- main ---------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail when a generated file is out of date")
    opts = parser.parse_args()
    try:
        items = read_functions(FUNCTIONS)
        c_text, h_text = write_bindings(items, *implemented(ROOT / "src/mpi"))
        outputs = {HEADER: write_header(items, HEADER.read_text()), BINDINGS_C: c_text,
                   BINDINGS_H: h_text}
    except Error as e:
        print("gen_bindings.py: %s" % e, file=sys.stderr)
        return 1
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if opts.check:
        for p in stale:
            print("FAIL: %s is not what src/mpi/api/gen_bindings.py writes from "
                  "functions.txt (run `make gen`)" % p.relative_to(ROOT))
        if not stale:
            print("PASS: %d generated files are up to date" % len(outputs))
        return 1 if stale else 0
    for p in stale:
        p.write_text(outputs[p])
        print("wrote %s" % p.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
