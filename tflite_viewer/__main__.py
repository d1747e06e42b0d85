"""`python -m tflite_viewer` runs the same command line as `tflite-viewer`."""
from .cli import entry

raise SystemExit(entry())
