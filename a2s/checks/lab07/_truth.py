"""Lab 07's trusted side, shared by its graders: launch a student's kernel, hold it to a budget.

A budget is a closed form of the kernel's shape (the minimum global segments, zero bank
conflicts), written in the grader, never read from the reference kernels. The kernel runs in
a forked child and its context is a proxy: every load, store, shared allocation and barrier
is a request to the grader's process, where the simulator's ``ThreadContext`` (one per block,
as :func:`minitorch.kernels.simt.launch` makes them), the arrays and the counters live. A
count over its budget fails the check even when every value is right.

It stays in the lab's package rather than a shared ``a2s.checks`` module: the proxy serves
the SIMT simulator (:mod:`minitorch.kernels.simt`), which only lab 07 grades, and as lab 07's
own module its functions are blocked to the student's code, as the graders' are
(:mod:`a2s.checks.truth_guard`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, StudentError, _Guarded, assert_true
from a2s.checks.harness import request, run_apart
from a2s.checks.watch import Watch
from minitorch.kernels.simt import (
    DeviceArray,
    Dim3,
    KernelStats,
    RaceError,
    SharedArray,
    ThreadContext,
    to_device,
)

__all__ = ["KERNELS", "at_most", "device", "run_kernel", "through_shared", "touched_all"]

KERNELS = "minitorch.kernels.simt_kernels"


def device(x: np.ndarray) -> DeviceArray:
    """A host array copied to global memory (float32 unless it is already another dtype)."""
    return to_device(np.asarray(x))


def run_kernel(
    kernel: Callable[..., Any], grid: Any, block: Any, args: Sequence[Any], case: str
) -> KernelStats:
    """Launch the (guarded) student kernel on ``grid`` x ``block`` apart; return its counters.

    The kernel runs in a forked child (:func:`a2s.checks.harness.run_apart`) and gets a
    context whose ``load``, ``store``, ``shared`` and ``syncthreads`` are requests: the
    simulator (:class:`~minitorch.kernels.simt.ThreadContext` per block, the device and
    shared arrays, the counters) runs in this process, which also decides the blocks.
    """
    try:
        return _launch_apart(kernel, Dim3.of(grid), Dim3.of(block), tuple(args), case)
    except CheckFailure as exc:
        if not str(exc).startswith(("[", "not implemented")):
            exc.args = (f"[{case}] {exc}",)
        raise


def _launch_apart(kernel: Any, g: Dim3, b: Dim3, args: tuple, case: str) -> KernelStats:
    stats = KernelStats()
    handles: dict[int, Any] = {}
    spec: list[Any] = []
    for a in args:
        if isinstance(a, DeviceArray):
            handles[len(handles)] = a
            spec.append(("device", len(handles) - 1, tuple(a.shape)))
        else:
            spec.append(("value", a))
    blocks = iter([(x, y, z) for z in range(g.z) for y in range(g.y) for x in range(g.x)])
    state: dict[str, Any] = {"ctx": None, "done": False}
    errors: list[BaseException] = []

    def guard(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except (RaceError, IndexError, MemoryError, ValueError, TypeError) as exc:
            errors.append(exc)  # the kernel may catch it in its process: it still fails here
            raise

    def ctx() -> ThreadContext:
        if state["ctx"] is None:
            raise RuntimeError("no block is running")
        return state["ctx"]

    def next_block() -> Any:
        if state["ctx"] is not None:
            stats.blocks += 1
        nxt = next(blocks, None)
        if nxt is None:
            state["ctx"], state["done"] = None, True
            return None
        state["ctx"] = ThreadContext(Dim3(*nxt), b, g, stats, 32, 48 * 1024)
        return nxt

    def shared(shape: Any, dtype: str) -> tuple[int, tuple[int, ...]]:
        arr = guard(lambda: ctx().shared(_shape(shape), np.dtype(str(dtype))))
        handles[len(handles)] = arr
        return len(handles) - 1, tuple(arr.shape)

    def array(h: Any) -> Any:
        if type(h) is not int or h not in handles:
            raise ValueError("not an array of this launch")
        arr = handles[h]
        if isinstance(arr, SharedArray) and not any(arr is x for x in ctx()._shared):
            raise ValueError("a shared array of another block")
        return arr

    def load(h: Any, index: Any, mask: Any) -> np.ndarray:
        return guard(lambda: ctx().load(array(h), _index(index), mask))

    def store(h: Any, index: Any, value: Any, mask: Any) -> None:
        guard(lambda: ctx().store(array(h), _index(index), value, mask))

    serve: dict[str, Callable[..., Any]] = {
        "simt.next": next_block,
        "simt.shared": shared,
        "simt.sync": lambda: ctx().syncthreads(),
        "simt.load": load,
        "simt.store": store,
    }
    if isinstance(kernel, _Guarded) and kernel.watch is None:  # built once, inherited
        kernel.watch = Watch(kernel.forbid, kernel.blocks)
        kernel.watch.scan(kernel.fn)
    try:
        run_apart(_in_child, kernel, (g.x, g.y, g.z), (b.x, b.y, b.z), spec, serve=serve)
    except (StudentError, CheckFailure):
        if errors:
            raise _student_error(kernel, errors[0]) from None
        raise
    if errors:
        raise _student_error(kernel, errors[0])
    if not state["done"]:
        raise CheckFailure(f"[{case}] the launch ended before every block ran.")
    return stats


def _student_error(kernel: Any, exc: BaseException) -> StudentError:
    exercise = getattr(kernel, "exercise", "07")
    return StudentError(f"Exercise {exercise}: your function raised {type(exc).__name__}: {exc}")


def _shape(shape: Any) -> int | tuple[int, ...]:
    return int(shape) if isinstance(shape, (int, np.integer)) else tuple(int(v) for v in shape)


def _index(index: Any) -> Any:
    return tuple(index) if isinstance(index, list) else index


class _Array:
    """A device or shared array in the kernel's process: a handle and a shape, no data."""

    __slots__ = ("handle", "shape")

    def __init__(self, handle: int, shape: tuple[int, ...]) -> None:
        self.handle, self.shape = handle, tuple(shape)

    def to_numpy(self) -> np.ndarray:
        raise RuntimeError("a kernel cannot copy device memory to the host; use ctx.load")

    def __repr__(self) -> str:
        return f"<array {self.shape} in simulated memory>"


