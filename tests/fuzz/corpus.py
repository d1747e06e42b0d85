"""The corpus models the fuzzer mutates: small ones (quick to mutate, load and run) that
between them hold control flow (WHILE, IF, CALL_ONCE), signatures, variables (LSTM state),
sparse constants, per-channel quantization and TFLITE_METADATA."""
from __future__ import annotations

from functools import lru_cache

from tests.conftest import MODELS_DIR

FUZZ_MODELS = (
    "sine_float.tflite", "control_flow.tflite", "multi_signature.tflite",
    "small_cnn_dilated_int8.tflite", "small_cnn_dilated_float.tflite", "dilated_conv.tflite",
    "trained_lstm_int8.tflite", "trained_lstm.tflite", "sparse_conv_float.tflite",
    "sparse_conv_fp16.tflite", "micro_speech_quantized.tflite", "keyword_scrambled_8bit.tflite",
    "lstm_dynamic.tflite",
)


@lru_cache(maxsize=None)
def model_bytes(name: str) -> bytes:
    return (MODELS_DIR / name).read_bytes()
