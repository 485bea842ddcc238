"""Graders of lab 24 (tensor and sequence parallel): the TP MLP both ways, head-parallel
attention, the vocabulary-parallel loss, a sequence-parallel block and activation bytes.

Each exercise is one rank's program ``fn(comm, ...)``, run on every rank of a
:class:`~minitorch.comm.simworld.SimWorld` (t = 1, 2, 4); 24.1 also runs once on 2 real gloo
processes. Ground truth is the unsharded layer written in the graders as plain numpy loops, or
torch autograd outside the learner's call. The point is enforced: bytes moved by the ranks
(one all-reduce per block, never the logits) and bytes kept for backward. The reference
(``minitorch.parallel.tensor`` and ``.sequence``) is blocked; torch is forbidden.
"""

from a2s.checks.lab24.attention import check_head_parallel_attention
from a2s.checks.lab24.mlp import check_tp_mlp
from a2s.checks.lab24.sequence import check_activation_bytes, check_sp_mlp
from a2s.checks.lab24.vocab import check_vocab_cross_entropy

__all__ = [
    "check_activation_bytes",
    "check_head_parallel_attention",
    "check_sp_mlp",
    "check_tp_mlp",
    "check_vocab_cross_entropy",
]
