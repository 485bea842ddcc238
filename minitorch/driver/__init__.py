"""The driver: a simulated PCIe accelerator and the host side that drives it.

BAR registers and device memory (``device``), the command ring and doorbell (``ring``), DMA
descriptors (``dma``), completions (``completion``), kernel launch and graphs (``launch``),
contexts and their scheduler (``context``). All time is simulated nanoseconds from one
:class:`~minitorch.driver.device.CostModel`, never the wall clock.

Import modules by full name (``minitorch.driver.ring``); nothing is re-exported here.
"""
