"""The bodies of the ``a2s`` subcommands (parsing lives in :mod:`a2s.cli`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from a2s.build import build_all, existing_labs
from a2s.figures import BENCH_HEADER, print_figure
from a2s.grade import grade_submission
from a2s.hosts import cmd_ranks  # noqa: F401  (a2s ranks: the body lives in a2s.hosts)
from a2s.notebook import NotebookError, dumps, exercises, read_notebook
from a2s.runner import RunOptions
from a2s.syllabus import LABS, LAYERS, course_folder, find_lab, find_lab_notebook
from a2s.table import results_table as _table
from a2s.table import shown_path

__all__ = ["UsageError"]


class UsageError(Exception):
    """A bad argument: printed as ``a2s CMD: error: ...`` with exit status 2."""


def _root(needs: str = "") -> Path:
    try:
        return course_folder(needs)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None


def _lab(key: str):
    try:
        return find_lab(key)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def _options(args: argparse.Namespace) -> RunOptions:
    return RunOptions(
        args.cell_timeout, args.timeout, args.memory_limit, every_cell=args.every_cell
    )


def cmd_list(args: argparse.Namespace) -> int:
    root = _root()
    rows: list[dict[str, Any]] = []
    wanted = {_lab(key).number for key in getattr(args, "labs", None) or ()}
    for lab in LABS:
        if wanted and lab.number not in wanted:
            continue
        path = lab.solution_path(root)
        exs = exercises(read_notebook(path)) if path.exists() else []
        if not exs and not args.all and not wanted:
            continue
        ex_keys = ("id", "title", "points", "topics", "subject", "dimension")
        row: dict[str, Any] = {"lab": lab.number}
        row |= {k: getattr(lab, k) for k in ("name", "layer", "title", "builds", "module")}
        row |= {"available": path.exists(), "points": sum(e.points for e in exs)}
        row["exercises"] = [{k: getattr(e, k) for k in ex_keys} for e in exs]
        rows.append(row)
    if args.json:
        print(json.dumps({"version": 1, "labs": rows}, indent=2, ensure_ascii=False))
        return 0
    for row in rows:
        state = "" if row["available"] else "  (planned)"
        print(
            f"{row['lab']}  {row['title']:<36} layer {row['layer']} ({LAYERS[row['layer']]}), "
            f"{row['points']:g} pts{state}"
        )
        for e in row["exercises"]:
            print(
                f"    {e['id']}  {e['title']:<52} {e['points']:g} pts  [{', '.join(e['topics'])}]"
            )
    ready = [r for r in rows if r["available"]]
    print(
        f"{len(ready)} lab(s), {sum(len(r['exercises']) for r in ready)} exercises, "
        f"{sum(r['points'] for r in ready):g} points"
    )
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    root = _root("build")
    try:
        report = build_all(root, check=args.check, force=args.force)
    except NotebookError as exc:
        print(f"a2s build: {exc}", file=sys.stderr)
        return 1
    if args.check:
        if report.differing:
            print("labs/ differs from a fresh build of solutions/ (run `a2s build`):")
            for name in report.differing:
                print(f"  {name}")
            return 1
        print(f"labs/ is up to date ({len(existing_labs(root))} labs)")
        return 0
    print(
        f"wrote {len(report.written)} lab(s)"
        + (": " + ", ".join(report.written) if report.written else "")
    )
    for path in report.kept:
        print(
            f"kept {path.relative_to(root)}: it holds work (outputs or edited exercises) or has "
            "no solution; copy it elsewhere, or pass --force to replace it",
            file=sys.stderr,
        )
    return 1 if report.kept else 0


def cmd_execute(args: argparse.Namespace) -> int:
    import nbclient

    from a2s.build import KERNELSPEC
    from a2s.outputs import clean_notebook_outputs

    root = _root("execute")
    labs = [_lab(k) for k in args.labs] or [lab for lab, _ in existing_labs(root)]
    for lab in labs:
        path = lab.solution_path(root)
        if not path.exists():
            raise UsageError(f"{path} does not exist")
        nb = read_notebook(path)
        nb.metadata["kernelspec"] = dict(KERNELSPEC)  # what JupyterLab writes when it opens it
        client = nbclient.NotebookClient(
            nb,
            timeout=args.timeout,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()  # also sets metadata.language_info from the kernel
        nb.metadata.pop("widgets", None)
        removed = clean_notebook_outputs(nb)  # progress-bar frames -> their final state
        path.write_text(dumps(nb), encoding="utf-8")
        note = f" ({removed} progress or empty outputs folded)" if removed else ""
        print(f"executed {path.relative_to(root)}{note}")
    return 0


class _Progress:
    """A tqdm bar over notebook cells, opened at the first update (when the total is known)."""

    def __init__(self, desc: str, quiet: bool) -> None:
        self.desc, self.quiet = desc, quiet
        self.bar: Any = None

    def update(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self.bar is None:
            from tqdm.auto import tqdm

            # a terminal gets the bar and keeps its last state; a pipe (`!a2s check` in a
            # notebook, a CI log) gets none: a bar that erased itself left an empty stderr box
            self.bar = tqdm(total=total, desc=self.desc, unit="cell", file=sys.stderr, disable=None)
        bar = self.bar
        bar.total = total
        bar.n = min(done, total)
        bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_check(args: argparse.Namespace) -> int:
    lab = _lab(args.lab)
    if args.notebook:
        path = Path(args.notebook)
        if not path.is_file():
            raise UsageError(f"{path}: no such notebook")
    else:
        try:
            path = find_lab_notebook(lab, Path.cwd())
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
    root = _root()
    shown = shown_path(path)
    print(f"grading {shown} (lab {lab.number}) against the course in {root}", file=sys.stderr)
    progress = _Progress(f"lab {lab.number}", quiet=False)
    result = grade_submission(str(path), _options(args), root, progress.update)
    progress.close()
    result.notebook = shown
    if result.lab is not None and result.lab != lab.number:
        print(f"note: {shown} is lab {result.lab}, not lab {lab.number}", file=sys.stderr)
    print("\n".join(_table(result)))
    ok = (
        not result.error
        and result.exercises
        and all(e.status == "passed" for e in result.exercises)
    )
    return 0 if ok else 1


def cmd_grade(args: argparse.Namespace) -> int:
    from a2s import instructor

    return instructor.grade(args)


def cmd_report(args: argparse.Namespace) -> int:
    from a2s import instructor

    return instructor.report(args)


def cmd_similarity(args: argparse.Namespace) -> int:
    from a2s import instructor

    return instructor.similarity(args)


def cmd_release(args: argparse.Namespace) -> int:
    from a2s import instructor

    return instructor.release(args)


def cmd_doctor(args: argparse.Namespace) -> int:
    from a2s.doctor import diagnose

    findings = diagnose(start_kernel=not args.no_kernel)
    for f in findings:
        print(
            f"{'✔' if f.ok else '✘'} {f.name:<15} {f.detail}"
            + (f"\n    fix: {f.fix}" if not f.ok and f.fix else "")
        )
    bad = [f for f in findings if not f.ok]
    print("all good" if not bad else f"{len(bad)} problem(s) found")
    return 1 if bad else 0


def _bench_watch(args: argparse.Namespace) -> int:
    from a2s.bench import one_thread
    from a2s.overhead import watch_overhead

    root = _root("bench --watch")
    labs = [_lab(args.lab)] if args.lab else [lab for lab, _ in existing_labs(root)]
    worst = 0.0
    for lab in labs:
        with one_thread():
            costs = watch_overhead(lab.solution_path(root))
        for c in costs:
            worst = max(worst, c.ratio)
            print(
                f"[{lab.number}] {c.cell:<12} unwatched {c.unwatched * 1e3:8.1f} ms   "
                f"watched {c.watched * 1e3:8.1f} ms   x{c.ratio:.2f}"
            )
    print(f"worst overhead x{worst:.2f} (the course keeps it under x2)")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from a2s.bench import load, one_thread

    if args.watch:
        return _bench_watch(args)
    if args.lab == "class":
        from a2s.classbench import cmd_bench_class

        return cmd_bench_class(args)

    registry = load()
    if args.lab:
        number = _lab(args.lab).number
        if number not in registry:
            raise UsageError(f"lab {number} registers no benchmarks (have: {', '.join(registry)})")
        registry = {number: registry[number]}
    figures = []
    print(BENCH_HEADER)
    for lab, fns in registry.items():
        for fn in fns:
            with one_thread():
                for fig in fn():
                    fig.lab = lab
                    figures.append(fig)
                    print_figure(lab, fig)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"version": 1, "figures": [f.as_dict() for f in figures]}, indent=2) + "\n"
        )
    return 0
