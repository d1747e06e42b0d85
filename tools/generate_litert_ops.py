"""Generate tflite_viewer/interpreter/litert_builtins.py: what LiteRT's builtin op resolver
registers (tflite/core/kernels/register.cc: op, min and max version) and the tensor types
its kernels name.

    python tools/generate_litert_ops.py [LITERT_GIT_DIR]

LITERT_GIT_DIR is a bare clone of google-ai-edge/LiteRT (default: the mirror under /work).
Types: for the ops in ``CHECKED`` below, read from their Prepare/Eval type checks; for the
ops tools/sweep_op_types.py builds models of, the types the installed wheel's builtin
kernels run (measured); else the ``kTfLite<Type>`` names in the kernel source defining
``Register_<OP>`` (indicative only).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DEFAULT = "/work/.mirror/google-ai-edge+LiteRT/repo"
OUT = Path(__file__).resolve().parents[1] / "tflite_viewer" / "interpreter" / "litert_builtins.py"
TYPES = ["FLOAT32", "FLOAT16", "BFLOAT16", "FLOAT64", "INT4", "INT8", "UINT8", "INT16",
         "UINT16", "INT32", "UINT32", "INT64", "UINT64", "BOOL", "STRING", "COMPLEX64",
         "COMPLEX128", "RESOURCE", "VARIANT"]
_CAMEL = {t: t.capitalize().replace("Bfloat", "BFloat").replace("Uint", "UInt")
          for t in TYPES}

#: Ops whose accepted input types were read from their kernels' Prepare/Eval checks.
CHECKED: dict[str, tuple[str, ...]] = {
    "ADD_N": ("FLOAT32", "INT32"),
    "ATAN2": ("FLOAT32", "FLOAT64", "FLOAT16", "BFLOAT16"),
    "BITCAST": ("any fixed-size type",),
    "BITWISE_XOR": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"),
    "RIGHT_SHIFT": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"),
    "BROADCAST_ARGS": ("INT32", "INT64"),
    "BUCKETIZE": ("FLOAT32", "FLOAT64", "INT32", "INT64"),
    "MATRIX_DIAG": ("FLOAT32", "INT64", "INT32", "INT16", "INT8", "UINT8"),
    "MATRIX_SET_DIAG": ("FLOAT32", "INT64", "INT32", "INT16", "INT8", "UINT8"),
    "ONE_HOT": ("FLOAT32", "INT32", "INT64", "INT8", "UINT8", "BOOL"),
    "REVERSE_SEQUENCE": ("FLOAT32", "UINT8", "INT16", "INT32", "INT64"),
    "SEGMENT_SUM": ("FLOAT32", "INT32"),
    "UNSORTED_SEGMENT_SUM": ("FLOAT32", "INT32"),
    "UNSORTED_SEGMENT_PROD": ("FLOAT32", "INT32"),
    "UNSORTED_SEGMENT_MAX": ("FLOAT32", "INT32"),
    "UNSORTED_SEGMENT_MIN": ("FLOAT32", "INT32"),
    "SPARSE_TO_DENSE": ("INT32", "INT64", "INT8", "UINT8", "FLOAT32"),
    "UNIQUE": ("INT8", "INT16", "INT32", "INT64", "FLOAT32", "UINT8"),
    "DILATE": ("any fixed-size type",),
    "FAKE_QUANT": ("FLOAT32",),
    "EMBEDDING_LOOKUP_SPARSE": ("FLOAT32",),
    "STABLEHLO_ADD": ("FLOAT16", "FLOAT32", "FLOAT64", "INT8", "INT16", "INT32", "INT64",
                      "UINT8", "UINT16", "UINT32", "UINT64", "BOOL"),
    "STABLEHLO_MULTIPLY": ("FLOAT16", "FLOAT32", "FLOAT64", "INT8", "INT16", "INT32", "INT64",
                           "UINT8", "UINT16", "UINT32", "UINT64", "BOOL"),
    "STABLEHLO_MAXIMUM": ("FLOAT16", "FLOAT32", "FLOAT64", "INT8", "INT16", "INT32", "INT64",
                          "UINT8", "UINT16", "UINT32", "UINT64", "BOOL"),
    "STABLEHLO_MINIMUM": ("FLOAT16", "FLOAT32", "FLOAT64", "INT8", "INT16", "INT32", "INT64",
                          "UINT8", "UINT16", "UINT32", "UINT64", "BOOL"),
    "STABLEHLO_AND": ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32",
                      "UINT64", "BOOL"),
    "STABLEHLO_SHIFT_LEFT": ("INT8", "INT16", "INT32"),
    "RSQRT": ("FLOAT32", "INT8", "INT16"),
    "SQRT": ("FLOAT32", "INT8", "INT16"),
    "LOG": ("FLOAT32", "INT8", "INT16"),
    "ABS": ("FLOAT32", "INT8", "INT16", "INT32"),
    "GELU": ("FLOAT32", "FLOAT16", "UINT8", "INT8", "INT16"),
}


def _git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                          capture_output=True, text=True).stdout


def registered(register_cc: str) -> dict[str, tuple[int, int, str]]:
    """op -> (min version, max version, Register_ function) from AddBuiltin calls."""
    flat = re.sub(r"/\*.*?\*/", "", register_cc, flags=re.S)
    out = {}
    for m in re.finditer(r"AddBuiltin\(\s*BuiltinOperator_(\w+)\s*,\s*(?:[\w:]+::)?(\w+)\(\)\s*"
                         r"(?:,\s*(\d+)\s*(?:,\s*(\d+)\s*)?)?\)", flat):
        op, fn, lo, hi = m.group(1), m.group(2), m.group(3), m.group(4)
        lo_v = int(lo) if lo else 1
        out[op] = (lo_v, int(hi) if hi else lo_v, fn)
    return out


def kernel_types(gitdir: str, files: dict[str, str], fn: str) -> tuple[str, ...]:
    for path, text in files.items():
        if re.search(rf"TfLiteRegistration\*\s+{fn}\s*\(\s*\)\s*\{{", text):
            return tuple(t for t in TYPES if f"kTfLite{_CAMEL[t]}" in text)
    return ()


def wheel_accepts(op: str, version: int) -> bool:
    """Whether the installed LiteRT wheel's builtin resolver resolves (op, version): a
    model holding just that operator is built (resolution happens at construction)."""
    import flatbuffers
    from ai_edge_litert.interpreter import Interpreter

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tflite_viewer.schema import schema_generated as S

    model = S.ModelT()
    model.version, model.buffers = 3, [S.BufferT()]
    code = S.OperatorCodeT()
    code.builtinCode = getattr(S.BuiltinOperator, op)
    code.deprecatedBuiltinCode = min(code.builtinCode, 127)
    code.version = version
    model.operatorCodes = [code]
    sg = S.SubGraphT()
    sg.tensors, sg.inputs, sg.outputs = [], [], []
    o = S.OperatorT()
    o.opcodeIndex, o.inputs, o.outputs = 0, [], []
    sg.operators = [o]
    model.subgraphs = [sg]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    try:
        Interpreter(model_content=bytes(builder.Output()))
    except ValueError as exc:
        if "Didn't find op" in str(exc):
            return False
    return True


def measured_types() -> dict[str, tuple[str, ...]]:
    """The input types LiteRT's builtin kernels run, for the ops tools/sweep_op_types.py
    builds models of (each op x type run on the wheel: the ones that run)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy as np
    import sweep_op_types as sweep

    rng = np.random.default_rng(0)
    out: dict[str, tuple[str, ...]] = {}
    for op in sweep.UNARY + sweep.BINARY + sweep.COMPARE + sweep.REDUCE + sweep.MOVE:
        runs = []
        for tname in sweep.TYPES:
            try:
                model, inputs = sweep.build(op, tname, rng)
                sweep.run_litert(model, inputs)
            except Exception:  # noqa: BLE001 - LiteRT does not run this type
                continue
            runs.append(tname)
        out[op] = tuple(runs)
    return out


