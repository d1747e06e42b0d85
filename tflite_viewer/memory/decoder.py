"""Is the model an LLM decoder?  Then it is not a TFLite Micro model, and its memory is
LiteRT's arenas.

An on-device LLM export (litert-torch, ai-edge-quantizer) has several entry signatures over
one set of weights (``prefill_N`` and ``decode``), each taking a state it gives back under
the same name: the KV cache (``kv_cache_k_0`` ...).  TFLite Micro runs subgraph 0 only, has
no signatures, and plans every other subgraph with uninitialised lifetimes, so its plan of
such a model says little; LiteRT plans one arena per subgraph, which is what a decoder
needs to know.
"""
from __future__ import annotations

from ..model import Model


def llm_decoder(model: Model) -> str | None:
    """Why ``model`` is an LLM decoder, in words (None: it is not one): at least two
    signatures on different subgraphs, and a state carried between calls (a signature
    input and output of the same name)."""
    sigs = model.signature_defs
    carried = sorted({i.name for s in sigs for i in s.inputs}
                     & {o.name for s in sigs for o in s.outputs})
    entries = {s.subgraph_index for s in sigs}
    if len(entries) < 2 or not carried:
        return None
    keys = [s.key for s in sigs]
    shown = ", ".join(carried[:2]) + (", ..." if len(carried) > 2 else "")
    return (f"an LLM decoder (signatures {', '.join(keys[:-1])} and {keys[-1]} carry a KV cache "
            f"of {len(carried)} tensors between calls: {shown})")
