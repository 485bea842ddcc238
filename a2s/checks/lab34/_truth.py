"""Ground truth of lab 34, written as plain loops and closed forms (not the reference).

* :class:`Explorer` enumerates every random choice of a verification step (the draft tokens,
  each ``coin``, each ``sample``) by depth-first replay and sums the weight of each output:
  the exact law of what a step emits, no sampling.
* :func:`verify_rule` is the accept/reject rule (Leviathan et al. 2023; Chen et
  al. 2023, Algorithm 2), with the wrong variants the hints of 34.1 name.
* :func:`greedy_plain` and :func:`greedy_spec_calls` decode the target greedily, one pass per
  token, and count the passes greedy speculative decoding needs.
* :func:`tokens_per_pass` is (1 - a^(g+1)) / (1 - a).
* :func:`mla_naive_loop` is DeepSeek-V2's MLA head by head with K and V materialised, and
  :func:`mla_from_latent` runs attention over the latent cache with absorbed matrices.
* :func:`evictions` is the sinks + recent + heavy-hitter eviction rule of 34.5.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Law = dict[tuple[int, ...], float]


class Explorer:
    """Depth-first replay of a procedure's random choices; ``law`` sums each output's weight."""

    def __init__(self, limit: int = 5000) -> None:
        self.stack: list[tuple[int, ...]] = [()]
        self.law: Law = {}
        self.limit, self.runs = limit, 0
        self.script: tuple[int, ...] = ()
        self.answers: list[int] = []
        self.weight = 1.0
        self.problems: list[str] = []

    def start(self) -> bool:
        if not self.stack or self.runs >= self.limit:
            return False
        self.script, self.answers, self.weight = self.stack.pop(), [], 1.0
        self.runs += 1
        return True

    def choose(self, options: Sequence[tuple[Any, float]]) -> Any:
        pos = len(self.answers)
        if pos < len(self.script):
            idx = self.script[pos]
            if idx >= len(options):
                self.problems.append("nondeterministic")
                idx = 0
        else:
            idx = 0
            self.stack.extend((*tuple(self.answers), j) for j in range(len(options) - 1, 0, -1))
        self.answers.append(idx)
        value, w = options[idx]
        self.weight *= w
        return value

    def finish(self, result: Sequence[int]) -> None:
        key = tuple(int(t) for t in result)
        self.law[key] = self.law.get(key, 0.0) + self.weight


def coin_options(prob: float) -> list[tuple[bool, float]]:
    return [(v, w) for v, w in ((True, prob), (False, 1.0 - prob)) if w > 0]


def sample_options(dist: np.ndarray) -> list[tuple[int, float]]:
    return [(j, float(w)) for j, w in enumerate(dist) if w > 0]


def draft_options(q_row: np.ndarray) -> list[tuple[int, float]]:
    return sample_options(np.asarray(q_row, np.float64))


def verify_rule(
    p_rows: np.ndarray,
    q_rows: np.ndarray,
    draft: Sequence[int],
    coin: Callable[[float], bool],
    sample: Callable[[np.ndarray], int],
    variant: str = "",
) -> list[int]:
    """One verification step; ``variant`` switches on a known mistake."""
    out: list[int] = []
    for i, x in enumerate(draft):
        p, q = np.asarray(p_rows[i], np.float64), np.asarray(q_rows[i], np.float64)
        if coin(min(1.0, p[x] / q[x]) if q[x] > 0 else 0.0):
            out.append(int(x))
            continue
        if variant == "from p":
            out.append(sample(p))
        else:
            r = np.maximum(q - p, 0.0) if variant == "q - p" else np.maximum(p - q, 0.0)
            out.append(sample(r / r.sum() if r.sum() > 0 else p))
        if variant != "no stop":
            return out
    if variant != "no bonus":
        out.append(sample(np.asarray(p_rows[len(draft)], np.float64)))
    return out


def exact_law(p_rows: np.ndarray, q_rows: np.ndarray, step: Callable[..., Sequence[int]]) -> Law:
    """The law of ``step``'s output when the draft is drawn from q_rows (in-process)."""
    ex = Explorer()
    while ex.start():
        draft = [ex.choose(draft_options(q)) for q in q_rows]
        out = step(
            p_rows,
            q_rows,
            draft,
            lambda pr: ex.choose(coin_options(float(pr))),
            lambda d: ex.choose(sample_options(np.asarray(d))),
        )
        ex.finish(out)
    return ex.law


