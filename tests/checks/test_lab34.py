"""Graders of lab 34: right answers pass; realistic wrong answers, budget breakers and
reference calls fail with the hint of their mistake."""

from __future__ import annotations

import codecs

import numpy as np
import pytest

from a2s.checks import lab34
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.lab34 import _truth, stream
from minitorch.model import mla, speculative
from minitorch.runtime import streaming
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.model")
_SPEC = unblocked(speculative.speculative_generate)
_EXPECTED = unblocked(speculative.expected_tokens)


# --------------------------------------------------------------------------- answers
def verify(p_rows, q_rows, draft, coin, sample, bug=""):
    out = []
    for i, x in enumerate(draft):
        p, q = np.asarray(p_rows[i]), np.asarray(q_rows[i])
        ratio = p[x] / q[x]
        if coin(ratio if bug == "unclipped" else min(1.0, ratio)):
            out.append(int(x))
            continue
        r = np.maximum(p - q, 0.0)
        out.append(sample(r if bug == "unnormalised" else r / r.sum()))
        return out
    out.append(sample(p_rows[len(draft)]))
    return out


def speculative_greedy(target, draft, prompt, n, gamma, bug=""):
    toks, goal = list(prompt), len(prompt) + n
    while len(toks) < goal:
        g = min(gamma, goal - len(toks) - 1)
        ctx = list(toks)
        for _ in range(g):
            ctx.append(int(np.argmax(draft(ctx)[-1])))
        if bug == "one pass per position":
            best = [int(np.argmax(target(ctx[: len(toks) + i])[-1])) for i in range(g + 1)]
        else:
            best = np.argmax(target(ctx)[-(g + 1) :], axis=-1)
        k = 0
        while k < g and ctx[len(toks) + k] == best[k]:
            k += 1
        fix = ctx[len(toks) + k] if bug == "draft token kept" and k < g else int(best[k])
        toks += [*ctx[len(toks) : len(toks) + k], fix]
    return toks[:goal]


def plain_greedy(target, draft, prompt, n, gamma):
    toks = list(prompt)
    for _ in range(n):
        toks.append(int(np.argmax(target(toks)[-1])))
    return toks


def absorb(w, cfg):
    h, dh = cfg.n_head, cfg.head_dim
    uk, uq = w["W_UK"].reshape(h, dh, -1), w["W_UQ"].reshape(h, dh, -1)
    uv, wo = w["W_UV"].reshape(h, dh, -1), w["W_O"].reshape(-1, h, dh)
    return np.einsum("hkc,hkq->hcq", uk, uq), np.einsum("dhk,hkc->hdc", wo, uv)


def absorb_loop(w, cfg):
    a, b = [], []
    for i in range(cfg.n_head):
        rows = slice(i * cfg.head_dim, (i + 1) * cfg.head_dim)
        a.append(w["W_UK"][rows].T @ w["W_UQ"][rows])
        b.append(w["W_O"][:, rows] @ w["W_UV"][rows])
    return np.array(a), np.array(b)


def evict(kept, mass, budget, sinks, recent, bug=""):
    need = len(kept) - budget
    if need <= 0 and bug != "always":
        return []
    need = max(need, 1)
    newest = set(kept[-recent:]) if recent else set()
    if bug == "window":
        return [p for p in kept if p >= sinks and p not in newest][:need]
    cands = sorted(
        ((m, -p if bug == "newer first" else p) for p, m in zip(kept, mass, strict=True)),
    )
    cands = [(m, abs(p)) for m, p in cands if abs(p) >= sinks and abs(p) not in newest]
    if bug == "keep nothing":
        return [p for _, p in cands]
    if bug == "evict sinks":
        cands = sorted((m, p) for p, m in zip(kept, mass, strict=True) if p not in newest)
    return [p for _, p in cands[:need]]


