"""Matching the operators and tensors of one subgraph of model A with one of model B.

Names first, structure where names fail, position last; every match keeps its evidence.

1. **Seeds.**  Tensors whose name is unique on both sides and that agree in kind
   (constant, variable, widened constant, activation) and shape, the inputs of a
   signature the two subgraphs share (by the signature's input name), and constants whose
   bytes (type and shape) are unique on each side and the same on both.  The signature's
   outputs come once these have been propagated (step 2): an op removed before an output
   makes the signature name another tensor.
2. **Propagation** (a work list).  A matched tensor pair matches its producers (same op
   type, same output position) and its consumers (same op type reading it at the same
   input position; several candidates are told apart by how many other inputs already
   agree, then by order).  Producers go first: consumers are matched only when nothing
   else is left to do.  A matched op pair matches its inputs and outputs position by
   position.  Where one side has an op the other lacks, propagation looks through it:
   a QUANTIZE/DEQUANTIZE the converter inserted, an activation that was split out of the
   op before it, or any op that keeps its input's shape (an op added with the editor).
3. **Leftovers**, each followed by propagation again: the signature's outputs and names
   whose shape changed (before the activation inputs of matched ops are paired, the least
   trusted step of 2), ops of another type that write and read matched tensors (a
   converter's RESHAPE for a SQUEEZE), the subgraphs' outputs by position, when both
   subgraphs have as many tensors (or ops) the same index (a tensor nothing matched reads
   or writes any more, too), and ops that touch no tensor (CALL_ONCE) by their order.

What stays unmatched is added (B) or removed (A); the ops among them are classified
(`classify`): a quantize/dequantize pair's half, a split-out (or fused-in) activation, or
a plain addition.  Tensors of an inserted QUANTIZE/DEQUANTIZE that carry the values of a
matched tensor are recorded as its *aliases*: the numeric comparison and the
quantization pairing compare them with that tensor.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .graph import ACTIVATION_OPS, VALUE_PRESERVING, SideGraph

#: how many inserted ops in a row propagation looks through
MAX_SKIP = 2


@dataclass(frozen=True)
class Evidence:
    """Why two items were matched: ``kind`` is "name", "signature", "content" (a constant's
    bytes), "structure" or "position"; ``detail`` says which name, neighbour or position."""

    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "detail": self.detail}


#: kinds structure may match with each other: an edit that removes the op between a
#: constant and its QUANTIZE/DEQUANTIZE (a DENSIFY) turns that op's output from an
#: activation into a widened constant; names alone never cross kinds
_COMPATIBLE = {("activation", "widened"), ("widened", "activation")}


def compatible(x: str, y: str) -> bool:
    return x == y or (x, y) in _COMPATIBLE


def _unique_names(g: SideGraph) -> dict[str, int]:
    seen: dict[str, int] = {}
    dup: set[str] = set()
    for t, name in enumerate(g.names):
        if not name:
            continue
        if name in seen:
            dup.add(name)
        else:
            seen[name] = t
    for name in dup:
        del seen[name]
    return seen


class SubgraphMatcher:
    """The match of one subgraph pair; `run` fills the dictionaries below."""

    def __init__(self, a: SideGraph, b: SideGraph) -> None:
        self.a, self.b = a, b
        self.t_ab: dict[int, int] = {}
        self.t_ba: dict[int, int] = {}
        self.o_ab: dict[int, int] = {}
        self.o_ba: dict[int, int] = {}
        self.t_evidence: dict[int, Evidence] = {}   # by A tensor
        self.o_evidence: dict[int, Evidence] = {}   # by A op
        self.alias_b: dict[int, int] = {}           # B tensor -> A tensor of the same values
        self.alias_a: dict[int, int] = {}           # A tensor -> B tensor of the same values
        self.inserted: dict[int, str] = {}          # unmatched B op -> what it is
        self.removed: dict[int, str] = {}           # unmatched A op -> what it was
        self._queue: deque = deque()
        self._consumer_queue: deque = deque()
        self._backward_queue: deque = deque()

    # -- recording -----------------------------------------------------------------------
    def match_tensor(self, ta: int, tb: int, ev: Evidence) -> bool:
        if ta in self.t_ab or tb in self.t_ba:
            return False
        self.t_ab[ta], self.t_ba[tb], self.t_evidence[ta] = tb, ta, ev
        self._queue.append((0, ta, tb))
        return True

    def match_op(self, oa: int, ob: int, ev: Evidence) -> bool:
        if oa in self.o_ab or ob in self.o_ba:
            return False
        self.o_ab[oa], self.o_ba[ob], self.o_evidence[oa] = ob, oa, ev
        self._queue.append((1, oa, ob))
        return True

    # -- the phases ----------------------------------------------------------------------
    def run(self, seeds: list[tuple[int, int, Evidence]] = ()) -> "SubgraphMatcher":
        a, b = self.a, self.b

        def seed(pairs) -> None:
            for ta, tb, ev in pairs:
                if a.valid(ta) and b.valid(tb) and a.kind(ta) == b.kind(tb):
                    self.match_tensor(ta, tb, ev)

        self._names(strong=True)
        seed(s for s in seeds if s[0] in a.graph_inputs)
        self._io_positions(("input",))
        self._contents()
        self._drain(backward=False)
        # outputs once the graph has spoken (removing the op that wrote a subgraph output
        # makes the signature name its input), then names whose shape changed
        seed(seeds)
        self._names(strong=False)
        self._drain(backward=False)
        self._drain()
        for phase in (self._retyped, self._io_positions, self._same_index, self._lone_ops):
            phase()
            self._drain()
        self._aliases()
        self.classify()
        return self

    def _names(self, strong: bool) -> None:
        a, b = self.a, self.b
        nb = _unique_names(b)
        pairs = []
        for name, ta in _unique_names(a).items():
            tb = nb.get(name)
            if tb is None or ta in self.t_ab or tb in self.t_ba:
                continue
            if (a.kind(ta) != b.kind(tb)) if strong else not compatible(a.kind(ta), b.kind(tb)):
                continue
            if strong and a.shapes[ta] != b.shapes[tb]:
                continue
            pairs.append((a.producer[ta], ta, tb))
        pairs.sort()  # upstream first: producers are then matched in execution order
        for _, ta, tb in pairs:
            self.match_tensor(ta, tb, Evidence("name", repr(a.names[ta])))

    def _contents(self) -> None:
        """Constants left unmatched whose bytes (with type and shape) are unique on each
        side and equal across: a nameless model's weights, or renamed ones."""
        a, b = self.a, self.b

        def keyed(g: SideGraph, matched: dict[int, int], wanted=None) -> dict:
            out: dict = {}
            for t in range(g.n_tensors):
                if t in matched or g.kind(t) != "constant":
                    continue
                shape_key = (g.types[t], g.shapes[t])
                if wanted is not None and shape_key not in wanted:
                    continue
                raw = g.constant_bytes(t)
                if raw is None:
                    continue
                out.setdefault(shape_key + (raw,), []).append(t)
            return out

        shapes_b = {(b.types[t], b.shapes[t]) for t in range(b.n_tensors)
                    if t not in self.t_ba and b.kind(t) == "constant"}
        if not shapes_b:
            return
        in_a = keyed(a, self.t_ab, shapes_b)
        if not in_a:
            return
        in_b = keyed(b, self.t_ba, {k[:2] for k in in_a})
        for key, xs in in_a.items():
            ys = in_b.get(key)
            if ys is not None and len(xs) == 1 and len(ys) == 1:
                self.match_tensor(xs[0], ys[0], Evidence(
                    "content", f"the same {len(key[2])} bytes of {a.type_name(xs[0])} "
                               f"{list(key[1])}"))

    @staticmethod
    def _loose(g: SideGraph, t: int, matched: dict[int, int]) -> bool:
        """No matched op writes or reads the tensor (what removing its producer leaves)."""
        p = g.producer[t]
        return (p < 0 or p not in matched) and not any(k in matched for k, _ in g.consumers[t])

    def _retyped(self) -> None:
        """Unmatched ops of different types that write matched tensors and read matched
        tensors at their first input (a converter that writes RESHAPE for SQUEEZE)."""
        a, b = self.a, self.b
        for ta, tb in list(self.t_ab.items()):
            pa, pb = a.producer[ta], b.producer[tb]
            if pa < 0 or pb < 0 or pa in self.o_ab or pb in self.o_ba or \
                    not a.inputs[pa] or not b.inputs[pb]:
                continue
            xa, xb = a.inputs[pa][0], b.inputs[pb][0]
            if xa >= 0 and self.t_ab.get(xa) == xb and \
                    a.outputs[pa].index(ta) == b.outputs[pb].index(tb):
                self.match_op(pa, pb, Evidence(
                    "structure", f"writes matched {a.describe_tensor(ta)} from matched "
                                 f"{a.describe_tensor(xa)}; the op type differs"))

    def _lone_ops(self) -> None:
        """Ops that read and write no tensor (CALL_ONCE): the k-th unmatched one of a type
        on one side with the k-th on the other."""
        a, b = self.a, self.b

        def lone(g: SideGraph, matched: dict[int, int]) -> dict[str, list[int]]:
            out: dict[str, list[int]] = {}
            for k in range(g.n_ops):
                if k not in matched and not any(t >= 0 for t in g.inputs[k] + g.outputs[k]):
                    out.setdefault(g.opcode[k], []).append(k)
            return out

        in_b = lone(b, self.o_ba)
        for name, xs in lone(a, self.o_ab).items():
            for n, (x, y) in enumerate(zip(xs, in_b.get(name, ()))):
                self.match_op(x, y, Evidence("position", f"{name} number {n} of those that "
                                                         "touch no tensor"))

    def _io_positions(self, which: tuple[str, ...] = ("input", "output")) -> None:
        """The subgraphs' inputs (when both have as many) and outputs by position."""
        a, b = self.a, self.b
        for what, xs, ys in (("input", a.graph_inputs, b.graph_inputs),
                             ("output", a.graph_outputs, b.graph_outputs)):
            if what not in which or (what == "input" and len(xs) != len(ys)):
                continue
            for k, (ta, tb) in enumerate(zip(xs, ys)):
                if a.valid(ta) and b.valid(tb) and a.kind(ta) == b.kind(tb):
                    self.match_tensor(ta, tb, Evidence("position", f"subgraph {what} {k}"))

    def _same_index(self) -> None:
        """Same index, when the two subgraphs are laid out alike (as many tensors, or ops)."""
        a, b = self.a, self.b
        if a.n_ops == b.n_ops:
            for k in range(a.n_ops):
                if k not in self.o_ab and k not in self.o_ba and a.opcode[k] == b.opcode[k]:
                    self.match_op(k, k, Evidence("position", f"operator {k} on both sides"))
            self._drain()
        if a.n_tensors == b.n_tensors:
            for t in range(a.n_tensors):
                if t in self.t_ab or t in self.t_ba or a.kind(t) != b.kind(t):
                    continue
                if (a.shapes[t] == b.shapes[t] and a.types[t] == b.types[t]) or \
                        (a.names[t] and a.names[t] == b.names[t]) or \
                        (a.types[t] == b.types[t] and self._loose(a, t, self.o_ab) and
                         self._loose(b, t, self.o_ba)):
                    self.match_tensor(t, t, Evidence("position", f"tensor {t} on both sides"))

    # -- propagation ---------------------------------------------------------------------
    def _drain(self, backward: bool = True) -> None:
        """Work through the queue in three levels of trust.  First what a matched tensor's
        producer and a matched op's outputs and constant inputs say; then the consumers of
        a matched tensor (several ops may read one tensor), one tensor pair at a time;
        last (``backward``; else they wait for a later call) the activation inputs of a
        matched op, one op pair at a time (an op removed or inserted upstream makes them
        differ).  So an op is matched by the tensor it writes before another op reading the
        same input can claim it."""
        q, consumers, later = self._queue, self._consumer_queue, self._backward_queue
        while q or consumers or (backward and later):
            while q:
                what, x, y = q.popleft()
                if what == 0:
                    self._producers(x, y)
                    consumers.append((x, y))
                else:
                    self._op_neighbours(x, y)
                    later.append((x, y))
            if consumers:
                self._consumers(*consumers.popleft())
            elif backward and later:
                self._activation_inputs(*later.popleft())

    def _op_neighbours(self, oa: int, ob: int) -> None:
        a, b = self.a, self.b
        t_ab, na, nb = self.t_ab, a.n_tensors, b.n_tensors
        for pos, (x, y) in enumerate(zip(a.outputs[oa], b.outputs[ob])):
            if 0 <= x < na and 0 <= y < nb and t_ab.get(x) != y:
                self._pair_at(x, y, f"output {pos} of matched {a.describe_op(oa)}")
        kinds = a.kinds
        for pos, (x, y) in enumerate(zip(a.inputs[oa], b.inputs[ob])):
            if 0 <= x < na and 0 <= y < nb and t_ab.get(x) != y and \
                    kinds[x] in ("constant", "variable"):
                self._pair_at(x, y, f"input {pos} of matched {a.describe_op(oa)}")

    def _activation_inputs(self, oa: int, ob: int) -> None:
        a, b = self.a, self.b
        t_ab, na, nb, kinds = self.t_ab, a.n_tensors, b.n_tensors, a.kinds
        for pos, (x, y) in enumerate(zip(a.inputs[oa], b.inputs[ob])):
            if 0 <= x < na and 0 <= y < nb and t_ab.get(x) != y and \
                    kinds[x] not in ("constant", "variable"):
                self._pair_at(x, y, f"input {pos} of matched {a.describe_op(oa)}")

    def _pair_at(self, x: int, y: int, detail: str) -> None:
        """Tensors in the same place of a matched op pair: matched directly when both are
        free and of one kind, else through the QUANTIZE/DEQUANTIZE ops inserted on a side
        (their roots matched, the tensors between recorded as aliases)."""
        a, b = self.a, self.b
        if x not in self.t_ab and y not in self.t_ba and compatible(a.kind(x), b.kind(y)):
            self.match_tensor(x, y, Evidence("structure", detail))
            return
        rx, ops_a = self._root(a, x, self.o_ab)
        ry, ops_b = self._root(b, y, self.o_ba)
        if (rx, ry) == (x, y):
            return
        through = " through " + " and ".join(ops_a + ops_b)
        if rx not in self.t_ab and ry not in self.t_ba and a.kind(rx) == b.kind(ry):
            self.match_tensor(rx, ry, Evidence("structure", detail + through))
        if self.t_ab.get(rx) == ry:
            if y != ry and y not in self.t_ba:
                self.alias_b.setdefault(y, rx)
            if x != rx and x not in self.t_ab:
                self.alias_a.setdefault(x, ry)

    @staticmethod
    def _root(g: SideGraph, t: int, matched: dict[int, int]) -> tuple[int, list[str]]:
        """``t``, or the tensor an unmatched chain of QUANTIZE/DEQUANTIZE ops made it from."""
        ops: list[str] = []
        for _ in range(MAX_SKIP + 1):
            p = g.producer[t]
            if p < 0 or p in matched or g.opcode[p] not in VALUE_PRESERVING or \
                    not g.inputs[p] or not g.valid(g.inputs[p][0]):
                break
            ops.append(f"{g.opcode[p]} (op {p})")
            t = g.inputs[p][0]
        return t, ops

    def _skippable(self, g: SideGraph, k: int, matched: dict[int, int]) -> bool:
        """An unmatched op propagation may look through: one output, of its first input's
        shape (a QUANTIZE/DEQUANTIZE, a DENSIFY, an activation, an op the editor added)."""
        if k in matched or len(g.outputs[k]) != 1 or not g.inputs[k]:
            return False
        x, y = g.inputs[k][0], g.outputs[k][0]
        return g.valid(x) and g.valid(y) and g.shapes[x] == g.shapes[y]

    def _producer_chain(self, g: SideGraph, t: int, matched: dict[int, int]
                        ) -> list[tuple[int, int, list[int]]]:
        """(depth, op, ops skipped) for the producer of ``t`` and those found by looking
        through skippable producers above it."""
        out = []
        skipped: list[int] = []
        for depth in range(MAX_SKIP + 1):
            p = g.producer[t]
            if p < 0:
                break
            out.append((depth, p, list(skipped)))
            if not self._skippable(g, p, matched):
                break
            skipped.append(p)
            t = g.inputs[p][0]
        return out

    def _producers(self, ta: int, tb: int) -> None:
        a, b = self.a, self.b
        pa, pb = a.producer[ta], b.producer[tb]
        if pa < 0 or pb < 0:
            return
        how = f"writes {a.describe_tensor(ta)}, matched by {self.t_evidence[ta].kind}"
        if pa not in self.o_ab and pb not in self.o_ba and a.opcode[pa] == b.opcode[pb] and \
                a.outputs[pa].index(ta) == b.outputs[pb].index(tb):
            self.match_op(pa, pb, Evidence("structure", how))
            return
        best = None
        for da, qa, sa in self._producer_chain(a, ta, self.o_ab):
            for db, qb, sb in self._producer_chain(b, tb, self.o_ba):
                if (da or db) and a.opcode[qa] == b.opcode[qb] and qa not in self.o_ab and \
                        qb not in self.o_ba and (best is None or da + db < best[0]):
                    best = (da + db, qa, qb, sa, sb)
        if best is not None:
            _, qa, qb, sa, sb = best
            skipped = [f"{a.opcode[k]} (A op {k})" for k in sa] + \
                [f"{b.opcode[k]} (B op {k})" for k in sb]
            self.match_op(qa, qb, Evidence("structure", how + " through " + ", ".join(skipped)))

    def _consumer_candidates(self, g: SideGraph, t: int, matched: dict[int, int]
                             ) -> list[tuple[int, int, int]]:
        """(depth, op, input position) of the unmatched consumers of ``t``, and of those
        reached through skippable ops that read it."""
        out = []
        frontier = [t]
        for depth in range(MAX_SKIP + 1):
            nxt = []
            for x in frontier:
                for k, pos in g.consumers[x]:
                    if k in matched:
                        continue
                    out.append((depth, k, pos))
                    if pos == 0 and self._skippable(g, k, matched):
                        nxt.append(g.outputs[k][0])
            frontier = nxt
            if not frontier:
                break
        return out

    def _consumers(self, ta: int, tb: int) -> None:
        a, b = self.a, self.b
        ca = self._consumer_candidates(a, ta, self.o_ab)
        if not ca:
            return
        cb = self._consumer_candidates(b, tb, self.o_ba)
        if not cb:
            return
        groups_b: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for depth, k, pos in cb:
            groups_b.setdefault((b.opcode[k], pos), []).append((depth, k))
        groups_a: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for depth, k, pos in ca:
            groups_a.setdefault((a.opcode[k], pos), []).append((depth, k))
        for key, la in groups_a.items():
            lb = groups_b.get(key)
            if lb:
                self._pick(ta, key, la, lb)

    def _pick(self, ta: int, key: tuple[str, int], la: list, lb: list) -> None:
        """Pair candidate consumers of one op type and input position: best score first
        (inputs already matched at the same positions, equal output shapes, equal fused
        activation, not reached through inserted ops), then in order; never two ops whose
        outputs are already matched elsewhere."""
        a, b = self.a, self.b
        scored = []
        for ia, (da, ka) in enumerate(la):
            for ib, (db, kb) in enumerate(lb):
                if self._outputs_disagree(ka, kb):
                    continue
                s = sum(1 for x, y in zip(a.inputs[ka], b.inputs[kb])
                        if x >= 0 and self.t_ab.get(x) == y)
                s += [a.shapes[o] for o in a.outputs[ka] if a.valid(o)] == \
                    [b.shapes[o] for o in b.outputs[kb] if b.valid(o)]
                s += a.fused.get(ka) == b.fused.get(kb)
                scored.append((-s, da + db, abs(ia - ib), ia, ka, kb))
        scored.sort()
        for _, depth, _, _, ka, kb in scored:
            if ka in self.o_ab or kb in self.o_ba:
                continue
            detail = f"reads matched {a.describe_tensor(ta)} at input {key[1]}"
            if depth:
                detail += " (through an op inserted on one side)"
            self.match_op(ka, kb, Evidence("structure", detail))

    def _outputs_disagree(self, ka: int, kb: int) -> bool:
        """Whether an output of A's op ``ka`` is already matched with a tensor that is not
        B's op ``kb``'s output at that position (or the other way round): an op removed
        on one side leaves its output behind, matched by name to a tensor nothing writes."""
        for x, y in zip(self.a.outputs[ka], self.b.outputs[kb]):
            px, py = self.t_ab.get(x), self.t_ba.get(y)
            if (px is not None and px != y) or (py is not None and py != x):
                return True
        return False

    # -- what is left --------------------------------------------------------------------
    def _aliases(self) -> None:
        """The tensors of unmatched QUANTIZE/DEQUANTIZE ops carry the values of the
        tensor at their other end: record them as aliases of its partner."""
        for g, matched_t, matched_o, aliases, other in (
                (self.b, self.t_ba, self.o_ba, self.alias_b, self.t_ab),
                (self.a, self.t_ab, self.o_ab, self.alias_a, self.t_ba)):
            vp = [k for k in range(g.n_ops) if k not in matched_o and
                  g.opcode[k] in VALUE_PRESERVING and g.inputs[k] and len(g.outputs[k]) == 1]
            for order in (vp, vp[::-1]):  # downstream, then upstream
                for k in order:
                    x, y = g.inputs[k][0], g.outputs[k][0]
                    if not (g.valid(x) and g.valid(y)):
                        continue
                    px = matched_t.get(x, aliases.get(x))
                    py = matched_t.get(y, aliases.get(y))
                    if px is not None and py is None:
                        aliases[y] = px
                    elif py is not None and px is None:
                        aliases[x] = py

    def classify(self) -> None:
        """Say what each unmatched op is (see the module docstring)."""
        self.inserted = {k: self._reason(self.b, self.a, k, self.o_ba, self.t_ba,
                                         self.alias_b, "A")
                         for k in range(self.b.n_ops) if k not in self.o_ba}
        self.removed = {k: self._reason(self.a, self.b, k, self.o_ab, self.t_ab,
                                        self.alias_a, "B")
                        for k in range(self.a.n_ops) if k not in self.o_ab}

    def _reason(self, g: SideGraph, other: SideGraph, k: int, ops: dict[int, int],
                tensors: dict[int, int], aliases: dict[int, int], side: str) -> str:
        name = g.opcode[k]
        ins = [t for t in g.inputs[k] if g.valid(t)]
        if name in VALUE_PRESERVING and ins:
            x = ins[0]
            if g.constant[x]:
                return (f"{name} of a {g.type_name(x)} constant (the weights are stored in "
                        f"{g.type_name(x)} and widened at run time)")
            partner = tensors.get(x, aliases.get(x))
            if partner is not None:
                return (f"{name} inserted by the converter: carries the values of "
                        f"{side} {other.describe_tensor(partner)}")
            return f"{name} inserted by the converter"
        if name in ACTIVATION_OPS and ins:
            p = g.producer[ins[0]]
            q = ops.get(p) if p >= 0 else None
            if q is not None and other.fused.get(q) == ACTIVATION_OPS[name] and \
                    g.fused.get(p) is None:
                verb = "split out of" if side == "A" else "fused into"
                return f"{name} {verb} the fused activation of {other.describe_op(q)} ({side})"
        return "added" if side == "A" else "removed"