def same_law(a: Law, b: Law, tol: float = 1e-9) -> bool:
    keys = {k for k, v in a.items() if v > tol} | {k for k, v in b.items() if v > tol}
    return all(abs(a.get(k, 0.0) - b.get(k, 0.0)) <= tol for k in keys)


def first_token_marginal(law: Law, vocab: int) -> np.ndarray:
    out = np.zeros(vocab)
    for key, w in law.items():
        if key:
            out[key[0]] += w
    return out


def greedy_plain(target: Callable[[np.ndarray], np.ndarray], prompt: Sequence[int], n: int):
    """Plain greedy decoding: n target passes, the argmax of the last row each time."""
    toks = [int(t) for t in prompt]
    for _ in range(n):
        toks.append(int(np.argmax(np.asarray(target(np.asarray(toks)))[-1])))
    return toks


def greedy_spec_calls(target, draft, prompt: Sequence[int], n: int, gamma: int) -> int:
    """Target passes of greedy speculative decoding (draft at most gamma, never past n)."""
    toks, goal, calls = [int(t) for t in prompt], len(prompt) + n, 0
    while len(toks) < goal:
        g, ctx = min(gamma, goal - len(toks) - 1), list(toks)
        for _ in range(g):
            ctx.append(int(np.argmax(np.asarray(draft(np.asarray(ctx)))[-1])))
        best = np.argmax(np.asarray(target(np.asarray(ctx)))[-(g + 1) :], axis=-1)
        calls += 1
        k = 0
        while k < g and ctx[len(toks) + k] == int(best[k]):
            k += 1
        toks += [*ctx[len(toks) : len(toks) + k], int(best[k])]
    return calls


def tokens_per_pass(alpha: float, gamma: int) -> float:
    """Expected tokens per target pass with i.i.d. acceptance rate alpha: sum_{i<=g} a^i."""
    return float(sum(alpha**i for i in range(gamma + 1)))


