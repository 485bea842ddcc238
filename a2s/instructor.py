"""The instructor's commands: grade a class, the gradebook and reports, similarity, release.

``a2s grade`` writes its JSON after every submission, so an interrupted run keeps what was
graded and ``--resume`` picks up from there. The other commands only read grading JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time
from pathlib import Path

from a2s.commands import UsageError, _options, _root
from a2s.grade import SubmissionResult, expand_paths, grade_paths
from a2s.gradebook import (
    build_gradebook,
    exercise_stats,
    load_results,
    stats_lines,
    student_of,
)
from a2s.scoring import write_json, write_junit
from a2s.syllabus import find_lab
from a2s.table import results_table

__all__ = ["grade", "release", "report", "similarity"]


class _BatchProgress:
    """A bar over submissions that names the notebook being graded (and its cells, one job)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.bar, self.name = None, ""
        if not quiet:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="grading", unit="nb", file=sys.stderr)

    def start(self, notebook: str) -> None:
        self.name = notebook
        if self.bar is not None:
            self.bar.set_postfix_str(notebook)

    def cells(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.name} cell {done}/{total}")

    def finish(self, res: SubmissionResult, reused: bool) -> None:
        if self.bar is not None:
            how = "kept from the earlier run" if reused else f"{res.wall_time or 0:.1f} s"
            self.bar.write(f"{res.notebook}: {res.score:g}/{res.max_score:g} ({how})")
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before grading, outputs that would overwrite a submission or cannot be written."""
    inputs = {Path(p).resolve() for p in args.paths}
    for out in filter(None, (args.json, args.junit)):
        target = Path(out).resolve()
        if target in inputs or target.suffix == ".ipynb":
            raise UsageError(
                f"refusing to write results to {out}: it is (or looks like) a notebook"
            )
        if target.is_dir():
            raise UsageError(f"{out} is a folder; give a file name such as grades.json")
        parent = next((p for p in target.parents if p.exists()), None)
        if parent is None or not os.access(parent, os.W_OK):
            raise UsageError(f"cannot write {out}: {parent} is not writable")


def _previous(path: Path) -> dict[str, dict]:
    """The results of an earlier run by notebook, for ``--resume`` (none if no file yet)."""
    if not path.exists():
        return {}
    try:
        return {r["notebook"]: r for r in load_results([path])}
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"cannot resume from {path}: {exc}") from None


def _percent(res: SubmissionResult) -> float:
    return 100.0 * res.score / res.max_score if res.max_score else 0.0


def grade(args: argparse.Namespace) -> int:
    """``a2s grade``: grade, write the JSON as each submission finishes, then JUnit."""
    _check_outputs(args)
    if args.extra_checks and not Path(args.extra_checks).is_dir():
        raise UsageError(f"--extra-checks {args.extra_checks}: no such folder")
    root, out = _root(), Path(args.json)
    previous = _previous(out) if args.resume else None
    bar, kept, t0 = _BatchProgress(len(expand_paths(args.paths)), args.quiet), [], time.monotonic()

    def done(res: SubmissionResult, finished: list[SubmissionResult], reused: bool) -> None:
        write_json(finished, out)  # an interrupted run keeps every finished submission
        kept.extend([res.notebook] if reused else [])
        bar.finish(res, reused)

    cells = bar.cells if args.jobs == 1 else None
    outputs = [Path(p).resolve() for p in (args.json, args.junit) if p]
    opts = dataclasses.replace(
        _options(args),
        seed=args.seed,
        extra_checks=args.extra_checks,
        hide=tuple(str(p) for out in outputs for p in (out, out.parent)),
    )
    results = grade_paths(
        args.paths,
        opts,
        root,
        cells,
        jobs=args.jobs,
        previous=previous,
        on_start=bar.start,
        on_done=done,
    )
    bar.close()
    write_json(results, out)
    if args.junit:
        write_junit(results, Path(args.junit), args.student_pattern)
    for res in [] if args.quiet else results:  # --quiet: the JSON holds the tables
        how = "kept from the earlier run" if res.notebook in kept else f"{res.wall_time or 0:.1f} s"
        print("\n".join([*results_table(res), f"  ({how})"]))
    print(
        f"graded {len(results) - len(kept)} and kept {len(kept)} submission(s) in "
        f"{time.monotonic() - t0:.0f} s with {args.jobs} job(s); wrote {args.json}"
        + (f" and {args.junit}" if args.junit else "")
    )
    if args.fail_under is not None:
        counted = _counted(results, args.student_pattern)
        low = [r for r in counted if not r.max_score or _percent(r) < args.fail_under]
        if low:
            print(f"{len(low)} submission(s) under {args.fail_under:g}%:", file=sys.stderr)
            for r in low:
                why = f" ({r.error})" if r.error and not r.exercises else ""
                print(f"  {r.notebook}: {_percent(r):.1f}%{why}", file=sys.stderr)
            return 1
    return 0


def _counted(results: list[SubmissionResult], pattern: str) -> list[SubmissionResult]:
    """One submission per student and lab, the best, as the gradebook counts them."""
    best: dict[tuple[str, str | None], SubmissionResult] = {}
    for res in results:
        student = student_of(res.notebook, pattern)
        key = (student or res.notebook, res.lab if student else None)
        if key not in best or (res.score or 0) > (best[key].score or 0):
            best[key] = res
    return [r for r in results if r in best.values()]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "student"


def report(args: argparse.Namespace) -> int:
    """``a2s report``: one skill report over all results, or the class view (--by-student).

    The capstone section (the skill matrix and every profile) is added when lab 28 is among
    the results (the labs that count, with ``--by-student``) or with ``--profiles``.
    """
    from a2s.profiles import (
        CAPSTONE_LAB,
        capstone_section,
        covers_capstone,
        profiles_png,
        save_profiles_radar,
        write_gradebook_csv,
    )
    from a2s.report import save_radar, skill_report

    if args.exercise:
        from a2s.release import exercise_verdict

        ok, lines = exercise_verdict(args.results, args.exercise)
        print("\n".join(lines), file=sys.stdout if ok else sys.stderr)
        return 0 if ok else 1
    try:
        results = load_results([Path(p) for p in args.results])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    root = _root()
    if not (args.by_student or args.csv or args.png_dir or args.stats_png):
        rep = skill_report({"version": 1, "results": results}, root, args.profile)
        print("\n".join(rep.lines()))
        cap = capstone_section(results, root) if args.profiles or covers_capstone(results) else None
        if cap is not None:
            print("\n" + "\n".join(cap.lines()))
        if args.png:
            save_radar(rep, Path(args.png))
            print(f"wrote {args.png}")
            if cap is not None:
                save_profiles_radar(cap, profiles_png(Path(args.png)))
                print(f"wrote {profiles_png(Path(args.png))}")
        return 0
    if args.png:
        raise UsageError("--png draws one report; with --by-student use --png-dir DIR")
    try:
        labs = [find_lab(x).number for x in args.labs.split(",")] if args.labs else None
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    book = build_gradebook(results, root, args.student_pattern, labs)
    print("\n".join(book.lines()))
    print("\nskills (each over what was assessed of that student)")
    caps = {}  # student -> the capstone section: with --profiles or when lab 28 counts
    for student in book.students:
        counted = list(book.counted[student].values())
        rep = skill_report({"version": 1, "results": counted}, root, args.profile)
        verdict = f"; profile {'met' if rep.profile_met else 'NOT met'}" if args.profile else ""
        if args.profiles or CAPSTONE_LAB in book.labs:
            caps[student] = capstone_section(counted, root)
            verdict += "; profiles: " + ", ".join(
                f"{p.key} {p.verdict}" + ("" if p.value is None else f" {p.value:.1f}")
                for p in caps[student].profiles
            )
        print(f"  {student}: {rep.summary()}{verdict}")
        if args.png_dir:
            save_radar(rep, Path(args.png_dir) / f"{_safe(student)}.png", student)
            if student in caps:
                out = Path(args.png_dir) / f"{_safe(student)}-profiles.png"
                save_profiles_radar(caps[student], out, student)
    stats = exercise_stats(book, root)
    print("\nexercises (pass rate over the students who submitted the lab)")
    print("\n".join(stats_lines(stats)))
    if args.csv:
        write_gradebook_csv(book, Path(args.csv), caps)
        print(f"wrote {args.csv}")
    if args.png_dir:
        print(f"wrote {len(book.students)} radar charts to {args.png_dir}")
    if args.stats_png:
        from a2s.gradebook import save_outcomes

        save_outcomes(stats, Path(args.stats_png))
        print(f"wrote {args.stats_png}")
    return 0


def similarity(args: argparse.Namespace) -> int:
    """``a2s similarity``: pairs of submissions (and solutions) with the same exercise code."""
    from a2s import similarity as sim

    matches, notes = sim.find_matches(args.paths, _root(), args.student_pattern, args.min_size)
    print("\n".join(sim.match_lines(matches) + [f"note: {n}" for n in notes]))
    print("a report to read, not a verdict: look at the code before drawing any conclusion")
    if args.csv:
        sim.write_csv(matches, Path(args.csv))
        print(f"wrote {args.csv}")
    return 0


def release(args: argparse.Namespace) -> int:
    """``a2s release``: write the student template repository of an assignment."""
    from a2s.build import existing_labs
    from a2s.release import DEFAULT_IMAGE
    from a2s.release import release as build_template

    root = _root()
    try:
        labs = [find_lab(x) for x in args.labs.split(",")] if args.labs else None
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    labs = labs or [lab for lab, _ in existing_labs(root)]
    missing = [lab.name for lab in labs if not lab.solution_path(root).exists()]
    if missing:
        raise UsageError(f"no solution notebook for {', '.join(missing)} (a planned lab)")
    try:
        written = build_template(root, Path(args.out_dir), labs, args.image, args.course_url)
    except (FileExistsError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(
        f"wrote {len(written)} files to {args.out_dir} "
        f"(labs {', '.join(lab.number for lab in labs)})"
    )
    if args.image == DEFAULT_IMAGE:
        print(
            f"note: the workflow uses the placeholder image {args.image}; "
            "pass --image with your published student image",
            file=sys.stderr,
        )
    return 0
