"""Turn cell records into exercise statuses, and results into JSON and JUnit XML."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from a2s.checks.errors import FAILED_NAMES, NOT_IMPLEMENTED
from a2s.gradebook import DEFAULT_PATTERN, student_of

if TYPE_CHECKING:
    from a2s.grade import SubmissionResult
    from a2s.notebook import Exercise
    from a2s.records import CellRecord
    from a2s.verdicts import Verdicts

__all__ = ["exercise_status", "results_json", "write_json", "write_junit"]

_MEMORY_HINT = (
    "MemoryError: ran out of memory (the grader caps the kernel's address space with "
    "--memory-limit); look for an array far larger than the inputs"
)
_OTHER_EXERCISE = re.compile(NOT_IMPLEMENTED + r": Exercise (\d\d\.\d+)")
_HOST = socket.gethostname() or "localhost"


def _explain(rec: CellRecord) -> str:
    ename, evalue = rec.ename, rec.evalue or ""
    if ename == "MemoryError":
        return _MEMORY_HINT
    if ename:
        return f"{ename}: {evalue}".strip()
    return rec.message[-600:]


def _blame(ex_id: str, message: str) -> str:
    """Say so when an exercise failed because it uses an earlier exercise that is a stub."""
    match = _OTHER_EXERCISE.search(message)
    if match and match.group(1) != ex_id:
        return (
            f"this exercise uses your Exercise {match.group(1)}, which does not work yet: {message}"
        )
    return message


def _passed_line(rec: CellRecord) -> str:
    lines = [ln for ln in rec.stdout.splitlines() if ln.startswith("✔")]
    return lines[-1] if lines else "passed"


def _tampered(message: str) -> tuple[str, str]:
    return "tampered", (
        f"{message}. The grader scores an exercise only from the course's own check, signed "
        "in the kernel; code that alters the grader, the guard or their inputs gets 0."
    )


def _from_verdict(ex: Exercise, verdicts: Verdicts | None) -> tuple[str, str] | None:
    """A decision that the signed verdicts force before the cell records are read."""
    if verdicts is None:
        return None
    if ex.id in verdicts.forged:
        return _tampered(f"a verdict line for exercise {ex.id} was forged or removed")
    v = verdicts.by_exercise.get(ex.id)
    if v is not None and v.status == "tampered":
        return _tampered(f"tampering detected while checking {ex.id}: {v.message}")
    return None


def exercise_status(
    ex: Exercise,
    records: dict[str, CellRecord],
    missing: set[str],
    fixed: dict[str, tuple[str, str]],
    run_timed_out: bool,
    verdicts: Verdicts | None = None,
) -> tuple[str, str]:
    """Decide ``(status, message)`` of one exercise from its cells and its signed verdict.

    With ``verdicts`` (every sealed run), an exercise passes only on a signed "passed"
    verdict; cell records (written from the kernel's outputs) explain failures only.
    """
    if ex.id in missing:
        return "missing", (
            f"exercise cell {ex.cell_id!r} (exercise {ex.id}) is not in the submission; "
            "it was graded as the empty stub. Restore the cell from labs/ and redo it."
        )
    if ex.id in fixed:
        return fixed[ex.id]
    forced = _from_verdict(ex, verdicts)
    if forced is not None:
        return forced
    ex_rec = records.get(ex.cell_id)
    check = records.get(ex.check_cell_id or "")
    if check is None or ex_rec is None:
        why = "the run stopped before this exercise" if run_timed_out else "its check did not run"
        return ("timeout" if run_timed_out else "error"), why
    for rec in (ex_rec, check):
        if rec.timeout:
            return "timeout", "exceeded the per-cell time limit (--cell-timeout); was interrupted"
    verdict = verdicts.by_exercise.get(ex.id) if verdicts is not None else None
    if verdict is not None and verdict.status == "passed":
        return "passed", verdict.message
    if check.outcome == "passed" and verdict is None:
        if verdicts is None:
            return "passed", _passed_line(check)
        return _tampered("the check cell finished without the course's check passing")
    if ex_rec.outcome == "failed":
        if ex_rec.ename == "NotImplementedError":
            return "failed", f"{NOT_IMPLEMENTED}: {ex_rec.evalue or ''}"
        return "error", f"your exercise cell raised {_explain(ex_rec)}"
    if verdict is not None:  # the signed message, not what the kernel displayed
        message = verdict.message.removeprefix("StudentError: ")
        return verdict.status, _blame(ex.id, message)
    ename = check.ename or ""
    if ename in FAILED_NAMES:
        return "failed", _blame(ex.id, check.evalue or "check failed")
    if ename == "NameError":
        return "failed", f"the check could not find your function ({check.evalue})"
    if ename == "StudentError":
        return "error", check.evalue or "your code raised"
    return "error", _explain(check)


def results_json(results: list[SubmissionResult]) -> dict:
    return {"version": 1, "results": [r.as_dict() for r in results]}


def write_json(results: list[SubmissionResult], path: Path) -> None:
    """Write the results atomically: a reader (or a Ctrl+C) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results_json(results), indent=2, ensure_ascii=False)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


