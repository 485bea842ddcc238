"""Saved outputs read as the final screen: progress bars folded to their last frame.

Unit tests of :mod:`a2s.outputs`, then a check of every committed solution: no
stream output with more than a few progress frames, no empty stream output.
"""

from __future__ import annotations

import pytest

from a2s.build import KERNELSPEC
from a2s.notebook import read_notebook
from a2s.outputs import (
    clean_notebook_outputs,
    clean_outputs,
    final_text,
    progress_frames,
)
from a2s.syllabus import repo_root

MAX_FRAMES = 2  # a saved stream may keep a stray carriage return or two, not a recording


def _stream(text: str | list[str], name: str = "stderr") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def _image() -> dict:
    return {"output_type": "display_data", "data": {"image/png": "iVBOR"}, "metadata": {}}


# --------------------------------------------------------------------------- final_text
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain\nlines\n", "plain\nlines\n"),
        ("\rbar   0%\rbar  50%\rbar 100%\n", "bar 100%\n"),
        ("\rbar   0%|   | 0/9\r                 \r", ""),  # leave=False erased it
        ("before\n\rbar 0%\r        \rafter\n", "before\nafter\n"),
        ("\rlong frame 100%\rshort", "shortframe 100%"),  # a terminal overwrites in place
        ("\rpadded 100%   \n", "padded 100%\n"),  # tqdm's padding goes
        ("windows\r\nline\r\n", "windows\nline\n"),
        ("kept as printed   \n\n", "kept as printed   \n\n"),  # no \r: untouched
    ],
    ids=["plain", "frames", "erased", "between", "overwrite", "padding", "crlf", "untouched"],
)
def test_final_text_is_what_a_terminal_shows(text: str, shown: str) -> None:
    assert final_text(text) == shown


def test_progress_frames_counts_carriage_returns_of_streams_only() -> None:
    assert progress_frames(_stream("\ra\rb\rc\n")) == 3
    assert progress_frames(_stream("a\r\nb\r\n")) == 0
    assert progress_frames(_image()) == 0


# --------------------------------------------------------------------------- clean_outputs
def test_tqdm_frames_fold_to_the_final_bar() -> None:
    frames = [_stream(f"\rSGD steps: {p:3d}%|  | {p}/100") for p in range(0, 101, 3)]
    outputs = [*frames, _stream("\n"), _stream("loss 0.7 -> 0.07\n", "stdout"), _image()]
    cleaned = clean_outputs(outputs)
    assert [o.get("name") for o in cleaned] == ["stderr", "stdout", None]
    assert cleaned[0]["text"] == "SGD steps:  99%|  | 99/100\n"
    assert cleaned[1]["text"] == "loss 0.7 -> 0.07\n"


def test_erased_bars_and_empty_streams_go_and_their_neighbours_merge() -> None:
    outputs = [  # lab 04's check cell before cleaning: a leave=False bar around the verdict
        _stream("\rtraining:   0%|          | 0/168 [00:00<?, ?it/s]"),
        _stream("\r" + " " * 49),
        _stream("✔ Exercise 04.6 passed\n", "stdout"),
        _stream("\r"),
        _stream("and one more line\n", "stdout"),
        _stream(""),
    ]
    assert clean_outputs(outputs) == [
        _stream("✔ Exercise 04.6 passed\nand one more line\n", "stdout")
    ]


def test_split_frames_are_joined_before_they_are_folded() -> None:
    outputs = [_stream(["\rbar 10%", "\rbar 90"]), _stream("%\rbar 100%\n")]
    assert clean_outputs(outputs) == [_stream("bar 100%\n")]


def test_other_outputs_are_kept_in_order() -> None:
    err = {"output_type": "error", "ename": "E", "evalue": "x", "traceback": []}
    outputs = [_image(), _stream("a\n", "stdout"), err, _stream("b\n", "stdout")]
    assert clean_outputs(outputs) == outputs


def test_clean_notebook_outputs_counts_what_it_removed() -> None:
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "x"},
            {
                "cell_type": "code",
                "outputs": [_stream("\ra"), _stream("\rb\n"), _stream(" ", "stdout")],
            },
        ]
    }
    assert clean_notebook_outputs(nb) == 2
    assert nb["cells"][1]["outputs"] == [_stream("b\n")]


# --------------------------------------------------------------------------- the solutions
SOLUTIONS = sorted((repo_root() / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_saved_outputs_are_clean(path) -> None:
    nb = read_notebook(path)
    problems = []
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.get("output_type") != "stream":
                continue
            if progress_frames(o) > MAX_FRAMES:
                problems.append(f"{cell.id}: {o.name} holds {progress_frames(o)} progress frames")
            if not "".join(o.text).strip():
                problems.append(f"{cell.id}: an empty {o.name} output")
    assert not problems, (
        f"{path.name}: run `a2s execute {path.stem[:2]}` (it folds progress bars):\n  "
        + "\n  ".join(problems)
    )


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_solution_carries_the_kernel_metadata(path) -> None:
    meta = read_notebook(path).metadata
    assert meta.get("kernelspec") == KERNELSPEC
    assert meta.get("language_info", {}).get("name") == "python"
