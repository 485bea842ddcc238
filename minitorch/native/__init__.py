"""From Python to machine code: C++ kernels built by hand, loaded, inspected and measured.

The kernels' C++ source (``kernels.cpp``, package data), the build chain run stage by stage
with the system g++ and cached per machine (``build``), symbols and relocations read from
``nm`` and ``objdump`` and the undefined-symbol error explained (``symbols``), a ctypes
loader with numpy wrappers (``loader``), the operating system's side of loading a file
(``osmem``: read vs mmap, page faults, resident memory) and valgrind's cachegrind against
lab 06's LRU simulator (``cachegrind``), the C++ op in the course autograd (``ops``), the
same op as a torch C++ extension and torch's profiler op counts (``torchext``, the one module
that imports torch, inside its functions), the kernels timed next to BLAS (``timing``) and
the tools this machine has, with ``perf stat`` (``toolchain``). Numpy and the standard
library only at import time; every tool (g++, nm, objdump, valgrind, ninja, perf) is looked
up when it is used, and a missing one raises :class:`~minitorch.native.build.ToolMissing`
(or says so) with what to install.

Builds are cached under ``$A2S_NATIVE_CACHE`` (default ``~/.cache/a2s/native``).

Import modules by full name (``minitorch.native.build``); nothing is re-exported here.
"""
