"""The ``a2s`` command: list, build, execute, check, grade, report, similarity, release,
doctor, bench, ranks.

Exit codes: 0 success, 1 a check/comparison did not pass, 2 a usage error (bad argument,
unknown lab, unreadable input for commands that take one input).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from a2s import skip_rfc3987

skip_rfc3987()  # before nbformat is imported (below, through commands)

from a2s import commands  # noqa: E402
from a2s.gradebook import DEFAULT_PATTERN  # noqa: E402
from a2s.hosts import add_ranks_parser  # noqa: E402
from a2s.release import DEFAULT_IMAGE  # noqa: E402

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse that exits with 2 and a hint on usage errors (its default too, made explicit)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}\n(see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
        return value

    return parse


def _memory_mb(text: str) -> int:
    value = _positive(int)(text)
    if value < 1024:
        raise argparse.ArgumentTypeError(
            f"{value} MB is too little: torch alone maps ~800 MB; use 1024 or more"
        )
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="a2s", description="Algorithm to Silicon: build, check and grade the labs.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    s = sub.add_parser("list", help="labs, exercises, points, layers, topics")
    s.add_argument("labs", nargs="*", metavar="LAB", help="lab numbers or names (default: all)")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.add_argument("--all", action="store_true", help="include planned labs without a notebook yet")

    s = sub.add_parser("build", help="write labs/ from solutions/ (student copies)")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 if labs/ differs")
    s.add_argument(
        "--force",
        action="store_true",
        help="also replace lab files holding work and delete stray notebooks in labs/",
    )

    s = sub.add_parser(
        "execute", help="(authors) run solutions/NN_*.ipynb in place, refresh outputs"
    )
    s.add_argument("labs", nargs="*", metavar="LAB", help="lab numbers (default: all)")
    s.add_argument("--timeout", type=_positive(float), default=120.0, help="seconds per cell (120)")

    s = sub.add_parser("check", help="run your lab exactly as the grader does, with a table")
    s.add_argument("lab", metavar="LAB", help="lab number or name, e.g. 01")
    s.add_argument("--notebook", metavar="PATH", help="notebook to check (default labs/NN_*.ipynb)")
    _limits(s)

    s = sub.add_parser("grade", help="grade notebooks (or folders of them) into JSON/JUnit")
    s.add_argument("paths", nargs="+", metavar="PATH", help="submission notebooks or folders")
    s.add_argument(
        "--json",
        required=True,
        metavar="OUT",
        help="results JSON, rewritten as each submission finishes",
    )
    s.add_argument("--junit", metavar="OUT.xml", help="also write JUnit XML")
    s.add_argument(
        "--fail-under",
        type=_percent,
        metavar="PCT",
        help="exit 1, naming them, if any submission scores < PCT%%",
    )
    s.add_argument(
        "--jobs",
        type=_positive(int),
        default=1,
        metavar="N",
        help="grade N submissions at once (1)",
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="keep results in --json whose file has the same SHA-256",
    )
    s.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="seed of the fresh random cases (default: new each run)",
    )
    s.add_argument(
        "--extra-checks",
        metavar="DIR",
        help="an instructor's folder of hidden checks (labNN.py), kept out of the "
        "student repository",
    )
    _pattern(s)
    s.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no per-submission tables (the JSON has them)",
    )
    _limits(s)

    s = sub.add_parser("report", help="skill matrix and level, or a class gradebook, from JSON")
    s.add_argument("results", nargs="+", metavar="RESULTS.json", help="grading JSON file(s)")
    s.add_argument("--profile", choices=["compiler", "training", "intern"])
    s.add_argument("--png", metavar="FILE", help="write the radar chart here")
    s.add_argument(
        "--profiles",
        action="store_true",
        help="add the capstone section (skill matrix, every profile) even without a lab 28 result",
    )
    s.add_argument(
        "--by-student",
        action="store_true",
        help="a gradebook, a skill line per student and class statistics",
    )
    _pattern(s)
    s.add_argument("--labs", metavar="NN,NN", help="the labs that count (default: those graded)")
    s.add_argument("--csv", metavar="FILE", help="write the gradebook as CSV (a class view)")
    s.add_argument("--png-dir", metavar="DIR", help="write each student's radar chart here")
    s.add_argument("--stats-png", metavar="FILE", help="write the per-exercise outcome chart")
    s.add_argument(
        "--exercise", metavar="ID", help="only say whether exercise ID passed: exit 0 if so, else 1"
    )

    s = sub.add_parser("similarity", help="(instructors) submissions with the same exercise code")
    s.add_argument("paths", nargs="+", metavar="PATH", help="submission notebooks or folders")
    _pattern(s)
    s.add_argument("--csv", metavar="FILE", help="also write one row per matching exercise")
    s.add_argument(
        "--min-size",
        type=_positive(int),
        default=20,
        metavar="N",
        help="compare only cells adding N+ syntax nodes to the stub (20)",
    )

    s = sub.add_parser("release", help="(instructors) write the student template repository")
    s.add_argument("out_dir", metavar="OUT_DIR", help="an empty or new folder")
    s.add_argument("--labs", metavar="NN,NN", help="the assignment's labs (default: all written)")
    s.add_argument(
        "--image",
        default=DEFAULT_IMAGE,
        metavar="IMAGE",
        help="the student image the workflow runs in (not the grading one)",
    )
    s.add_argument(
        "--course-url",
        default="COURSE_REPO_URL",
        metavar="URL",
        help="the course to pip-install: a wheel or git URL",
    )

    s = sub.add_parser("doctor", help="check Python, torch, gloo, BLAS, cores, the Jupyter kernel")
    s.add_argument("--no-kernel", action="store_true", help="skip starting a kernel")

    s = sub.add_parser("bench", help="run the labs' performance experiments")
    s.add_argument(
        "lab",
        nargs="?",
        metavar="LAB",
        help="only this lab; `class`: grade a made-up class of 30 with --jobs 2, timed",
    )
    s.add_argument("--json", metavar="OUT", help="also write figures as JSON")
    s.add_argument(
        "--watch", action="store_true", help="instead: the forbidden-call watch's cost per check"
    )
    add_ranks_parser(sub)
    return p


def _student_pattern(text: str) -> str:
    if text.count("<student>") != 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} must hold <student> once, e.g. submissions/<student>/"
        )
    return text


def _pattern(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--student-pattern",
        type=_student_pattern,
        default=DEFAULT_PATTERN,
        metavar="PAT",
        help="the student's place in a path (%(default)s)",
    )


def _limits(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--cell-timeout",
        type=_positive(float),
        default=60.0,
        metavar="S",
        help="seconds per cell before it is interrupted (60)",
    )
    s.add_argument(
        "--timeout",
        type=_positive(float),
        default=900.0,
        metavar="S",
        help="seconds for a whole notebook (900)",
    )
    s.add_argument(
        "--memory-limit",
        type=_memory_mb,
        default=4096,
        metavar="MB",
        help="kernel address-space cap, MB (4096; torch uses ~800)",
    )
    s.add_argument(
        "--every-cell",
        action="store_true",
        help="also run the cells that score nothing (demos, experiments)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = getattr(commands, f"cmd_{args.command}")
    try:
        return int(handler(args))
    except commands.UsageError as exc:
        print(f"a2s {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `a2s list | head`
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