# --------------------------------------------------------------------------- 34.1
def test_verify_passes(capsys):
    lab34.check_verify(verify)
    assert "✔ Exercise 34.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("from p", "not from p"),
        ("q - p", "draft's excess"),
        ("no bonus", "bonus|one more token"),
        ("no stop", "first rejection"),
    ],
)
def test_verify_rejects_wrong_rules(variant, match):
    rejects(lab34.check_verify, lambda *a: _truth_variant(variant, *a), match=match)


def _truth_variant(variant, p, q, d, coin, sample):
    out = []
    for i, x in enumerate(d):
        if coin(min(1.0, p[i][x] / q[i][x])):
            out.append(int(x))
            continue
        r = np.maximum(q[i] - p[i], 0.0) if variant == "q - p" else np.maximum(p[i] - q[i], 0.0)
        out.append(sample(p[i] if variant == "from p" else r / r.sum() if r.sum() else p[i]))
        if variant != "no stop":
            return out
    if variant != "no bonus":
        out.append(sample(p[len(d)]))
    return out


def test_verify_rejects_an_unclipped_ratio_and_an_unnormalised_residual():
    rejects(lab34.check_verify, lambda *a: verify(*a, bug="unclipped"), match=r"min\(1")
    rejects(lab34.check_verify, lambda *a: verify(*a, bug="unnormalised"), match="normalise")


def test_verify_rejects_a_step_that_only_samples_p():
    rejects(lab34.check_verify, lambda p, q, d, coin, sample: [sample(p[0])], match="not the rule")


def test_verify_rejects_its_own_randomness():
    gen = np.random.default_rng(0)

    def own_rng(p, q, d, coin, sample):
        out = []
        for i, x in enumerate(d):
            if gen.random() < min(1.0, p[i][x] / q[i][x]):
                out.append(int(x))
                continue
            r = np.maximum(p[i] - q[i], 0.0)
            return [*out, int(gen.choice(len(r), p=r / r.sum()))]
        return [*out, int(gen.choice(len(p[-1]), p=p[-1]))]

    rejects(lab34.check_verify, own_rng, match="not the rule|coin")


def test_verify_rejects_the_reference():
    def ref(p, q, d, coin, sample):
        return speculative.verify(p, q, d, np.random.default_rng(0))[0]

    rejects(lab34.check_verify, ref, match="reference", error=ReferenceCalledError)


def test_verify_rejects_a_forged_request():
    from a2s.checks.harness import request

    def forge(p, q, d, coin, sample):
        request("next")
        return verify(p, q, d, coin, sample)

    rejects(lab34.check_verify, forge, match="new step began")


# --------------------------------------------------------------------------- 34.2
def test_speculative_greedy_passes(capsys):
    lab34.check_speculative_greedy(speculative_greedy)
    lab34.check_speculative_greedy(
        lambda t, d, p, n, g: _SPEC(t, d, p, n, gamma=g, greedy=True).tokens.tolist()
    )
    assert capsys.readouterr().out.count("✔ Exercise 34.2 passed") == 2


def test_each_check_of_34_2_in_one_process_has_its_own_target(monkeypatch):
    """An earlier check's target, still in memory (a traceback keeps it), is not this one's:
    a learner who finds it through gc in the child decodes another model's text."""
    seeds: list[int] = []
    made = lab34.greedy.models
    monkeypatch.setattr(lab34.greedy, "models", lambda seed=None: seeds.append(seed) or made(seed))
    lab34.check_speculative_greedy(speculative_greedy)
    first = set(seeds)
    lab34.check_speculative_greedy(speculative_greedy)
    assert first and not first & set(seeds[len(first) :]) and None not in seeds


def test_speculative_greedy_rejects_plain_decoding_over_the_budget():
    rejects(lab34.check_speculative_greedy, plain_greedy, match="one pass per token")


def test_speculative_greedy_rejects_one_pass_per_verified_position():
    rejects(
        lab34.check_speculative_greedy,
        lambda *a: speculative_greedy(*a, bug="one pass per position"),
        match="target passes, more than",
    )


