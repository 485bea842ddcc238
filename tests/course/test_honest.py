"""No honest learner is called a cheat: ordinary Python scores the same under `a2s grade`.

A battery of honest patterns (imports inside the function, decorators, caches, dataclasses,
closures, generators, recursion, classes, match, ...), each written as a correct answer to
an exercise of labs 00-03, is graded in one `a2s grade` batch (sealed kernel, two jobs) and
run in a plain Jupyter kernel (what JupyterLab runs, unsealed): every one passes in both.
Some are the solution itself written another way (wrapped in a decorator, a class, a closure,
a forwarding lambda, an import where it is used).
Forbidden calls (torch inside the function, a forbidden C function `math.fsum`, a
forbidden numpy routine) fail as forbidden calls with the watch's message in both and
never taint the next exercise; a vetoed attempt (``gc.get_objects()``) costs only the
exercise it was made in.
"""

from __future__ import annotations

import ast
import json
import queue
import textwrap
from pathlib import Path

import nbformat
import pytest

from a2s.grade import grade_paths, grading_base, merge
from a2s.notebook import exercises, read_notebook
from a2s.runner import RunOptions
from a2s.syllabus import repo_root

ROOT = repo_root()
LABS = {
    "00": "00_orientation",
    "01": "01_numerics",
    "02": "02_autograd_scalar",
    "03": "03_autograd_tensor",
}

