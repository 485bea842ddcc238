"""The generated shapes: deterministic, balanced, learnable but not trivial."""

import numpy as np
import pytest

from minitorch.data.shapes import GLYPH, SHAPE_NAMES, glyphs, make_shapes


def test_shapes_dtypes_and_determinism() -> None:
    x, y = make_shapes(200, seed=3)
    assert x.shape == (200, 10, 10) and x.dtype == np.float32
    assert y.shape == (200,) and y.dtype == np.int64
    x2, y2 = make_shapes(200, seed=3)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    x3, _ = make_shapes(200, seed=4)
    assert not np.array_equal(x, x3)


def test_classes_are_balanced_and_shuffled() -> None:
    _, y = make_shapes(1005, seed=0)
    counts = np.bincount(y, minlength=len(SHAPE_NAMES))
    assert counts.min() >= 100 and counts.max() <= 101
    assert not np.array_equal(y[:20], np.arange(20) % 10)


def test_templates_are_distinct_binary_glyphs() -> None:
    g = glyphs()
    assert g.shape == (len(SHAPE_NAMES), GLYPH, GLYPH)
    assert set(np.unique(g)) <= {0.0, 1.0}
    assert len({row.tobytes() for row in g.reshape(len(g), -1)}) == len(g)


def test_noise_free_images_are_shifted_scaled_templates() -> None:
    size = 12
    x, y = make_shapes(50, noise=0.0, seed=1, size=size)
    g = glyphs()
    for img, label in zip(x, y, strict=True):
        scale = img.max()
        assert 0.6 <= scale <= 1.0
        matches = 0
        for oy in range(size - GLYPH + 1):
            for ox in range(size - GLYPH + 1):
                want = np.zeros((size, size), np.float32)
                want[oy : oy + GLYPH, ox : ox + GLYPH] = g[label] * scale
                matches += bool(np.allclose(img, want, atol=1e-6))
        assert matches >= 1


def test_learnable_but_not_trivial() -> None:
    x, y = make_shapes(2000, seed=0)
    xt, yt = make_shapes(500, seed=1)
    centroids = np.stack([x[y == k].mean(0).ravel() for k in range(10)])
    dist = ((xt.reshape(len(xt), 1, -1) - centroids[None]) ** 2).sum(-1)
    acc = (dist.argmin(1) == yt).mean()
    assert 0.7 < acc < 0.97  # the signal is there; the noise and the shifts still bite


def test_rejects_a_canvas_smaller_than_a_glyph() -> None:
    with pytest.raises(ValueError):
        make_shapes(10, size=GLYPH - 1)
