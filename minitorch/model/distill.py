"""Knowledge distillation: a smaller tiny-GPT student trained on the teacher's softened logits.

The loss over the scored (answer) positions mixes the teacher's soft targets at temperature
``T`` with the hard labels:

$$L = \\alpha\\,T^2\\,\\mathrm{KL}\\big(p_t^{(T)}\\,\\|\\,p_s^{(T)}\\big)
+ (1 - \\alpha)\\,\\mathrm{CE}(z_s, y), \\qquad p^{(T)} = \\mathrm{softmax}(z/T) .$$

The ``T^2`` keeps the soft term's gradient the same size as ``T`` changes (its gradient in
``z_s`` is ``(p_s - p_t) / T``). The student (:data:`STUDENT`: one layer, ``d_model`` 32,
12,128 weights against the teacher's 93,504) has a small pool of labelled prompts. Trained
without the teacher it sees only those, with cross entropy; with the teacher it also sees a
*transfer set* of unlabelled prompts that the teacher answers (:func:`transfer_set`), and
learns from the teacher's logits on all of them (the hard term of a transfer prompt takes
the teacher's own answer as its label). Both runs start from the same seed and
draw batches from the same generator; :func:`token_accuracy` scores held-out prompts.

    teacher = load_pretrained()
    kd, _ = train_student(teacher)                     # alpha = 0.5, T = 2, 200 steps
    base, _ = train_student(None)                      # the labelled pool, hard labels only
    token_accuracy(kd), token_accuracy(base)

Lab: 33_sparsity_distillation_qat
Paper: Hinton, Vinyals & Dean 2015, "Distilling the Knowledge in a Neural Network"
(arXiv:1503.02531): soft targets at temperature T, the T^2 factor, a transfer set that
may be unlabelled.
"""

from __future__ import annotations

import math

import numpy as np

from minitorch.autograd import Tensor, cross_entropy, log_softmax, no_grad
from minitorch.model.config import GPTConfig
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.tokenizer import CharTokenizer
from minitorch.model.train import TASKS_TRAINED, Adam

__all__ = [
    "STUDENT",
    "distill_loss",
    "kl_divergence",
    "soft_targets",
    "token_accuracy",
    "train_student",
    "transfer_set",
]

STUDENT = GPTConfig(
    vocab_size=16, block_size=32, n_layer=1, n_head=2, n_kv_head=1, d_model=32, mlp="swiglu"
)


def soft_targets(logits: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(logits / T) over the last axis, in float64."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def kl_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p || q) along the last axis (0 log 0 = 0)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0)
    return terms.sum(axis=-1)


def distill_loss(
    student_logits: Tensor,
    teacher_logits: np.ndarray,
    targets: np.ndarray,
    temperature: float = 2.0,
    alpha: float = 0.5,
    ignore: int | None = IGNORE,
) -> Tensor:
    """``alpha T^2 KL(p_t || p_s) + (1 - alpha) CE`` averaged over positions whose target is
    not ``ignore``; student logits (..., V) a Tensor, teacher logits a plain array."""
    if temperature <= 0 or not 0.0 <= alpha <= 1.0:
        raise ValueError("temperature must be > 0 and alpha in [0, 1]")
    v = student_logits.shape[-1]
    t = np.asarray(targets).reshape(-1)
    rows = np.flatnonzero(t != ignore) if ignore is not None else np.arange(t.size)
    zs = student_logits.reshape(-1, v)[rows]
    pt = soft_targets(np.asarray(teacher_logits).reshape(-1, v)[rows], temperature)
    log_ps = log_softmax(zs * (1.0 / temperature), axis=-1)
    # KL(p_t || p_s) = sum p_t log p_t - sum p_t log p_s; the first term is a constant
    entropy = float(np.where(pt > 0, pt * np.log(np.where(pt > 0, pt, 1.0)), 0.0).sum())
    cross = (log_ps * Tensor(pt.astype(zs.dtype))).sum() * (-1.0)
    kl = (cross + entropy) * (1.0 / len(rows))
    hard = cross_entropy(zs, t[rows])
    return kl * (alpha * temperature**2) + hard * (1.0 - alpha)


def transfer_set(teacher: GPT, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unlabelled prompts answered by the teacher (greedy): inputs (n, T) and targets
    (n, T) in :func:`task_batch`'s layout, the targets being the teacher's own tokens."""
    tok = CharTokenizer()
    x, y = task_batch(TASKS_TRAINED, n, seed=seed)
    prompts = [tok.decode(row).split("=")[0] + "=" for row in x]
    for length in sorted({len(p) for p in prompts}):
        rows = [i for i, p in enumerate(prompts) if len(p) == length]
        ids = np.array([tok.encode(prompts[i]) for i in rows])
        answer = int((y[rows[0]] != IGNORE).sum())  # answers are as long as prompts dictate
        out = teacher.generate(ids, answer, greedy=True)
        for r, row in zip(rows, out, strict=True):
            x[r, : len(row) - 1], y[r, length - 1 : len(row) - 1] = row[:-1], row[length:]
    return x, y


def train_student(
    teacher: GPT | None,
    config: GPTConfig = STUDENT,
    steps: int = 200,
    pool: int = 32,
    transfer: int = 256,
    batch: int = 16,
    lr: float = 3e-3,
    temperature: float = 2.0,
    alpha: float = 0.5,
    seed: int = 0,
) -> tuple[GPT, list[float]]:
    """Train a fresh ``GPT(config, seed)`` on ``pool`` labelled examples; with a ``teacher``,
    also on ``transfer`` unlabelled prompts the teacher answers, with the distillation loss
    (the teacher's logits everywhere); without one, plain cross entropy on the pool alone.

    Batches are drawn by a generator seeded with ``seed``; the teacher's logits are computed
    once. Returns the student and its loss per step.
    """
    x, y = task_batch(TASKS_TRAINED, pool, seed=2_000_000 + seed)
    teacher_logits = None
    if teacher is not None:
        if transfer:
            tx, ty = transfer_set(teacher, transfer, seed=3_000_000 + seed)
            x, y = np.concatenate([x, tx]), np.concatenate([y, ty])
        with no_grad():
            teacher_logits = teacher(x).data.astype(np.float64)
    student = GPT(config, seed)
    opt = Adam(student.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    history = []
    for step in range(steps):
        opt.lr = lr * 0.5 * (1 + math.cos(math.pi * step / steps))
        pick = rng.choice(len(x), size=min(batch, len(x)), replace=False)
        logits = student(x[pick])
        if teacher_logits is None:  # the same loss with alpha = 0: cross entropy alone
            loss = distill_loss(logits, np.zeros(logits.shape), y[pick], temperature, 0.0)
        else:
            loss = distill_loss(logits, teacher_logits[pick], y[pick], temperature, alpha)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.item())
    return student, history


def token_accuracy(model: GPT, n: int = 256, seed: int = 4242) -> float:
    """Held-out teacher-forced accuracy: the fraction of answer tokens whose argmax is right."""
    x, y = task_batch(TASKS_TRAINED, n, seed=seed)
    with no_grad():
        pred = model(x).data.argmax(axis=-1)
    scored = y != IGNORE
    return float((pred[scored] == y[scored]).mean())
