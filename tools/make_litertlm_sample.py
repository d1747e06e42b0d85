#!/usr/bin/env python3
"""Make tests/data/models/llm/tiny_llama.litertlm with LiteRT-LM's own builder.

The container is what LiteRT-LM's tooling writes, for the tests to read (they never need
the builder): an LlmMetadata section, a Hugging Face tokenizer (zlib), the tiny decoder
(tiny_llama_q4_block32.tflite, both signatures) as the prefill_decode TFLiteModel with its
FULLY_CONNECTED / EMBEDDING_LOOKUP weights moved by the project's writer into the external
buffer group ``tflite_weights`` and stored as the matching TFLiteWeights section (how
LiteRT-LM pairs them), and sine_float.tflite as an ``embedder`` model kept inline.

litert-lm-builder has dependencies the project does not (protobuf, absl), so it runs in
its own environment::

    python -m venv /work/venvs/llmfiles
    /work/venvs/llmfiles/bin/pip install litert-lm-builder==0.18.1
    python tools/make_litertlm_sample.py --builder-python /work/venvs/llmfiles/bin/python

The builder stamps a fresh uuid and creation time into the system metadata, so every run
writes other bytes; the sections are the same.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LLM = ROOT / "tests" / "data" / "models" / "llm"
TOKENIZER = {  # a word-level tokenizer over the decoder's first ids
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
    "decoder": None,
    "model": {"type": "WordLevel", "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "hello": 3, "world": 4}},
}
LLM_METADATA = """\
start_token { token_ids { ids: 1 } }
stop_tokens { token_ids { ids: 2 } }
max_num_tokens: 16
"""
TOML = """\
[system_metadata]
entries = [
  {{ key = "author", value = "tflite-viewer tests", value_type = "String" }},
  {{ key = "layers", value = 2, value_type = "Int32" }},
]

[[section]]
section_type = "LlmMetadata"
data_path = "{d}/llm_metadata.pbtext"

[[section]]
section_type = "HF_Tokenizer"
data_path = "{d}/tokenizer.json"

[[section]]
section_type = "TFLiteModel"
model_type = "prefill_decode"
data_path = "{d}/decoder.tflite"

[[section]]
section_type = "TFLiteWeights"
model_type = "prefill_decode"
data_path = "{d}/tflite_weights"

[[section]]
section_type = "TFLiteModel"
model_type = "embedder"
data_path = "{d}/embedder.tflite"
"""
BUILD = ("import sys; from litert_lm_builder import litertlm_builder as b; "
         "b.pack(sys.argv[1], sys.argv[2])")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builder-python", required=True,
                    help="a python with litert-lm-builder 0.18.1 installed")
    ap.add_argument("-o", "--output", type=Path, default=LLM / "tiny_llama.litertlm")
    args = ap.parse_args()

    from tflite_viewer.edit.sidefiles import externalize
    from tflite_viewer.edit.tree import unpack
    from tflite_viewer.edit.writer import serialize
    from tflite_viewer.model import load_model

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        tree = unpack(load_model(LLM / "tiny_llama_q4_block32.tflite"))
        (d / "tflite_weights").write_bytes(externalize(tree, "tflite_weights"))
        (d / "decoder.tflite").write_bytes(serialize(tree))
        (d / "embedder.tflite").write_bytes((LLM.parent / "sine_float.tflite").read_bytes())
        (d / "tokenizer.json").write_text(json.dumps(TOKENIZER))
        (d / "llm_metadata.pbtext").write_text(LLM_METADATA)
        (d / "model.toml").write_text(TOML.format(d=d))
        subprocess.run([args.builder_python, "-c", BUILD, str(d / "model.toml"),
                        str(args.output)], check=True)
    print(f"{args.output}: {args.output.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
