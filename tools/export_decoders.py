"""Export Gemma3-, Qwen3- and Phi-2-shaped decoders with litert-torch in every layout it
writes: the test data of tests/data/models/llm/ (besides the TinyLlama exports of
tools/export_tiny_decoder.py).

    /work/venvs/llm/bin/python tools/export_decoders.py [OUT_DIR]

Needs torch 2.13 and litert-torch-nightly (and TensorFlow, or the schema stand-in of
export_tiny_decoder), which the project itself never imports; the test suite only reads
the .tflite files this writes.

Each model is litert-torch's own example (``litert_torch.generative.examples``), its
configuration cut down to vocabulary 256, 2 layers, width 64, 4 query heads of 16, with
random weights from a fixed seed (`WEIGHTS` below says how they are drawn):

* **Gemma3** (``gemma3.decoder.Decoder``, ``get_decoder_config_1b``): blocks 0 and 5 of
  the 1B model (one sliding-window layer, window cut to 16, and one global layer), one
  KV head, zero-centred RMS norms on q and k, GELU-tanh gated feed-forward, embedding
  scale, the LM head sharing the embedding table;
* **Qwen3** (``qwen.qwen3.Qwen3``, ``get_0_6b_model_config``): 2 KV heads, RMS norms on
  q and k, SiLU gated feed-forward;
* **Phi-2** (``phi.phi2.Phi2``, ``get_model_config``): 4 KV heads (no grouping), layer
  norm, parallel residual, partial rotary (40 % of each head), biases everywhere.

All are converted by ``litert_torch.generative.utilities.converter.convert_to_tflite``
with ``prefill_seq_len=[8, 16]`` (signatures ``prefill_8``, ``prefill_16`` and
``decode`` sharing their weights) and a KV cache of 32 positions, in the layouts of
`VARIANTS`:

* ``gemma3_f32``: the Gemma3 converter's defaults, ``mask_as_input=True`` and
  ``KV_LAYOUT_TRANSPOSED`` (``kv_cache_k_i`` [1, heads, positions, head_dim],
  ``kv_cache_v_i`` [1, heads, head_dim, positions]) and no logits from the prefills;
* ``qwen3_f32``: the default layout ([1, positions, heads, head_dim] for k and v), the
  mask built inside the model, no prefill logits;
* ``qwen3_transposed_f32`` (and ``_q8``: ``dynamic_int8``, ``_q4_block32``:
  ``dynamic_int4_block32``): the transposed layout, the mask inside the model; the
  layout LiteRT-LM runs;
* ``phi2_f32``: the default layout with the mask as an input, and
  ``output_logits_on_prefill=True`` (the prefills give ``logits`` too).

The mask input is litert-torch's additive causal mask: float32 [1, 1, N, 32], 0 where the
key's position is at or before the query's, -inf after it.

The committed files were made with litert-torch-nightly 0.11.0.dev20261026 (with
litert-converter 0.6.0.dev20261026, ai-edge-quantizer-nightly 0.10.0.dev20261027) and
torch 2.13.0+cpu, tensorflow-cpu 2.21.0; two runs wrote byte-identical files.  Each is
under 600 KB (the largest, gemma3_f32, 590,448 bytes; hence the feed-forward width of 96,
64 for Phi-2, whose LM head is separate).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_tiny_decoder import _schema_without_tensorflow  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "models" / "llm"
PREFILLS = [8, 16]
KV_CACHE = 32
SEED = 20261202
#: WEIGHTS: torch's initialisation from `SEED`, then the embedding table scaled by
#: EMBEDDING_SCALE, every norm's scale drawn around its neutral value (1, or 0 for a
#: zero-centred RMS norm) with sd 0.1, the post-attention / post-feed-forward norms' around
#: POST_NORM_SHIFT more, biases with sd 0.05.  With the embedding as large as torch draws
#: it, the (tied) LM head of Gemma3 and Qwen3 answers every step with the last id; these
#: let the blocks decide, so greedy decoding gives varied ids.
EMBEDDING_SCALE = 0.03
POST_NORM_SHIFT = 2.0
SIZES = {"vocab_size": 256, "num_layers": 2, "max_seq_len": 64, "embedding_dim": 64,
         "num_heads": 4, "head_dim": 16, "intermediate_size": 96}


@dataclass(frozen=True)
class Variant:
    """One file: the family, the converter's quantize flag and export options."""

    family: str
    quantize: str = "none"
    transposed: bool = False
    mask_as_input: bool = False
    prefill_logits: bool = False


