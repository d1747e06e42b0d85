"""The LiteRT interpreter as the independent source of truth for the tests."""
from __future__ import annotations

from pathlib import Path

from ai_edge_litert.interpreter import Interpreter, OpResolverType


def litert(model: Path | bytes, resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
           preserve: bool = True) -> Interpreter:
    """A LiteRT interpreter on a file or bytes (no delegates, so tensors stay as in the file)."""
    kind = getattr(OpResolverType, resolver)
    if isinstance(model, (bytes, bytearray)):
        return Interpreter(model_content=bytes(model), experimental_op_resolver_type=kind,
                           experimental_preserve_all_tensors=preserve)
    return Interpreter(model_path=str(model), experimental_op_resolver_type=kind,
                       experimental_preserve_all_tensors=preserve)


def compiled_model_run(path: Path | str, inputs: dict[str, "np.ndarray"],
                       signature: str | None = None) -> dict[str, "np.ndarray"]:
    """Outputs of LiteRT's CompiledModel (CPU) on a model file, by signature names.

    The CompiledModel API is the part of the ai-edge-litert wheel that loads external
    buffers (side files next to the model, LiteRT's weight loader); the Interpreter API
    refuses them ("Input tensor N lacks data")."""
    import numpy as np
    from ai_edge_litert.compiled_model import CompiledModel

    cm = CompiledModel.from_file(str(path))
    keys = list(cm.get_signature_list())
    key = signature if signature is not None else keys[0]
    index = keys.index(key)
    ins = cm.create_input_buffers(index)
    outs = cm.create_output_buffers(index)
    for buf, (name, d) in zip(ins, cm.get_input_tensor_details(key).items()):
        buf.write(np.ascontiguousarray(inputs[name], dtype=np.dtype(d["dtype"])))
    cm.run_by_index(index, ins, outs)
    result = {}
    for buf, (name, d) in zip(outs, cm.get_output_tensor_details(key).items()):
        shape = tuple(int(s) for s in d["shape"])
        result[name] = buf.read(int(np.prod(shape)), np.dtype(d["dtype"])).reshape(shape)
    return result
