"""The `paleozoic` command line: compile, build, verify, inspect, prune, space, tune, calibrate,
debug, bench, prefix. This module assembles the parser from the command groups (session,
tuning, accuracy, bench; shared argument helpers in args) and runs the chosen command,
turning Paleozoic's errors into a message and their exit code.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import sys
import threading
from typing import NoReturn

from paleozoic.version import __version__
from paleozoic.cli import accuracy, bench, session, tuning
from paleozoic.errors import PaleozoicError


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paleozoic", description="ONNX -> hand-editable C++ inference sessions over a "
        "CNML-style accelerator SDK (built and run here on the CPU mock SDK).")
    parser.add_argument("--version", action="version", version=f"paleozoic {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = parser.add_subparsers(dest="command", required=True)
    # --help lists the commands in the order they are added here.
    session.register(sub)
    tuning.register(sub)
    accuracy.register(sub)
    bench.register(sub)
    session.register_prefix(sub)
    return parser


def program() -> NoReturn:
    """The `paleozoic` program: runs the command line's command and ends the process with
    its exit code (see _end_process)."""
    _end_process(main())


def main(argv: list[str] | None = None) -> int:
    """Runs the command in `argv` (default: the command line's) and returns its exit code."""
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except PaleozoicError as err:
        print(f"paleozoic {args.command}: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130


def _end_process(code: int) -> NoReturn:
    """Ends the process as sys.exit would, exit handlers and all, but without freeing each
    of its objects first: with TVM and a model loaded, that takes 0.2-0.5 s after the
    command is done (mypy ends the same way). A thread still working gets the usual exit."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()  # noqa: SLF001 - what the interpreter runs before its teardown
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone (| head) or a closed stream
            pass
    os._exit(code)
