"""Kernels compiled to machine code with numba, for the ops whose numpy form runs far
below the machine's speed however it is laid out.

A float DEPTHWISE_CONV_2D sums a few taps per output and channel.  numpy can only run
it as an einsum over views of a padded copy, or as one pass over the whole image per
tap; either reads the image again and again, at about 4-5 multiply-adds a nanosecond on
mobilenet_v2's layers.  The compiled loop (`compiled_loops`) reads each input row where
it lies, adds one output row's taps a vector of values at a time and adds the bias and
clamps while the values are in cache: 2.5-3 times faster on those layers.  The 8-bit
convolutions' requantizing tails and the hybrid kernels' quantizer are compiled for the
same reason: numpy takes five to eight passes over each output where one loop needs one.
Where the CPU has AVX-512 VNNI, the 8-bit convolutions' products are bytes times bytes in
``vpdpbusd`` (`compiled_vnni`), four times the multiply-adds of float32 BLAS.

numba is imported on the first kernel asked for (`loops`), not with the package: it
costs half a second.  When it is missing, or ``TFLITE_VIEWER_NO_COMPILED`` is set when
the package is imported, every caller keeps its numpy form.  The compiled code is cached
on disk (numba's cache beside this file, or its user cache), so a kernel is compiled
once per machine, not per process.
"""
from __future__ import annotations

import functools
import os
from types import ModuleType

#: set (to anything but "" or "0") to run every kernel's numpy form; read once, when the
#: package is imported (kernels ask on every call: an environment lookup each time cost a
#: hybrid model 3% of its invoke)
DISABLE_ENV = "TFLITE_VIEWER_NO_COMPILED"


def asked_for(value: str | None) -> bool:
    """Whether ``DISABLE_ENV``'s value leaves compiled kernels on."""
    return (value or "") in ("", "0")


#: whether compiled kernels are on (tests switch it)
ON = asked_for(os.environ.get(DISABLE_ENV))


@functools.cache
def _import_loops() -> ModuleType | None:
    try:
        from . import compiled_loops
    except ImportError:  # numba (or its llvmlite) missing or unusable here
        return None
    return compiled_loops


def loops() -> ModuleType | None:
    """The module of compiled loops (`compiled_loops`), or None when compiled kernels are
    off or numba cannot be imported."""
    return _import_loops() if ON else None


@functools.cache
def _import_vnni() -> ModuleType | None:
    if _import_loops() is None:
        return None
    from . import compiled_vnni  # (numba imports: _import_loops did)
    return compiled_vnni if compiled_vnni.available() else None


def vnni() -> ModuleType | None:
    """The module of AVX-512 VNNI byte products (`compiled_vnni`), or None when compiled
    kernels are off, numba cannot be imported, or this CPU lacks the instructions."""
    return _import_vnni() if ON else None


def entry(fn, *example):
    """The machine code numba compiled ``fn`` to for arguments of ``example``'s types,
    called without the dispatcher, which types every argument of every call (0.3-0.4 us
    a call: 4-6% of a small 8-bit model's invoke, whose 65 nodes each make one).  The
    caller passes only arguments of those exact types: arrays of the same dtype, rank and
    layout (fresh, or made contiguous), scalars of the same kinds."""
    from numba import typeof  # (the callers hold compiled loops: numba is imported)
    return fn.compile(tuple(typeof(a) for a in example))


def warm() -> None:
    """Load the compiled loops' machine code into this process (`compiled_loops.warm_up`),
    when compiled kernels are on: before forking workers, which then inherit it."""
    for module in (loops(), vnni()):
        if module is not None:
            module.warm_up()
