"""Small datasets generated in code (never downloaded): 2-D toy sets, image-like sets, text.

Imports nothing else from the package. One module per family, e.g. ``minitorch.data.toy2d``.
"""
