"""Grader of exercise 29.5: a context's DMA through its page table, and time slicing.

``context_dma(device, table, page_size, chain)`` runs in a forked child against a
:class:`PhysicalDma` proxy: the device memory (this context's frames and another context's,
filled with a sentinel), the host buffer, the bytes the engine moved and the faults reported
stay in the grader's process. The engine itself trusts physical addresses (no IOMMU): the
driver's translation is the only isolation. Judged: a valid chain lands byte for byte where
the page walk of ``_truth`` says and nowhere else; a chain that touches an unmapped page moves
**no** byte and is reported once, with the index of its first bad descriptor.
``time_slices(work, timeslice_ns, switch_ns)`` is a table against ``_truth.slices_truth``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake, fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.harness import request, run_apart
from a2s.checks.lab29._truth import page_pieces, slices_truth
from a2s.checks.table import Table
from a2s.checks.values import assert_true

__all__ = ["PhysicalDma", "check_contexts"]

_REF = "minitorch.driver.context"
_PAGE = 256
_FRAMES = 12


class _Engine:
    """Physical memory and a host buffer; runs physical chains, counts bytes, logs faults."""

    def __init__(self, g: np.random.Generator, host_bytes: int) -> None:
        self.memory = np.full(_FRAMES * _PAGE, 0xEE, np.uint8)  # the other context's sentinel
        self.host = g.integers(0, 256, host_bytes, dtype=np.uint8)
        self.moved, self.runs = 0, 0
        self.faults: list[Any] = []

    def dma(self, chain: Any) -> None:
        pieces = []
        for d in chain:
            if not (isinstance(d, (tuple, list)) and len(d) == 3):
                raise ValueError("a physical descriptor is (host offset, physical address, nbytes)")
            h, p, n = (int(v) for v in d)
            if n < 0 or h < 0 or p < 0 or h + n > self.host.size or p + n > self.memory.size:
                raise ValueError(f"descriptor {d} outside the host buffer or device memory")
            pieces.append((h, p, n))
        self.runs += 1
        for h, p, n in pieces:
            self.memory[p : p + n] = self.host[h : h + n]
            self.moved += n

    def fault(self, index: Any) -> None:
        self.faults.append(index)

    def serve(self) -> dict[str, Callable[..., Any]]:
        return {"dma.run": self.dma, "dma.fault": self.fault}


class PhysicalDma:
    """The copy engine as the driver sees it: ``run`` a chain of physical descriptors
    ``(host, paddr, nbytes)``, or report a ``fault`` (the index of the bad descriptor)."""

    __slots__ = ()

    def run(self, chain: Any) -> None:
        request("dma.run", [tuple(d) for d in chain])

    def fault(self, index: int) -> None:
        request("dma.fault", index)

    def __repr__(self) -> str:
        return "<PhysicalDma: requests to the copy engine>"


def _index(v: Any) -> Any:
    """An int or a numpy integer as an int; anything else (a float, a bool) as its repr."""
    ok = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    return int(v) if ok else repr(v)


def _table(g: np.random.Generator, pages: int) -> dict[int, int]:
    """Virtual pages 1..pages (0 is null) on scattered frames; the rest belong to others."""
    frames = g.permutation(_FRAMES)[:pages]
    return {v + 1: int(f) * _PAGE for v, f in enumerate(frames)}


def _chain(g: np.random.Generator, pages: int, n: int, host: int) -> list[tuple[int, int, int]]:
    out = []
    for _ in range(n):
        nbytes = int(g.integers(1, 2 * _PAGE))
        v = int(g.integers(_PAGE, (pages + 1) * _PAGE - nbytes + 1))
        out.append((int(g.integers(0, host - nbytes + 1)), v, nbytes))
    return out


def _cases(g: np.random.Generator, new: np.random.Generator) -> list[tuple]:
    t = {1: 7 * _PAGE, 2: 2 * _PAGE, 3: 9 * _PAGE}
    cases = [
        ("one descriptor inside page 1", t, [(0, _PAGE + 16, 64)], None),
        ("a descriptor across pages 1 and 2 (frames 7 and 2)", t, [(5, 2 * _PAGE - 40, 100)], None),
        ("three pages in one descriptor", t, [(0, _PAGE, 3 * _PAGE)], None),
        ("a null pointer: page 0 is never mapped", t, [(0, 0, 8)], 0),
        (
            "the third descriptor runs off the last page",
            t,
            [(0, _PAGE, 10), (20, 2 * _PAGE, 10), (0, 4 * _PAGE - 8, 16)],
            2,
        ),
        (
            "a good descriptor, then one into another context's frame",
            t,
            [(0, _PAGE, 32), (0, 5 * _PAGE, 4)],
            1,
        ),
        (
            "a descriptor whose middle page is unmapped (pages 1 and 3 are)",
            {1: 7 * _PAGE, 3: 9 * _PAGE, 4: 2 * _PAGE},
            [(0, 3 * _PAGE + 8, 64), (0, _PAGE + 200, 2 * _PAGE)],
            1,
        ),
        (
            "two bad descriptors: the fault names the first, once",
            t,
            [(0, _PAGE, 8), (0, 6 * _PAGE, 8), (0, 0, 8)],
            1,
        ),
    ]
    for label, gen in (("random chain", g), (fresh("random chain"), new)):
        pages = int(gen.integers(2, 6))
        table = _table(gen, pages)
        chain = _chain(gen, pages, int(gen.integers(1, 6)), 1024)
        cases.append((label, table, chain, None))
        bad = list(chain)
        k = int(gen.integers(len(bad)))
        h, _v, n = bad[k]
        back = min(8, n - 1) * int(gen.integers(0, 2))  # start on the last page, run off it
        bad[k] = (h, (pages + 1 + int(gen.integers(3))) * _PAGE - back, n)
        cases.append((f"{label}, descriptor {k} out of bounds", table, bad, k))
    return cases


def _expected(table: dict, chain: list, host: np.ndarray) -> np.ndarray:
    want = np.full(_FRAMES * _PAGE, 0xEE, np.uint8)
    for h, v, n in chain:
        for p, m in page_pieces(table, _PAGE, v, n) or []:
            want[p : p + m] = host[h : h + m]
            h += m
    return want


def _no_switch(work: dict, q: float, c: float) -> list:
    return slices_truth(work, q, 0.0)


def _run_to_end(work: dict, q: float, c: float) -> list:
    return slices_truth(work, float("inf"), c)


_SLICE_MISTAKES = (
    Mistake("A switch to another context costs switch_ns before its slice.", answer=_no_switch),
    Mistake(
        "A slice ends after timeslice_ns even in the middle of a command; the rest of that "
        "command runs in the context's next slice.",
        answer=_run_to_end,
    ),
)


def _slice_draw(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    work = {
        int(cid): [float(v) for v in g.integers(1, 40, int(g.integers(0, 5))) * 10]
        for cid in range(int(g.integers(1, 4)))
    }
    q, c = float(g.integers(5, 30)) * 10, float(g.integers(0, 5)) * 10
    return (f"work {work}, slice {q}, switch {c}", (work, q, c))


def _read_slices(got: Any, label: str) -> list:
    try:
        return [(int(c), float(s), float(e)) for c, s, e in got]
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{label}] time_slices returned {str(got)[:80]}: a list of (cid, start, end)."
        ) from None


SLICES = Table(
    "29.5",
    truth=slices_truth,
    named=[
        ("one context: no switch", ({0: [250.0]}, 100.0, 20.0)),
        ("two contexts of 200 each, slice 100", ({0: [200.0], 1: [200.0]}, 100.0, 20.0)),
        ("a command split across slices", ({0: [150.0, 30.0], 1: [60.0]}, 100.0, 10.0)),
        ("an idle context is skipped", ({0: [], 1: [120.0], 2: [50.0]}, 100.0, 5.0)),
    ],
    draw=_slice_draw,
    seeded=4,
    fresh=2,
    mistakes=_SLICE_MISTAKES,
    hint="Round robin in the order of the dict: at most timeslice_ns per slice, switch_ns "
    "between two different contexts, a context with no work left drops out.",
    read=_read_slices,
    what="time_slices",
    message="[{label}] time_slices returned {got!r:.200}, round robin gives {want!r:.200}.{hint}",
)


@grader("29.5", blocks=(_REF, "minitorch.driver.dma"), hand="parts")
def check_contexts(context_dma: Callable[..., Any], time_slices: Callable[..., Any]) -> str:
    """Exercise 29.5: DMA through a context's page table (faults move nothing), time slices."""
    n = SLICES.grade(time_slices)  # the cheap part first
    cases = _cases(rng(2905), fresh_rng("29.5"))
    moved = 0
    for k, (label, table, chain, bad) in enumerate(cases):
        eng = _Engine(rng(29500 + k), 1024)
        host = eng.host.copy()
        run_apart(context_dma, PhysicalDma(), dict(table), _PAGE, list(chain), serve=eng.serve())
        if bad is None:
            want = _expected(table, chain, host)
            assert_true(
                not eng.faults,
                f"[{label}] a fault was reported ({eng.faults}) for a chain inside the "
                "context's pages.",
            )
            wrong = int((eng.memory != want).sum())
            assert_true(
                wrong == 0,
                f"[{label}] {wrong} bytes of device memory differ from the page walk: translate "
                "each descriptor page by page (a virtual range that crosses a page boundary "
                "continues in another frame) and keep the host offset moving with it.",
            )
            assert_true(
                eng.moved == sum(n for _, _, n in chain),
                f"[{label}] the engine moved {eng.moved} B for a chain of "
                f"{sum(n for _, _, n in chain)} B: move each byte once.",
            )
            moved += eng.moved
        else:
            assert_true(
                eng.moved == 0 and not (eng.memory != 0xEE).any(),
                f"[{label}] the engine moved {eng.moved} B of a chain that faults at descriptor "
                f"{bad}: check every descriptor before the first byte moves; nothing is copied.",
            )
            assert_true(
                [_index(i) for i in eng.faults] == [bad],
                f"[{label}] faults reported: {eng.faults}; report the fault once, with the "
                f"index (an int) of the first descriptor outside the context's pages ({bad}).",
            )
    return (
        f"{len(cases)} chains (2 fresh): {moved} B through page tables, every bad chain moved "
        f"0 B and was reported; {n} schedules equal round robin"
    )
