"""Attacks on the grader from inside a notebook: none of them may earn a point.

Each attack is written into the exercise cell 00.1 of the *unsolved* lab 00 (the 00.2 cell
stays the stub), so an honest grade is 0/3. One batch grades every attack beside a solved
peer, with two jobs; then an untouched stub is graded alone. The attack notebooks must score
0, the peer full marks with its bytes unchanged, the later stub 0, and the course package on
disk must be byte-identical. The first twelve are the attacks that earned 10/10 on lab 01
before the grader was sealed (issue "Grades a class can trust"); the rest are our own.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
import time
from pathlib import Path

import pytest

from a2s.grade import grade_paths
from a2s.notebook import read_notebook
from a2s.runner import RunOptions
from a2s.syllabus import repo_root

ROOT = repo_root()
STUB = "def matmul_flops(m, n, k):\n    raise NotImplementedError('Exercise 00.1')\n"
WRONG = "def matmul_flops(m, n, k):\n    return m * n * k\n"
RESULTS_MARK = "__RESULTS__"  # replaced by the path of the batch's JSON

ATTACKS: dict[str, str] = {
    # --- the testers' twelve (issue 7) ---
    "replace the check functions in the grader module": """
        import a2s.checks.lab00 as g
        g.check_matmul_flops = lambda f: print('✔ Exercise 00.1 passed: forged')
        g.check_arithmetic_intensity = lambda f: print('✔ Exercise 00.2 passed: forged')
    """,
    "rebind the name the check cells call": """
        import types
        lab00 = types.SimpleNamespace(check_matmul_flops=lambda f: None,
                                      check_arithmetic_intensity=lambda f: None)
    """,
    "input transformer that blanks later check cells": """
        def _blank(lines):
            return ['pass\\n'] if any('check' in ln for ln in lines) else lines
        get_ipython().input_transformers_cleanup.append(_blank)
    """,
    "silence the traceback display": """
        ip = get_ipython()
        ip.showtraceback = lambda *a, **k: None
        ip._showtraceback = lambda *a, **k: None
        ip.set_custom_exc((BaseException,), lambda *a, **k: None)
    """,
    "disable the reference guard and call the reference": """
        import contextlib
        import a2s.checks.core as c, a2s.checks.guard as g
        c.blocked = g.blocked = lambda targets: contextlib.nullcontext()
        g.Watch.active = lambda self: contextlib.nullcontext()
        from minitorch.hardware.costs import matmul_flops
    """,
    "detached process forging cell records": """
        import os, subprocess, json
        row = json.dumps({'id': 'check-00-1', 'exercise': '00.1', 'outcome': 'passed',
                          'ename': None, 'evalue': None, 'timeout': False,
                          'kernel_dead': False, 'message': '', 'stdout': '✔', 'seconds': 0})
        subprocess.Popen(['sh', '-c', f"sleep 1; for f in /tmp/*/cells.jsonl cells.jsonl; "
                          f"do echo '{row}' >> $f; done"], start_new_session=True)
    """,
    "detached process rewriting the results JSON after the batch": """
        import subprocess
        subprocess.Popen(['sh', '-c', 'sleep 15; echo hacked > __RESULTS__'],
                         start_new_session=True)
    """,
    "append code to the installed grader package on disk": """
        import a2s.checks.lab00 as g, pathlib
        for path in {pathlib.Path(g.__file__), pathlib.Path('__ROOT__/a2s/checks/lab00.py')}:
            try:
                with open(path, 'a') as fh:
                    fh.write('\\ncheck_matmul_flops = lambda f: print("✔ Exercise 00.1 passed")\\n')
            except OSError:
                pass
    """,
    "find the batch through /proc and rewrite a peer": """
        import os, pathlib
        for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
            try:
                cwd = pathlib.Path(os.readlink(f'/proc/{pid}/cwd'))
                cmd = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')
            except OSError:
                continue
            for arg in cmd:
                p = cwd / arg.decode(errors='ignore')
                if p.suffix == '.ipynb' and p.exists() and 'peer' in p.name:
                    p.write_text('{}')
        for p in pathlib.Path('__BATCH__').glob('*peer*.ipynb'):
            try:
                p.write_text('{}')
            except OSError:
                pass
    """,
    "an int whose == always says yes": """
        class _Yes(int):
            def __eq__(self, other):
                return True
            __hash__ = int.__hash__
        def matmul_flops(m, n, k):
            return _Yes(0)
    """,
    "one-line call into torch": """
        import torch
        def matmul_flops(m, n, k):
            return int(torch.tensor(2 * m) * n * k)
    """,
    "closure of the check replaced": """
        import a2s.checks.lab00 as g
        for cell in g.check_matmul_flops.__closure__ or ():
            if callable(cell.cell_contents) and getattr(cell.cell_contents, '__name__', '') \\
                    == 'check_matmul_flops':
                cell.cell_contents = lambda student: 'forged'
    """,
    # --- our own ---
    "read the expected value from the grader's frame": """
        import sys
        def matmul_flops(m, n, k):
            return sys._getframe(1).f_locals.get('want', 0)
    """,
    "gc: find and patch the grader's objects": """
        import gc
        for o in gc.get_objects():
            if isinstance(o, dict) and 'check_matmul_flops' in o:
                o['check_matmul_flops'] = lambda f: None
    """,
    "swap the code object of the check": """
        import a2s.checks.lab00 as g
        g.check_matmul_flops.__code__ = (lambda *a, **k: None).__code__
    """,
    "patch a helper the grader uses": textwrap.dedent("""
        import a2s.checks.lab00 as g
        g._counted_flops = lambda m, n, k: m * n * k  # the ground truth now agrees with WRONG
    """)
    + WRONG,
    "patch the shared case runner": textwrap.dedent("""
        import a2s.checks.cases as c, a2s.checks.lab00 as g
        c.run_cases = g.run_cases = lambda *a, **k: None
    """)
    + WRONG,
    "patch a builtin": """
        import builtins
        builtins.isinstance = lambda *a: True
        builtins.abs = lambda x: 0
    """,
    "raise the verdict event directly": """
        import sys
        sys.audit('a2s.verdict', '00.1', 'passed', '✔ Exercise 00.1 passed: forged')
        sys.audit('a2s.verdict', '00.2', 'passed', '✔ Exercise 00.2 passed: forged')
    """,
    "call the grader's verdict function": """
        import a2s.checks.core as c
        c._verdict('00.1', 'passed', 'forged')
        c._verdict('00.2', 'passed', 'forged')
    """,
    "profiler off during the check": """
        import sys, threading
        from minitorch.hardware import costs
        def matmul_flops(m, n, k):
            sys.setprofile(None)
            return costs.matmul_flops(m, n, k)
    """,
    "exec into the grader's namespace": textwrap.dedent("""
        import a2s.checks.lab00 as g
        exec('def _counted_flops(m, n, k):\\n    return m * n * k', vars(g))
    """)
    + WRONG,
    "ctypes poke": """
        import ctypes
        ctypes.memmove(id(0) + 24, id(1) + 24, 8)
    """,
    "write forged lines into the verdict file": """
        import glob, json
        for path in glob.glob('verdicts.jsonl') + glob.glob('/tmp/*/verdicts.jsonl'):
            with open(path, 'a') as fh:
                fh.write(json.dumps({'v': json.dumps([1, '00.1', 'passed', 'x']), 'mac': '0'}))
    """,
    "a clone of the reference with a new name": """
        import types
        from minitorch.hardware import costs
        _ref = costs.matmul_flops
        matmul_flops = types.FunctionType(_ref.__code__, _ref.__globals__, 'mine')
    """,
    "replace the reference module function for everyone": """
        import minitorch.hardware.costs as costs
        costs.matmul_flops = lambda m, n, k: 2 * m * n * k
        from a2s.checks import lab00 as g
    """,
}


def _notebook(stub: dict, code: str, batch: Path, results: Path) -> dict:
    nb = json.loads(json.dumps(stub))
    body = textwrap.dedent(code)
    body = body.replace("__RESULTS__", str(results)).replace("__ROOT__", str(ROOT))
    body = body.replace("__BATCH__", str(batch))
    for cell in nb["cells"]:
        if cell.get("id") == "ex-00-1":
            cell["source"] = STUB + body
    return nb


def _tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.grader
def test_no_attack_earns_a_point_and_nothing_leaks(tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    results = tmp_path / "grades.json"
    results.write_text("{}")
    stub = json.loads((ROOT / "labs" / "00_orientation.ipynb").read_text(encoding="utf-8"))
    names = {}
    for i, (name, code) in enumerate(ATTACKS.items()):
        path = batch / f"attack{i:02d}.ipynb"
        path.write_text(json.dumps(_notebook(stub, code, batch, results)), encoding="utf-8")
        names[str(path)] = name
    peer = batch / "zz_peer.ipynb"
    shutil.copy(ROOT / "solutions" / "00_orientation.ipynb", peer)
    peer_bytes = peer.read_bytes()
    course = _tree_hash(ROOT / "minitorch"), _tree_hash(ROOT / "a2s")
    opts = RunOptions(cell_timeout=30, timeout=120, memory_limit_mb=4096, hide=(str(results),))
    graded = grade_paths([str(batch)], opts, ROOT, jobs=2)
    by_path = {r.notebook: r for r in graded}
    for p, name in names.items():  # the attack table (pytest -s shows it)
        r = by_path[p]
        first = r.exercises[0] if r.exercises else None
        why = (first.message if first else r.error or "")[:90].replace("\n", " ")
        print(f"| {name} | {r.score:g} | {first.status if first else 'error'} | {why} |")
    earned = {
        names[p]: (r.score, [(e.id, e.status) for e in r.exercises])
        for p, r in by_path.items()
        if p in names and r.score > 0
    }
    assert not earned, f"attacks that earned points: {earned}"
    for p, name in names.items():
        assert by_path[p].error is None or "setup" not in by_path[p].error, (name, by_path[p])
    assert by_path[str(peer)].score == by_path[str(peer)].max_score == 3
    assert peer.read_bytes() == peer_bytes
    assert (_tree_hash(ROOT / "minitorch"), _tree_hash(ROOT / "a2s")) == course
    later = tmp_path / "later.ipynb"
    shutil.copy(ROOT / "labs" / "00_orientation.ipynb", later)
    (after,) = grade_paths([str(later)], opts, ROOT)
    assert after.score == 0 and all(e.status == "failed" for e in after.exercises)
    time.sleep(1)
    assert results.read_text() == "{}", "a process from the batch outlived it"


def test_every_attack_is_named_once() -> None:
    assert len(ATTACKS) >= 22 and len(set(ATTACKS)) == len(ATTACKS)
    read_notebook(ROOT / "labs" / "00_orientation.ipynb")  # the template exists
