"""A pytest plugin, loaded beside nbval by the grader, that records each cell's raw outcome.

For every executed notebook cell it appends one JSON line to the file named by
``$A2S_RESULTS``: the cell id (never nbval's shifting "Cell N" name), outcome, exception name
and value, whether it timed out or the kernel died, and its printed output. It records the
*raw* outcome, so cells that nbval marks "expected to fail" after a timeout are still graded.

It also makes a dead kernel fail fast: nbval waits the whole cell timeout for a reply from a
kernel that is gone; here the wait polls once a second and stops when the kernel has died.
"""

from __future__ import annotations

import os
import re
import time
from queue import Empty
from typing import Any

import pytest

from a2s import skip_rfc3987
from a2s.records import CellRecord

skip_rfc3987()  # loaded before nbval (runner.py puts this plugin first)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class KernelDied(RuntimeError):
    """The kernel process exited while a cell was running."""


def _patch_await_reply() -> None:
    from nbval.kernel import RunningKernel

    if getattr(RunningKernel.await_reply, "_a2s", False):
        return
    original = RunningKernel.await_reply

    def await_reply(self: Any, msg_id: str, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 1.0 if deadline is None else max(0.01, min(1.0, deadline - time.monotonic()))
            try:
                return original(self, msg_id, timeout=left)
            except Empty:
                if not self.is_alive():
                    raise KernelDied(
                        "the kernel died while running this cell (os._exit, a crash in native "
                        "code, or the operating system killed it for memory)"
                    ) from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    await_reply._a2s = True  # type: ignore[attr-defined]
    RunningKernel.await_reply = await_reply


_RESULTS: list[str] = []  # the records file, kept here and removed from the kernel's env


def _patch_kernel_spec() -> None:
    """Start kernels through the sealed launcher (:mod:`a2s.sealed`)."""
    import sys

    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

    original = NbvalKernelspecManager.get_kernel_spec

    def get_kernel_spec(self: Any, kernel_name: str) -> Any:
        spec = original(self, kernel_name)
        if kernel_name == CURRENT_ENV_KERNEL_NAME:
            launch = "from a2s.sealed import main; main()"
            spec.argv = [sys.executable, "-c", launch, "-f", "{connection_file}"]
        return spec

    NbvalKernelspecManager.get_kernel_spec = get_kernel_spec


def pytest_configure(config: pytest.Config) -> None:
    _patch_await_reply()
    results = os.environ.pop("A2S_RESULTS", None)  # the kernel inherits os.environ: not this
    if results:
        _RESULTS.append(results)
    if os.environ.get("A2S_SEAL"):
        _patch_kernel_spec()


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip notebook cells tagged ``gpu`` (and unit tests marked ``gpu``) without CUDA."""
    gpu_items = [
        item
        for item in items
        if item.get_closest_marker("gpu")
        or "gpu" in (getattr(item, "cell", None) or {}).get("metadata", {}).get("tags", [])
    ]
    if gpu_items and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU; none found (optional cell)")
        for item in gpu_items:
            item.add_marker(skip)


def _outputs(item: Any) -> tuple[str, str | None, str | None]:
    text, ename, evalue = [], None, None
    for out in getattr(item, "test_outputs", None) or []:
        kind = out.get("output_type")
        if kind == "stream":
            text.append(out.get("text", ""))
        elif kind == "error":
            ename, evalue = out.get("ename"), out.get("evalue")
        elif kind in ("execute_result", "display_data"):
            plain = out.get("data", {}).get("text/plain")
            if plain and not plain.startswith("<Figure"):
                text.append(plain + "\n")
    return "".join(text)[-4000:], ename, evalue


def _record(item: Any, call: pytest.CallInfo) -> CellRecord:
    cell = item.cell
    meta = cell.get("metadata", {})
    stdout, ename, evalue = _outputs(item)
    record = CellRecord(
        id=cell.get("id"),
        exercise=(meta.get("a2s") or {}).get("exercise"),
        tags=list(meta.get("tags", [])),
        ename=ename,
        evalue=evalue,
        stdout=stdout,
        seconds=round(call.duration, 3),
    )
    if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        record.outcome = "skipped"
    elif call.excinfo is not None:
        exc = call.excinfo.value
        text = _ANSI.sub("", str(exc.args[0] if exc.args else exc))
        record.outcome = "failed"
        record.message = text
        record.timeout = text.startswith("Timeout of") or ename == "KeyboardInterrupt"
        record.kernel_dead = isinstance(exc, KernelDied) or "Kernel dead" in text
        if record.kernel_dead and not ename:
            record.ename = "KernelDied"
    return record


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    path = _RESULTS[0] if _RESULTS else None
    if path and call.when == "call" and hasattr(item, "cell"):
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(_record(item, call).to_json() + "\n")
    return report
