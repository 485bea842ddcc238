"""Save and load GPT weights with their config in one ``.npz``; the shipped tiny checkpoint.

    save(model, path, meta={"accuracy": 0.9})
    model = load(path)                    # a GPT with the saved config and weights
    model = load_pretrained()             # minitorch/model/checkpoints/tiny_gpt.npz

The file holds every array of ``state_dict()`` under its dotted name plus ``__config__``
and ``__meta__`` (JSON strings). Regenerate the shipped one with
``python -m minitorch.model.train`` (about half a minute on one CPU core).

Lab: 09_transformer
Paper: none (a file format: numpy .npz plus JSON)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT

__all__ = ["DEFAULT_PATH", "load", "load_meta", "load_pretrained", "save"]

DEFAULT_PATH = Path(__file__).parent / "checkpoints" / "tiny_gpt.npz"


def save(model: GPT, path: str | Path, meta: dict[str, Any] | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = dict(model.state_dict())
    arrays["__config__"] = np.array(json.dumps(model.config.to_dict()))
    arrays["__meta__"] = np.array(json.dumps(meta or {}))
    with path.open("wb") as f:
        np.savez_compressed(f, **arrays)


def load(path: str | Path, dtype: type = np.float32) -> GPT:
    with np.load(Path(path)) as f:
        config = GPTConfig.from_dict(json.loads(str(f["__config__"])))
        state = {k: f[k].astype(dtype) for k in f.files if not k.startswith("__")}
    model = GPT(config, seed=0, dtype=dtype)
    model.load_state_dict(state)
    return model


def load_meta(path: str | Path = DEFAULT_PATH) -> dict[str, Any]:
    """The training record stored with a checkpoint (steps, final loss, accuracy)."""
    with np.load(Path(path)) as f:
        return dict(json.loads(str(f["__meta__"])))


def load_pretrained(dtype: type = np.float32) -> GPT:
    """The shipped tiny GPT (config ``minitorch.model.train.TINY``), trained on reverse + sort."""
    return load(DEFAULT_PATH, dtype)
