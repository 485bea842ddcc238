"""Run one grading in an operating-system sandbox: its own mount, PID and network namespaces.

Inside, the run sees a private copy of the course package mounted read-only, empty folders
where the course checkout's solutions/labs/tests, the submissions of the batch and the result
files are, only its own processes (``/proc`` is remounted; a detached process dies with the
run), and no network but its own loopback (the kernel talks to nbval over 127.0.0.1).

Levels, recorded in the grading JSON as ``isolation``:

* ``namespaces``: ``unshare`` as root (CI, the course's container image run with
  ``--cap-add SYS_ADMIN`` or ``--privileged``);
* ``user-namespaces``: the same through an unprivileged user namespace (most Linux laptops);
* ``none``: no namespaces available (macOS, Windows, locked-down containers): the run still
  gets a private folder and a fresh course copy, and the sealed kernel's verdicts, but other
  files on the machine are reachable from the kernel. ``A2S_SANDBOX=none`` forces this level.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["course_copy", "isolation_level", "sandboxed"]

_BASE = ["unshare", "--mount", "--pid", "--net", "--fork", "--mount-proc", "--kill-child"]
_LEVELS = {
    "namespaces": _BASE,
    "user-namespaces": [*_BASE[:1], "--user", "--map-root-user", *_BASE[1:]],
}
_LO_UP = (
    "import fcntl, socket, struct\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "flags = struct.unpack('16sh', fcntl.ioctl(s, 0x8913, struct.pack('16sh', b'lo', 0)))[1]\n"
    "fcntl.ioctl(s, 0x8914, struct.pack('16sh', b'lo', flags | 1))\n"
)


@functools.cache
def isolation_level() -> str:
    """The strongest level that works on this machine (tried once per process)."""
    if os.environ.get("A2S_SANDBOX", "").lower() == "none" or shutil.which("unshare") is None:
        return "none"
    for level, argv in _LEVELS.items():
        try:
            done = subprocess.run(
                [*argv, "sh", "-c", "mount -t tmpfs tmpfs /mnt && true"],
                capture_output=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return level
    return "none"


def course_copy(folder: Path) -> Path:
    """Copy the installed ``minitorch`` and ``a2s`` packages into ``folder``; return their
    import root."""
    import a2s
    import minitorch

    target = folder / "course"
    for package in (minitorch, a2s):
        source = Path(str(package.__file__)).resolve().parent
        ignore = shutil.ignore_patterns("*.egg-info")
        shutil.copytree(source, target / package.__name__, ignore=ignore)
    return target


def _safe_to_hide(path: Path, keep: list[Path]) -> bool:
    """A folder may be hidden unless it holds the interpreter, the run's folder, or is /."""
    if not path.is_dir() or path == Path(path.anchor):
        return False
    return not any(k == path or path in k.parents for k in keep)


def sandboxed(
    command: list[str], folder: Path, course: Path, hide: list[Path], level: str
) -> list[str]:
    """Wrap ``command`` so it runs inside the sandbox of ``level`` (unchanged for ``none``)."""
    if level == "none":
        return command
    keep = [Path(p).resolve() for p in (sys.prefix, sys.base_prefix, folder, sys.executable)]
    script = [f"{sys.executable} -c {_quote(_LO_UP)} 2>/dev/null || true"]
    hidden: list[Path] = []
    for path in sorted({p.resolve() for p in hide if p.exists()}):
        if any(h in path.parents for h in hidden):
            continue  # inside a folder already hidden
        if path.is_file():
            script.append(f"mount --bind /dev/null {_quote(str(path))}")
        elif _safe_to_hide(path, keep):
            script.append(f"mount -t tmpfs -o size=64k,mode=0700 tmpfs {_quote(str(path))}")
            hidden.append(path)
    script.append(f"mount --bind {_quote(str(course))} {_quote(str(course))}")
    script.append(f"mount -o remount,bind,ro {_quote(str(course))}")
    script.append('exec "$@"')
    return [*_LEVELS[level], "sh", "-ec", "\n".join(script), "a2s-sandbox", *command]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
