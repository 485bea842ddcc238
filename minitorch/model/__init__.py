"""Algorithm and model (layer 1): what is computed — the tiny GPT, MoE, quantization, LoRA.

One module per concept, imported by its full name (``from minitorch.model.gpt import GPT``):
this package re-exports nothing, so labs 09-12 add modules side by side. Built on the course's
own ``Tensor`` (``minitorch.autograd``) and modules (``minitorch.nn``); may import
``autograd``, ``nn``, ``kernels`` and ``numerics`` (docs/architecture.md).
"""
