#!/usr/bin/env python3
"""Write the manual pages of the commands, in roff, into a directory.

    gen_man.py OUTDIR

writes OUTDIR/postbox.1 (from the ``postbox`` command's argparse parser:
each command with its description and options), OUTDIR/postbox-run.1 (from
the launcher's help, ``postbox run --help``: synopsis, description,
options, exit status, examples) and OUTDIR/postbox-cc.1 (the compiler
wrapper, whose text is below).  The build runs it (tools/CMakeLists.txt),
so the pages say what the commands of the same build do; mpirun(1),
mpiexec(1) and mpicc(1) are links made at install time.  It imports the
package from ../python beside this file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from postbox import __version__, cli, launch  # noqa: E402

DATE = "Postbox %s" % __version__


def esc(text: str) -> str:
    """@text as roff running text: backslashes and hyphens escaped, and a
    line that would start with a control character protected."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line
                     for line in text.split("\n"))


def header(name: str, summary: str) -> list:
    return ['.TH %s 1 "%s" "%s" "User Commands"' % (name.upper(), DATE, DATE),
            ".SH NAME", "%s \\- %s" % (esc(name), esc(summary))]


def paragraphs(text: str) -> list:
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        out += [".PP", esc(" ".join(block.split()))]
    return out


def option(term: str, text: str) -> list:
    return [".TP", "\\fB%s\\fR" % esc(term), esc(" ".join(text.split()))]


def verbatim(lines: list) -> list:
    return [".PP", ".nf", ".RS 4"] + [esc(line) for line in lines] + [".RE", ".fi"]


# ---- postbox(1) ----------------------------------------------------------------

