"""ZeRO stages 0-3 for mixed-precision Adam: what each rank holds, and what it sends.

Mixed-precision Adam keeps, per parameter, an fp16 weight (2 bytes), an fp16 gradient (2)
and K = 12 bytes of optimizer state (fp32 master weight, momentum and variance). With Ψ
parameters and N data-parallel ranks the ZeRO paper's per-rank model-state bytes are

    stage 0 (DDP)            (2 + 2 + K) Ψ          = 16 Ψ
    stage 1 (P_os)           4 Ψ + K Ψ / N           optimizer state sharded
    stage 2 (P_os+g)         2 Ψ + (2 + K) Ψ / N     + gradients sharded
    stage 3 (P_os+g+p)       (2 + 2 + K) Ψ / N       + parameters sharded

Communication per step and rank (elements; the paper rounds (N-1)/N to 1): stages 0-2 send
2Ψ (reduce-scatter of the gradients, all-gather of the updated weights); stage 3 sends 3Ψ
(an all-gather of each layer's weights in forward and again in backward, and the
reduce-scatter of its gradient), and frees each gathered layer after use.

:class:`ZeroRank` is one rank's state: every array it holds is real, and
:meth:`ZeroRank.memory_bytes` sums their ``nbytes``; ``peak_bytes`` includes the weights
gathered by stage 3. Parameter ``i`` is split into N contiguous chunks
(:func:`~minitorch.comm.collectives.chunk_bounds`); rank r owns chunk r.

Lab: 23_data_parallel_zero
Paper: S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, "ZeRO: Memory Optimizations Toward
Training Trillion Parameter Models", SC 2020 (Fig. 1, Sections 5 and 7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.comm.collectives import all_gather, chunk_bounds, reduce_scatter
from minitorch.comm.protocol import Communicator

__all__ = ["K_ADAM", "ZeroRank", "zero3_forward", "zero3_train_step", "zero_bytes", "zero_comm"]

K_ADAM = 12  # fp32 master weight, momentum, variance: 4 + 4 + 4 bytes per parameter


def zero_bytes(psi: float, n: int, stage: int, k: int = K_ADAM) -> float:
    """Model-state bytes per rank at ZeRO ``stage`` (0-3), Ψ = ``psi`` parameters."""
    return {
        0: (2 + 2 + k) * psi,
        1: 4 * psi + k * psi / n,
        2: 2 * psi + (2 + k) * psi / n,
        3: (2 + 2 + k) * psi / n,
    }[stage]


def zero_comm(psi: float, stage: int) -> float:
    """Elements each rank sends per step, as the paper counts them (2Ψ, or 3Ψ at stage 3)."""
    return (3 if stage == 3 else 2) * psi


class ZeroRank:
    """One rank's fp16 weights/gradients and fp32 Adam state under ZeRO ``stage``."""

    def __init__(
        self,
        comm: Communicator,
        params: Sequence[np.ndarray],
        stage: int,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        if stage not in (0, 1, 2, 3):
            raise ValueError(f"ZeRO stage must be 0-3, got {stage}")
        self.comm, self.stage, self.lr, self.betas, self.eps = comm, stage, lr, betas, eps
        self.shapes = [tuple(p.shape) for p in params]
        n, r = comm.world_size, comm.rank
        self.bounds = [chunk_bounds(p.size, n)[r] if stage else (0, p.size) for p in params]
        flat = [np.asarray(p, np.float32).ravel() for p in params]
        self.master = [f[lo:hi].copy() for f, (lo, hi) in zip(flat, self.bounds, strict=True)]
        self.m = [np.zeros_like(w) for w in self.master]
        self.v = [np.zeros_like(w) for w in self.master]
        own = [w.astype(np.float16) for w in self.master]
        self.p16 = own if stage == 3 else [f.astype(np.float16) for f in flat]
        grad_len = [w.size for w in self.master] if stage >= 2 else [f.size for f in flat]
        self.g16 = [np.zeros(k, np.float16) for k in grad_len]
        self.steps = 0
        self._gathered: dict[int, np.ndarray] = {}
        self.peak_bytes = self.memory_bytes()

    @property
    def psi(self) -> int:
        """Number of parameters of the whole model."""
        return sum(int(np.prod(s)) for s in self.shapes)

    def memory_bytes(self) -> int:
        """Bytes of every array this rank holds now (gathered stage-3 weights included)."""
        arrays = [*self.p16, *self.g16, *self.master, *self.m, *self.v, *self._gathered.values()]
        return sum(a.nbytes for a in arrays)

    def gather(self, i: int) -> np.ndarray:
        """Parameter ``i`` as a full fp16 array (stage 3: all-gathered, held until freed)."""
        if self.stage < 3:
            return self.p16[i].reshape(self.shapes[i])
        if i not in self._gathered:
            self._gathered[i] = all_gather(self.comm, self.p16[i])
            self.peak_bytes = max(self.peak_bytes, self.memory_bytes())
        return self._gathered[i].reshape(self.shapes[i])

    def free(self, i: int) -> None:
        """Drop a gathered parameter (stage 3); a no-op for stages 0-2."""
        self._gathered.pop(i, None)

    def reduce_grad(self, i: int, grad: np.ndarray) -> None:
        """Average parameter ``i``'s local gradient over the ranks; keep what this stage keeps."""
        g = np.asarray(grad, np.float16).ravel()
        lo, hi = self.bounds[i]
        if self.stage == 0:  # all-reduce as reduce-scatter + all-gather (2Ψ in all)
            n = self.comm.world_size
            part = reduce_scatter(self.comm, g) / np.float16(n)
            self.g16[i][...] = all_gather(self.comm, part.astype(np.float16))
            return
        mine = (reduce_scatter(self.comm, g) / np.float16(self.comm.world_size)).astype(np.float16)
        if self.stage == 1:
            self.g16[i][...] = g
            self.g16[i][lo:hi] = mine
        else:
            self.g16[i][...] = mine

    def update(self) -> None:
        """Adam on this rank's shard; stages 0-2 then all-gather the new fp16 weights."""
        self.steps += 1
        b1, b2 = self.betas
        for i, w in enumerate(self.master):
            lo, hi = self.bounds[i]
            g = (self.g16[i] if self.stage >= 2 else self.g16[i][lo:hi]).astype(np.float32)
            self.m[i] += (1 - b1) * (g - self.m[i])
            self.v[i] = b2 * self.v[i] + (1 - b2) * g * g
            mhat = self.m[i] / (1 - b1**self.steps)
            vhat = self.v[i] / (1 - b2**self.steps)
            w -= (self.lr * mhat / (np.sqrt(vhat) + self.eps)).astype(np.float32)
            new = w.astype(np.float16)
            if self.stage == 3:
                self.p16[i] = new
            elif self.stage == 0:
                self.p16[i][...] = new
            else:
                self.p16[i][...] = all_gather(self.comm, new)


def zero3_forward(store: ZeroRank, x: np.ndarray) -> np.ndarray:
    """``x -> tanh(x @ W_0) -> ... `` with each layer gathered just before use and freed after."""
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = np.tanh(h @ store.gather(i).astype(np.float32))
        store.free(i)
    return h


def zero3_train_step(store: ZeroRank, x: np.ndarray, y: np.ndarray) -> float:
    """One step of the tanh MLP on loss ``mean((out - y)^2) / 2``, gathering on use.

    Forward gathers and frees each layer; backward gathers it again, reduce-scatters its
    gradient at once and frees it; then the sharded Adam update. Returns the local loss.
    """
    acts = [np.asarray(x, np.float32)]
    for i in range(len(store.shapes)):
        acts.append(np.tanh(acts[-1] @ store.gather(i).astype(np.float32)))
        store.free(i)
    diff = acts[-1] - y
    grad = diff / diff.size
    for i in reversed(range(len(store.shapes))):
        dz = grad * (1 - acts[i + 1] ** 2)
        w = store.gather(i).astype(np.float32)
        grad = dz @ w.T
        store.free(i)
        store.reduce_grad(i, acts[i].T @ dz)
    store.update()
    return float(0.5 * np.mean(diff**2))