def test_speculative_greedy_rejects_a_kept_draft_token():
    rejects(
        lab34.check_speculative_greedy,
        lambda *a: speculative_greedy(*a, bug="draft token kept"),
        match="differs from greedy",
    )


def test_speculative_greedy_rejects_a_context_past_the_block():
    rejects(
        lab34.check_speculative_greedy,
        lambda t, d, p, n, g: t(list(p) * 10),
        match="1 to 32 long",
    )


def test_speculative_greedy_rejects_a_missing_prompt():
    rejects(
        lab34.check_speculative_greedy,
        lambda t, d, p, n, g: speculative_greedy(t, d, p, n, g)[len(p) :],
        match="prompt followed by exactly n",
    )


def test_speculative_greedy_rejects_more_drafts_than_gamma():
    rejects(
        lab34.check_speculative_greedy,
        lambda t, d, p, n, g: speculative_greedy(t, d, p, n, 2 * g),
        match="draft calls for|target passes, more than",
    )


def test_speculative_greedy_rejects_an_uncounted_target():
    from tests.checks.test_lab34_attacks import greedy_file_padded

    rejects(lab34.check_speculative_greedy, greedy_file_padded, match="differs from greedy")


def test_speculative_greedy_rejects_the_reference_and_a_local_target():
    def ref(t, d, p, n, g):
        return speculative.speculative_generate(t, d, p, n, g, greedy=True).tokens.tolist()

    def local(t, d, p, n, g):
        from minitorch.model.checkpoint import load_pretrained

        load_pretrained()
        return plain_greedy(t, d, p, n, g)

    rejects(lab34.check_speculative_greedy, ref, match="reference", error=ReferenceCalledError)
    rejects(lab34.check_speculative_greedy, local, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 34.3
def test_expected_tokens_passes(capsys):
    lab34.check_expected_tokens(lambda a, g: (1 - a ** (g + 1)) / (1 - a) if a < 1 else g + 1.0)
    lab34.check_expected_tokens(lambda a, g: sum(a**i for i in range(g + 1)))
    lab34.check_expected_tokens(_EXPECTED)
    assert capsys.readouterr().out.count("✔ Exercise 34.3 passed") == 3


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda a, g: (1 - a**g) / (1 - a) if a < 1 else float(g), "bonus"),
        (lambda a, g: 1 + g * a, "first rejection"),
        (lambda a, g: sum(a**i for i in range(1, g + 1)), "E - 1"),
    ],
)
def test_expected_tokens_rejects_wrong_formulas(wrong, match):
    rejects(lab34.check_expected_tokens, wrong, match=match)


def test_expected_tokens_rejects_gamma_at_alpha_one():
    rejects(
        lab34.check_expected_tokens,
        lambda a, g: (1 - a ** (g + 1)) / (1 - a) if a < 1 else float(g),
        match="alpha 1.*bonus",
    )


def test_torch_is_a_forbidden_call():
    def with_torch(a, g):
        import torch

        return float(torch.tensor(a).pow(torch.arange(g + 1)).sum())

    rejects(lab34.check_expected_tokens, with_torch, match="torch", error=ForbiddenCallError)


def test_expected_tokens_rejects_the_reference():
    rejects(
        lab34.check_expected_tokens,
        speculative.expected_tokens,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 34.4
def test_absorb_passes(capsys):
    lab34.check_absorb(absorb)
    lab34.check_absorb(absorb_loop)
    assert capsys.readouterr().out.count("✔ Exercise 34.4 passed") == 2


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda w, c: (absorb(w, c)[0].transpose(0, 2, 1), absorb(w, c)[1]), "shape|transpose"),
        (lambda w, c: (absorb(w, c)[0], absorb(w, c)[1] * 1.1), "A is right"),
        (lambda w, c: (absorb(w, c)[0].sum(0), absorb(w, c)[1]), "one matrix per head"),
        (lambda w, c: (absorb(w, c)[0][::-1], absorb(w, c)[1]), "W_UK,i"),
    ],
)
def test_absorb_rejects_wrong_matrices(wrong, match):
    rejects(lab34.check_absorb, wrong, match=match)


