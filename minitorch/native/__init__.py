"""From Python to machine code: C++ kernels built by hand, loaded, inspected and measured.

The kernels' C++ source (``kernels.cpp``, package data), the build chain run stage by stage
with the system g++ and cached per machine (``build``), symbols and relocations read from
``nm`` and ``objdump`` and the undefined-symbol error explained (``symbols``), a ctypes
loader with numpy wrappers (``loader``), the operating system's side of loading a file
(``osmem``: read vs mmap, page faults, resident memory) and valgrind's cachegrind against
lab 06's LRU simulator (``cachegrind``). Numpy and the standard library only; every tool
(g++, nm, objdump, valgrind) is looked up when it is used, and a missing one raises
:class:`~minitorch.native.build.ToolMissing` saying what to install.

Import modules by full name (``minitorch.native.build``); nothing is re-exported here.
"""
