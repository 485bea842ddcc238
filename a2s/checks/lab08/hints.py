"""Hint tables of the lab 08 FlashAttention graders (08.4 forward, 08.5 backward)."""

_RESCALE = (
    "When a new key block raises the running maximum m to m', rescale both l and the "
    "output accumulator by exp(m - m') before adding the new block."
)
_BUG_HINTS = {
    "no rescale": _RESCALE,
    "acc not rescaled": "You rescaled l but not the output accumulator: when m grows to m', "
    "multiply the accumulator by exp(m - m') too before adding P V_j.",
    "l not rescaled": "You rescaled the output accumulator but not l: when m grows to m', "
    "multiply l by exp(m - m') too before adding the new block's row sums.",
    "diagonal masked": "The causal mask hides keys c > r only: a query row sees its own key "
    "(c == r); masking c >= r leaves row 0 with no key at all.",
    "no mask": "Skipping future blocks is not enough: inside the blocks on the diagonal, mask "
    "S with -inf where the key column c > the query row r.",
    "default scale": "Use the scale you are given: s = 1 / sqrt(d) only when scale is None.",
}
_O_HINT = (
    "O_i = A / l after the last key block, with S = s Q_i K_j^T, P = exp(S - m') and the "
    "running m, l and A updated per key block."
)
_L_HINTS = {
    "log l": "L_i = m_i + log(l_i): your L is log(l) without the running maximum m.",
    "m": "L_i = m_i + log(l_i): your L is the running maximum alone.",
}
_MEM_HINT = (
    "Extra memory must stay O(tiles): never build an n x n (or bq x n) score matrix, "
    "nor gather all of K or V; keep one K_j, V_j tile at a time."
)
_GRAD_HINTS = {
    "no D": "dS = P * (dP - D_i) with D_i = rowsum(dO_i * O_i): yours left D out (dS = P * dP).",
    "default scale": "Use the scale you are given: s = 1 / sqrt(d) only when scale is None.",
    "no mask": "Recompute P with the causal mask: S = -inf where the key column c > the query "
    "row r, then P = exp(S - L).",
    "unscaled grads": "dQ_i += s dS K_j and dK_j += s dS^T Q_i: the scale s multiplies both.",
}
_GRAD_HINT = (
    "The gradients of attention: P = exp(S - L) recomputed per tile, dV_j += P^T dO_i, "
    "dP = dO_i V_j^T, dS = P * (dP - D_i), dQ_i += s dS K_j, dK_j += s dS^T Q_i."
)