def main(argv: list[str]) -> int:
    gitdir = argv[1] if len(argv) > 1 else DEFAULT
    commit = _git(gitdir, "rev-parse", "HEAD").strip()
    register_cc = _git(gitdir, "show", "HEAD:tflite/core/kernels/register.cc")
    names = [p for p in _git(gitdir, "ls-tree", "-r", "--name-only", "HEAD",
                             "tflite/kernels/").split()
             if p.endswith(".cc") and "_test" not in p and p.count("/") == 2]
    files = {p: _git(gitdir, "show", f"HEAD:{p}") for p in names}
    rows = []
    measured = measured_types()
    for op, (lo, hi, fn) in sorted(registered(register_cc).items()):
        if not (wheel_accepts(op, hi) and not wheel_accepts(op, hi + 1)
                and (lo == 1 or not wheel_accepts(op, lo - 1))):
            raise SystemExit(f"{op}: the installed wheel's versions differ from {lo}..{hi}")
        if op in CHECKED:
            how, types = "checks", CHECKED[op]
        elif measured.get(op):  # (none measured: the sweep's model is not one LiteRT runs)
            how, types = "measured", measured[op]
        else:
            how, types = "source", kernel_types(gitdir, files, fn)
        rows.append(f"    {op!r}: ({lo}, {hi}, {types!r}, {how!r}),")
    OUT.write_text(
        '"""GENERATED by tools/generate_litert_ops.py: LiteRT\'s builtin op resolver.\n\n'
        f"From google-ai-edge/LiteRT {commit[:12]} (tflite/core/kernels/register.cc), every\n"
        "version range confirmed on the installed ai-edge-litert wheel's resolver.\n"
        "op -> (min version, max version, input types, how the types are known):\n"
        "\"checks\": read from the kernel's Prepare/Eval type checks; \"measured\": the types\n"
        "the wheel's builtin kernels ran in tools/sweep_op_types.py (FLOAT32, FLOAT16,\n"
        "quantized INT8/UINT8/INT16, INT32, INT64, BOOL tried on one model each: a lower\n"
        "bound); \"source\": the types the kernel's source file names (indicative only: a\n"
        "file may hold several kernels, and a type-generic kernel names few types).\n"
        '"""\n\n'
        "LITERT_BUILTINS: dict[str, tuple[int, int, tuple[str, ...], str]] = {\n"
        + "\n".join(rows) + "\n}\n")
    print(f"wrote {OUT} ({len(rows)} ops)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
