"""Make tests/data/converter: two small Keras models, each converted by TensorFlow's
TFLite converter four ways (float, dynamic-range, full-integer, float16).

The diff's converter-pair tests (tests/diff/test_converter_pairs.py) match every float op
with its counterpart in each quantized twin.  TensorFlow is a heavy dependency the tests
do not need, so the converted files are committed and this script says how they were made.
Run it with a Python that has TensorFlow (its own venv), from the repository root:

    /work/venvs/diff/bin/python tools/make_converter_pairs.py [--out tests/data/converter]

The weights are seeded, so a rerun with the same TensorFlow writes the same models.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402


def conv_net(tf):
    """Conv (ReLU) -> depthwise conv -> ReLU6 -> max pool -> 1x1 conv -> flatten -> dense
    -> softmax."""
    keras = tf.keras
    inp = keras.Input((16, 16, 3), batch_size=1, name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv1")(inp)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="depthwise")(x)
    x = keras.layers.ReLU(6.0, name="relu6")(x)
    x = keras.layers.MaxPooling2D(2, name="pool")(x)
    x = keras.layers.Conv2D(4, 1, name="conv2")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(10, name="dense")(x)
    out = keras.layers.Softmax(name="softmax")(x)
    return keras.Model(inp, out, name="conv_net")


def residual_mlp(tf):
    """dense (ReLU) -> + input -> dense (tanh) -> concatenate with the input -> dense."""
    keras = tf.keras
    inp = keras.Input((12,), batch_size=1, name="features")
    h = keras.layers.Dense(12, activation="relu", name="hidden")(inp)
    x = keras.layers.Add(name="residual")([inp, h])
    y = keras.layers.Dense(8, activation="tanh", name="squash")(x)
    z = keras.layers.Concatenate(name="concat")([y, inp])
    out = keras.layers.Dense(3, name="logits")(z)
    return keras.Model(inp, out, name="residual_mlp")


MODELS = {"conv_net": conv_net, "residual_mlp": residual_mlp}


def convert(tf, model, kind: str, shape) -> bytes:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if kind == "dynamic":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    elif kind == "int8":
        rng = np.random.default_rng(1)

        def data():
            for _ in range(16):
                yield [rng.standard_normal(shape).astype(np.float32)]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = data
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    elif kind == "fp16":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    return conv.convert()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="tests/data/converter")
    args = parser.parse_args()
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, build in MODELS.items():
        model = build(tf)
        shape = (1,) + tuple(model.input_shape[1:])
        for kind in ("float", "dynamic", "int8", "fp16"):
            path = out / f"{name}_{kind}.tflite"
            path.write_bytes(convert(tf, model, kind, shape))
            print(f"{path}: {path.stat().st_size} bytes")
    (out / "README.md").write_text(
        "Made by tools/make_converter_pairs.py with TensorFlow " + tf.__version__ + ": two "
        "small Keras models (seeded weights), each converted by the TFLite converter as "
        "float, dynamic-range, full-integer (float inputs and outputs, int8 inside) and "
        "float16.  Used by tests/diff/test_converter_pairs.py.\n")


if __name__ == "__main__":
    main()
