"""Ground truth of lab 33, written as plain loops and closed forms (not the reference).

* :func:`keep_two` / :func:`compress_loop` / :func:`decompress_loop`: the 2:4 mask (the two
  largest magnitudes of each group of 4, ties to the lower index) and the compressed format
  (kept values in position order; 2-bit positions, index ``4k + j`` in bits ``2j..2j+1`` of
  byte ``k``), one group and one bit at a time.
* :func:`sparse_product_loop`: ``x @ W.T`` from the compressed form, one kept weight at a time;
  :func:`sparse_budget`: the bytes and multiplies of a 2:4 kernel (closed form).
* :func:`head_savings_loop`: what removing query heads of one layer saves, counted over the
  rows and columns that actually vanish (a K/V head only once its whole group is gone).
* :func:`distill_loop`: the distillation loss and its gradient, row by row with ``math``.
* :func:`fake_quant_loop`: affine fake quantization and its straight-through gradient,
  element by element (the rounded value decides the clip mask, as torch's
  ``fake_quantize_per_tensor_affine``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


# --------------------------------------------------------------------------- 2:4
def keep_two(group: Sequence[float] | np.ndarray) -> list[int]:
    """Positions (ascending) of the 2 largest |w| of a group of 4; ties: the lower index."""
    best: list[int] = []
    for _ in range(2):
        pick = -1
        for j in range(4):
            if j in best:
                continue
            if pick < 0 or abs(float(group[j])) > abs(float(group[pick])):
                pick = j
        best.append(pick)
    return sorted(best)


def compress_loop(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values (out, in/2) in w's dtype, meta (out, in/8) uint8), one group at a time."""
    out, cols = w.shape
    values = np.zeros((out, cols // 2), dtype=w.dtype)
    meta = np.zeros((out, cols // 8), dtype=np.uint8)
    for r in range(out):
        slot = 0
        for g in range(cols // 4):
            for pos in keep_two(w[r, 4 * g : 4 * g + 4]):
                values[r, slot] = w[r, 4 * g + pos]
                byte, part = divmod(slot, 4)
                meta[r, byte] = int(meta[r, byte]) | (pos << (2 * part))
                slot += 1
    return values, meta


def positions_loop(meta: np.ndarray) -> np.ndarray:
    """The 2-bit positions (out, 4 * bytes) of packed metadata, bit by bit."""
    out, nb = meta.shape
    pos = np.zeros((out, 4 * nb), dtype=np.int64)
    for r in range(out):
        for k in range(nb):
            for part in range(4):
                pos[r, 4 * k + part] = (int(meta[r, k]) >> (2 * part)) & 3
    return pos


def decompress_loop(values: np.ndarray, meta: np.ndarray, cols: int) -> np.ndarray:
    """The dense (out, cols) weight of a compressed form: each value back at its position."""
    pos = positions_loop(meta)
    dense = np.zeros((values.shape[0], cols), dtype=np.float64)
    for r in range(values.shape[0]):
        for slot in range(values.shape[1]):
            dense[r, 4 * (slot // 2) + pos[r, slot]] = float(values[r, slot])
    return dense


def sparse_product_loop(x: np.ndarray, values: np.ndarray, meta: np.ndarray) -> np.ndarray:
    """``x (n, in) @ W.T`` with W the compressed weight: one multiply per kept weight."""
    pos = positions_loop(meta)
    n, out = x.shape[0], values.shape[0]
    y = np.zeros((n, out))
    for o in range(out):
        for slot in range(values.shape[1]):
            col = 4 * (slot // 2) + int(pos[o, slot])
            y[:, o] += x[:, col].astype(np.float64) * float(values[o, slot])
    return y


def sparse_budget(n: int, out: int, cols: int, itemsize: int) -> dict[str, int]:
    """A 2:4 kernel reads x, half the weight values and ``out in / 8`` index bytes once,
    writes y once, and multiplies once per kept weight and row of x."""
    return {
        "x": n * cols * itemsize,
        "values": out * cols // 2 * itemsize,
        "meta": out * cols // 8,
        "y": n * out * itemsize,
        "multiplies": n * out * cols // 2,
    }


# --------------------------------------------------------------------------- heads
def head_savings_loop(
    d_model: int, n_head: int, n_kv_head: int, removed: Sequence[int], seq_len: int, itemsize: int
) -> tuple[int, int, int, int]:
    """(linear FLOPs per token, weight bytes, KV-cache bytes per token, attention-core FLOPs
    over one causal sequence) saved by removing the query heads ``removed`` of one layer."""
    d = d_model // n_head
    rep = n_head // n_kv_head
    gone = set(removed)
    elements, kv_rows = 0, 0
    for h in range(n_head):
        if h in gone:
            elements += d * d_model  # its rows of q_proj
            elements += d_model * d  # its columns of o_proj
    for g in range(n_kv_head):
        if all(h in gone for h in range(g * rep, (g + 1) * rep)):
            elements += 2 * d * d_model  # its rows of k_proj and v_proj
            kv_rows += 2 * d  # one K and one V row of d numbers per token
    core = 0
    for _ in gone:
        for t in range(1, seq_len + 1):  # query t attends to t keys: q.k and p.v
            core += 2 * d * t + 2 * d * t
    return 2 * elements, elements * itemsize, kv_rows * itemsize, core


# --------------------------------------------------------------------------- distillation
def _softmax_row(z: Sequence[float], t: float) -> list[float]:
    m = max(float(v) / t for v in z)
    e = [math.exp(float(v) / t - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


def distill_loop(
    zs: np.ndarray, zt: np.ndarray, targets: np.ndarray, t: float, alpha: float, ignore: int
) -> tuple[float, np.ndarray]:
    """``alpha T^2 KL(p_t^T || p_s^T) + (1 - alpha) CE(z_s, y)``, the mean over positions whose
    target is not ``ignore``, and its gradient in ``zs`` (zero rows where ignored)."""
    n, v = zs.shape
    rows = [i for i in range(n) if int(targets[i]) != ignore]
    grad = np.zeros((n, v))
    total = 0.0
    for i in rows:
        ps, pt, p1 = _softmax_row(zs[i], t), _softmax_row(zt[i], t), _softmax_row(zs[i], 1.0)
        kl = sum(a * (math.log(a) - math.log(b)) for a, b in zip(pt, ps, strict=True) if a > 0)
        ce = -math.log(p1[int(targets[i])])
        total += alpha * t * t * kl + (1 - alpha) * ce
        for j in range(v):
            hard = p1[j] - (1.0 if j == int(targets[i]) else 0.0)
            grad[i, j] = (alpha * t * (ps[j] - pt[j]) + (1 - alpha) * hard) / len(rows)
    return total / len(rows), grad


# --------------------------------------------------------------------------- fake quant
def grid(lo: float, hi: float, bits: int) -> tuple[float, float, int]:
    """(scale, zero point, q_max) of the unsigned ``bits``-bit grid over ``[lo, hi]`` (widened
    to hold 0; the zero point rounded to an integer)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    qmax = 2**bits - 1
    scale = (hi - lo) / qmax
    return scale, float(round(-lo / scale)), qmax


def fake_quant_loop(
    x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(x_hat, dL/dx): ``s (clip(round(x/s + z), 0, q_max) - z)`` and ``g`` where the rounded
    value lies in ``[0, q_max]``, 0 where it was clipped."""
    scale, zero, qmax = grid(lo, hi, bits)
    xf, gf = x.astype(np.float64).ravel(), g.astype(np.float64).ravel()
    out, grad = np.zeros(xf.size), np.zeros(xf.size)
    for i in range(xf.size):
        r = float(np.round(xf[i] / scale + zero))
        q = min(max(r, 0.0), float(qmax))
        out[i] = (q - zero) * scale
        grad[i] = gf[i] if 0.0 <= r <= qmax else 0.0
    return out.reshape(x.shape), grad.reshape(x.shape)
