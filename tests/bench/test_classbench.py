"""`a2s bench class`: the made-up class, its known scores, and the figures it reports.

The real run (30 notebooks graded, about 4 minutes on 2 cores) is not part of the suite; its
figures are in docs/grading.md. Here the class is built for real and the grading is faked.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from a2s import classbench
from a2s.figures import missed_target
from a2s.grade import SubmissionResult
from a2s.notebook import exercises, read_notebook
from a2s.syllabus import find_lab, repo_root

ROOT = repo_root()


def test_the_class_holds_solutions_stubs_and_partial_copies_with_known_scores(
    tmp_path: Path,
) -> None:
    expected = classbench.make_class(tmp_path, 9)
    assert len(expected) == 9 and len({Path(p).parent for p in expected}) == 9
    by_lab: dict[str, list[float]] = {}
    for path, score in expected.items():
        by_lab.setdefault(Path(path).name[:2], []).append(score)
    assert sorted(by_lab) == list(classbench.CLASS_LABS)
    for number, scores in by_lab.items():
        lab = find_lab(number)
        exs = exercises(read_notebook(lab.solution_path(ROOT)))
        full = sum(e.points for e in exs)
        assert scores == [full, 0.0, full - exs[-1].points]  # solution, stub, partial
    partial = next(Path(p) for p in expected if Path(p).parent.name == "s06")  # 7th: a partial
    lab = find_lab(partial.name[:2])
    nb, sol, stub = (
        read_notebook(p) for p in (partial, lab.solution_path(ROOT), lab.lab_path(ROOT))
    )
    last = exercises(sol)[-1].cell_id
    differ = [c.get("id") for c, s in zip(nb.cells, sol.cells, strict=True) if c.source != s.source]
    assert differ == [last]
    assert next(c.source for c in nb.cells if c.get("id") == last) == next(
        c.source for c in stub.cells if c.get("id") == last
    )


def test_figures_count_right_verdicts_and_flag_a_missed_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake(paths, opts, root=None, *, jobs=1, on_done=None, **_):
        expected = {str(p): 0.0 for p in Path(paths[0]).rglob("*.ipynb")}
        out = []
        for i, path in enumerate(sorted(expected)):
            wrong = i == 0  # one verdict off, one slow notebook
            res = SubmissionResult(
                path,
                None,
                score=1.0 if wrong else 0.0,
                max_score=5.0,
                wall_time=70.0 if wrong else 5.0,
            )
            out.append(res)
            if on_done is not None:
                on_done(res, out, False)
        return out

    monkeypatch.setattr(classbench, "grade_paths", fake)
    monkeypatch.setattr(classbench, "make_class", lambda dest, n, root=None: _stubs(dest, n))
    seen = []
    figs = classbench.class_bench(3, 2, ROOT, on_done=lambda r, done, n: seen.append(done))
    assert seen == [1, 2, 3]
    wall, slowest, _solution, right = figs
    assert right.value == 2 and missed_target(right.value, right.anchor)
    assert slowest.value == 70.0 and missed_target(slowest.value, slowest.anchor)
    assert not missed_target(wall.value, wall.anchor)


def _stubs(dest: Path, n: int) -> dict[str, float]:
    out = {}
    for i in range(n):
        lab = find_lab(classbench.CLASS_LABS[i % 3])
        path = dest / f"s{i:02d}" / f"{lab.name}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_bytes(lab.lab_path(ROOT).read_bytes())
        out[str(path)] = 0.0
    return out


def test_bench_class_outside_a_checkout_with_solutions_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from a2s import commands
    from a2s.commands import UsageError

    monkeypatch.setattr(commands, "_root", lambda: tmp_path)  # classbench reads it from here
    args = argparse.Namespace(lab="class", watch=False, json=None)
    with pytest.raises(UsageError, match="solutions/"):
        commands.cmd_bench(args)
