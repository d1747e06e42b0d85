"""MediaPipe's attention ops against MediaPipe's own C++ kernels, run by MediaPipe's graph.

MediaPipe publishes no interpreter for these ops, but its wheel runs them inside graphs:
InferenceCalculator with the op resolver of TfLiteCustomOpResolverCalculator (the CPU
resolver, which registers version 2 of Landmarks2TransformMatrix, TransformLandmarks and
TransformTensorBilinear).  This script builds such a graph (image -> ImageToTensor with
the range [0, 255], so the tensor holds the pixels exactly -> InferenceCalculator -> one
TensorsToFloats per output) and compares, bit for bit, random models of the three ops
written by the project's writer, then the published face_landmark_with_attention model
(whose builtin convolutions differ from LiteRT's optimized kernels by rounding, so that one
is compared with a tolerance).

Not part of CI (MediaPipe and its dependencies are not test dependencies).  To run it:

    python -m pip download mediapipe==0.10.14 --no-deps -d DIR
    python -m pip install --no-deps --target DIR/site DIR/mediapipe-0.10.14-*.whl
    python -m tests.interpreter.mediapipe_graph_oracle DIR/site [--trials N]

Only the compiled bindings and the generated protos are used: the package's ``__init__``
(which imports OpenCV for its drawing utilities) is bypassed.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

from tflite_viewer.interpreter import Interpreter

from tests.interpreter.signal.models import CustomOp, custom_model

F32 = np.float32
_PROTOS = ("tensor.inference_calculator_pb2", "tensor.image_to_tensor_calculator_pb2",
           "tensor.tensors_to_floats_calculator_pb2",
           "tflite.tflite_custom_op_resolver_calculator_pb2", "core.split_vector_calculator_pb2")


def load_bindings(site: Path):
    """MediaPipe's compiled bindings and graph-config proto, from an unpacked wheel."""
    root = site / "mediapipe"
    for name, sub in (("mediapipe", ""), ("mediapipe.python", "python"),
                      ("mediapipe.framework", "framework"), ("mediapipe.calculators", "calculators"),
                      ("mediapipe.calculators.tensor", "calculators/tensor"),
                      ("mediapipe.calculators.tflite", "calculators/tflite"),
                      ("mediapipe.calculators.core", "calculators/core")):
        module = types.ModuleType(name)
        module.__path__ = [str(root / sub)]
        sys.modules[name] = module
    sys.path.insert(0, str(site))
    bindings = importlib.import_module("mediapipe.python._framework_bindings")
    calculator_pb2 = importlib.import_module("mediapipe.framework.calculator_pb2")
    for proto in _PROTOS:  # registers the options extensions used below
        importlib.import_module("mediapipe.calculators." + proto)
    return bindings, calculator_pb2


def graph_text(model_path: str, outputs: int, h: int, w: int, low: float, high: float) -> str:
    ranges = " ".join(f"ranges {{ begin: {k} end: {k + 1} }}" for k in range(outputs))
    lines = ['input_stream: "image"'] + [f'output_stream: "f{k}"' for k in range(outputs)]
    lines.append('node { calculator: "TfLiteCustomOpResolverCalculator" '
                 'output_side_packet: "OP_RESOLVER:op_resolver" options { '
                 '[mediapipe.TfLiteCustomOpResolverCalculatorOptions.ext] { use_gpu: false } } }')
    lines.append('node { calculator: "ImageToTensorCalculator" input_stream: "IMAGE:image" '
                 'output_stream: "TENSORS:input_tensors" options { '
                 f'[mediapipe.ImageToTensorCalculatorOptions.ext] {{ output_tensor_width: {w} '
                 f'output_tensor_height: {h} keep_aspect_ratio: false '
                 f'output_tensor_float_range {{ min: {low} max: {high} }} }} }} }}')
    lines.append('node { calculator: "InferenceCalculator" input_stream: "TENSORS:input_tensors" '
                 'output_stream: "TENSORS:output_tensors" input_side_packet: "OP_RESOLVER:op_resolver" '
                 f'options {{ [mediapipe.InferenceCalculatorOptions.ext] {{ model_path: "{model_path}" '
                 'delegate { tflite {} } } } }')
    streams = " ".join(f'output_stream: "t{k}"' for k in range(outputs))
    lines.append(f'node {{ calculator: "SplitTensorVectorCalculator" input_stream: "output_tensors" '
                 f'{streams} options {{ [mediapipe.SplitVectorCalculatorOptions.ext] {{ {ranges} }} }} }}')
    lines += [f'node {{ calculator: "TensorsToFloatsCalculator" input_stream: "TENSORS:t{k}" '
              f'output_stream: "FLOATS:f{k}" }}' for k in range(outputs)]
    return "\n".join(lines)


def run_graph(bindings, calculator_pb2, model: Path, image: np.ndarray, outputs: int,
              float_range=(0.0, 255.0)) -> list[np.ndarray]:
    """The model's outputs (flattened float32) as MediaPipe's graph computes them."""
    from google.protobuf import text_format

    h, w = image.shape[:2]
    config = text_format.Parse(graph_text(str(model), outputs, h, w, *float_range),
                               calculator_pb2.CalculatorGraphConfig())
    with tempfile.NamedTemporaryFile(suffix=".binarypb") as f:
        f.write(config.SerializeToString())
        f.flush()
        graph = bindings.calculator_graph.CalculatorGraph(binary_graph_path=f.name)
    results: dict[int, np.ndarray] = {}
    for k in range(outputs):
        graph.observe_output_stream(f"f{k}", lambda _s, packet, k=k: results.__setitem__(
            k, np.array(bindings._packet_getter.get_float_list(packet), F32)))
    graph.start_run()
    packet = bindings._packet_creator._create_image_frame_from_pixel_data(
        bindings.image_frame.ImageFormat.SRGB, np.ascontiguousarray(image), True)
    graph.add_packet_to_input_stream("image", packet, bindings.timestamp.Timestamp(0))
    graph.close()
    return [results[k] for k in range(outputs)]


