"""Export a tiny TinyLlama-shaped decoder with litert-torch: the test data of
tests/data/models/llm/.

    /work/venvs/torch/bin/python tools/export_tiny_decoder.py [OUT_DIR]

Needs torch and litert-torch-nightly, which the project itself never imports: make a venv
of its own (``python -m venv VENV && VENV/bin/pip install torch==2.13.0
litert-torch-nightly``) and run this script with its python.  The test suite only reads
the .tflite files this writes.

The model is litert-torch's own TinyLlama example (``litert_torch.generative.examples.
tiny_llama``: RMS norm, grouped-query attention with rotary embeddings, a gated SiLU
feed-forward, a separate LM head) with the sizes cut down (`CONFIG` below) and random
weights from a fixed seed, converted by litert-torch's generative converter exactly as
its ``convert_to_tflite`` flags would: a ``prefill_8`` and a ``decode`` signature sharing
their weights, the KV cache passed in and out as inputs and outputs, and the
``odml.*`` high-level functions kept as STABLEHLO_COMPOSITE ops.  One file per
``quantize`` form in `FORMS` (named as the converter names them, then renamed to
``tiny_llama_<form>.tflite``).

The committed files were made with litert-torch-nightly 0.11.0.dev20261026 (with
litert-converter 0.6.0.dev20261026, ai-edge-quantizer-nightly 0.10.0.dev20261027) and
torch 2.13.0+cpu; two runs wrote byte-identical files.  This litert-torch writes the KV
cache update as DYNAMIC_UPDATE_SLICE, not as an ``odml.update_kv_cache`` composite: the
composites are ``odml.rms_norm`` and ``odml.scaled_dot_product_attention``.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "models" / "llm"
#: the cut-down TinyLlama: (field path, value) applied to tiny_llama.get_model_config()
CONFIG = {"vocab_size": 256, "num_layers": 2, "max_seq_len": 64, "embedding_dim": 64,
          "num_heads": 4, "head_dim": 16, "num_query_groups": 2, "intermediate_size": 128}
PREFILL = 8
KV_CACHE = 32
SEED = 20261101
#: litert-torch's quantize flag -> the file's suffix
FORMS = {"none": "f32", "dynamic_int4_block32": "q4_block32", "dynamic_int8": "q8",
         "weight_only_int8": "q8_wo"}


def _schema_without_tensorflow() -> None:
    """litert-torch's LoRA module imports TensorFlow only for the TFLite schema's generated
    Python classes (LoRA is not used here); without TensorFlow installed, give it the
    same generated schema module from the ai-edge-litert wheel litert-torch depends on."""
    try:
        import tensorflow  # noqa: F401
        return
    except ImportError:
        pass
    import importlib.machinery
    import types
    from ai_edge_litert import schema_py_generated
    for name in ("tensorflow", "tensorflow.lite", "tensorflow.lite.python"):
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)  # torch looks for it
        sys.modules.setdefault(name, module)
    sys.modules["tensorflow.lite.python"].schema_py_generated = schema_py_generated
    sys.modules["tensorflow.lite.python.schema_py_generated"] = schema_py_generated


def tiny_config():
    from litert_torch.generative.examples.tiny_llama import tiny_llama
    config = tiny_llama.get_model_config()
    config.vocab_size = CONFIG["vocab_size"]
    config.num_layers = CONFIG["num_layers"]
    config.max_seq_len = CONFIG["max_seq_len"]
    config.embedding_dim = CONFIG["embedding_dim"]
    block = config.block_config(0)
    block.attn_config.num_heads = CONFIG["num_heads"]
    block.attn_config.head_dim = CONFIG["head_dim"]
    block.attn_config.num_query_groups = CONFIG["num_query_groups"]
    block.ff_config.intermediate_size = CONFIG["intermediate_size"]
    return config


def build_model():
    import torch
    from litert_torch.generative.examples.tiny_llama import tiny_llama
    torch.manual_seed(SEED)
    model = tiny_llama.TinyLlama(tiny_config(), mask_cache_size=KV_CACHE)
    with torch.no_grad():  # a visible spread in the norms' scales, not all ones
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or ".norm" in name and p.ndim == 1:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return model.eval()


def export(out_dir: Path, forms: dict[str, str] = FORMS) -> list[Path]:
    _schema_without_tensorflow()
    from litert_torch.generative.utilities import converter
    from litert_torch.generative.utilities.export_config import ExportConfig
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for quantize, suffix in forms.items():
        model = build_model()
        with tempfile.TemporaryDirectory() as tmp:
            path = converter.convert_to_tflite(
                model, output_path=tmp, output_name_prefix="tiny_llama",
                prefill_seq_len=PREFILL, kv_cache_max_len=KV_CACHE, quantize=quantize,
                config=model.config, export_config=ExportConfig())
            target = out_dir / f"tiny_llama_{suffix}.tflite"
            shutil.copyfile(path, target)
        written.append(target)
        print(f"{target}: {os.path.getsize(target):,} bytes ({quantize})")
    return written


if __name__ == "__main__":
    export(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