# (notebook, exercise cell, patterns it shows, source)
HONEST: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "00a",
        "ex-00-1",
        ("import sympy inside", "match statement"),
        """
        def matmul_flops(m, n, k):
            import sympy
            match (m, n, k):
                case (0, _, _) | (_, 0, _) | (_, _, 0):
                    return 0
                case _:
                    return int(sympy.Integer(2) * m * n * k)
    """,
    ),
    (
        "00a",
        "ex-00-2",
        ("import fractions inside", "f-string"),
        """
        def arithmetic_intensity(m, n, k, bytes_per_element):
            from fractions import Fraction
            moved = bytes_per_element * (m * k + k * n + m * n)
            ratio = Fraction(matmul_flops(m, n, k), moved)
            return float(f"{float(ratio)!r}")
    """,
    ),
    (
        "00b",
        "ex-00-1",
        ("NamedTuple", "functools.cache", "typing annotations"),
        """
        from functools import cache
        from typing import Final, NamedTuple

        TWO: Final[int] = 2

        class Shape(NamedTuple):
            m: int
            n: int
            k: int

        @cache
        def matmul_flops(m: int, n: int, k: int) -> int:
            s = Shape(m, n, k)
            return TWO * s.m * s.n * s.k
    """,
    ),
    (
        "00b",
        "ex-00-2",
        ("dataclass", "global constant in the cell"),
        """
        from dataclasses import dataclass

        OPERANDS = 3

        @dataclass(frozen=True)
        class Gemm:
            m: int
            n: int
            k: int

            def elements(self) -> int:
                return self.m * self.k + self.k * self.n + self.m * self.n

        def arithmetic_intensity(m, n, k, bytes_per_element):
            g = Gemm(m, n, k)
            assert OPERANDS == 3
            return matmul_flops(m, n, k) / (g.elements() * bytes_per_element)
    """,
    ),
    ("01", "ex-01-1", ("decorator",), "decorator"),
    ("01", "ex-01-2", ("class with @staticmethod",), "staticmethod"),
    ("01", "ex-01-3", ("nested closure",), "closure"),
    ("01", "ex-01-7", ("lambda", "*args/**kwargs"), "forward"),
    ("03", "ex-03-2", ("import statistics inside",), "import statistics"),
    ("03", "ex-03-6", ("import math inside",), "import math"),
    (
        "01",
        "ex-01-4",
        ("generator", "import itertools inside"),
        """
        def _kahan_steps(x):
            s, c = np.float32(0.0), np.float32(0.0)
            for v in x:
                y = v - c
                t = s + y
                c = (t - s) - y
                s = t
                yield s

        def kahan_sum(x):
            import itertools
            last = np.float32(0.0)
            for last in itertools.chain(_kahan_steps(x)):
                pass
            return last
    """,
    ),
    (
        "01",
        "ex-01-5",
        ("recursion with a nested helper", "import collections inside"),
        """
        def pairwise_sum(x):
            import collections
            seen = collections.Counter()

            def go(part):
                seen["calls"] += 1
                n = len(part)
                if n <= 8:
                    s = np.float32(0.0)
                    for v in part:
                        s = s + v
                    return s
                return go(part[: n // 2]) + go(part[n // 2 :])

            return go(x)
    """,
    ),
    (
        "01",
        "ex-01-6",
        ("import decimal inside", "try/except"),
        """
        def update_scale(scale, growth_tracker, found_inf, growth_factor=2.0,
                         backoff_factor=0.5, growth_interval=2000):
            import decimal
            if found_inf:
                return scale * backoff_factor, 0
            growth_tracker = int(decimal.Decimal(growth_tracker) + 1)
            if growth_tracker < growth_interval:
                return scale, growth_tracker
            try:
                grown = np.float32(scale * growth_factor)
                if not np.isfinite(grown):
                    raise OverflowError
            except OverflowError:
                return scale, 0
            return float(grown), 0
    """,
    ),
    (
        "02",
        "ex-02-1",
        ("import functools inside", "contextlib", "math", "map", "functools.lru_cache"),
        """
        import contextlib
        import functools

        def mul_rule(a, b):
            import functools
            import operator
            return functools.reduce(operator.mul, [a, b]), (b, a)

        def div_rule(a, b):
            with contextlib.suppress(KeyError):
                return a / b, (1.0 / b, -a / (b * b))

        def tanh_rule(x):
            t = math.tanh(x)
            return t, tuple(map(lambda v: 1.0 - v * v, [t]))

        def sigmoid_rule(x):
            with contextlib.nullcontext():
                s = 0.5 * (1.0 + math.tanh(0.5 * x))
            return s, (s * (1.0 - s),)

        @functools.lru_cache(maxsize=1024)
        def pow_rule(x, k):
            return x**k, (k * x ** (k - 1),)
    """,
    ),
    (
        "02",
        "ex-02-2",
        ("iterators with for/else", "helper used by another cell"),
        """
        def parents_of(v):
            return list(v.parents)

        def topo_sort(root):
            order, visited = [], {root}
            stack = [(root, iter(parents_of(root)))]
            while stack:
                v, todo = stack[-1]
                for p in todo:
                    if p not in visited:
                        visited.add(p)
                        stack.append((p, iter(parents_of(p))))
                        break
                else:
                    stack.pop()
                    order.append(v)
            return order
    """,
    ),
    (
        "02",
        "ex-02-3",
        ("helper defined in another cell", "generator expression"),
        """
        def backward(root, order):
            root.grad = 1.0
            for v in reversed(order):
                pairs = ((p, g) for p, g in zip(parents_of(v), v.local_grads))
                for p, local in pairs:
                    p.grad += local * v.grad
    """,
    ),
    (
        "02",
        "ex-02-4",
        ("sorted with a key", "enumerate", "walrus", "filter"),
        """
        def numerical_grad(f, xs, h=1e-5):
            def partial(i):
                up = [x + h if j == i else x for j, x in enumerate(xs)]
                down = [x - h if j == i else x for j, x in enumerate(xs)]
                return (f(*up) - f(*down)) / (2 * h)
            indices = sorted(range(len(xs)), key=lambda i: -i)
            grads = {i: g for i in indices if (g := partial(i)) is not None}
            return [grads[i] for i in filter(lambda i: i >= 0, range(len(xs)))]
    """,
    ),
    (
        "03",
        "ex-03-1",
        ("np.asarray", "tuple of a generator"),
        """
        def unbroadcast(grad, shape):
            grad = np.asarray(grad)
            lead = grad.ndim - len(shape)
            stretched = tuple(lead + i for i, n in enumerate(shape)
                              if n == 1 and grad.shape[lead + i] != 1)
            return grad.sum(axis=tuple(range(lead)) + stretched).reshape(shape)
    """,
    ),
    (
        "03",
        "ex-03-7",
        ("np.array", "numpy random with a seed"),
        """
        def cross_entropy(logits, target):
            rng = np.random.default_rng(0)
            n = logits.shape[0]
            perm = rng.permutation(n)  # any order of the rows gives the same answer
            back = np.argsort(perm)
            x = np.array(logits)[perm]
            t = np.array(target)[perm]
            shifted = x - x.max(axis=1, keepdims=True)
            logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
            grad = np.exp(logp)
            grad[np.arange(n), t] -= 1.0
            loss = float(-logp[np.arange(n), t].mean())
            return loss, (grad / n)[back]
    """,
    ),
]

