"""Unstructured magnitude pruning: masks per layer or global, sensitivity, accuracy vs sparsity.

A mask keeps the weights of largest magnitude. At sparsity ``s`` a tensor of ``N`` weights
loses exactly ``round(s N)`` of them, the smallest ``|w|`` (ties: the lower flat index goes
first, so the mask is deterministic). *Per layer* prunes every linear weight of the tiny GPT
to the same ``s``; *global* ranks all of them together against one threshold, so layers
with many small weights lose more. A layer's *sensitivity* is the loss of the model with
only that layer pruned, at each sparsity: the layers whose loss rises first are the ones a
per-layer schedule should spare. The embedding (tied with the output head) and the norms
are kept dense.

    masks = layer_masks(linear_weights(model), 0.5)       # or global_masks(..., 0.5)
    pruned = apply_masks(model, masks)                     # a copy; the weights * mask
    sens = sensitivity(model, [0.5, 0.9], lambda m: m.loss(x, y, ignore=IGNORE).item())

Lab: 33_sparsity_distillation_qat
Paper: Han, Pool, Tran & Dally 2015, "Learning both Weights and Connections for Efficient
Neural Networks" (arXiv:1506.02626): magnitude pruning, per-layer sensitivity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minitorch.model.gpt import GPT
from minitorch.model.quant_model import linear_layers, map_linear_weights

__all__ = [
    "apply_masks",
    "global_masks",
    "layer_masks",
    "linear_weights",
    "magnitude_mask",
    "n_pruned",
    "sensitivity",
    "sparsity",
    "sparsity_curve",
]

Masks = dict[str, np.ndarray]


def n_pruned(size: int, s: float) -> int:
    """How many of ``size`` weights sparsity ``s`` removes: ``round(s size)``."""
    if not 0.0 <= s <= 1.0:
        raise ValueError(f"sparsity must be in [0, 1], got {s}")
    return round(s * size)


def _mask_from_scores(scores: np.ndarray, k: int) -> np.ndarray:
    """A bool mask of ``scores``' shape with its ``k`` smallest entries (stable) False."""
    order = np.argsort(scores.ravel(), kind="stable")
    keep = np.ones(scores.size, dtype=bool)
    keep[order[:k]] = False
    return keep.reshape(scores.shape)


def magnitude_mask(w: np.ndarray, s: float) -> np.ndarray:
    """Keep-mask of ``w`` at sparsity ``s``: the ``round(s w.size)`` smallest |w| dropped."""
    w = np.asarray(w)
    return _mask_from_scores(np.abs(w), n_pruned(w.size, s))


def linear_weights(model: GPT) -> dict[str, np.ndarray]:
    """Every linear weight of the model (copies, float64) by layer name."""
    return {n: layer.weight.data.astype(np.float64) for n, layer in linear_layers(model).items()}


def layer_masks(weights: dict[str, np.ndarray], s: float) -> Masks:
    """Each layer pruned to sparsity ``s`` on its own."""
    return {name: magnitude_mask(w, s) for name, w in weights.items()}


def global_masks(weights: dict[str, np.ndarray], s: float) -> Masks:
    """One ranking over all layers: the ``round(s total)`` smallest |w| anywhere are dropped
    (ties across layers: the earlier layer in ``weights``' order first)."""
    names = list(weights)
    flat = np.concatenate([np.abs(np.asarray(weights[n])).ravel() for n in names])
    keep = _mask_from_scores(flat, n_pruned(flat.size, s))
    out, start = {}, 0
    for n in names:
        size = np.asarray(weights[n]).size
        out[n] = keep[start : start + size].reshape(np.shape(weights[n]))
        start += size
    return out


def sparsity(masks: Masks) -> float:
    """Fraction of weights the masks remove."""
    total = sum(m.size for m in masks.values())
    return sum(int((~m.astype(bool)).sum()) for m in masks.values()) / max(total, 1)


def apply_masks(model: GPT, masks: Masks) -> GPT:
    """A copy of ``model`` whose linear weights named in ``masks`` are multiplied by them."""
    layers = linear_layers(model)
    for name, m in masks.items():
        if name not in layers:
            raise KeyError(f"{name!r} is not a linear layer of the model")
        if np.shape(m) != layers[name].weight.shape:
            raise ValueError(f"mask of {name} has shape {np.shape(m)}")
    return map_linear_weights(model, lambda n, w: w * masks[n] if n in masks else w)


def sensitivity(
    model: GPT, sparsities: Sequence[float], evaluate: Callable[[GPT], float]
) -> dict[str, list[float]]:
    """``evaluate`` of the model with one layer pruned to each sparsity, layer by layer."""
    weights = linear_weights(model)
    return {
        name: [evaluate(apply_masks(model, {name: magnitude_mask(w, s)})) for s in sparsities]
        for name, w in weights.items()
    }


def sparsity_curve(
    model: GPT,
    sparsities: Sequence[float],
    evaluate: Callable[[GPT], float],
    scope: str = "global",
) -> list[float]:
    """``evaluate`` of the whole model pruned to each sparsity, masks ``global`` or ``layer``."""
    if scope not in ("global", "layer"):
        raise ValueError(f"scope must be 'global' or 'layer', not {scope!r}")
    weights = linear_weights(model)
    make = global_masks if scope == "global" else layer_masks
    return [evaluate(apply_masks(model, make(weights, s))) for s in sparsities]