def _commands(parser: argparse.ArgumentParser) -> list:
    for action in parser._actions:  # argparse keeps its sub-parsers here
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            return [(name, sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return []


def postbox_page() -> str:
    parser = cli._parser()
    out = header("postbox", "the Postbox command: info, bench, report and run")
    out += [".SH SYNOPSIS", ".nf"]
    out += [esc(line[4:].rstrip()) for line in cli.__doc__.strip("\n").splitlines()[2:]
            if line.strip()]
    out += [".fi"]
    out += [".SH DESCRIPTION"] + paragraphs(parser.description or "")
    out += paragraphs(
        "Called as mpirun or mpiexec (links to it), it is postbox run.  Installed, it finds "
        "its Python package, helper programs and libraries relative to its own location, so "
        "the install prefix can be moved; from a source tree it uses the build tree "
        "(POSTBOX_BUILD_DIR names another).")
    out += [".SH OPTIONS"] + option("-h, --help", "show the help and exit") + \
        option("--version", "print the version and exit")
    out += [".SH COMMANDS"]
    for name, sub, summary in _commands(parser):
        out += [".SS postbox %s" % esc(name)]
        if name == "run":
            out += paragraphs(summary + ".  See postbox-run(1).")
            continue
        out += paragraphs(sub.description or summary)
        for action in sub._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            term = ", ".join(action.option_strings)
            if action.nargs != 0:
                term += " " + (action.metavar or action.dest.upper())
            out += option(term, action.help or "")
        for action in sub._actions:
            if not action.option_strings and action.help:
                out += option(action.metavar or action.dest, action.help)
    out += [".SH ENVIRONMENT"]
    out += option("POSTBOX_BUILD_DIR", "a build tree whose programs to use instead of the "
                  "source tree's build/ or the install prefix")
    out += option("POSTBOX_*", "the library's tunables: postbox info --config lists them "
                  "with their values, defaults and meanings")
    out += [".SH SEE ALSO", "postbox\\-run(1), postbox\\-cc(1), mpirun(1), mpicc(1)"]
    return "\n".join(out) + "\n"


# ---- postbox-run(1) --------------------------------------------------------------

def run_help(prog: str) -> str:
    """What `@prog --help` prints (the launcher's own help, however it
    makes it)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = launch.main(["--help"], prog=prog)
    if status != 0:
        raise SystemExit("gen_man.py: %s --help failed (%d)" % (prog, status))
    return out.getvalue()


def run_page() -> str:
    text = run_help("postbox run")
    blocks = re.split(r"\n\s*\n", text.strip("\n"))
    out = header("postbox-run", "start an MPI or Postbox job of N ranks (also mpirun, mpiexec)")
    out += [".SH SYNOPSIS", ".nf"]
    usage = blocks.pop(0).splitlines()
    out += [esc(line[len("usage: "):].rstrip()) for line in usage]
    out += [".fi", "Also called as \\fBmpirun\\fR and \\fBmpiexec\\fR, with the same "
            "arguments.", ".SH DESCRIPTION"]
    described = options = exits = examples = False
    for block in blocks:
        lines = block.splitlines()
        if lines[0].startswith("options:"):
            out += [".SH OPTIONS"]
            term, words = None, []
            for line in lines[1:]:
                match = re.match(r"  (-\S.*?)(?:\s{2,}(.*))?$", line)
                if match:
                    if term:
                        out += option(term, " ".join(words))
                    term, words = match.group(1), [match.group(2) or ""]
                else:
                    words.append(line.strip())
            if term:
                out += option(term, " ".join(words))
            options = True
        elif lines[0].startswith("exit status:"):
            out += [".SH EXIT STATUS"] + paragraphs(block[len("exit status:"):])
            exits = True
        elif lines[0].startswith("examples:"):
            out += [".SH EXAMPLES"] + verbatim([line.strip() for line in lines[1:]])
            examples = True
        else:
            out += paragraphs(block)
            described = True
    if not (described and options and exits and examples):
        raise SystemExit("gen_man.py: `postbox run --help` has lost a part (description, "
                         "options:, exit status: or examples:)")
    out += [".SH SEE ALSO", "postbox(1), postbox\\-cc(1); docs/launch.md of the source"]
    return "\n".join(out) + "\n"


# ---- postbox-cc(1) ---------------------------------------------------------------

CC_TEXT = """\
postbox-cc (also mpicc) compiles and links C programs against Postbox's MPI \
library, libmpi_abi.so.1, which implements the MPI-5.0 standard ABI declared \
in mpi.h.  It runs the C compiler with the directory of mpi.h on the include \
path and, unless the arguments only compile, preprocess or make dependencies \
(-c, -S, -E, -M, -MM) or name nothing to compile, appends the link arguments: \
-L and a run path (RUNPATH, so LD_LIBRARY_PATH still wins) to the library's \
directory, and -lmpi_abi.  Every other argument goes to the compiler unchanged.

Installed, the wrapper finds the include and library directories relative to \
its own location (links followed), so the install prefix can be moved and the \
programs it builds then find the library in the new place.  A program built \
with it runs on any library of the standard ABI: LD_LIBRARY_PATH naming \
another library's directory puts that one in its place."""


def cc_page() -> str:
    out = header("postbox-cc", "compile and link MPI programs against Postbox (also mpicc)")
    out += [".SH SYNOPSIS", "\\fBpostbox\\-cc\\fR [\\fB\\-show\\fR] [\\fIcompiler "
            "arguments\\fR]...", ".br", "\\fBmpicc\\fR [\\fB\\-show\\fR] [\\fIcompiler "
            "arguments\\fR]...", ".SH DESCRIPTION"] + paragraphs(CC_TEXT)
    out += [".SH OPTIONS"]
    out += option("-show, --show", "print the compiler command, quoted as a shell needs "
                  "it, instead of running it; alone, it shows every argument the wrapper adds")
    out += [".SH ENVIRONMENT"]
    out += option("POSTBOX_CC", "the C compiler to run (default: the one Postbox was built "
                  "with)")
    out += [".SH EXAMPLES"] + verbatim(["mpicc -O2 -o hello hello.c",
                                        "mpirun -n 2 ./hello", "mpicc -show -o hello hello.c"])
    out += [".SH SEE ALSO", "postbox\\-run(1), postbox(1), pkg\\-config(1): postbox.pc"]
    return "\n".join(out) + "\n"


PAGES = {"postbox.1": postbox_page, "postbox-run.1": run_page, "postbox-cc.1": cc_page}


def main(argv: list) -> int:
    if len(argv) != 2:
        print("usage: gen_man.py OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    for name, page in PAGES.items():
        (outdir / name).write_text(page())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
