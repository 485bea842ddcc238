"""Graders of lab 34 (speculative decoding, MLA and long context).

Ground truth is in ``_truth``: the exact law of a verification step by enumeration, greedy
decoding and its pass count, the closed form of tokens per pass, MLA head by head, and the
eviction rule; in ``stream``, the UTF-8 rule of 34.6's streaming detokenizer. The references
(``minitorch.model.speculative``, ``minitorch.model.mla``, ``minitorch.runtime.kv_retention``,
``minitorch.runtime.streaming``) are blocked while the learner's code runs; the target model,
the oracles and the cache of 34.1, 34.2 and 34.5, and the streams of 34.6, live in the
grader's process.
"""

from a2s.checks.lab34.greedy import check_speculative_greedy, models
from a2s.checks.lab34.latent import check_absorb
from a2s.checks.lab34.retention import check_evict
from a2s.checks.lab34.speedup import check_expected_tokens
from a2s.checks.lab34.stream import check_detokenizer
from a2s.checks.lab34.verify import check_verify

__all__ = [
    "check_absorb",
    "check_detokenizer",
    "check_evict",
    "check_expected_tokens",
    "check_speculative_greedy",
    "check_verify",
    "models",
]
