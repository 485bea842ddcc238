"""The bundled tasks, the tokenizer, a few training steps, and the shipped checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.model.checkpoint import load, load_meta, load_pretrained, save
from minitorch.model.corpus import IGNORE, examples, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.tokenizer import CharTokenizer
from minitorch.model.train import TINY, answer_accuracy, train

pytestmark = pytest.mark.lab09


def test_tasks_have_exact_answers() -> None:
    for prompt, answer in examples(["reverse", "sort", "copy", "shift"], 50, seed=0):
        s, task = prompt[1:-1], prompt[0]
        want = {"R": s[::-1], "S": "".join(sorted(s)), "C": s}.get(task)
        if want is not None:
            assert answer == want + "."
    tok = CharTokenizer()
    assert tok.decode(tok.encode("Rabc=cba.")) == "Rabc=cba."
    with pytest.raises(ValueError):
        tok.encode("z")


def test_targets_score_only_the_answer() -> None:
    x, y = task_batch(["reverse"], 4, seed=0)
    tok = CharTokenizer()
    for row_x, row_y in zip(x, y, strict=True):
        text = tok.decode(row_x)
        sep = text.index("=")
        assert np.all(row_y[:sep] == IGNORE) and row_y[sep] != IGNORE
        answer = tok.decode(row_y[row_y != IGNORE])
        assert answer == text[1:sep][::-1] + "."


def test_a_few_steps_lower_the_loss() -> None:
    _, history = train(steps=30, batch=16)
    assert np.mean(history[-5:]) < np.mean(history[:5]) - 0.5


def test_shipped_checkpoint_solves_its_tasks(tmp_path) -> None:
    model = load_pretrained()
    assert model.config == TINY and load_meta()["accuracy"] >= 0.95
    assert answer_accuracy(model, n=40) >= 0.9
    save(model, tmp_path / "m.npz", meta={"x": 1})
    again = load(tmp_path / "m.npz", dtype=np.float64)
    idx = np.array([[3, 7, 8, 9, 2]])
    assert np.allclose(again(idx).data, model(idx).data, atol=1e-5)
    assert isinstance(again, GPT)
