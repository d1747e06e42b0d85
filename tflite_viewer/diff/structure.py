"""The differences inside one matched subgraph pair: its operators and tensors, matched
or not, and the subgraph's own fields (name, inputs, outputs).

Cheap fields come from the matcher's lists; options and quantization are compared by
their fingerprints (`columns`) and decoded through the views only where those differ, so
a diff of two 20,000-operator models reads the tables of the few that changed.

A connection (an op's input or output, a subgraph's input or output) is the same when
the tensors on both sides are matched (or one is an alias of the other's partner: a
tensor of an inserted QUANTIZE/DEQUANTIZE), or when the difference is explained by an
op that is only on one side: the consumers of a removed op read its input now, and an
inserted op's consumers read its output.  Those are reported once, as the removed or
added op.
"""
from __future__ import annotations

from typing import Any, Iterator

from ..match import ModelMatch, SubgraphMatcher
from ..model import Model
from ..model.operator import Operator
from . import columns, values
from .differences import Difference, Ref

MAX_EXPLAIN = 4  # ops in a row a connection is followed through


class SubgraphComparison:
    """Compare one matched subgraph pair (A subgraph ``sa``) of ``match``."""

    def __init__(self, match: ModelMatch, sa: int) -> None:
        self.m = match
        self.sa, self.sb = sa, match.subgraphs[sa]
        self.part: SubgraphMatcher = match.parts[sa]
        self.ga, self.gb = self.part.a, self.part.b
        self._bytes_memo: dict[tuple[int, int], bool] = {}

    # -- references ----------------------------------------------------------------------
    def op_ref(self, side: str, k: int) -> Ref:
        g = self.ga if side == "a" else self.gb
        return Ref(self.sa if side == "a" else self.sb, k, g.opcode[k])

    def tensor_ref(self, side: str, t: int) -> Ref:
        g = self.ga if side == "a" else self.gb
        return Ref(self.sa if side == "a" else self.sb, t, g.names[t])

    def _tensor_text(self, side: str, t: int) -> str | None:
        if t < 0:
            return None
        g = self.ga if side == "a" else self.gb
        return f"tensor {t} {g.names[t]!r}" if g.valid(t) else f"tensor {t} (out of range)"

    # -- the whole pair ------------------------------------------------------------------
    def differences(self) -> Iterator[Difference]:
        yield from self._subgraph_fields()
        yield from self._operators()
        yield from self._tensors()

    def _subgraph_fields(self) -> Iterator[Difference]:
        a_sg, b_sg = self.m.a.subgraphs[self.sa], self.m.b.subgraphs[self.sb]
        ra = Ref(self.sa, -1, a_sg.name)
        rb = Ref(self.sb, -1, b_sg.name)
        if a_sg.name != b_sg.name:
            yield Difference("subgraph", "changed", "name", ra, rb, a_sg.name, b_sg.name)
        for field in ("inputs", "outputs"):
            xs, ys = getattr(self.ga, f"graph_{field}"), getattr(self.gb, f"graph_{field}")
            detail = self._list_change(xs, ys)
            if detail:
                yield Difference("subgraph", "changed", field, ra, rb,
                                 [self._tensor_text("a", x) for x in xs],
                                 [self._tensor_text("b", y) for y in ys], detail)

    def _list_change(self, xs: tuple[int, ...], ys: tuple[int, ...]) -> str:
        """What differs between two tensor lists (a subgraph's inputs or outputs), or ""."""
        if len(xs) == len(ys) and all(self.connected(x, y) for x, y in zip(xs, ys)):
            return ""
        mapped = [self._partner(x) for x in xs]
        added = [y for y in ys if y not in mapped and not any(
            self.connected(x, y) for x in xs)]
        removed = [x for x in xs if not any(self.connected(x, y) for y in ys)]
        parts = []
        if added:
            parts.append("added " + ", ".join(self._tensor_text("b", y) for y in added))
        if removed:
            parts.append("removed " + ", ".join(self._tensor_text("a", x) for x in removed))
        return "; ".join(parts) or "reordered"

    # -- connections ---------------------------------------------------------------------
    def _partner(self, x: int) -> int | None:
        p = self.part
        hit = p.t_ab.get(x)
        return hit if hit is not None else p.alias_a.get(x)

    def connected(self, x: int, y: int) -> bool:
        """Whether A's tensor ``x`` and B's ``y`` are the same connection (see the module
        docstring)."""
        if x < 0 or y < 0:
            return x < 0 and y < 0
        if not (self.ga.valid(x) and self.gb.valid(y)):
            return False
        if self._partner(x) == y or self.part.alias_b.get(y) == x:
            return True
        ups_a = self._upstream(self.ga, x, self.part.o_ab)
        ups_b = self._upstream(self.gb, y, self.part.o_ba)
        for ux in ups_a:
            px = self._partner(ux)
            for uy in ups_b:
                if px == uy or self.part.alias_b.get(uy) == ux:
                    return True
        return False

    @staticmethod
    def _upstream(g, t: int, matched: dict[int, int]) -> list[int]:
        """``t`` and the tensors it was made from through ops only its side has."""
        out = [t]
        for _ in range(MAX_EXPLAIN):
            p = g.producer[t]
            if p < 0 or p in matched or not g.inputs[p] or not g.valid(g.inputs[p][0]):
                break
            t = g.inputs[p][0]
            out.append(t)
        return out

    # -- operators -----------------------------------------------------------------------
    def _operators(self) -> Iterator[Difference]:
        m, ga, gb = self.m, self.ga, self.gb
        keys_a = columns.option_keys(m.a, self.sa)
        keys_b = columns.option_keys(m.b, self.sb)
        codes_a, codes_b = m.a.operator_codes, m.b.operator_codes
        for oa, ob in sorted(self.part.o_ab.items()):
            ra, rb = self.op_ref("a", oa), self.op_ref("b", ob)
            if ga.opcode[oa] != gb.opcode[ob]:
                yield Difference("operator", "changed", "opcode", ra, rb, ga.opcode[oa],
                                 gb.opcode[ob])
            va = codes_a[ga.opcode_index[oa]].version if 0 <= ga.opcode_index[oa] < len(
                codes_a) else None
            vb = codes_b[gb.opcode_index[ob]].version if 0 <= gb.opcode_index[ob] < len(
                codes_b) else None
            if va != vb:
                yield Difference("operator", "changed", "version", ra, rb, va, vb)
            if keys_a[oa] != keys_b[ob]:
                yield from self._options(oa, ob, ra, rb)
            yield from self._connections(oa, ob, ra, rb)
        for ob, why in sorted(self.part.inserted.items()):
            yield Difference("operator", "added", "", None, self.op_ref("b", ob), detail=why)
        for oa, why in sorted(self.part.removed.items()):
            yield Difference("operator", "removed", "", self.op_ref("a", oa), None,
                             detail=why)

    def _options(self, oa: int, ob: int, ra: Ref, rb: Ref) -> Iterator[Difference]:
        op_a: Operator = self.m.a.subgraphs[self.sa].operators[oa]
        op_b: Operator = self.m.b.subgraphs[self.sb].operators[ob]
        for attr in ("builtin_options_type", "builtin_options_2_type"):
            x, y = getattr(op_a, attr), getattr(op_b, attr)
            if x != y:
                yield Difference("operator", "changed", attr.replace("builtin_", ""), ra, rb,
                                 x, y)
        xa, xb = op_a.options, op_b.options
        for name in sorted(set(xa) | set(xb), key=lambda n: (n != "fused_activation_function", n)):
            x, y = xa.get(name), xb.get(name)
            if not values._same(_plain(x), _plain(y)):
                field = "fused_activation" if name == "fused_activation_function" else \
                    f"options.{name}"
                yield Difference("operator", "changed", field, ra, rb, _plain(x), _plain(y))
        if op_a.custom_options_bytes != op_b.custom_options_bytes:
            yield from _custom(op_a, op_b, ra, rb)
        if op_a.custom_options_format != op_b.custom_options_format:
            yield Difference("operator", "changed", "custom_options_format", ra, rb,
                             op_a.custom_options_format, op_b.custom_options_format)

    def _connections(self, oa: int, ob: int, ra: Ref, rb: Ref) -> Iterator[Difference]:
        ga, gb = self.ga, self.gb
        t_ab = self.part.t_ab
        for what, xs, ys in (("inputs", ga.inputs[oa], gb.inputs[ob]),
                             ("outputs", ga.outputs[oa], gb.outputs[ob])):
            if len(xs) == len(ys) and all(
                    (x < 0 and y < 0) or (x >= 0 and t_ab.get(x) == y) for x, y in zip(xs, ys)):
                continue  # the common case, without a call per tensor
            for i in range(max(len(xs), len(ys))):
                x = xs[i] if i < len(xs) else None
                y = ys[i] if i < len(ys) else None
                if x is not None and y is not None and self.connected(x, y):
                    continue
                detail = ""
                if x is not None and x >= 0 and ga.valid(x):
                    p = self._partner(x)
                    detail = "A's tensor has no match in B" if p is None else \
                        f"A's tensor is B's {self._tensor_text('b', p)}"
                    shared = len({k for k, _ in ga.consumers[x]})
                    if shared > 1 and ga.constant[x] and y is not None and gb.valid(y) and \
                            gb.constant[y] and y not in self.part.t_ba:
                        detail = (f"A shares this constant among {shared} ops; B gives this "
                                  "op one of its own")
                yield Difference("operator", "changed", f"{what}[{i}]", ra, rb,
                                 self._tensor_text("a", x) if x is not None else None,
                                 self._tensor_text("b", y) if y is not None else None, detail)

    # -- tensors -------------------------------------------------------------------------
    def _tensors(self) -> Iterator[Difference]:
        m, ga, gb = self.m, self.ga, self.gb
        qa = columns.quantization_keys(m.a, self.sa)
        qb = columns.quantization_keys(m.b, self.sb)
        sp_a = columns.has_sparsity(m.a, self.sa)
        sp_b = columns.has_sparsity(m.b, self.sb)
        sig_a = m.a.subgraphs[self.sa].tensor_columns.shape_signature
        sig_b = m.b.subgraphs[self.sb].tensor_columns.shape_signature
        for ta, tb in sorted(self.part.t_ab.items()):
            ra, rb = self.tensor_ref("a", ta), self.tensor_ref("b", tb)
            if ga.names[ta] != gb.names[tb]:
                yield Difference("tensor", "changed", "name", ra, rb, ga.names[ta], gb.names[tb])
            if ga.types[ta] != gb.types[tb]:
                yield Difference("tensor", "changed", "type", ra, rb, ga.type_name(ta),
                                 gb.type_name(tb))
            if ga.shapes[ta] != gb.shapes[tb]:
                yield Difference("tensor", "changed", "shape", ra, rb, list(ga.shapes[ta]),
                                 list(gb.shapes[tb]))
            if sig_a[ta] != sig_b[tb]:
                yield Difference("tensor", "changed", "shape_signature", ra, rb,
                                 _list(sig_a[ta]), _list(sig_b[tb]))
            if qa[ta] != qb[tb]:  # (a nested details table never compares equal)
                d = self._quantization(ta, tb, ra, rb)
                if d is not None:
                    yield d
            if sp_a[ta] or sp_b[tb]:
                x = values.sparsity_fields(self._tensor("a", ta))
                y = values.sparsity_fields(self._tensor("b", tb))
                if x != y:
                    yield Difference("tensor", "changed", "sparsity", ra, rb,
                                     "sparse" if x else "dense", "sparse" if y else "dense")
            if ga.constant[ta] and gb.constant[tb]:
                d = self._values(ta, tb, ra, rb)
                if d is not None:
                    yield d
        for tb in range(gb.n_tensors):
            if tb not in self.part.t_ba and tb not in self.part.alias_b:
                yield Difference("tensor", "added", "", None, self.tensor_ref("b", tb),
                                 detail=self._role("b", tb))
        for ta in range(ga.n_tensors):
            if ta not in self.part.t_ab and ta not in self.part.alias_a:
                yield Difference("tensor", "removed", "", self.tensor_ref("a", ta), None,
                                 detail=self._role("a", ta))

    def _role(self, side: str, t: int) -> str:
        g = self.ga if side == "a" else self.gb
        p = g.producer[t]
        text = f"{g.kind(t)} {g.type_name(t)}{list(g.shapes[t])}"
        if p >= 0:
            text += f", output of op {p} {g.opcode[p]}"
        elif g.consumers[t]:
            k = g.consumers[t][0][0]
            text += f", read by op {k} {g.opcode[k]}"
        return text

    def _tensor(self, side: str, t: int):
        model, s = (self.m.a, self.sa) if side == "a" else (self.m.b, self.sb)
        return model.subgraphs[s].tensors[t]

    def _quantization(self, ta: int, tb: int, ra: Ref, rb: Ref) -> Difference | None:
        x, y = self._tensor("a", ta), self._tensor("b", tb)
        change = values.quantization_change(x, y, lambda i: self.part.t_ab.get(i, i))
        if change is None:
            return None
        fa, fb, changed = change
        return Difference("tensor", "changed", "quantization", ra, rb, values.summary(fa),
                          values.summary(fb), "differs in " + ", ".join(changed))

    def _values(self, ta: int, tb: int, ra: Ref, rb: Ref) -> Difference | None:
        x, y = self._tensor("a", ta), self._tensor("b", tb)
        key = (x.buffer, y.buffer)
        same = self._bytes_memo.get(key) if x.buffer > 0 and y.buffer > 0 else None
        if same is None:
            same = values.same_bytes(x, y) and x.external_buffer == y.external_buffer == 0
            if x.buffer > 0 and y.buffer > 0:
                self._bytes_memo[key] = same
        if same:
            return None
        stats = values.value_statistics(x, y)
        return Difference("tensor", "changed", "values", ra, rb, None, None,
                          values.describe_statistics(stats))