def rope_loop(x: np.ndarray, positions: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """RoPE on pairs (x[2i], x[2i+1]) of the last axis at the given positions: x (T, d)."""
    out = np.array(x, np.float64)
    d = x.shape[-1]
    for t, m in enumerate(positions):
        for i in range(d // 2):
            a = m * base ** (-2.0 * i / d)
            x0, x1 = x[t, 2 * i], x[t, 2 * i + 1]
            out[t, 2 * i] = x0 * np.cos(a) - x1 * np.sin(a)
            out[t, 2 * i + 1] = x0 * np.sin(a) + x1 * np.cos(a)
    return out


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max())
    return e / e.sum()


def mla_naive_loop(
    h: np.ndarray, w: dict[str, np.ndarray], n_head: int, head_dim: int, rope_dim: int
) -> np.ndarray:
    """Causal MLA over h (T, d), head by head, with k_C = W_UK c_KV and v_C = W_UV c_KV."""
    t, dh = h.shape[0], head_dim
    pos = np.arange(t)
    c_kv, c_q = h @ w["W_DKV"].T, h @ w["W_DQ"].T
    k_r = rope_loop(h @ w["W_KR"].T, pos) if rope_dim else np.zeros((t, 0))
    heads = []
    for i in range(n_head):
        rows = slice(i * dh, (i + 1) * dh)
        k, v = c_kv @ w["W_UK"][rows].T, c_kv @ w["W_UV"][rows].T
        q = c_q @ w["W_UQ"][rows].T
        q_r = (
            rope_loop(c_q @ w["W_QR"][i * rope_dim : (i + 1) * rope_dim].T, pos)
            if rope_dim
            else np.zeros((t, 0))
        )
        o = np.zeros((t, dh))
        for a in range(t):
            s = np.array([q[a] @ k[b] + q_r[a] @ k_r[b] for b in range(a + 1)])
            o[a] = _softmax(s / np.sqrt(dh + rope_dim)) @ v[: a + 1]
        heads.append(o)
    return np.concatenate(heads, axis=1) @ w["W_O"].T


def mla_from_latent(
    h: np.ndarray,
    w: dict[str, np.ndarray],
    a_mat: np.ndarray,
    b_mat: np.ndarray,
    head_dim: int,
    rope_dim: int,
) -> np.ndarray:
    """Causal attention that reads only the latent cache (c_KV, k_R): head i scores
    (A_i c_Q) . c_KV + q_R . k_R and adds B_i (sum_s a_s c_KV,s) to the output."""
    t, n_head = h.shape[0], a_mat.shape[0]
    pos = np.arange(t)
    c_kv, c_q = h @ w["W_DKV"].T, h @ w["W_DQ"].T
    k_r = rope_loop(h @ w["W_KR"].T, pos) if rope_dim else np.zeros((t, 0))
    out = np.zeros((t, b_mat.shape[1]))
    for i in range(n_head):
        q_lat = c_q @ a_mat[i].T  # (T, d_c)
        q_r = (
            rope_loop(c_q @ w["W_QR"][i * rope_dim : (i + 1) * rope_dim].T, pos)
            if rope_dim
            else np.zeros((t, 0))
        )
        for x in range(t):
            s = c_kv[: x + 1] @ q_lat[x] + k_r[: x + 1] @ q_r[x]
            out[x] += b_mat[i] @ (_softmax(s / np.sqrt(head_dim + rope_dim)) @ c_kv[: x + 1])
    return out


def absorbed_truth(w: dict[str, np.ndarray], n_head: int, head_dim: int):
    """A_i = W_UK,i^T W_UQ,i (d_c, d_c'), B_i = W_O[:, i] W_UV,i (d, d_c)."""
    dh = head_dim
    a = [
        w["W_UK"][i * dh : (i + 1) * dh].T @ w["W_UQ"][i * dh : (i + 1) * dh] for i in range(n_head)
    ]
    b = [
        w["W_O"][:, i * dh : (i + 1) * dh] @ w["W_UV"][i * dh : (i + 1) * dh] for i in range(n_head)
    ]
    return np.stack(a), np.stack(b)


def evictions(
    kept: Sequence[int],
    mass: Sequence[float],
    budget: int,
    sinks: int,
    recent: int,
    variant: str = "",
) -> list[int]:
    """Positions to evict: none while |kept| <= budget; else the |kept| - budget lowest-mass
    tokens that are neither sinks (position < sinks) nor among the ``recent`` newest, the
    older first on equal mass."""
    need = len(kept) - budget
    if need <= 0 and variant != "always":
        return []
    newest = sorted(kept)[-recent:] if recent and variant != "recent" else []
    cands = [
        (m, p)
        for p, m in zip(kept, mass, strict=True)
        if (p >= sinks or variant == "sinks") and p not in newest
    ]
    if variant == "oldest":
        cands = [(0.0, p) for _, p in cands]
    if variant == "newer":
        cands.sort(key=lambda mp: (mp[0], -mp[1]))
    else:
        cands.sort(key=lambda mp: (-mp[0], mp[1]) if variant == "highest" else mp)
    return sorted(p for _, p in cands[: max(need, 1 if variant == "always" else 0)])


def gpt_rows(model: Any, tokens: np.ndarray) -> np.ndarray:
    """The tiny GPT's logits (len, V) for one context of at most block_size tokens."""
    from minitorch.autograd import no_grad

    with no_grad():
        return np.asarray(model(np.asarray(tokens, np.int64)[None]).data[0], np.float64)
