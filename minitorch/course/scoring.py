"""Turn cell records into exercise statuses, and results into JSON and JUnit XML."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minitorch.course.grade import SubmissionResult
    from minitorch.course.notebook import Exercise

__all__ = ["exercise_status", "results_json", "write_json", "write_junit"]

_MEMORY_HINT = (
    "MemoryError: ran out of memory (the grader caps the kernel's address space with "
    "--memory-limit); look for an array far larger than the inputs"
)
_OTHER_EXERCISE = re.compile(r"not implemented yet: Exercise (\d\d\.\d+)")


def _explain(rec: dict) -> str:
    ename, evalue = rec.get("ename"), rec.get("evalue") or ""
    if ename == "MemoryError":
        return _MEMORY_HINT
    if ename:
        return f"{ename}: {evalue}".strip()
    return rec.get("message", "")[-600:]


def _blame(ex_id: str, message: str) -> str:
    """Say so when an exercise failed because it uses an earlier exercise that is a stub."""
    match = _OTHER_EXERCISE.search(message)
    if match and match.group(1) != ex_id:
        return (
            f"this exercise uses your Exercise {match.group(1)}, which does not work yet: {message}"
        )
    return message


def _passed_line(rec: dict) -> str:
    lines = [ln for ln in rec.get("stdout", "").splitlines() if ln.startswith("✔")]
    return lines[-1] if lines else "passed"


def exercise_status(
    ex: Exercise,
    records: dict[str, dict],
    missing: set[str],
    fixed: dict[str, tuple[str, str]],
    run_timed_out: bool,
) -> tuple[str, str]:
    """Decide ``(status, message)`` of one exercise from its exercise and check cells."""
    if ex.id in missing:
        return "missing", (
            f"exercise cell {ex.cell_id!r} (exercise {ex.id}) is not in the submission; "
            "it was graded as the empty stub. Restore the cell from labs/ and redo it."
        )
    if ex.id in fixed:
        return fixed[ex.id]
    ex_rec = records.get(ex.cell_id)
    check = records.get(ex.check_cell_id or "")
    if check is None or ex_rec is None:
        why = "the run stopped before this exercise" if run_timed_out else "its check did not run"
        return ("timeout" if run_timed_out else "error"), why
    for rec in (ex_rec, check):
        if rec["timeout"]:
            return "timeout", "exceeded the per-cell time limit (--cell-timeout); was interrupted"
    if check["outcome"] == "passed":
        return "passed", _passed_line(check)
    if ex_rec["outcome"] == "failed":
        if ex_rec.get("ename") == "NotImplementedError":
            return "failed", f"not implemented yet: {ex_rec.get('evalue', '')}"
        return "error", f"your exercise cell raised {_explain(ex_rec)}"
    ename = check.get("ename") or ""
    if ename in ("AssertionError", "CheckFailure", "ReferenceCalledError"):
        return "failed", _blame(ex.id, check.get("evalue") or "check failed")
    if ename == "NameError":
        return "failed", f"the check could not find your function ({check.get('evalue')})"
    if ename == "StudentError":
        return "error", check.get("evalue") or "your code raised"
    return "error", _explain(check)


def results_json(results: list[SubmissionResult]) -> dict:
    return {"version": 1, "results": [r.as_dict() for r in results]}


def write_json(results: list[SubmissionResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results_json(results), indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_junit(results: list[SubmissionResult], path: Path) -> None:
    """One ``testsuite`` per notebook, one ``testcase`` per exercise."""
    suites = ET.Element("testsuites")
    for res in results:
        count = len(res.exercises) + (1 if res.error else 0)
        suite = ET.SubElement(suites, "testsuite", name=res.notebook, tests=str(count))
        fails = errors = 0
        if res.error:
            ET.SubElement(suite, "system-err").text = res.error
            case = ET.SubElement(suite, "testcase", classname=f"lab{res.lab}", name="notebook")
            ET.SubElement(case, "error", message=res.error[:500], type="notebook").text = res.error
            errors += 1
        for ex in res.exercises:
            case = ET.SubElement(
                suite, "testcase", classname=f"lab{res.lab}", name=f"{ex.id} {ex.title}"
            )
            if ex.status == "failed" or ex.status == "missing":
                fails += 1
                ET.SubElement(case, "failure", message=ex.message[:500]).text = ex.message
            elif ex.status in ("error", "timeout"):
                errors += 1
                node = ET.SubElement(case, "error", message=ex.message[:500], type=ex.status)
                node.text = ex.message
        suite.set("failures", str(fails))
        suite.set("errors", str(errors))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
