"""A shared test problem: f(w) = 0.5 w^T A w - b^T w per parameter, gradient A w - b."""

import numpy as np
import torch

from minitorch.nn import Parameter


def make_problem(seed: int, dtype=np.float64, shapes=((5, 3), (4,))):
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal(s).astype(dtype) for s in shapes]
    mats = []
    for s in shapes:
        n = int(np.prod(s))
        q = rng.standard_normal((n, n))
        mats.append(((q @ q.T) / n + np.eye(n) * 0.1).astype(dtype))
    targets = [rng.standard_normal(int(np.prod(s))).astype(dtype) for s in shapes]
    return inits, mats, targets


def grad_of(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a @ w.reshape(-1) - b).reshape(w.shape)


def run_both(make_ours, make_theirs, steps=100, seed=0, dtype=np.float64):
    """Run 100 steps of both optimizers on the same problem; return both parameter lists."""
    inits, mats, targets = make_problem(seed, dtype)
    ours = [Parameter(w.copy()) for w in inits]
    theirs = [torch.nn.Parameter(torch.from_numpy(w.copy())) for w in inits]
    opt, topt = make_ours(ours), make_theirs(theirs)
    for _ in range(steps):
        for p, t, a, b in zip(ours, theirs, mats, targets, strict=True):
            p.grad = grad_of(p.data, a, b)
            t.grad = torch.from_numpy(grad_of(t.detach().numpy(), a, b))
        opt.step()
        topt.step()
    return [p.data for p in ours], [t.detach().numpy() for t in theirs]
