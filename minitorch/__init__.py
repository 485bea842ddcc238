"""minitorch: the reference package of the course *Algorithm to Silicon*.

One subpackage per layer of the stack (``numerics``, ``autograd``, ``nn``, ``kernels``,
``model``, ``compiler``, ``runtime``, ``comm``, ``parallel``, ``hardware``) plus the course
tooling (``course``, ``checks``, ``viz``, ``bench``). Import what a lab needs, e.g.
``from minitorch.numerics import decode``.
"""

__version__ = "0.1.0"
