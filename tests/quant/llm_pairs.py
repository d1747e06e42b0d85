"""Float/quantized pairs of every form, and litert_quantizer's validator on them.

The decoder pairs are tests/data/models/llm/tiny_llama_f32.tflite quantized here with
litert_quantizer 0.11 (every recipe of `RECIPES`; the static ones calibrated on seeded
inputs of both signatures), beside the converter's forms committed with it and the classic
TFLite-converter pairs of tests/data/converter.  `validator` runs the quantizer's own
``model_validator.compare_model`` on them (LiteRT's builtin kernels, no XNNPACK: the
kernels the analysis's ``backend="litert"`` reads).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tflite_viewer.interpreter.inputs import seeded_inputs
from tflite_viewer.model import Model, load_model
from tflite_viewer.quant.ranges import integer_range

DATA = Path(__file__).resolve().parents[1] / "data"
LLM = DATA / "models" / "llm"
TINY_FLOAT = LLM / "tiny_llama_f32.tflite"
CONVERTER = DATA / "converter"

#: litert_quantizer's recipes (functions of litert_quantizer.recipe), and block 128
#: (a recipe of its own: the quantizer's BLOCKWISE_128 granularity on the layers whose
#: input is 128 wide, the feed-forward down projections; the others are 64 wide)
RECIPES = (
    "dynamic_wi8c_afp32", "dynamic_wi4c_afp32", "dynamic_wi2c_afp32",
    "dynamic_wi4b32_afp32", "dynamic_wi2b32_afp32", "dynamic_wi4b64_afp32",
    "dynamic_wi2b64_afp32", "dynamic_wi4b128_afp32", "dynamic_wi2b128_afp32",
    "dynamic_wi8c_hr_afp32", "dynamic_wi4c_hr_afp32", "dynamic_wi2c_hr_afp32",
    "weight_only_wi8_afp32", "weight_only_wi4_afp32", "static_wi8_ai8", "static_wi8_ai16",
)
#: the converter's forms committed beside the float decoder
CONVERTER_LLM = ("tiny_llama_q4_block32", "tiny_llama_q8", "tiny_llama_q8_wo")
#: the TFLite converter's classic pairs: (quantized, float)
CLASSIC = tuple((CONVERTER / f"{net}_{form}.tflite", CONVERTER / f"{net}_float.tflite")
                for net in ("conv_net", "residual_mlp") for form in ("dynamic", "int8", "fp16"))


def recipe(name: str):
    """The recipe ``name`` as litert_quantizer builds it."""
    from litert_quantizer import qtyping
    from litert_quantizer import recipe as recipes
    if name.endswith("b128_afp32"):
        bits = int(name[len("dynamic_wi")])
        return recipes._dynamic_wix_afp32(  # the b32/b64 aliases' own builder
            num_bits=bits, granularity=qtyping.QuantGranularity.BLOCKWISE_128,
            regex=".*Linear_w2.*")
    return getattr(recipes, name)()


def signature_inputs(model: Model, count: int, seed: int = 0) -> dict[str, list[dict]]:
    """``count`` seeded inputs of each signature of ``model``, by input name."""
    return {s.key: [seeded_inputs(model, seed + k, s.key) for k in range(count)]
            for s in model.signature_defs}


def quantize(name: str, float_path: Path = TINY_FLOAT) -> bytes:
    """tiny_llama_f32 (or ``float_path``) quantized with recipe ``name`` (calibrated when
    it needs it)."""
    from litert_quantizer import quantizer
    qt = quantizer.Quantizer(str(float_path))
    qt.load_quantization_recipe(recipe(name))
    calibration = None
    if qt.need_calibration:
        calibration = qt.calibrate(signature_inputs(load_model(float_path), 3, seed=100))
    return bytes(qt.quantize(calibration, enable_progress_bar=False,
                             enable_progress_report=False).quantized_model)


def on_grid(quantized: Model, signature: str, inputs: dict) -> dict:
    """``inputs`` with each value of a quantized input moved to the nearest point of its
    grid, one step inside both ends: any rounding (the validator's half-to-even in
    float32, this project's half-away in float64) and any narrow range then give the same
    integers, so both analyses feed the quantized model the same values."""
    sig = quantized.signature(signature)
    sg = quantized.subgraphs[sig.subgraph_index]
    out = dict(inputs)
    for m in sig.inputs:
        t = sg.tensors[m.tensor_index]
        q = t.quantization
        rng = integer_range(t.type_name)
        if q is None or not q.has_scale or rng is None or m.name not in out:
            continue
        scale, zp = float(q.scale[0]), int(q.zero_point[0]) if q.zero_point.size else 0
        k = np.clip(np.round(np.asarray(out[m.name], np.float64) / scale),
                    rng[0] - zp + 1, rng[1] - zp - 1)
        out[m.name] = (k * scale).astype(np.float32)
    return out


def validator(float_path, quantized: bytes, data: dict[str, list[dict]]):
    """litert_quantizer's compare_model on ``data`` ({signature: [inputs, ...]}) with every
    metric, on LiteRT's builtin kernels: {signature: {tensor name: {metric: value}}}."""
    from litert_quantizer import model_validator
    from litert_quantizer.utils import validation_utils as vu
    result = model_validator.compare_model(
        Path(float_path).read_bytes(), quantized, data,
        error_metrics=list(vu.ValidationErrorMetric), use_xnnpack=False, num_threads=1)
    out = {}
    for key in result.available_signature_keys():
        r = result.get_signature_comparison_result(key)
        out[key] = {**r.input_tensors, **r.output_tensors, **r.constant_tensors,
                    **r.intermediate_tensors}
    return out, result


def validator_by_pairs(float_path, quantized: bytes, signature: str, inputs: list[dict],
                       pairs: dict[str, tuple[int, int]]) -> dict[str, dict[str, float]]:
    """The validator's comparison of the tensors ``pairs`` names ({name: (quantized
    tensor, float tensor)} of the signature's subgraphs), done with its own pieces:
    compare_model pairs tensors by name and stops at a name two tensors of different
    shapes share (the TFLite converter's float16 and dynamic-range models reuse names),
    so these pairs come from the analysis; the running, input quantization,
    dequantization, metric functions and mean over inputs are the validator's."""
    from litert_quantizer.utils import tfl_interpreter_utils as tu
    from litert_quantizer.utils import validation_utils as vu
    metrics = list(vu.ValidationErrorMetric)
    values: dict[str, dict[str, list[float]]] = {n: {m.value: [] for m in metrics}
                                                for n in pairs}
    for x in inputs:
        runs = []
        for model in (Path(float_path).read_bytes(), quantized):
            li = tu.create_tfl_interpreter(model, use_xnnpack=False, num_threads=1)
            tu.invoke_interpreter_signature(li, x, signature)
            k = tu.get_signature_main_subgraph_index(li, signature)
            runs.append((li, k, {d["index"]: d for d in li.get_tensor_details(k)}))
        (fl, fk, fd), (ql, qk, qd) = runs
        for name, (qt, ft) in pairs.items():
            target = tu.get_tensor_data(ql, qd[qt], qk)
            reference = tu.get_tensor_data(fl, fd[ft], fk)
            for m in metrics:
                values[name][m.value].append(vu.get_validation_func(m)(target, reference))
    return {n: {m: float(np.mean(v)) for m, v in row.items()} for n, row in values.items()}
