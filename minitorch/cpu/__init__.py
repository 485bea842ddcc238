"""The CPU: a tiny RISC-V-like ISA, its golden model, a 5-stage pipeline, branch predictors.

The ISA and its encodings (``isa``), the assembler and disassembler (``asm``), the
instruction-set simulator every other model is checked against (``golden``), the 5-stage
in-order pipeline with forwarding, stalls and flushes (``pipeline``), the lab's programs and
their closed-form cycle counts (``programs``), branch predictors (``branch``), an in-order
W-wide issue model (``superscalar``) and the divergence finder for buggy models (``debug``).
All time is simulated cycles, never the wall clock.

Import modules by full name (``minitorch.cpu.pipeline``); nothing is re-exported here.
"""