def _plain(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    if isinstance(x, (bool, int, float, np.generic)) or x is None:
        return x
    return np.asarray(x)


class _Context:
    """What the kernel sees, in its process: indices, and requests for everything else."""

    __slots__ = ("blockDim", "blockIdx", "gridDim", "threadIdx", "tid")

    def __init__(self, block_idx: tuple[int, int, int], block: Dim3, grid: Dim3) -> None:
        lin = np.arange(block.size())
        self.threadIdx = Dim3(lin % block.x, lin // block.x % block.y, lin // (block.x * block.y))
        self.blockIdx, self.blockDim, self.gridDim = Dim3(*block_idx), block, grid
        self.tid = lin

    def shared(self, shape: Any, dtype: Any = np.float32) -> _Array:
        """Allocate a shared array for this block (``__shared__ float tile[32][33]``)."""
        h, shp = request("simt.shared", _plain(shape), np.dtype(dtype).str)
        return _Array(h, shp)

    def syncthreads(self) -> None:
        request("simt.sync")

    def load(self, arr: Any, index: Any, mask: Any = None) -> np.ndarray:
        return request("simt.load", _handle(arr), _plain(_index(index)), _plain(mask))

    def store(self, arr: Any, index: Any, value: Any, mask: Any = None) -> None:
        request("simt.store", _handle(arr), _plain(_index(index)), _plain(value), _plain(mask))


def _handle(arr: Any) -> int:
    if not isinstance(arr, _Array):
        raise TypeError("load and store take an array of the launch (an argument, or ctx.shared)")
    return arr.handle


def _in_child(kernel: Any, grid: tuple, block: tuple, spec: list) -> None:
    """The kernel's process: run every block the grader hands out."""
    g, b = Dim3(*grid), Dim3(*block)
    args = [_Array(s[1], s[2]) if s[0] == "device" else s[1] for s in spec]
    while (blk := request("simt.next")) is not None:
        kernel(_Context(tuple(blk), b, g), *args)


def touched_all(arr: DeviceArray, *, stored: bool, name: str, case: str) -> None:
    """Every element of ``arr`` went through ctx.load (or ctx.store): the kernel did the work."""
    done = arr.writes if stored else arr.reads
    verb = "stored through ctx.store" if stored else "read through ctx.load"
    missing = int(np.count_nonzero(~done))
    assert_true(
        missing == 0,
        f"[{case}] {missing} of {done.size} elements of `{name}` were never {verb}: a kernel "
        "moves data only with ctx.load / ctx.store (the counters see nothing else).",
    )


def at_most(stats: KernelStats, counter: str, budget: int, case: str, why: str, hint: str) -> int:
    """Fail unless ``stats.<counter> <= budget``; return the count."""
    got = int(getattr(stats, counter))
    assert_true(
        got <= budget,
        f"[{case}] {counter} = {got:,}, over the budget of {budget:,} ({why}); the values may "
        f"be right, the traffic is not. {hint}",
    )
    return got


def through_shared(stats: KernelStats, case: str, stage: str) -> None:
    """Every block stored to shared memory, synchronised and loaded back.

    The simulator runs a block's threads as one numpy vector, so ``v.sum()``, ``v.reshape``
    or ``v.T`` on a loaded vector would move values between threads for free, something no
    GPU thread can do (the budgets see no shared traffic at all). A kernel whose blocks never
    went through ``ctx.shared`` and ``ctx.syncthreads()`` did not do the exercise.
    """
    blocks = max(int(stats.blocks), 1)
    used = (stats.shared_store_requests, stats.shared_load_requests, stats.barriers)
    assert_true(
        min(used) >= blocks,
        f"[{case}] over {blocks} block(s) your kernel made {used[0]} shared stores, {used[1]} "
        f"shared loads and {used[2]} syncthreads(): values crossed between threads through "
        "numpy on the thread vector (sum, reshape, .T over lanes), which no GPU thread can do. "
        f"{stage}",
    )