# (notebook, exercise cell, source): not honest, each judged on its own exercise only
OTHERS: list[tuple[str, str, str]] = [
    (
        "f01",
        "ex-01-1",
        """
        def decode(bits, fmt):
            import torch
            return torch.tensor(bits.astype(np.int64)).double().numpy()
    """,
    ),
    (
        "f01",
        "ex-01-3",
        """
        def cast_to_e4m3(x, scale):
            import gc
            gc.get_objects()
            return np.zeros(x.shape, np.uint8)
    """,
    ),
    (
        "f01",
        "ex-01-4",
        """
        def kahan_sum(x):
            import math
            return np.float32(math.fsum(x.tolist()))
    """,
    ),
    (
        "f01",
        "ex-01-5",
        """
        def pairwise_sum(x):
            return np.float32(np.sum(x))
    """,
    ),
]
# what each non-honest exercise must score: (under a2s grade, in the plain kernel, phrase)
EXPECTED = {
    ("f01", "01.1"): ("failed", "failed", "which this exercise forbids: torch is"),
    ("f01", "01.3"): ("tampered", "failed", "gc.get_objects()"),
    ("f01", "01.4"): ("failed", "failed", "`math:fsum`, which this exercise forbids"),
    ("f01", "01.5"): ("failed", "failed", "`numpy:sum`, which this exercise forbids"),
}
NOTEBOOKS = {"00a": "00", "00b": "00", "01": "01", "02": "02", "03": "03", "f01": "01"}
_DECORATOR = """import functools


def _checked(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


"""


def _solution(lab: str, cell_id: str) -> str:
    nb = read_notebook(ROOT / "solutions" / f"{LABS[lab]}.ipynb")
    source = next(c.source for c in nb.cells if c.get("id") == cell_id)
    return "\n".join(ln for ln in source.splitlines() if "### " not in ln) + "\n"


def _wrapped(lab: str, cell_id: str, how: str) -> str:
    """The solution's answer written another way: the same function, wrapped by ``how``."""
    source = _solution(lab, cell_id)
    tree = ast.parse(source)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    name, indented = fn.name, textwrap.indent(source, "    ")
    if how == "decorator":
        return _DECORATOR + source.replace(f"def {name}(", f"@_checked\ndef {name}(", 1)
    if how == "staticmethod":
        return f"class _Impl:\n    @staticmethod\n{indented}\n{name} = _Impl.{name}\n"
    if how == "closure":
        return f"def _make():\n{indented}\n    return {name}\n\n\n{name} = _make()\n"
    if how == "forward":
        inner = source.replace(f"def {name}(", f"def _{name}_impl(", 1)
        return inner + f"\n\n{name} = lambda *args, **kwargs: _{name}_impl(*args, **kwargs)\n"
    assert how.startswith("import "), how
    lines = source.splitlines()
    first = fn.body[1] if isinstance(fn.body[0], ast.Expr) and len(fn.body) > 1 else fn.body[0]
    pad = " " * first.col_offset
    lines.insert(first.lineno - 1, f"{pad}{how}  # honest: a module imported where it is used")
    return "\n".join(lines) + "\n"


def _write(folder: Path) -> dict[str, Path]:
    paths = {}
    for name, lab in NOTEBOOKS.items():
        nb = read_notebook(ROOT / "solutions" / f"{LABS[lab]}.ipynb")
        sources = {
            cell: _wrapped(lab, cell, src) if "\n" not in src else textwrap.dedent(src)
            for nb_name, cell, _p, src in HONEST
            if nb_name == name
        }
        sources.update({cell: src for nb_name, cell, src in OTHERS if nb_name == name})
        for cell in nb.cells:
            if cell.get("id") in sources:
                cell.source = textwrap.dedent(sources[cell.id]).strip() + "\n"
                ast.parse(cell.source)
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        paths[name] = folder / f"{name}.ipynb"
        nbformat.write(nb, paths[name])
    return paths


