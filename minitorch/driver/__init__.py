"""The driver: a simulated PCIe accelerator and the host side that drives it.

BAR registers and device memory (``device``), the command ring and doorbell (``ring``), DMA
descriptors (``dma``), completions (``completion``), kernel launch and graphs (``launch``),
contexts and their scheduler (``context``), all timed by one
:class:`~minitorch.driver.device.CostModel` (lab 29). Telemetry counters (``telemetry``),
power, thermal and DVFS (``power``), an NVML-like governor (``governor``), workload traces
(``workload``), faults (``faults``) and the response to them (``recovery``) (lab 30). All
time is simulated, never the wall clock.

Import modules by full name (``minitorch.driver.ring``); nothing is re-exported here.
"""
