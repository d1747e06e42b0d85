"""Keeping freed tensors' memory in the process for the next ones (glibc's malloc).

A run allocates and frees arrays of a few megabytes op after op: a decoder's KV caches
(2 MB each, copied by DYNAMIC_UPDATE_SLICE, TRANSPOSE, the inputs and the outputs), the
blocks of unpacked int4 weights.  glibc serves every block above its mmap threshold from a
fresh mapping and unmaps it on free, so each one pays its page faults again (measured on
the 2.6 GB decoder's decode step: 9% of the int8 run's whole time, 18% of the int4 one's).
`keep_freed_memory` fixes the threshold at `MMAP_THRESHOLD` and lets the heap keep up to
`TRIM_THRESHOLD` of freed memory, so such blocks come from the heap and are reused.  The
process's peak is unchanged: a block is reused, not added (bench_interpreter.py --big).

It changes the whole process's allocator, so only the program's entry points call it
(`tflite-viewer run`, `quant` and the window), never the library.  Elsewhere than glibc
it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util

#: mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: blocks below this come from the heap (glibc's own ceiling for its dynamic threshold)
MMAP_THRESHOLD = 32 << 20
#: freed memory the heap keeps before it returns any to the system
TRIM_THRESHOLD = 256 << 20


def keep_freed_memory() -> bool:
    """Tune glibc's malloc as the module docstring says; False where there is no mallopt
    (another C library) or it refuses."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