def attention_model(rng: np.random.Generator, h: int, w: int) -> bytes:
    """Landmarks (the image's pixels, reshaped) -> Landmarks2TransformMatrix v2 ->
    TransformLandmarks v2 (3-D and, through a slice, 2-D landmarks) and
    TransformTensorBilinear v2 (the image, through the matrix scaled down 16 times)."""
    n = h * w
    subset = [int(v) for v in rng.choice(n, int(rng.integers(2, 12)), replace=False)]
    left, right = (int(v) for v in rng.choice(n, 2, replace=False))
    options = {"subset_idxs": subset, "left_rotation_idx": left, "right_rotation_idx": right,
               "target_rotation_radians": float(rng.uniform(-1, 1)), "output_height": 6,
               "output_width": 5, "scale_x": float(rng.uniform(0.5, 2)),
               "scale_y": float(rng.uniform(0.5, 2))}
    shrink = np.diag([1 / 16, 1 / 16, 1, 1]).astype(F32)[None]
    i32 = np.int32
    tensors = [((1, h, w, 3), F32), (np.array([1, n, 3], i32),), ((1, n, 3), F32),
               ((1, 4, 4), F32), ((1, n, 3), F32), (shrink,), ((1, 4, 4), F32),
               ((1, 6, 5, 3), F32), ((1, n, 2), F32), (np.zeros(3, i32),),
               (np.array([1, n, 2], i32),), (np.ones(3, i32),), ((1, n, 2), F32)]
    ops = [CustomOp("RESHAPE", [0, 1], [2], builtin=True),
           CustomOp("Landmarks2TransformMatrix", [2], [3], options, version=2),
           CustomOp("TransformLandmarks", [2, 3], [4], {}, version=2),
           CustomOp("MUL", [3, 5], [6], builtin=True),
           CustomOp("TransformTensorBilinear", [0, 6], [7],
                    {"output_height": 6, "output_width": 5}, version=2),
           CustomOp("STRIDED_SLICE", [2, 9, 10, 11], [8], builtin=True),
           CustomOp("TransformLandmarks", [8, 3], [12], {}, version=2)]
    return custom_model(tensors, ops, [0], [3, 4, 7, 12])


def compare_ops(bindings, pb2, trials: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    names = ("Landmarks2TransformMatrix", "TransformLandmarks (3-D)",
             "TransformTensorBilinear", "TransformLandmarks (2-D)")
    exact = dict.fromkeys(names, 0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "attention.tflite"
        for _ in range(trials):
            image = rng.integers(0, 256, (12, 16, 3)).astype(np.uint8)
            model = attention_model(rng, 12, 16)
            path.write_bytes(model)
            theirs = run_graph(bindings, pb2, path, image, 4)
            ours = Interpreter(model).invoke([image.astype(F32)[None]]).values()
            for name, a, b in zip(names, ours, theirs):
                exact[name] += np.array_equal(a.reshape(-1).view(np.uint32), b.view(np.uint32))
    return exact


def compare_face_landmarks(bindings, pb2, wheel_site: Path, seed: int,
                           record: Path | None = None) -> dict[str, float]:
    """The published face_landmark_with_attention (from the wheel) on a random image:
    the largest difference of each output relative to its largest value.  ``record``
    saves the image and MediaPipe's outputs (tests/data/mediapipe's reference)."""
    model = wheel_site / "mediapipe/modules/face_landmark/face_landmark_with_attention.tflite"
    image = np.random.default_rng(seed).integers(0, 256, (192, 192, 3)).astype(np.uint8)
    theirs = run_graph(bindings, pb2, model, image, 7, (0.0, 1.0))
    if record is not None:
        np.savez_compressed(record, image=image, **{f"output{k}": v for k, v in enumerate(theirs)})
    # ImageToTensor's [0, 1] range: pixel * (1/255), as OpenCV's convertTo computes it
    ours = Interpreter(model.read_bytes()).invoke([(image.astype(F32) * F32(1 / 255))[None]])
    return {name: float(np.max(np.abs(a.reshape(-1) - b)) / np.max(np.abs(b)))
            for (name, a), b in zip(ours.items(), theirs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="where the mediapipe wheel was installed")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", type=Path, help="save the face model's input and "
                        "MediaPipe's outputs to this .npz")
    args = parser.parse_args()
    bindings, pb2 = load_bindings(args.site)
    for name, n in compare_ops(bindings, pb2, args.trials, args.seed).items():
        print(f"{name:28s} {n}/{args.trials} random graphs bit-exact")
    for name, rel in compare_face_landmarks(bindings, pb2, args.site, args.seed,
                                           args.record).items():
        print(f"face_landmark_with_attention {name:22s} max difference {rel:.1e} of its range")


if __name__ == "__main__":
    main()
