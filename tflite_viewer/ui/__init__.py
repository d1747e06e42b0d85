"""The window (PySide6).  The only package of tflite-viewer that imports Qt.

`app.run_app(launch)` is what `tflite-viewer [MODEL]` runs; `render.render_to_file` draws a
subgraph headless (the `render` subcommand).  `state` is the window's Qt-free state (the
workspace, the overlays' models, what the canvas draws), which tests drive without Qt.

The window runs numpy's matrix products on one BLAS thread, as LiteRT's reference kernels
run and as the interpreter's benchmarks measure (``--blas-threads 1``).  With OpenBLAS's
default of a thread per core, a product too small to gain from a second thread waits for
that thread to be scheduled: on a busy two-core machine mobilenet_v2_float's op 61 (a 1x1
CONV_2D, [9, 112] x [112, 1280]) took 10 to 45 ms in the Profile dock instead of 0.1 ms,
the whole run three times as long (issue 25, item 16; not denormal values: there were none).
BLAS reads these variables when numpy loads, which in the window happens after this
package is imported; a value the user set wins.
"""
import os as _os

for _variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS"):
    _os.environ.setdefault(_variable, "1")