def test_absorb_rejects_the_square_transpose():
    def square_t(w, c):
        a, b = absorb(w, c)
        return (a.transpose(0, 2, 1) if a.shape[1] == a.shape[2] else a), b

    rejects(lab34.check_absorb, square_t, match="not its transpose")


def test_absorb_rejects_the_reference():
    def ref(w, c):
        mla.init_mla(c)
        return absorb(w, c)

    rejects(lab34.check_absorb, ref, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 34.5
def test_evict_passes(capsys):
    lab34.check_evict(evict)
    lab34.check_evict(lambda *a: _truth.evictions(*a) if False else evict(*a))
    assert capsys.readouterr().out.count("✔ Exercise 34.5 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("window", "not by age"),
        ("evict sinks", "sinks"),
        ("keep nothing", "Evict only when|len\\(kept\\) - budget"),
        ("always", "Evict only when"),
    ],
)
def test_evict_rejects_wrong_policies(bug, match):
    rejects(lab34.check_evict, lambda *a: evict(*a, bug=bug), match=match)


def test_evict_rejects_a_cache_over_budget():
    rejects(lab34.check_evict, lambda *a: [], match="the rule evicts")


def test_evict_rejects_evicting_the_recent_window():
    def recent(kept, mass, budget, sinks, recent):
        need = len(kept) - budget
        cands = sorted((m, p) for p, m in zip(kept, mass, strict=True) if p >= sinks)
        return [p for _, p in cands[: max(need, 0)]]

    rejects(lab34.check_evict, recent, match="recent|the rule evicts")


def test_evict_breaks_ties_by_age():
    rejects(lab34.check_evict, lambda *a: evict(*a, bug="newer first"), match="OLDER")


def test_evict_rejects_the_reference():
    from minitorch.runtime import kv_retention

    def ref(kept, mass, budget, sinks, recent):
        kv_retention.sinks(sinks, recent).kept(kept)
        return evict(kept, mass, budget, sinks, recent)

    rejects(lab34.check_evict, ref, match="reference", error=ReferenceCalledError)


def test_truths_agree_with_the_reference():
    cfg = mla.MLAConfig()
    w = mla.init_mla(cfg, seed=1)
    h = np.random.default_rng(0).standard_normal((6, cfg.d_model))
    got = _truth.mla_naive_loop(h, w, cfg.n_head, cfg.head_dim, cfg.rope_dim)
    assert np.allclose(got, mla.mla_naive(h, w, cfg), atol=1e-12)
    for alpha, gamma in ((0.3, 2), (0.9, 7), (1.0, 3)):
        assert _truth.tokens_per_pass(alpha, gamma) == pytest.approx(_EXPECTED(alpha, gamma))


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("check", "answer", "match"),
    [
        (lab34.check_verify, lambda *a: None, "list of emitted tokens"),
        (lab34.check_verify, lambda p, q, d, coin, sample: [sample("abc")], "one row of"),
        (lab34.check_speculative_greedy, lambda *a: ["a"] * 40, "exactly n"),
        (lab34.check_speculative_greedy, lambda t, d, p, n, g: t("xyz"), "1-D list"),
        (lab34.check_expected_tokens, lambda a, g: "x", "one float"),
        (lab34.check_absorb, lambda w, c: ("a", "b"), "arrays of numbers"),
        (lab34.check_absorb, lambda w, c: None, "the pair"),
        (lab34.check_evict, lambda *a: None, "list of cached positions"),
    ],
)
def test_bad_answers_get_a_clear_message(check, answer, match):
    rejects(check, answer, match=match)


