"""Operators and kernels (layer 3): how one op is implemented and where its bytes go.

One module per concept, imported by its full name (``from minitorch.kernels.matmul import
matmul_tiled``): this package re-exports nothing, so labs 06-08 add modules side by side.
May import ``numerics`` and ``hardware`` (docs/architecture.md).
"""
