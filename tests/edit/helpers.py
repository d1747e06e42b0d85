"""Shared helpers of the edit tests: field-by-field model comparison and LiteRT runs."""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from tests.litert_oracle import litert
from tflite_viewer.model import Model

# LiteRT 2.3.0 crashes the process on this model (heap corruption): never load it in-process.
LITERT_CRASHES = {"keyword_scrambled_8bit.tflite"}


def _arr(a) -> list | None:
    return None if a is None else np.asarray(a).tolist()


def _quant(q) -> tuple | None:
    if q is None:
        return None
    return (_arr(q.scale), _arr(q.zero_point), _arr(q.min), _arr(q.max),
            q.quantized_dimension, q.details)


def _sparsity(s) -> tuple | None:
    if s is None:
        return None
    return (s.traversal_order, s.block_map,
            [(d.format, d.dense_size, _arr(d.array_segments), _arr(d.array_indices))
             for d in s.dim_metadata])


def model_fields(m: Model, rows: Callable[[int], Iterable[int]] | None = None) -> dict:
    """Every field the reader exposes, as plain comparable values (buffer bytes included);
    with ``rows``, only the tensors and operators of the indices ``rows(count)`` gives
    (a 20,000-operator model's every row takes tens of seconds to read)."""
    out: dict = {
        "version": m.version, "description": m.description,
        "operator_codes": m.operator_codes, "metadata_buffer": m.metadata_buffer,
        "metadata": [(e.name, e.buffer, e.data.tobytes()) for e in m.metadata],
        "signature_defs": m.signature_defs,
        "external_buffer_groups": m.external_buffer_groups,
        "external_buffers": m.external_buffers,
        "buffers": [b.data.tobytes() for b in m.buffers],
        "associated_files": {n: m.read_associated_file(n) for n in m.associated_files()},
    }
    for sg in m.subgraphs:
        key = f"subgraphs[{sg.index}]"
        out[key] = (sg.name, sg.inputs, sg.outputs, sg.debug_metadata_index)
        tensors = sg.tensors if rows is None else [sg.tensors[i] for i in rows(len(sg.tensors))]
        operators = sg.operators if rows is None else \
            [sg.operators[i] for i in rows(len(sg.operators))]
        for t in tensors:
            out[f"{key}.tensors[{t.index}]"] = (
                t.name, t.type, t.shape, t.shape_signature, t.buffer, t.is_variable,
                t.has_rank, t.external_buffer, t.variant_tensors, _quant(t.quantization),
                _sparsity(t.sparsity))
        for op in operators:
            out[f"{key}.operators[{op.index}]"] = (
                op.opcode_index, op.inputs, op.outputs, op.intermediates,
                op.mutating_variable_inputs, op.builtin_options_type, op.builtin_options,
                op.builtin_options_2_type, op.builtin_options_2, op.custom_options_bytes,
                op.custom_options_format, op.debug_metadata_index)
    return out


def assert_same_fields(a: Model, b: Model,
                       rows: Callable[[int], Iterable[int]] | None = None) -> None:
    fa, fb = model_fields(a, rows), model_fields(b, rows)
    assert fa.keys() == fb.keys()
    for key in fa:
        assert fa[key] == fb[key], key


def seeded_inputs(interp, seed: int = 0) -> dict[int, np.ndarray]:
    """Inputs for every input tensor: uniform in the type's useful range (ids small)."""
    rng = np.random.default_rng(seed)
    out = {}
    for d in interp.get_input_details():
        dt = np.dtype(d["dtype"])
        shape = tuple(int(x) for x in d["shape"])
        if dt.kind == "f":
            out[d["index"]] = rng.standard_normal(shape).astype(dt)
        elif dt == np.bool_:
            out[d["index"]] = rng.random(shape) > 0.5
        elif dt.kind in "iu" and dt.itemsize >= 4:
            out[d["index"]] = rng.integers(0, 8, shape).astype(dt)  # valid ids / indices
        else:
            info = np.iinfo(dt)
            out[d["index"]] = rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)
    return out


def run_litert(model_bytes: bytes, seed: int = 0, inputs: dict | None = None):
    """(interpreter, outputs) after one invoke on seeded inputs."""
    interp = litert(model_bytes)
    interp.allocate_tensors()
    feeds = seeded_inputs(interp, seed) if inputs is None else inputs
    for index, value in feeds.items():
        interp.set_tensor(index, value)
    interp.invoke()
    return interp, [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