# --------------------------------------------------------------------------- musts
MUSTS = [
    (
        "34.1",
        "make every random choice through `coin` and `sample`",
        "test_verify_rejects_its_own_randomness",
    ),
    (
        "34.1",
        "the law of what your step emits must equal the rule's",
        "test_verify_rejects_wrong_rules",
    ),
    (
        "34.1",
        "accept $x_i$ with probability $\\min(1, p_i(x_i) / q_i(x_i))$",
        "test_verify_rejects_an_unclipped_ratio_and_an_unnormalised_residual",
    ),
    ("34.1", "only the grader starts a step", "test_verify_rejects_a_forged_request"),
    ("34.1", "Never use `np.random`", "test_verify_rejects_its_own_randomness"),
    ("34.1", "nor the `minitorch` reference", "test_verify_rejects_the_reference"),
    (
        "34.2",
        "must equal plain greedy decoding of the target",
        "test_speculative_greedy_rejects_a_kept_draft_token",
    ),
    (
        "34.2",
        "**one** target pass scores all $g + 1$ positions",
        "test_speculative_greedy_rejects_one_pass_per_verified_position",
    ),
    (
        "34.2",
        "no more target passes than greedy speculative decoding needs",
        "test_speculative_greedy_rejects_plain_decoding_over_the_budget",
    ),
    ("34.2", "at most 32 tokens", "test_speculative_greedy_rejects_a_context_past_the_block"),
    (
        "34.2",
        "returning the prompt followed by exactly `n` new tokens",
        "test_speculative_greedy_rejects_a_missing_prompt",
    ),
    (
        "34.2",
        "draft $g = \\min(\\gamma, \\text{tokens still missing} - 1)$ tokens greedily with `draft`",
        "test_speculative_greedy_rejects_more_drafts_than_gamma",
    ),
    (
        "34.2",
        "the target runs only in the grader",
        "test_speculative_greedy_rejects_an_uncounted_target",
    ),
    (
        "34.2",
        "the target runs only in the grader",
        "test_speculative_greedy_rejects_the_reference_and_a_local_target",
    ),
    ("34.3", "predict", "test_expected_tokens_rejects_wrong_formulas"),
    ("34.3", "$\\gamma + 1$ at $\\alpha = 1$", "test_expected_tokens_rejects_gamma_at_alpha_one"),
    ("34.3", "Exercise code may not call torch", "test_torch_is_a_forbidden_call"),
    ("34.4", "one matrix per head", "test_absorb_rejects_wrong_matrices"),
    ("34.4", "the check runs the attention itself", "test_absorb_rejects_the_square_transpose"),
    (
        "34.5",
        "never evict a sink or one of the `recent` newest",
        "test_evict_rejects_wrong_policies",
    ),
    (
        "34.5",
        "the cache may never hold more than `budget` tokens",
        "test_evict_rejects_a_cache_over_budget",
    ),
    ("34.5", "the least accumulated attention mass", "test_evict_rejects_wrong_policies"),
    ("34.5", "While `len(kept) <= budget` evict nothing", "test_evict_rejects_wrong_policies"),
    ("34.5", "on equal mass, the older first", "test_evict_breaks_ties_by_age"),
    ("34.6", "Pieces must be `str`", "test_detokenizer_rejects_bytes_pieces"),
    (
        "34.6",
        'pieces + flush must equal the bytes decoded with `errors="replace"`',
        "test_detokenizer_rejects_the_modelled_mistakes",
    ),
    (
        "34.6",
        "on valid input every push must return exactly the characters it completes",
        "test_detokenizer_rejects_the_modelled_mistakes",
    ),
    (
        "34.6",
        "`codecs` (its incremental decoders), `_codecs` and `encodings` may not be called",
        "test_detokenizer_rejects_the_reference_and_codecs",
    ),
]


