"""Post-training systems: the RL loop of a language model as a systems problem.

A verifiable task with a programmatic reward (``task``), GRPO's loss in the course autograd
(``grpo``), rollouts from lab 19's serving engine with the sampled tokens' log-probabilities
(``rollout``), weight synchronisation from the trainer into the engine with policy versions
(``sync``), the trainer and the short seeded GRPO run (``trainer``), rollout and trainer roles
as actors with mailboxes (``actors``), and a cost model of colocated, disaggregated and
one-step-off-policy placements (``placement``). Import modules by full name; nothing is
re-exported here. May import ``model``, ``runtime``, ``autograd``, ``nn``, ``optim`` and
``numerics`` (docs/architecture.md).
"""
