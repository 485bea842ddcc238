"""Grader of exercise 04.1: ``named_parameters`` of a module tree, named and ordered as torch.

Ground truth: each minitorch model is mirrored as a ``torch.nn.Module`` tree with the same
attribute names, registration order and sharing (a tied weight is one torch Parameter, a
shared sub-module one torch Module); torch's own ``named_parameters()`` gives the answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.twins import torch_named_parameters
from minitorch.nn import MLP, Embedding, LayerNorm, Linear, Module, Parameter, Sequential

__all__ = ["check_named_parameters"]


class _Block(Module):
    def __init__(self, d: int, g: np.random.Generator) -> None:
        super().__init__()
        self.norm = LayerNorm(d)
        self.mlp = MLP([d, 2 * d, d], rng=g)


class _TiedLM(Module):
    """An embedding tied to the output head, two blocks, and a root-level parameter."""

    def __init__(self, g: np.random.Generator) -> None:
        super().__init__()
        self.embed = Embedding(11, 6, rng=g)
        self.blocks = Sequential(_Block(6, g), _Block(6, g))
        self.head = Linear(6, 11, bias=False, rng=g)
        self.head.weight = self.embed.weight  # weight tying: one Parameter, two places
        self.scale = Parameter(np.ones(6, np.float32))  # assigned last, listed first (torch)


class _SharedModule(Module):
    def __init__(self, g: np.random.Generator) -> None:
        super().__init__()
        self.encode = Linear(4, 4, rng=g)
        self.again = self.encode  # the same layer applied twice
        self.out = Linear(4, 2, rng=g)


def _models() -> list[tuple[str, Module]]:
    g = rng(41)
    return [
        ("Linear(3, 2)", Linear(3, 2, rng=g)),
        ("MLP([4, 8, 8, 3])", MLP([4, 8, 8, 3], rng=g)),
        (
            "nested Sequential",
            Sequential(Sequential(Linear(2, 2, rng=g), Sequential(MLP([2, 2], rng=g)))),
        ),
        ("tied embedding/head + blocks", _TiedLM(g)),
        ("one module registered twice", _SharedModule(g)),
    ]


def _fresh_model(g: np.random.Generator) -> tuple[str, Module]:
    """A random tree: Linear layers (some without bias) in a random nesting, with an MLP."""
    widths = [int(w) for w in g.integers(1, 6, int(g.integers(3, 6)))]
    layers: list[Module] = [
        Linear(a, b, bias=bool(g.integers(0, 2)), rng=g) for a, b in itertools.pairwise(widths)
    ]
    layers.append(MLP([widths[-1], int(g.integers(1, 6)), 2], rng=g))
    while len(layers) > 1:  # nest a random run of neighbours into a Sequential
        i = int(g.integers(0, len(layers) - 1))
        layers[i : i + 2] = [Sequential(*layers[i : i + 2])]
    return fresh(f"random tree of widths {widths}"), layers[0]


def _hint(got: list[str], want: list[str]) -> str:
    leaf = lambda names: [n.rsplit(".", 1)[-1] for n in names]  # noqa: E731
    if len(got) == len(want) and sorted(got) == sorted(want):
        return (
            "Right names, wrong order. torch lists a module's own parameters first, then its "
            "children's, depth first, in registration order (_parameters before _modules)."
        )
    if len(got) == len(want) and leaf(got) == leaf(want):
        return (
            "Names must be dotted paths from the root, like torch's: 'blocks.0.mlp.2.weight' "
            "(the child's name, a dot, then the name inside the child)."
        )
    if len(got) > len(want):
        return (
            "A weight appears twice: a tied weight (or a module registered under two names) "
            "is listed once, under the first name found. Remember the ids you have seen."
        )
    if all("." not in n for n in got):
        return "Only the top level: recurse into every sub-module in module._modules."
    return "Walk module._parameters, then each child in module._modules, prefixing 'child.'."


def _listed(student: Callable[..., Any], model: Module, case: str) -> list[tuple[str, Any]]:
    out = student(model)
    try:
        pairs = [tuple(item) for item in out]
        ok = all(len(p) == 2 and isinstance(p[0], str) for p in pairs)
        pairs = [(plain(n, what="a name", case=case), p) for n, p in pairs] if ok else pairs
    except TypeError:
        pairs, ok = [], False
    assert_true(
        ok, f"[{case}] expected a list (or iterator) of (name, Parameter) pairs, got {out!r:.120}."
    )
    return pairs  # type: ignore[return-value]


@grader("04.1", blocks=("minitorch.nn.module:Module",), hand="object")
def check_named_parameters(named_parameters: Callable[..., Any]) -> str:
    """Exercise 04.1: (name, Parameter) pairs of a module tree, exactly as torch names them."""
    total = 0
    for case, model in [*_models(), _fresh_model(fresh_rng("04.1"))]:
        want = torch_named_parameters(model)
        got = _listed(named_parameters, model, case)
        got_names, want_names = [n for n, _ in got], [n for n, _ in want]
        assert_true(
            got_names == want_names,
            f"[{case}] got names {got_names}, torch's named_parameters() gives {want_names}. "
            + _hint(got_names, want_names),
        )
        for (name, p), (_, q) in zip(got, want, strict=True):
            assert_true(
                p is q,
                f"[{case}] '{name}' is a {type(p).__name__}, not the module's Parameter itself: "
                "return the Parameter objects (the optimizer updates them in place), not copies "
                "or their .data arrays.",
            )
        total += len(want)
    return f"6 module trees (1 fresh), {total} parameters named and ordered like torch (tied once)"