# --------------------------------------------------------------------------- 34.6
class Detokenizer:
    """The UTF-8 rule: hold the bytes after the last lead byte while fewer than it announces."""

    bug = ""

    def __init__(self, vocab_bytes):
        self.vocab, self.held, self.prev = list(vocab_bytes), b"", ""

    def _complete(self, token_id):
        data = self.held + self.vocab[token_id]
        cut = len(data)
        for back in range(1, min(4, len(data)) + 1):
            lead = data[-back]
            if lead & 0xC0 != 0x80:
                need = (
                    2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4 if lead >> 3 == 30 else 1
                )
                cut = len(data) - back if back < need else cut
                break
        self.held = data[cut:]
        return data[:cut].decode("utf-8", errors="replace")

    def push(self, token_id):
        if self.bug == "alone":
            return self.vocab[token_id].decode("utf-8", errors="replace")
        if self.bug == "hold all":
            self.held += self.vocab[token_id]
            return ""
        piece = self._complete(token_id)
        if self.bug == "late":
            piece, self.prev = self.prev, piece
        return piece

    def flush(self):
        if self.bug in ("alone", "drop tail"):
            return ""
        text, self.held = self.held.decode("utf-8", errors="replace"), b""
        return (self.prev if self.bug == "late" else "") + text


def _detok(bug):
    return type(f"Detokenizer_{bug}", (Detokenizer,), {"bug": bug})


def test_detokenizer_passes(capsys):
    lab34.check_detokenizer(Detokenizer)
    assert "✔ Exercise 34.6 passed" in capsys.readouterr().out


def test_the_reference_gives_the_truths_pieces_on_the_graders_streams():
    """The reference uses codecs (forbidden in 34.6), so it is compared outside the check."""
    g = np.random.default_rng(0)
    for label, toks in [*stream._NAMED, ("random", stream._random(g, 200))]:
        vocab, ids = stream._vocab(toks)
        d = streaming.IncrementalDetokenizer(vocab)
        got, tail = [d.push(i) for i in ids], d.flush()
        want, want_tail = stream.stream_pieces(toks)
        assert "".join(got) + tail == "".join(want) + want_tail, label
        if "invalid" not in label:
            assert (got, tail) == (want, want_tail), label


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("alone", "decoding each token alone"),
        ("hold all", "every push returned '' and flush returned everything"),
        ("drop tail", "the stream ended inside a character"),
        ("late", "one push late"),
    ],
)
def test_detokenizer_rejects_the_modelled_mistakes(bug, match):
    rejects(lab34.check_detokenizer, _detok(bug), match=match)


def test_detokenizer_rejects_bytes_pieces():
    class Raw(Detokenizer):
        def push(self, token_id):
            return super().push(token_id).encode()

    rejects(lab34.check_detokenizer, Raw, match="must return a str")


def test_detokenizer_rejects_the_reference_and_codecs():
    class Ref(Detokenizer):
        def __init__(self, vocab_bytes):
            self.d = streaming.IncrementalDetokenizer(vocab_bytes)

        def push(self, token_id):
            return self.d.push(token_id)

        def flush(self):
            return self.d.flush()

    class Codecs(Ref):
        def __init__(self, vocab_bytes):
            self.vocab = vocab_bytes
            self.d = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def push(self, token_id):
            return self.d.decode(self.vocab[token_id])

        def flush(self):
            return self.d.decode(b"", final=True)

    rejects(lab34.check_detokenizer, Ref, match="reference", error=ReferenceCalledError)
    rejects(lab34.check_detokenizer, Codecs, match="codecs", error=ForbiddenCallError)


def test_stream_truth_agrees_with_the_reference_on_valid_text():
    g = np.random.default_rng(5)
    vocab = [bytes([b]) for b in range(256)]
    text = "".join(chr(int(c)) for c in g.choice([0x41, 0xE9, 0x20AC, 0x1F642, 0x10FFFF], 60))
    data = text.encode()
    ref = unblocked_in("minitorch.runtime")(streaming.stream_text)
    pieces, tail = stream.stream_pieces([bytes([b]) for b in data])
    assert [*pieces, *([tail] if tail else [])] == list(ref(list(data), vocab))