def _plain_run(path: Path, lab: str) -> dict[str, tuple[str, str]]:
    """Run the graded cells in a plain ipykernel (as JupyterLab does): exercise -> status."""
    from jupyter_client.manager import start_new_kernel

    solution = read_notebook(ROOT / "solutions" / f"{LABS[lab]}.ipynb")
    exs = exercises(solution)
    base = grading_base(solution)
    merge(base, read_notebook(path), exs)
    by_check = {ex.check_cell_id: ex.id for ex in exs}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    out: dict[str, tuple[str, str]] = {}
    try:
        for cell in base.cells:
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            seen: list[str] = []
            error: list[str] = []

            def hook(msg: dict, seen=seen, error=error) -> None:
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    seen.append(content["text"])
                elif kind == "error":
                    error.append(f"{content['ename']}: {content['evalue']}")

            try:
                kc.execute_interactive(cell.source, timeout=120, output_hook=hook)
            except (TimeoutError, queue.Empty):
                error.append("timeout")
            exercise = by_check.get(cell.id)
            if exercise is None:
                continue
            if error:
                name = error[0].split(":")[0]
                status = "error" if name == "StudentError" else "failed"
                out[exercise] = (status, error[0])
            elif any(f"Exercise {exercise} passed" in s for s in seen):
                out[exercise] = ("passed", "".join(seen))
            else:
                out[exercise] = ("failed", "".join(seen) or "no verdict printed")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, tuple]]:
    folder = tmp_path_factory.mktemp("honest")
    paths = _write(folder)
    opts = RunOptions(cell_timeout=60, timeout=300)
    results = grade_paths([str(p) for p in paths.values()], opts, ROOT, jobs=2)
    graded = {}
    for name, res in zip(paths, results, strict=True):
        graded[name] = {e.id: (e.status, e.message, e.points) for e in res.exercises}
    plain = {name: _plain_run(path, NOTEBOOKS[name]) for name, path in paths.items()}
    (folder / "results.json").write_text(json.dumps({"graded": graded, "plain": plain}))
    return {"graded": graded, "plain": plain}


def _exercise(cell: str) -> str:
    return cell.replace("ex-", "").replace("-", ".")


@pytest.mark.grader
def test_every_honest_pattern_passes_in_both_kernels(both) -> None:
    patterns = [p for _n, _c, ps, _s in HONEST for p in ps]
    assert len(patterns) >= 30, len(patterns)
    wrong = []
    for name, cell, shown, _src in HONEST:
        ex = _exercise(cell)
        graded, plain = both["graded"][name][ex], both["plain"][name][ex]
        if graded[0] != "passed" or plain[0] != "passed":
            wrong.append(f"{name} {ex} {shown}: a2s grade {graded[:2]}, plain {plain}")
    assert not wrong, "\n".join(wrong)
    for name in ("00a", "00b", "01", "02", "03"):  # same scores
        assert all(s == "passed" for s, _m in both["plain"][name].values()), name
        assert all(v[0] == "passed" for v in both["graded"][name].values()), name


@pytest.mark.grader
def test_a_forbidden_call_fails_as_one_and_taints_nothing_after_it(both) -> None:
    for (name, ex), (graded_status, plain_status, phrase) in EXPECTED.items():
        graded, plain = both["graded"][name][ex], both["plain"][name][ex]
        assert graded[0] == graded_status and phrase in graded[1], (name, ex, graded)
        if plain_status == "failed" and graded_status != "tampered":
            assert plain[0] == "failed" and phrase in plain[1], (name, ex, plain)
    for name, ex in [("f01", "01.2"), ("f01", "01.6"), ("f01", "01.7")]:
        assert both["graded"][name][ex][0] == "passed", (name, ex, both["graded"][name][ex])
        assert both["plain"][name][ex][0] == "passed", (name, ex, both["plain"][name][ex])
