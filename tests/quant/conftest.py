"""The window fixtures of the GUI tests, for the Quantization dock's test."""
from tests.ui.conftest import settings, window  # noqa: F401