# XML 1.0 allows tab, newline, carriage return and most of Unicode; ANSI colours are noise
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _xml(text: str | None) -> str:
    return _NOT_XML.sub("", _ANSI.sub("", text or ""))


def _case(suite: ET.Element, classname: str, name: str, seconds: float | None) -> ET.Element:
    return ET.SubElement(
        suite, "testcase", name=_xml(name), classname=_xml(classname), time=f"{seconds or 0.0:.3f}"
    )


def _outcome(case: ET.Element, kind: str, status: str, message: str) -> None:
    node = ET.SubElement(case, kind, message=_xml(message)[:500], type=status)
    node.text = _xml(message)


def _suite(suites: ET.Element, i: int, res: SubmissionResult, pattern: str) -> tuple[int, ...]:
    """One ``testsuite`` in the order the JUnit schemas require: properties, cases, out, err."""
    student = student_of(res.notebook, pattern) or str(Path(res.notebook).with_suffix(""))
    classname = f"{student}.lab{res.lab or 'unknown'}"
    stamp = (res.graded_at or "1970-01-01T00:00:00Z").removesuffix("Z")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=_xml(res.notebook),
        id=str(i),
        package=_xml(student),
        timestamp=stamp,
        hostname=_HOST,
        time=f"{res.wall_time or 0.0:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    audit = {
        "student": student,
        "lab": res.lab,
        "score": f"{res.score:g}",
        "max_score": f"{res.max_score:g}",
        "sha256": res.sha256,
        "course_version": res.course_version,
        "course_commit": res.course_commit,
        "seed": res.seed,
        "isolation": res.isolation,
    }
    for key, value in audit.items():
        if value is not None:
            ET.SubElement(props, "property", name=key, value=_xml(str(value)))
    fails = errors = 0
    if res.error:
        _outcome(_case(suite, classname, "notebook", None), "error", "notebook", res.error)
        errors += 1
    for ex in res.exercises:
        case = _case(suite, classname, f"{ex.id} {ex.title}", ex.seconds)
        if ex.status == "passed":  # the check's line with its cost figure
            ET.SubElement(case, "system-out").text = _xml(ex.message)
        elif ex.status in ("error", "timeout"):
            errors += 1
            _outcome(case, "error", ex.status, ex.message)
        else:  # failed, missing, tampered: whatever did not pass is never shown green
            fails += 1
            _outcome(case, "failure", ex.status, ex.message)
    out = f"{res.notebook}: lab {res.lab}, {res.score:g}/{res.max_score:g} points"
    ET.SubElement(suite, "system-out").text = _xml(out)
    ET.SubElement(suite, "system-err").text = _xml(res.error)
    tests = len(res.exercises) + (1 if res.error else 0)
    for key, value in (("tests", tests), ("failures", fails), ("errors", errors)):
        suite.set(key, str(value))
    suite.set("skipped", "0")
    return tests, fails, errors


def write_junit(
    results: list[SubmissionResult], path: Path, student_pattern: str = DEFAULT_PATTERN
) -> None:
    """One ``testsuite`` per notebook, one ``testcase`` per exercise, ``STUDENT.labNN`` classes.

    Valid against the Ant/Jenkins JUnit schema (``tests/course/junit.xsd``), so GitLab,
    Jenkins and GitHub reporters accept it and tell the students apart by class name.
    """
    suites = ET.Element("testsuites", name="a2s grade")
    totals = [0, 0, 0]
    for i, res in enumerate(results):
        for k, n in enumerate(_suite(suites, i, res, student_pattern)):
            totals[k] += n
    for key, value in zip(("tests", "failures", "errors"), totals, strict=True):
        suites.set(key, str(value))
    suites.set("time", f"{sum(r.wall_time or 0.0 for r in results):.3f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.indent(suites)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
