"""Edit-derived model pairs: N random edit commands applied with the project's editor,
and what the diff must report, derived from the command log alone.

Each command says what it changes: a SetOption one option of one op, a RenameTensor one
name, a SetTensorShape one shape (and the shape signature where the command keeps it in
step), a SetQuantization one tensor's quantization, a ReplaceTensorData one constant's
values, a RemoveOperator one op, an ExposeTensor the outputs of its subgraph and of the
signatures that run it.  The document's own log adds what it changed by itself: the op
versions it raised (every op sharing the raised operator code) and min_runtime_version.
No item is edited twice in one case, so every logged change is a net change.

Ground truth for the match: tensors keep their index (no command adds or removes one);
an op keeps its index except for the ops removed before it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tflite_viewer.edit import (ExposeTensor, ModelDocument, RemoveOperator, RenameTensor,
                                ReplaceTensorData, SetOption, SetQuantization, SetTensorShape)
from tflite_viewer.model import EditError, Model
from tflite_viewer.model.operator import SUBGRAPH_FIELDS
from tflite_viewer.schema.schema_layout import LAYOUT

KINDS = ("option", "rename", "shape", "quantization", "values", "remove", "expose")
Expected = tuple  # (category, change, field, where)


@dataclass
class EditCase:
    original: Model
    edited: Model
    log: list[str] = field(default_factory=list)
    expected: set = field(default_factory=set)
    #: per subgraph: B op index -> A op index
    op_map: dict[int, dict[int, int]] = field(default_factory=dict)
    removed: set = field(default_factory=set)       # (subgraph, A op)


def _simple_fields(member: str) -> list[dict]:
    fields = LAYOUT["objects"].get("tflite." + member, {}).get("fields", ())
    skip = set(SUBGRAPH_FIELDS.get(member, ()))
    return [f for f in fields if not f.get("deprecated") and f["name"] not in skip
            and f["type"]["base"] in ("Int", "Byte", "UByte", "Short", "Bool", "Float",
                                      "Long", "UInt")]


def _new_value(spec: dict, old, rng):
    t = spec["type"]
    if "enum" in t:
        names = [n for n in LAYOUT["enums"][t["enum"]]["values"].values() if n != old]
        return str(rng.choice(names)) if names else None
    if t["base"] == "Bool":
        return not old
    if t["base"] == "Float":
        return float(old) * 2.0 + 0.5
    return int(old) + 1


class EditGenerator:
    """Apply random edits to ``path``'s model, keeping the oracle of what changed."""

    def __init__(self, source, seed: int) -> None:
        self.doc = ModelDocument(source)
        self.original = self.doc.model
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.case = EditCase(self.original, self.original)
        self.touched: set = set()
        # current B op index -> original A op index, per subgraph
        self.current = {s: list(range(len(g.operators)))
                        for s, g in enumerate(self.original.subgraphs)}
        self.raised_codes: set[int] = set()
        self.runtime_changed = False

    # -- one edit of each kind -----------------------------------------------------------
    def _pick(self, items):
        return items[int(self.rng.integers(len(items)))] if items else None

    def option(self):
        s = int(self.rng.integers(len(self.doc.model.subgraphs)))
        sg = self.doc.model.subgraphs[s]
        if not len(sg.operators):
            return None
        op = sg.operators[int(self.rng.integers(len(sg.operators)))]
        if not op.builtin_options_type:
            return None
        member = op.builtin_options_type
        fields = [f for f in _simple_fields(str(member))
                  if ("op", s, self.current[s][op.index], f["name"]) not in self.touched]
        spec = self._pick(fields)
        if spec is None:
            return None
        new = _new_value(spec, op.builtin_options.get(spec["name"]), self.rng)
        if new is None:
            return None
        a_op = self.current[s][op.index]
        name = spec["name"]
        fld = "fused_activation" if name == "fused_activation_function" else f"options.{name}"
        return (SetOption(s, op.index, name, new), [("operator", "changed", fld, (s, a_op))],
                ("op", s, a_op, name))

    def _tensors(self, s: int, pred, sample: int = 64):
        """Tensors of subgraph ``s`` that ``pred`` accepts, among at most ``sample`` drawn
        at random (a 20,000-op model has too many to look at each)."""
        sg = self.doc.model.subgraphs[s]
        n = len(sg.tensors)
        pick = range(n) if n <= sample else self.rng.choice(n, sample, replace=False)
        return [sg.tensors[int(i)] for i in sorted(pick) if pred(sg.tensors[int(i)])]

    def rename(self):
        s = int(self.rng.integers(len(self.doc.model.subgraphs)))
        t = self._pick(self._tensors(s, lambda t: ("name", s, t.index) not in self.touched))
        if t is None:
            return None
        return (RenameTensor(s, t.index, f"renamed_{self.seed}_{s}_{t.index}"),
                [("tensor", "changed", "name", (s, t.index))], ("name", s, t.index))

    def _produced(self, s: int):
        sg = self.doc.model.subgraphs[s]
        return set(sg.inputs) | set(sg.columns.outputs.tolist())

    def shape(self):
        s = int(self.rng.integers(len(self.doc.model.subgraphs)))
        live = self._produced(s)
        t = self._pick(self._tensors(s, lambda t: t.index in live and not t.is_constant and
                                     t.shape and ("shape", s, t.index) not in self.touched))
        if t is None:
            return None
        shape = list(t.shape)
        d = int(self.rng.integers(len(shape)))
        shape[d] += 1
        exp = [("tensor", "changed", "shape", (s, t.index))]
        sig = t.shape_signature
        if sig is not None and len(sig) == len(shape) and sig[d] != -1:
            exp.append(("tensor", "changed", "shape_signature", (s, t.index)))
        return SetTensorShape(s, t.index, shape), exp, ("shape", s, t.index)

    def quantization(self):
        s = int(self.rng.integers(len(self.doc.model.subgraphs)))
        t = self._pick(self._tensors(s, lambda t: t.quantization is not None and
                                     t.quantization.form in ("per-tensor", "per-channel") and
                                     ("quant", s, t.index) not in self.touched))
        if t is None:
            return None
        q = t.quantization
        scale = (np.asarray(q.scale, np.float64) * float(self.rng.choice([0.5, 2.0, 3.0])))
        return (SetQuantization(s, t.index, scale.tolist(), np.asarray(q.zero_point).tolist(),
                                q.quantized_dimension),
                [("tensor", "changed", "quantization", (s, t.index))], ("quant", s, t.index))

    def values(self):
        s = int(self.rng.integers(len(self.doc.model.subgraphs)))
        ok = ("float32", "int8", "uint8", "int32", "int16", "int64")
        t = self._pick(self._tensors(s, lambda t: t.is_constant and t.sparsity is None and
                                     t.dtype is not None and t.dtype.name in ok and
                                     t.num_elements > 0 and t.type_name not in ("INT4",) and
                                     ("values", s, t.index) not in self.touched))
        if t is None:
            return None
        data = np.array(t.data(), copy=True)
        flat = data.reshape(-1)
        k = int(self.rng.integers(flat.size))
        if flat.dtype.kind == "f":
            flat[k] = flat[k] + 1.0 if np.isfinite(flat[k]) else 0.5
        else:
            flat[k] = flat[k] ^ 1
        return (ReplaceTensorData(s, t.index, data),
                [("tensor", "changed", "values", (s, t.index))], ("values", s, t.index))

    def remove(self):
        s = int(self.rng.integers(len(self.doc.model.subgraphs)))
        sg = self.doc.model.subgraphs[s]
        n = len(sg.operators)
        cands = []
        for k in (range(n) if n <= 64 else self.rng.choice(n, 64, replace=False)):
            op = sg.operators[int(k)]
            if len(op.outputs) != 1 or not op.inputs or op.inputs[0] < 0:
                continue
            a, b = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
            if a.shape == b.shape and a.type == b.type and not op.called_subgraphs:
                cands.append(op)
        op = self._pick(cands)
        if op is None:
            return None
        a_op = self.current[s][op.index]
        return RemoveOperator(s, op.index), [("operator", "removed", "", (s, a_op))], \
            ("remove", s, a_op)

    def expose(self):
        s = int(self.rng.integers(len(self.doc.model.subgraphs)))
        sg = self.doc.model.subgraphs[s]
        outs = set(sg.outputs)
        made = set(sg.columns.outputs.tolist())
        t = self._pick(self._tensors(s, lambda t: t.index in made and t.index not in outs))
        if t is None:
            return None
        exp = [("subgraph", "changed", "outputs", s)]
        exp += [("signature", "changed", "outputs", sig.key)
                for sig in self.doc.model.signature_defs if sig.subgraph_index == s]
        return ExposeTensor(s, t.index), exp, ("expose", s, t.index)

    # -- the run -------------------------------------------------------------------------
    def run(self, n: int, kinds=KINDS, tries: int = 20) -> EditCase:
        done = 0
        for _ in range(n * tries):
            if done >= n:
                break
            kind = str(self.rng.choice(kinds))
            made = getattr(self, kind)()
            if made is None:
                continue
            cmd, expected, touch = made
            try:
                result = self.doc.apply(cmd)
            except EditError:
                continue
            done += 1
            self.touched.add(touch)
            self.case.log.append(cmd.description)
            self.case.expected.update(expected)
            for r in result.raised_versions:
                self.raised_codes.add(r.opcode_index)
            if result.min_runtime_changed:
                self.runtime_changed = True
            if isinstance(cmd, RemoveOperator):
                a_op = self.current[cmd.subgraph].pop(cmd.operator)
                self.case.removed.add((cmd.subgraph, a_op))
        return self._finish()

    def _finish(self) -> EditCase:
        case = self.case
        case.edited = self.doc.model
        case.op_map = {s: {b: a for b, a in enumerate(ops)} for s, ops in self.current.items()}
        # what the document changed by itself
        for s, ops in self.current.items():
            codes = case.edited.subgraphs[s].columns.opcode_index.tolist()
            for b, a in enumerate(ops):
                if codes[b] in self.raised_codes:
                    case.expected.add(("operator", "changed", "version", (s, a)))
        if self.runtime_changed:
            case.expected.add(("model", "changed", "min_runtime_version", None))
        # a removed op reports its removal only
        case.expected = {e for e in case.expected
                         if not (e[0] == "operator" and e[1] == "changed" and
                                 e[3] in case.removed)}
        return case


def reported(diff) -> set:
    """The diff's differences in the oracle's terms."""
    out = set()
    for d in diff.differences:
        if d.category in ("operator", "tensor"):
            where = d.a.key if d.a is not None else ("B", d.b.key)
        elif d.category == "subgraph":
            where = d.ref.subgraph
        elif d.category == "signature":
            where = d.ref.name
        else:
            where = None
        out.add((d.category, d.change, d.field, where))
    return out
