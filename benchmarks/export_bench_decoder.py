"""Export the decoder pair of bench_quant_generate.py with litert-torch: a Qwen3-shaped
model of 0.66 B parameters with random weights, in float32 and in the converter's
``dynamic_int4_block32``.

    /work/venvs/llm/bin/python benchmarks/export_bench_decoder.py [CACHE_DIR]

Needs torch and litert-torch-nightly (the venv of tools/export_decoders.py), which the
project never imports.  The files are not committed: they go to CACHE_DIR (default
`CACHE`, ``/tmp/tflite_viewer_big/qwen3_0.66b``; ``TFLITE_VIEWER_BENCH_CACHE`` moves it),
about 2.6 GB and 0.4 GB, and an existing file is kept.  Exporting takes several minutes
and up to about 12 GB of memory.

The model is litert-torch's own Qwen3 example (``qwen.qwen3.Qwen3``) with the
configuration of Qwen3 0.6B (``get_0_6b_model_config``: width 1024, 16 query heads and 8
KV heads of 128, feed-forward 3072, vocabulary 151,936, the LM head tied to the
embedding) and 32 layers instead of 28: 0.66 B parameters.  Weights are torch's
initialisation from `SEED`, scaled as tools/export_decoders.py scales its test decoders
(so that greedy decoding gives varied ids); a ``prefill_32`` and a ``decode`` signature,
a KV cache of `KV_CACHE` positions in the transposed layout LiteRT-LM runs
(``KV_LAYOUT_TRANSPOSED``), the mask built inside the model.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("TFLITE_VIEWER_BENCH_CACHE", "/tmp/tflite_viewer_big")) \
    / "qwen3_0.66b"
FORMS = {"none": "f32", "dynamic_int4_block32": "q4_block32"}
LAYERS = 32
PREFILL = 32
KV_CACHE = 1024
SEED = 20261203


def path_of(form: str, cache: Path = CACHE) -> Path:
    """Where the export of ``form`` (a key of `FORMS`' values: f32, q4_block32) goes."""
    return cache / f"qwen3_0.66b_{form}.tflite"


def build_model():
    """The Qwen3 module with `LAYERS` layers and random weights."""
    import torch
    sys.path.insert(0, str(ROOT / "tools"))
    from export_decoders import scale_weights
    from litert_torch.generative.examples.qwen import qwen3
    config = qwen3.get_0_6b_model_config()
    config.num_layers = LAYERS
    config.max_seq_len = KV_CACHE
    torch.manual_seed(SEED)
    return scale_weights(qwen3.Qwen3(config, KV_CACHE))


def export(cache: Path = CACHE) -> list[Path]:
    """Both files in ``cache``, each exported unless it is there already."""
    sys.path.insert(0, str(ROOT / "tools"))
    from export_tiny_decoder import _schema_without_tensorflow
    _schema_without_tensorflow()
    from litert_torch.generative.layers import kv_cache as kv_utils
    from litert_torch.generative.utilities import converter
    from litert_torch.generative.utilities.export_config import ExportConfig
    cache.mkdir(parents=True, exist_ok=True)
    written = []
    for quantize, form in FORMS.items():
        target = path_of(form, cache)
        if not target.exists():
            model = build_model()
            config = ExportConfig()
            config.kvcache_layout = kv_utils.KV_LAYOUT_TRANSPOSED
            with tempfile.TemporaryDirectory(dir=cache) as tmp:
                path = converter.convert_to_tflite(
                    model, output_path=tmp, output_name_prefix="qwen3",
                    prefill_seq_len=[PREFILL], kv_cache_max_len=KV_CACHE, quantize=quantize,
                    config=model.config, export_config=config)
                shutil.move(path, target)
            del model
        written.append(target)
        print(f"{target}: {target.stat().st_size:,} bytes ({quantize})")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", nargs="?", type=Path, default=CACHE,
                        help=f"the folder the two files go to (default {CACHE})")
    export(parser.parse_args(argv).cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