def _list(x: Any) -> Any:
    return None if x is None else list(x)


def _plain(value: Any) -> Any:
    """Option values for comparison and JSON (numpy arrays as lists, bytes as hex)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, tuple):
        return list(value)
    return value


def _custom(op_a: Operator, op_b: Operator, ra: Ref, rb: Ref) -> Iterator[Difference]:
    xa, xb = op_a.custom_options, op_b.custom_options
    if isinstance(xa, dict) and isinstance(xb, dict):
        for name in sorted(set(xa) | set(xb)):
            if not values._same(_plain(xa.get(name)), _plain(xb.get(name))):
                yield Difference("operator", "changed", f"custom_options.{name}", ra, rb,
                                 _plain(xa.get(name)), _plain(xb.get(name)))
        return
    na = len(op_a.custom_options_bytes or b"")
    nb = len(op_b.custom_options_bytes or b"")
    yield Difference("operator", "changed", "custom_options", ra, rb, f"{na} bytes",
                     f"{nb} bytes", "the custom options' bytes differ")


def compare_subgraphs(match: ModelMatch) -> Iterator[Difference]:
    """Every difference inside every matched subgraph pair, and the unmatched subgraphs."""
    for sa in sorted(match.parts):
        yield from SubgraphComparison(match, sa).differences()
    for sa in match.unmatched_subgraphs_a():
        g = match.a.subgraphs[sa]
        yield Difference("subgraph", "removed", "", Ref(sa, -1, g.name), None,
                         detail=f"{len(g.operators)} ops, {len(g.tensors)} tensors")
    for sb in match.unmatched_subgraphs_b():
        g = match.b.subgraphs[sb]
        yield Difference("subgraph", "added", "", None, Ref(sb, -1, g.name),
                         detail=f"{len(g.operators)} ops, {len(g.tensors)} tensors")


def model_sizes(model: Model) -> dict[str, Any]:
    return {"subgraphs": len(model.subgraphs),
            "operators": sum(len(g.operators) for g in model.subgraphs),
            "tensors": sum(len(g.tensors) for g in model.subgraphs)}