VARIANTS = {
    "gemma3_f32": Variant("gemma3", transposed=True, mask_as_input=True),
    "qwen3_f32": Variant("qwen3"),
    "qwen3_transposed_f32": Variant("qwen3", transposed=True),
    "qwen3_transposed_q8": Variant("qwen3", "dynamic_int8", transposed=True),
    "qwen3_transposed_q4_block32": Variant("qwen3", "dynamic_int4_block32", transposed=True),
    "phi2_f32": Variant("phi2", mask_as_input=True, prefill_logits=True),
}


def _shrink(config, kv_heads: int, blocks=None):
    """The example's configuration cut to `SIZES` (``blocks``: which of its blocks)."""
    if blocks is not None:
        config.block_configs = [config.block_config(i) for i in blocks]
    config.vocab_size = SIZES["vocab_size"]
    config.num_layers = SIZES["num_layers"]
    config.max_seq_len = SIZES["max_seq_len"]
    config.embedding_dim = SIZES["embedding_dim"]
    if config.embedding_scale is not None:
        config.embedding_scale = SIZES["embedding_dim"] ** 0.5
    for i in range(config.num_layers):
        block = config.block_config(i)
        block.attn_config.num_heads = SIZES["num_heads"]
        block.attn_config.head_dim = SIZES["head_dim"]
        block.attn_config.num_query_groups = kv_heads
        block.ff_config.intermediate_size = SIZES["intermediate_size"]
    return config


def build_model(family: str, mask_cache_size: int):
    """The family's example module, cut down, with random weights from `SEED`."""
    import torch
    torch.manual_seed(SEED)
    if family == "gemma3":
        from litert_torch.generative.examples.gemma3 import decoder
        config = _shrink(decoder.get_decoder_config_1b(), 1, blocks=[0, 5])
        config.block_config(0).attn_config.sliding_window_size = 16
        model = decoder.Decoder(config, mask_cache_size)
    elif family == "qwen3":
        from litert_torch.generative.examples.qwen import qwen3
        model = qwen3.Qwen3(_shrink(qwen3.get_0_6b_model_config(), 2), mask_cache_size)
    elif family == "phi2":
        from litert_torch.generative.examples.phi import phi2
        config = _shrink(phi2.get_model_config(), 4)
        config.block_config(0).ff_config.intermediate_size = 64  # its LM head is separate
        model = phi2.Phi2(config, mask_cache_size)
    else:
        raise ValueError(family)
    return scale_weights(model)


def scale_weights(model):
    """``model`` with its weights drawn as `WEIGHTS` says (after torch's initialisation),
    in eval mode (benchmarks/export_bench_decoder.py draws its big decoder so too)."""
    import torch
    with torch.no_grad():  # see WEIGHTS
        model.tok_embedding.weight.mul_(EMBEDDING_SCALE)  # the LM head's too, when tied
        for module_name, module in model.named_modules():
            centre = 0.0 if getattr(module, "zero_centered_gamma", False) else 1.0
            if "post" in module_name.rsplit(".", 1)[-1]:
                centre += POST_NORM_SHIFT
            for name, p in module.named_parameters(recurse=False):
                if "norm" in module_name and name == "weight":
                    p.copy_(centre + 0.1 * torch.randn_like(p))
                elif name == "bias":
                    p.copy_(0.05 * torch.randn_like(p))
    return model.eval()


def export_one(name: str, variant: Variant, out_dir: Path) -> Path:
    from litert_torch.generative.layers import kv_cache as kv_utils
    from litert_torch.generative.utilities import converter
    from litert_torch.generative.utilities.export_config import ExportConfig
    config = ExportConfig(output_logits_on_prefill=variant.prefill_logits,
                          mask_as_input=variant.mask_as_input)
    if variant.transposed:
        config.kvcache_layout = kv_utils.KV_LAYOUT_TRANSPOSED
    model = build_model(variant.family, 0 if variant.mask_as_input else KV_CACHE)
    with tempfile.TemporaryDirectory() as tmp:
        path = converter.convert_to_tflite(
            model, output_path=tmp, output_name_prefix=variant.family,
            prefill_seq_len=list(PREFILLS), kv_cache_max_len=KV_CACHE,
            quantize=variant.quantize, config=model.config, export_config=config)
        target = out_dir / f"{name}.tflite"
        shutil.copyfile(path, target)
    print(f"{target}: {os.path.getsize(target):,} bytes")
    return target


def export(out_dir: Path, names=None) -> list[Path]:
    _schema_without_tensorflow()
    out_dir.mkdir(parents=True, exist_ok=True)
    return [export_one(n, VARIANTS[n], out_dir) for n in (names or VARIANTS)]


if __name__ == "__main__":
    export(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT, sys.argv[2:] or None)
