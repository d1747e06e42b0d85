"""What the target rules read about a model, as plain Python lists built in a few numpy passes.

Every rule (XNNPACK's, the GPU delegate's, TFLM's) asks the same questions of an operator:
its code and version, its tensors' types, shapes and quantization, whether a tensor is a
constant, an option.  Building an `Operator` view per operator and decoding its options
one at a time costs about 20 us an operator (0.4 s on a 20,000-op model, before any rule
runs), so this module reads the verifier's columns once: operators and tensors as lists,
every options table of one type in one pass, every quantization table in one pass.

The facts are LiteRT's view of the file, not the reader's: a tensor is *static*
(LiteRT's kTfLiteMmapRo) when its buffer holds bytes, as LiteRT's InterpreterBuilder
decides; shapes are the file's ``shape`` (what LiteRT's delegates see before any
prepare), with ``shape_signature`` kept for the rules about dynamic sizes.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..model import Model
from ..schema.schema_layout import LAYOUT

TYPE_NAMES: dict[int, str] = LAYOUT["enums"]["tflite.TensorType"]["values"]
_ENUMS = LAYOUT["enums"]
_OBJECTS = LAYOUT["objects"]
_SHAPE_ARITHMETIC = frozenset({
    "SHAPE", "STRIDED_SLICE", "PACK", "CONCATENATION", "GATHER", "RESHAPE", "ADD", "SUB",
    "MUL", "FLOOR_DIV", "FLOOR_MOD", "SLICE", "SQUEEZE", "EXPAND_DIMS", "CAST", "MAXIMUM",
    "MINIMUM", "REDUCE_PROD", "FILL"})
_SCALARS = {"UType", "Bool", "Byte", "UByte", "Short", "UShort", "Int", "UInt", "Long",
            "ULong", "Float", "Double"}


@dataclass(frozen=True)
class Quant:
    """A tensor's quantization as LiteRT holds it (TfLiteAffineQuantization)."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    quantized_dimension: int
    details: str  # "NONE", "CustomQuantization", "BlockwiseQuantization", ...

    @property
    def legacy_zero_point(self) -> int:
        """TfLiteTensor.params.zero_point: set only for one scale and one zero point."""
        return self.zero_point[0] if len(self.scale) == 1 and len(self.zero_point) == 1 else 0

    @property
    def legacy_scale(self) -> float:
        return self.scale[0] if len(self.scale) == 1 and len(self.zero_point) == 1 else 0.0


