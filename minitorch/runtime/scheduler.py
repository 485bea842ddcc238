"""Iteration-level scheduling: which tokens of which sequences run in the next model step.

Every step the scheduler picks work for ONE forward pass (Orca's iteration-level scheduling),
so a request joins the batch as soon as there is room and leaves the moment it finishes:
**continuous batching**. ``policy="static"`` is the baseline: a batch is admitted only when
the previous one has completely finished.

A step, in the manner of vLLM's scheduler:

1. **Blocks for the running sequences** (:func:`plan_preemption`), oldest first. A sequence
   whose next token starts a new block needs one; when none is free, the *newest* running
   sequence is **preempted by recompute**: its blocks are freed and it goes back to the front
   of the waiting queue, to be prefilled again later (prompt + output so far).
2. **Tokens under a budget** (:func:`plan_step`): running sequences first (a decode needs 1
   token; a partly prefilled prompt the rest of it), then waiting ones in arrival order while
   the token budget, ``max_num_seqs`` and the free blocks allow. With **chunked prefill** a
   prompt longer than what is left of the budget is cut into chunks over several steps;
   without it the whole prompt must fit, and the queue waits (first come, first served).

    sched = Scheduler(BlockManager(256, 16), token_budget=64, max_num_seqs=8)
    sched.add(seq); batch = sched.schedule()        # [(seq, n_tokens), ...]

Lab: 19_continuous_batching
Paper: Yu et al., "Orca", OSDI 2022 (iteration-level scheduling); Kwon et al., vLLM, SOSP
2023 (preemption by recompute); Agrawal et al., "Sarathi-Serve", OSDI 2024 (chunked prefill)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence as Seq

from minitorch.runtime.block_manager import BlockManager
from minitorch.runtime.sequence import Sequence

__all__ = ["Scheduler", "plan_preemption", "plan_step"]


def plan_preemption(
    running: Seq[tuple[int, int, int]], free_blocks: int
) -> tuple[list[int], list[int]]:
    """Give each running sequence the new blocks it needs, oldest first, preempting newest.

    running: (seq_id, new_blocks_needed, blocks_held) in priority order (oldest first).
    Returns (kept ids, preempted ids in the order preempted). A preempted sequence frees its
    held blocks; a sequence that cannot be served even alone preempts itself.
    """
    queue = list(running)
    kept: list[int] = []
    preempted: list[int] = []
    while queue:
        sid, need, held = queue.pop(0)
        while free_blocks < need and queue:
            victim = queue.pop()  # the newest running sequence
            preempted.append(victim[0])
            free_blocks += victim[2]
        if free_blocks < need:  # nobody left to preempt: this one waits
            preempted.append(sid)
            free_blocks += held
            continue
        free_blocks -= need
        kept.append(sid)
    return kept, preempted


def plan_step(
    running: Seq[tuple[int, int]],
    waiting: Seq[tuple[int, int, int]],
    token_budget: int,
    max_num_seqs: int,
    free_blocks: int,
    chunked: bool,
) -> list[tuple[int, int]]:
    """Tokens per sequence for one step: [(seq_id, n_tokens)].

    running: (seq_id, tokens_needed) in order; waiting: (seq_id, tokens_needed, blocks_needed)
    in arrival order. Running first; then admit waiting sequences in order while fewer than
    max_num_seqs run, budget is left and their blocks are free; stop at the first that does
    not fit (no overtaking). With ``chunked`` a sequence gets min(need, budget left).
    """
    out: list[tuple[int, int]] = []
    budget = token_budget
    for sid, need in running:
        n = min(need, budget) if chunked else need
        if 0 < n <= budget:
            out.append((sid, n))
            budget -= n
    seats = max_num_seqs - len(running)
    for sid, need, blocks in waiting:
        n = min(need, budget) if chunked else need
        if seats <= 0 or n <= 0 or n > budget or blocks > free_blocks:
            break
        out.append((sid, n))
        budget -= n
        seats -= 1
        free_blocks -= blocks
    return out


class Scheduler:
    """Waiting and running queues over a :class:`BlockManager`; see the module docstring."""

    def __init__(
        self,
        blocks: BlockManager,
        token_budget: int = 256,
        max_num_seqs: int = 16,
        chunked_prefill: bool = True,
        policy: str = "continuous",
    ) -> None:
        if policy not in ("continuous", "static"):
            raise ValueError(f"policy must be 'continuous' or 'static', not {policy!r}")
        self.blocks, self.token_budget, self.max_num_seqs = blocks, token_budget, max_num_seqs
        self.chunked, self.policy = chunked_prefill, policy
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.preempted = 0

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def _new_blocks(self, seq: Sequence) -> int:
        """Blocks the running sequence needs for its tokens that have no slot yet."""
        have = len(self.blocks.tokens[seq.seq_id])
        return self.blocks.blocks_needed(len(seq.tokens)) - self.blocks.blocks_needed(have)

    def schedule(self) -> list[tuple[Sequence, int]]:
        """Pick this step's work: [(sequence, tokens to compute)], slots reserved."""
        bm, by_id = self.blocks, {s.seq_id: s for s in self.running}
        needs = [(s.seq_id, self._new_blocks(s), len(bm.tables[s.seq_id])) for s in self.running]
        kept, preempted = plan_preemption(needs, bm.num_free_blocks())
        for sid in preempted:  # back to the front of the queue, newest first in line last
            seq = by_id[sid]
            bm.free(sid)
            seq.preempt()
            self.waiting.appendleft(seq)
            self.preempted += 1
        self.running = [by_id[sid] for sid in kept]
        for seq in self.running:  # slots for tokens sampled last step
            for tok in seq.tokens[len(bm.tokens[seq.seq_id]) :]:
                bm.append_slot(seq.seq_id, tok)
        waiting = [] if self.policy == "static" and self.running else list(self.waiting)
        plan = plan_step(
            [(s.seq_id, s.need) for s in self.running],
            [(s.seq_id, s.need, bm.blocks_needed(len(s.tokens))) for s in waiting],
            self.token_budget,
            self.max_num_seqs,
            bm.num_free_blocks(),
            self.chunked,
        )
        running_ids = {s.seq_id for s in self.running}
        n_new = sum(sid not in running_ids for sid, _ in plan)
        admitted = {s.seq_id: s for s in waiting[:n_new]}  # admission is a prefix: FCFS
        for seq in admitted.values():  # the whole prompt's blocks, reserved at admission
            self.waiting.popleft()
            bm.allocate(seq.seq_id, seq.tokens)
            self.running.append(seq)
        by_id.update(admitted)
        return [(by_id[sid], n) for sid, n in plan]

    def finish(self, seq: Sequence) -> None:
        """A finished sequence leaves the batch and frees its blocks."""
        self.running.remove(seq)
        self.blocks.free(seq.seq_id)
