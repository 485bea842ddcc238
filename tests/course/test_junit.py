"""JUnit XML that CI servers accept: valid against tests/course/junit.xsd, students apart."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from a2s.grade import ExerciseResult, SubmissionResult
from a2s.scoring import write_junit

XSD = Path(__file__).with_name("junit.xsd")


def _ex(i: int, status: str, message: str = "", seconds: float | None = 0.25) -> ExerciseResult:
    points = 1.0 if status == "passed" else 0.0
    return ExerciseResult(f"00.{i}", f"Exercise {i}", points, 1.0, status, message, seconds)


def _results() -> list[SubmissionResult]:
    audit = {
        "sha256": "ab" * 32,
        "course_version": "0.1.0",
        "course_commit": "c0ffee",
        "graded_at": "2026-01-05T09:30:00Z",
        "wall_time": 9.5,
        "seed": 7,
        "isolation": "namespaces",
    }
    every = [
        _ex(1, "passed", "✔ Exercise 00.1 passed: a 4096³ GEMM"),
        _ex(2, "failed", "wrong"),
        _ex(3, "missing", "cell gone"),
        _ex(4, "error", "\x1b[31mBoom\x1b[0m \x00\x07ctl"),
        _ex(5, "timeout", "too slow", None),
        _ex(6, "tampered", "forged verdict"),
    ]
    alice = SubmissionResult(
        "term/submissions/alice/00_orientation.ipynb", "00", 1.0, 5.0, None, every, **audit
    )
    setup = "the course's setup cell failed"
    bob = SubmissionResult(
        "term/submissions/bob/00_orientation.ipynb",
        "00",
        0.0,
        5.0,
        setup,
        [_ex(1, "error", "not graded")],
    )
    notes = SubmissionResult(
        "term/submissions/bob/notes.ipynb",
        None,
        0.0,
        0.0,
        "term/submissions/bob/notes.ipynb: unknown lab",
    )
    loose = SubmissionResult("loose.ipynb", "00", 0.0, 1.0, None, [_ex(1, "failed", "x")])
    return [alice, bob, notes, loose]


@pytest.fixture
def xml_path(tmp_path: Path) -> Path:
    path = tmp_path / "grades.xml"
    write_junit(_results(), path)
    return path


def test_valid_against_the_junit_schema(xml_path: Path) -> None:
    xmlschema = pytest.importorskip("xmlschema", reason="pip install -e '.[dev]'")
    xmlschema.XMLSchema(XSD).validate(xml_path)


VALID = (
    '<testsuites><testsuite name="n" tests="1" failures="0" errors="1" time="1.0" '
    'timestamp="2026-01-05T09:30:00" hostname="h" id="0" package="p"><properties/>'
    '<testcase name="notebook" classname="p.lab00" time="0.5">'
    '<error message="boom" type="notebook">boom</error></testcase>'
    "<system-out/><system-err>boom</system-err></testsuite></testsuites>"
)
BROKEN = {
    "system-err before the cases (the old layout)": lambda x: x.replace(
        "<properties/>", "<properties/><system-err>boom</system-err>", 1
    ),
    "no time on a case": lambda x: x.replace(' time="0.5"', ""),
    "no classname": lambda x: x.replace(' classname="p.lab00"', ""),
    "no properties": lambda x: x.replace("<properties/>", ""),
    "an error without a type": lambda x: x.replace(' type="notebook"', ""),
    "a timestamp with a zone": lambda x: x.replace("09:30:00", "09:30:00Z"),
}


@pytest.mark.parametrize("mutation", sorted(BROKEN))
def test_the_schema_has_teeth(mutation: str) -> None:
    xmlschema = pytest.importorskip("xmlschema", reason="pip install -e '.[dev]'")
    schema = xmlschema.XMLSchema(XSD)
    assert schema.is_valid(VALID)
    assert not schema.is_valid(BROKEN[mutation](VALID))


def test_suites_keep_the_required_order_and_counts(xml_path: Path) -> None:
    root = ET.parse(xml_path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 4
    for suite in suites:
        tags = [child.tag for child in suite]
        assert tags[0] == "properties" and tags[-2:] == ["system-out", "system-err"]
        assert set(tags[1:-2]) <= {"testcase"}
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("errors")) == sum(c.find("error") is not None for c in cases)
        assert float(suite.get("time")) >= 0 and all(float(c.get("time")) >= 0 for c in cases)
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites) == 10
    alice = suites[0]
    assert alice.get("timestamp") == "2026-01-05T09:30:00" and alice.get("time") == "9.500"
    assert [c.get("time") for c in alice.findall("testcase")][:2] == ["0.250", "0.250"]
    props = {p.get("name"): p.get("value") for p in alice.find("properties")}
    assert props["sha256"] == "ab" * 32 and props["seed"] == "7" and props["student"] == "alice"
    assert props["isolation"] == "namespaces" and props["course_commit"] == "c0ffee"


def test_the_student_is_in_the_classname(xml_path: Path) -> None:
    suites = ET.parse(xml_path).getroot().findall("testsuite")
    names = [{c.get("classname") for c in s.findall("testcase")} for s in suites]
    assert names == [{"alice.lab00"}, {"bob.lab00"}, {"bob.labunknown"}, {"loose.lab00"}]
    # GitLab and GitHub reporters key a case on classname + name: two students never collide
    keys = [(c.get("classname"), c.get("name")) for s in suites for c in s.findall("testcase")]
    assert len(keys) == len(set(keys))


def test_statuses_map_to_failure_and_error(xml_path: Path) -> None:
    alice = ET.parse(xml_path).getroot().find("testsuite")
    kinds = [(c[0].tag, c[0].get("type")) for c in alice.findall("testcase")]
    assert kinds == [
        ("system-out", None),
        ("failure", "failed"),
        ("failure", "missing"),
        ("error", "error"),
        ("error", "timeout"),
        ("failure", "tampered"),
    ]


def test_text_is_legal_xml_without_terminal_colours(xml_path: Path) -> None:
    text = xml_path.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
    assert "Boom ctl" in text and "4096³" in text  # the rest of the message is kept


def test_a_submission_that_could_not_be_graded_is_one_red_case(xml_path: Path) -> None:
    suites = ET.parse(xml_path).getroot().findall("testsuite")
    notes = suites[2]
    (case,) = notes.findall("testcase")
    assert case.get("name") == "notebook" and case.find("error").get("type") == "notebook"
    assert "unknown lab" in notes.find("system-err").text


def test_the_student_pattern_is_the_instructors(tmp_path: Path) -> None:
    path = tmp_path / "g.xml"
    res = SubmissionResult(
        "hw1-carol/labs/00_orientation.ipynb", "00", 1.0, 1.0, None, [_ex(1, "passed")]
    )
    write_junit([res], path, student_pattern="hw1-<student>/")
    assert ET.parse(path).getroot().find("testsuite/testcase").get("classname") == "carol.lab00"
