"""The deprecated ``minitorch.checks`` alias: old notebooks keep importing the same graders."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-W", "always::DeprecationWarning", "-c", textwrap.dedent(code)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_old_imports_give_the_very_modules_of_a2s_checks_with_a_warning() -> None:
    proc = _run("""
        from minitorch.checks import lab01
        import minitorch.checks.lab01.fp8 as old
        from minitorch.checks.lab01 import check_update_scale
        import a2s.checks.lab01, a2s.checks.lab01.fp8 as new
        assert lab01 is a2s.checks.lab01 and old is new
        assert check_update_scale is a2s.checks.lab01.check_update_scale
        assert old.__name__ == "a2s.checks.lab01.fp8"
        print("same modules")
    """)
    assert proc.returncode == 0, proc.stderr
    assert "same modules" in proc.stdout
    assert "minitorch.checks moved to a2s.checks" in proc.stderr


def test_the_new_import_warns_nothing_and_the_stack_does_not_load_the_course() -> None:
    proc = _run("""
        import sys
        import minitorch.model, minitorch.comm, minitorch.runtime
        assert not any(m == "a2s" or m.startswith("a2s.") for m in sys.modules), "a2s loaded"
        from a2s.checks import lab18
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert "DeprecationWarning" not in proc.stderr