class SubgraphFacts:
    """One subgraph's operators and tensors as lists indexed like the file."""

    def __init__(self, model: Model, index: int, share_verdicts: bool = True) -> None:
        sg = model.subgraphs[index]
        self.share_verdicts = share_verdicts
        self.model = model
        self.index = index
        self.name = sg.name
        # (the reader's columns need at least one operator in the file)
        cols = sg.columns if len(sg.operators) else None
        tcols = sg.tensor_columns
        codes = model.operator_codes
        code_idx = cols.opcode_index.tolist() if cols is not None else []
        self.op_count = len(code_idx)
        # an opcode index out of range: the loader's checks refuse it, but stay total here
        # (the extra entry, at index -1, is what such an index reads)
        if code_idx and not 0 <= min(code_idx) <= max(code_idx) < len(codes):
            code_idx = [c if 0 <= c < len(codes) else -1 for c in code_idx]
        names = [c.builtin_name for c in codes] + ["?"]
        customs = [c.custom_code for c in codes] + [None]
        versions = [c.version for c in codes] + [0]
        same: dict[tuple, int] = {}  # opcode index -> its (code, custom code, version)'s number
        self._code_ids = np.array([same.setdefault(c, len(same)) for c in zip(
            names, customs, versions)], dtype=np.int64)[np.array(code_idx, dtype=np.int64)]
        self.builtin: list[str] = [names[c] for c in code_idx]
        self.custom: list[str | None] = [customs[c] for c in code_idx]
        self.version: list[int] = [versions[c] for c in code_idx]
        ins, in_off, outs, out_off = ([], [0], [], [0]) if cols is None else (
            cols.inputs.tolist(), cols.input_offsets.tolist(), cols.outputs.tolist(),
            cols.output_offsets.tolist())
        # a tensor index out of range: the loader's checks refuse it, but op_keys stay total
        self._odd_indices = cols is not None and any(
            a.size and (int(a.min()) < -1 or int(a.max()) >= len(tcols.type))
            for a in (cols.inputs, cols.outputs))
        self._cols = cols
        self.inputs: list[tuple[int, ...]] = [tuple(ins[in_off[k]:in_off[k + 1]])
                                              for k in range(self.op_count)]
        self.outputs: list[tuple[int, ...]] = [tuple(outs[out_off[k]:out_off[k + 1]])
                                               for k in range(self.op_count)]
        self.types: list[str] = [TYPE_NAMES.get(t, str(t)) for t in tcols.type.tolist()]
        self.shapes: list[tuple[int, ...]] = tcols.shape
        self.signatures: list[tuple[int, ...] | None] = tcols.shape_signature
        self.variable: list[bool] = tcols.is_variable.tolist()
        self.names: list[str] = tcols.name
        self.graph_inputs: tuple[int, ...] = sg.inputs
        self.graph_outputs: tuple[int, ...] = sg.outputs
        buf = tcols.buffer
        sizes = model.buffer_sizes
        has = (buf > 0) & (buf < sizes.size)
        static = np.zeros(buf.size, dtype=bool)
        static[has] = sizes[buf[has]] > 0
        self.static: list[bool] = static.tolist()
        self._sg = sg
        self._options_rows: dict[int, tuple[str, int]] | None = None
        self._options_cache: dict[str, dict[str, list]] = {}
        self._quant: dict[int, Quant] | None = None

    @property
    def tensor_count(self) -> int:
        return len(self.types)

    def op_key(self, k: int) -> int:
        """Everything a target's rules read about operator ``k`` itself, as one number:
        two operators with the same key have the same code, version, options and tensors
        (type, shape, constness, quantization, small constant values, shape signature),
        so a rule that looks at no other operator gives them the same verdict.  A
        20,000-op model is mostly a few blocks repeated, so the targets check each
        distinct key once (keys are numbered per subgraph)."""
        return self.op_keys[k]

    @cached_property
    def op_keys(self) -> list[int]:
        """`op_key` of every operator.  With ``share_verdicts`` off (the reference path
        the tests compare with) every operator has a key of its own."""
        if not self.share_verdicts:
            return list(range(self.op_count))
        if self._options_rows is None:
            self._index_options()
        if self._cols is not None and not self._odd_indices:
            return self._numbered_keys()
        return self._tuple_keys()

    def _tuple_keys(self) -> list[int]:
        """`op_keys` from each operator's key as a tuple, numbered (the plain way, for any
        file; `_numbered_keys` is the same in numpy)."""
        tk = self.tensor_ids + [-1]  # index -1 (an optional input left out) -> -1
        if self._options_rows is None:
            self._index_options()
        rows = self._options_rows
        row_ids: dict[str, list[int]] = {}
        for name, cols in self._options_cache.items():
            ids: dict[tuple, int] = {}
            row_ids[name] = [ids.setdefault(v, len(ids)) for v in zip(*cols.values())] \
                if cols else []
        seen: dict[tuple, int] = {}

        def get(t: int):
            return tk[t] if 0 <= t < len(tk) - 1 else (-1 if t < 0 else ("?", t))

        out = []
        for k, (b, c, v, ins, outs) in enumerate(zip(self.builtin, self.custom, self.version,
                                                     self.inputs, self.outputs)):
            found = rows.get(k)
            opts = None if found is None else (
                found[0], row_ids[found[0]][found[1]] if row_ids[found[0]] else -1)
            key = (b, c, v, tuple(map(get, ins)), tuple(map(get, outs)), opts)
            out.append(seen.setdefault(key, len(seen)))
        return out

    def _numbered_keys(self) -> list[int]:
        """`op_keys` in a few numpy passes: one row per operator (its code's number, its
        options' number, its input and output tensors' `tensor_ids`, -2 past the end of
        a shorter list), and the number of each distinct row."""
        cols, n = self._cols, self.op_count
        if self._options_rows is None:
            self._index_options()
        tid = np.array(self.tensor_ids + [-1], dtype=np.int64)  # index -1 -> -1
        opts = np.full(n, -1, dtype=np.int64)
        base = 0
        for name, ks, rs in self._options_ops:
            values = self._options_cache[name]
            same: dict[tuple, int] = {}
            ids = (np.array([same.setdefault(v, len(same)) for v in zip(*values.values())],
                            dtype=np.int64) if values else np.zeros(int(rs.max()) + 1, np.int64))
            opts[ks] = base + ids[rs]
            base += int(ids.max()) + 1 if ids.size else 0
        parts = [self._code_ids[:, None], opts[:, None]]
        for flat, off in ((cols.inputs, cols.input_offsets), (cols.outputs, cols.output_offsets)):
            flat, off = np.asarray(flat, np.int64), np.asarray(off, np.int64)
            lens = np.diff(off)
            table = np.full((n, int(lens.max()) if n else 0), -2, dtype=np.int64)
            if flat.size:
                table[np.repeat(np.arange(n), lens),
                      np.arange(flat.size) - np.repeat(off[:-1], lens)] = tid[flat]
            parts.append(table)
        rows = np.hstack(parts)
        order = np.lexsort(rows.T[::-1])
        ranked = rows[order]
        number = np.empty(n, dtype=np.int64)
        number[order] = np.concatenate(([0], np.cumsum(np.any(ranked[1:] != ranked[:-1],
                                                               axis=1))))
        return number.tolist()

    @cached_property
    def tensor_ids(self) -> list[int]:
        """Every tensor's `tensor_keys` entry as a number: equal numbers, equal keys (a
        number hashes and compares at once; a nested tuple is hashed anew each time)."""
        seen: dict[tuple, int] = {}
        return [seen.setdefault(key, len(seen)) for key in self.tensor_keys]

    @cached_property
    def tensor_keys(self) -> list[tuple]:
        """Every tensor as the rules see it: type, shape, constness, quantization, the
        values of small integer constants (shapes, axes, paddings), shape signature."""
        quant = self._quant if self._quant is not None else self._read_quantization()
        self._quant = quant
        out = []
        for t, (ty, shape, static, var, sig) in enumerate(zip(
                self.types, self.shapes, self.static, self.variable, self.signatures)):
            values = None
            if static and ty in ("INT32", "INT64") and self.num_elements(t) <= 16:
                v = self.values(t)
                values = None if v is None else tuple(v.reshape(-1).tolist())
            out.append((ty, shape, static, var, quant.get(t), values, sig))
        return out

    def tensor_key(self, t: int) -> int:
        """`tensor_ids` of tensor ``t`` (-1 for an absent tensor); with ``share_verdicts``
        off, the tensor's own index."""
        if t < 0:
            return -1
        return self.tensor_ids[t] if self.share_verdicts else t

    def value_known(self, t: int, depth: int = 0) -> bool:
        """The tensor's value follows from the file alone: a constant, or shape arithmetic
        (SHAPE of a statically shaped tensor, slices, packs, casts, arithmetic) on such
        values.  A converter folds these into the shapes it stores."""
        if t < 0 or self.static[t]:
            return True
        k = self.producer.get(t)
        if k is None or depth > 32 or self.builtin[k] not in _SHAPE_ARITHMETIC:
            return False
        if self.builtin[k] == "SHAPE":  # a shape is known when no model input is dynamic
            x = self.inputs[k][0] if self.inputs[k] else -1
            return x >= 0 and (self.static[x] or not self.dynamic_inputs)
        return all(self.value_known(i, depth + 1) for i in self.inputs[k])

    @cached_property
    def dynamic_inputs(self) -> bool:
        """A subgraph input has an unknown dimension (-1 in its shape signature)."""
        return any(self.dynamic(t) for t in self.graph_inputs)

    @cached_property
    def producer(self) -> dict[int, int]:
        """Tensor -> the operator that writes it."""
        return {t: k for k in range(self.op_count) for t in self.outputs[k]}

    @cached_property
    def side_effects(self) -> list[bool]:
        """``Subgraph::OpMightHaveSideEffect``: resource tensors in or out, IF, WHILE and
        CALL_ONCE (LiteRT's partitioner keeps such operators in order)."""
        resource = {t for t, ty in enumerate(self.types) if ty == "RESOURCE"}
        return [b in ("IF", "WHILE", "CALL_ONCE") or (bool(resource) and any(
            t in resource for t in ins + outs))
            for b, ins, outs in zip(self.builtin, self.inputs, self.outputs)]

    @cached_property
    def consumers(self) -> dict[int, list[int]]:
        """Tensor -> the operators that read it, in order."""
        out: dict[int, list[int]] = {}
        for k in range(self.op_count):
            for t in self.inputs[k]:
                out.setdefault(t, []).append(k)
        return out

    @cached_property
    def op_names(self) -> list[str]:
        """`op_name` of every operator."""
        return [(c or "CUSTOM") if b == "CUSTOM" else b for b, c in zip(self.builtin, self.custom)]

    def op_name(self, k: int) -> str:
        """`CONV_2D`, or the custom code of a custom op."""
        b = self.builtin[k]
        return (self.custom[k] or "CUSTOM") if b == "CUSTOM" else b

    def operator(self, k: int):
        """The reader's view of operator ``k`` (for the rare facts the lists do not hold:
        custom options, builtin_options_2)."""
        return self._sg.operators[k]

    # -- tensors ---------------------------------------------------------------------------
    def type(self, t: int) -> str:
        return self.types[t] if 0 <= t < len(self.types) else "NOTYPE"

    def rank(self, t: int) -> int:
        return len(self.shapes[t])

    def dynamic(self, t: int) -> bool:
        """The file marks a dimension unknown (-1 in shape_signature)."""
        sig = self.signatures[t]
        return sig is not None and any(d < 0 for d in sig)

    def quant(self, t: int) -> Quant | None:
        if self._quant is None:
            self._quant = self._read_quantization()
        return self._quant.get(t)

    def values(self, t: int) -> np.ndarray | None:
        """A constant tensor's values (small shape/axis/padding tensors the rules read)."""
        if not self.static[t]:
            return None
        try:
            return self._sg.tensors[t].values()
        except Exception:  # a malformed constant: the rule treats it as unreadable
            return None

    def block_size(self, t: int) -> int:
        """A blockwise-quantized tensor's block size (0 when the details say none)."""
        return int(self._block_details(t).get("block_size", 0) or 0)

    def block_scales(self, t: int) -> int:
        """The index of a blockwise-quantized tensor's scale tensor (-1: none)."""
        scales = self._block_details(t).get("scales", -1)
        return int(scales) if scales is not None else -1

    def _block_details(self, t: int) -> dict:
        q = self._sg.tensors[t].quantization
        return (q.details or {}) if q is not None else {}

    def sparse(self, t: int) -> bool:
        return self._sg.tensors[t].sparsity is not None

    def num_elements(self, t: int) -> int:
        n = 1
        for d in self.shapes[t]:
            n *= d
        return n

    def _read_quantization(self) -> dict[int, Quant]:
        index = self.model.index
        qp = index.table("tflite.QuantizationParameters")
        tensors = index.table("tflite.Tensor")
        out: dict[int, Quant] = {}
        if not len(qp):
            return out
        mine = tensors.parent[qp.parent] == self.index
        rows = np.flatnonzero(mine)
        if not rows.size:
            return out
        tensor_of = tensors.index[qp.parent].tolist()
        scale, _, s_len = index.vector(qp, "scale")
        zp, _, z_len = index.vector(qp, "zero_point")
        s_start = (np.cumsum(s_len) - s_len).tolist()
        z_start = (np.cumsum(z_len) - z_len).tolist()
        s_len, z_len = s_len.tolist(), z_len.tolist()
        scale, zp = scale.tolist(), zp.tolist()
        qdim = index.scalar(qp, "quantized_dimension").tolist()
        details = index.scalar(qp, "details_type").tolist()
        dnames = _ENUMS["tflite.QuantizationDetails"]["values"]
        for r in rows.tolist():
            sc = tuple(scale[s_start[r]:s_start[r] + s_len[r]])
            z = tuple(zp[z_start[r]:z_start[r] + z_len[r]])
            det = dnames.get(details[r], str(details[r]))
            if not sc and not z and det == "NONE":
                continue  # an empty table: no quantization, as the reader says
            out[tensor_of[r]] = Quant(sc, z, qdim[r], det)
        return out

    # -- options ---------------------------------------------------------------------------
    def options(self, k: int) -> dict[str, Any] | None:
        """Operator ``k``'s builtin options as a dict (enum values by name), or None when
        the operator has no options table (LiteRT then zero-fills its params struct)."""
        if self._options_rows is None:
            self._index_options()
        found = self._options_rows.get(k)
        if found is None:
            return None
        type_name, row = found
        cols = self._options_cache[type_name]
        return {name: values[row] for name, values in cols.items()}

    def _index_options(self) -> None:
        index = self.model.index
        ops = index.table("tflite.Operator")
        op_sub = ops.parent
        op_idx = ops.index
        rows: dict[int, tuple[str, int]] = {}
        self._options_ops: list[tuple[str, np.ndarray, np.ndarray]] = []  # (name, ops, rows)
        for type_name, batches in index.batches.items():
            for batch in batches:
                if batch.parent_batch is not ops or batch.label != "builtin_options":
                    continue
                parents = batch.parent
                mine = np.flatnonzero(op_sub[parents] == self.index)
                if not mine.size:
                    continue
                key = type_name
                if key in self._options_cache:  # the same table type reached twice
                    key = f"{type_name}#{id(batch)}"
                self._options_cache[key] = self._read_batch(batch, type_name)
                self._options_ops.append((key, op_idx[parents[mine]].astype(np.int64), mine))
                for r, k in zip(mine.tolist(), op_idx[parents[mine]].tolist()):
                    rows[int(k)] = (key, r)
        self._options_rows = rows

    def _read_batch(self, batch, type_name: str) -> dict[str, list]:
        index = self.model.index
        out: dict[str, list] = {}
        for f in _OBJECTS[type_name]["fields"]:
            t = f["type"]
            base = t["base"]
            name = f["name"]
            if f.get("deprecated"):
                continue
            if base in _SCALARS and base != "UType":
                values = index.scalar(batch, name).tolist()
                if "enum" in t:
                    names = _ENUMS[t["enum"]]["values"]
                    values = [names.get(v, v) for v in values]
                elif base == "Bool":
                    values = [bool(v) for v in values]
                out[name] = values
            elif base == "Vector" and t.get("element") in _SCALARS:
                vals, owner, lengths = index.vector(batch, name)
                starts = (np.cumsum(lengths) - lengths).tolist()
                flat = vals.tolist()
                out[name] = [tuple(flat[s:s + n]) for s, n in zip(starts, lengths.tolist())]
        return out


class ModelFacts:
    """Every subgraph's facts, built on first use."""

    def __init__(self, model: Model, share_verdicts: bool = True) -> None:
        self.model = model
        self.share_verdicts = share_verdicts
        self._subgraphs: dict[int, SubgraphFacts] = {}

    def __len__(self) -> int:
        return len(self.model.subgraphs)

    def __getitem__(self, s: int) -> SubgraphFacts:
        if s not in self._subgraphs:
            self._subgraphs[s] = SubgraphFacts(self.model, s, self.share_verdicts)
        return self._subgraphs[s]
