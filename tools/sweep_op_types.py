"""Sweep op x tensor type against LiteRT: which type paths LiteRT's builtin resolver runs
that this interpreter refuses (or computes differently).

    PYTHONPATH=. python tools/sweep_op_types.py [OP ...]

For each op of a family with a simple signature (unary, binary, comparison, reduction,
data movement) and each tensor type (FLOAT32, FLOAT16, quantized INT8/UINT8/INT16, INT32,
INT64, BOOL), a random one-op model is run by LiteRT (BUILTIN) and here.  The conv and
pool families (tests/interpreter/conv_pool_models.py) run each type configuration (float, uint8, int8
per tensor and per channel, int16x8, int4 weights, hybrid) in every version LiteRT
registers, against LiteRT's reference kernels (and its optimized ones when those differ).
CAST runs every pair of its types, on values out of every range (and NaN, infinities).
Prints one line per combination LiteRT runs: "ok", "DIFFERS" or "REFUSED here" with the
reason.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "interpreter"))

from singleop import Input, rel_error, run_ours, single_op_model  # noqa: E402
import conv_pool_models as conv_pool  # noqa: E402
from tests.interpreter.op_type_models import (BINARY, COMPARE, MOVE, REDUCE, TYPES,  # noqa: E402
                                              UNARY, build)

from tflite_viewer.interpreter import UnsupportedOpError  # noqa: E402

def run_litert(model: bytes, inputs, resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
               ) -> list[np.ndarray]:
    """LiteRT's builtin kernels alone (no XNNPACK delegate taking the op over), or the
    ``resolver`` named."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    li = LiteRT(model_content=model, experimental_op_resolver_type=(
        getattr(OpResolverType, resolver)))
    li.allocate_tensors()
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
    li.invoke()
    return [li.get_tensor(d["index"]) for d in li.get_output_details()]


def _worst(ours, ref) -> float:
    """The largest difference: relative for floats, absolute for integers."""
    worst = 0.0
    for a, b in zip(ours, ref):
        if a.shape != b.shape:
            return float("inf")
        if b.dtype.kind == "f":
            worst = max(worst, rel_error(a, b))
        elif b.dtype.kind == "c":
            worst = max(worst, rel_error(a.real, b.real), rel_error(a.imag, b.imag))
        elif not np.array_equal(a, b):
            worst = max(worst, float(np.max(np.abs(a.astype(float) - b.astype(float)))))
    return worst


CAST_TYPES = {"FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64,
              "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "UINT16": np.uint16,
              "INT32": np.int32, "UINT32": np.uint32, "INT64": np.int64, "BOOL": np.bool_,
              "COMPLEX64": np.complex64}


def _cast_input(rng, dtype) -> np.ndarray:
    """Values with the edges a cast meets: out of every integer range, fractions, NaN,
    infinities, negative numbers for unsigned types."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(16) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, 16, endpoint=True).astype(dtype)
    base = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 7e4, -7e4, 300.5, -0.5,
                     1e19, 127.9, -128.9, 0.0, -0.0])
    with np.errstate(over="ignore", invalid="ignore"):
        return (base + 1j * base[::-1]).astype(dtype) if dtype.kind == "c" \
            else base.astype(dtype)


def _cast_cases(rng):
    for src, sd in CAST_TYPES.items():
        for dst, dd in CAST_TYPES.items():
            x = _cast_input(rng, sd)
            yield (f"{src}->{dst}", single_op_model("CAST", [Input(x.shape, sd)], [dd]),
                   [x], ("BUILTIN_WITHOUT_DEFAULT_DELEGATES",))


def _cases(op, types, rng):
    """(label, model, inputs, resolvers) per combination, or (label, None, error, ())."""
    if op == "CAST":
        yield from _cast_cases(rng)
        return
    if op in conv_pool.CONV + conv_pool.POOL:
        for config in conv_pool.configs(op):
            for version in range(1, conv_pool.VERSIONS[op] + 1):
                label = f"{config} v{version}"
                try:
                    yield (label, *conv_pool.build(op, config, version, rng),
                           ("BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"))
                except Exception as exc:  # noqa: BLE001 - a combination the builder cannot make
                    yield label, None, f"builder: {exc}", ()
        return
    for tname in types:
        try:
            yield (tname, *build(op, tname, rng), ("BUILTIN_WITHOUT_DEFAULT_DELEGATES",))
        except Exception as exc:  # noqa: BLE001
            yield tname, None, f"builder: {exc}", ()


def sweep(ops, types=tuple(TYPES)):
    rng = np.random.default_rng(0)
    for op in ops:
        for label, model, inputs, resolvers in _cases(op, types, rng):
            if model is None:
                yield op, label, "skipped", inputs
                continue
            refs = []
            for resolver in resolvers:
                try:
                    refs.append(run_litert(model, inputs, resolver))
                except Exception:  # noqa: BLE001 - LiteRT does not run it: not a gap
                    pass
            if not refs:
                continue
            try:
                ours = run_ours(model, inputs)
            except UnsupportedOpError as exc:
                yield op, label, "REFUSED here", str(exc).splitlines()[-1].strip()
                continue
            except Exception as exc:  # noqa: BLE001
                yield op, label, "FAILS here", f"{type(exc).__name__}: {exc}"[:160]
                continue
            worst = min(_worst(ours, ref) for ref in refs)
            tol = 2e-3 if "FLOAT16" in label else 1e-5
            yield op, label, "ok" if worst <= tol else "DIFFERS", f"{worst:g}"


def main(argv: list[str]) -> int:
    ops = argv[1:] or UNARY + BINARY + COMPARE + REDUCE + MOVE + ["CAST"] + conv_pool.CONV \
        + conv_pool.POOL
    for op, label, status, note in sweep(ops):
        print(f"{op:22} {label:22} {status:13} {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
