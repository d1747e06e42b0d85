"""LiteRT's arenas for a model: ``ArenaPlanner`` over ``SimpleMemoryArena`` (LiteRT,
tflite/arena_planner.cc and simple_memory_arena.cc), one arena per subgraph.

* Allocation types: constants are mapped from the file; variables live in the persistent
  arena; outputs some kernels compute at Prepare from constants (SHAPE, RESHAPE of a
  constant, ...) are persistent read-only, and outputs whose shape depends on a value only
  known at run time (TILE with non-constant multiples, ...) are dynamic: neither is in the
  arena (`DYNAMIC_UNLESS_CONSTANT`, `persistent_ro`).
* Lifetimes (``PlanAllocations``): a tensor is allocated at the node that first writes it
  (inputs and variables at node 0) and freed after its last reader; subgraph inputs,
  outputs and variables are never freed.
* In place (``IdentifyInPlaceTensors``): RESHAPE, SQUEEZE, EXPAND_DIMS, BITCAST reuse their
  input's memory, and ADD, SUB, MUL, DIV, SOFTMAX, DYNAMIC_UPDATE_SLICE one of their
  inputs', when LiteRT's conditions hold (sizes, last reader, not a subgraph input or
  output).
* Placement (``CalculateAllocations``, ``SimpleMemoryArena::Allocate``): whole-run tensors
  first by index, then by size, largest first, then by first node, ordered with
  libstdc++'s ``std::sort`` (`libstdcxx`); each takes the best-fitting gap among the
  allocations whose lifetimes overlap, at 64-byte alignment.
* The plan is made in chunks: preparation stops after a node with a dynamic output and
  resumes, planning the next nodes around what is still live, when it has run.

Not modelled: kernels' temporary tensors (im2col, hybrid quantization buffers, ...),
which LiteRT adds during Prepare and places in the same arena; `MemoryPlan.notes` says so
when a model has kernels that may add them.
"""
from __future__ import annotations

from ..model import Model
from ..model.opcodes import BUILTIN_CODES, builtin_name
from .facts import MemoryFacts, MemorySubgraphFacts, read_facts
from .plan import Arena, MemoryPlan, PlannedBuffer, peak_step, profile
from .sizes import litert_bytes
from .libstdcxx import std_sort, unordered_set_order

ALIGNMENT = 64       # kDefaultTensorAlignment
NOT_ASSIGNED = 2**31 - 1
_SCALAR_BYTES = 4    # kScalarTensorBytes
_MAX_SHARED_INPUTS = 3
_C = BUILTIN_CODES

# (input slots it may share, data unmodified): LiteRT's inplace_operator flags
INPLACE: dict[int, tuple[tuple[int, ...], bool]] = {
    _C["RESHAPE"]: ((0,), True), _C["SQUEEZE"]: ((0,), True), _C["EXPAND_DIMS"]: ((0,), True),
    _C["BITCAST"]: ((0,), True), _C["SOFTMAX"]: ((0,), False),
    _C["DYNAMIC_UPDATE_SLICE"]: ((0,), False),
    **{_C[n]: ((0, 1), False) for n in ("ADD", "SUB", "MUL", "DIV")},
}

# op -> input slots that must be constant (else the output is dynamic); () = always dynamic
DYNAMIC_UNLESS_CONSTANT: dict[int, tuple[int, ...]] = {
    _C["TILE"]: (1,), _C["PAD"]: (1,), _C["PADV2"]: (1,), _C["MIRROR_PAD"]: (1,),
    _C["FILL"]: (0,), _C["SLICE"]: (1, 2), _C["STRIDED_SLICE"]: (1, 2, 3),
    _C["TRANSPOSE"]: (1,), _C["BROADCAST_TO"]: (1,), _C["SPLIT"]: (0,), _C["SPLIT_V"]: (1, 2),
    _C["EXPAND_DIMS"]: (1,), _C["MEAN"]: (1,), _C["SUM"]: (1,), _C["REDUCE_MAX"]: (1,),
    _C["REDUCE_MIN"]: (1,), _C["REDUCE_PROD"]: (1,), _C["REDUCE_ANY"]: (1,),
    _C["REDUCE_ALL"]: (1,), _C["RESIZE_BILINEAR"]: (1,), _C["RESIZE_NEAREST_NEIGHBOR"]: (1,),
    _C["SPACE_TO_BATCH_ND"]: (1, 2), _C["BATCH_TO_SPACE_ND"]: (1, 2), _C["ONE_HOT"]: (1,),
    _C["ARG_MAX"]: (1,), _C["ARG_MIN"]: (1,), _C["TOPK_V2"]: (1,), _C["TRANSPOSE_CONV"]: (0,),
    _C["SCATTER_ND"]: (2,), _C["SPARSE_TO_DENSE"]: (1,), _C["RANGE"]: (0, 1, 2),
    _C["RFFT2D"]: (1,), _C["RANDOM_UNIFORM"]: (0,), _C["RANDOM_STANDARD_NORMAL"]: (0,),
    _C["UNSORTED_SEGMENT_SUM"]: (2,), _C["UNSORTED_SEGMENT_PROD"]: (2,),
    _C["UNSORTED_SEGMENT_MAX"]: (2,), _C["UNSORTED_SEGMENT_MIN"]: (2,),
    _C["SEGMENT_SUM"]: (1,),
    _C["WHERE"]: (), _C["UNIQUE"]: (), _C["NON_MAX_SUPPRESSION_V4"]: (),
    _C["NON_MAX_SUPPRESSION_V5"]: (), _C["READ_VARIABLE"]: (),
}

# op -> input slots whose being constant (or persistent) makes the output persistent, computed
# at Prepare; None = always (SHAPE, RANK: the shape is known at Prepare)
PERSISTENT_RO: dict[int, tuple[int, ...] | None] = {
    _C["SHAPE"]: None, _C["RANK"]: None, _C["RESHAPE"]: (0, 1), _C["MUL"]: (0, 1),
    _C["GATHER"]: (0, 1), _C["STRIDED_SLICE"]: (0, 1, 2), _C["TILE"]: (0, 1),
    _C["BROADCAST_ARGS"]: (0, 1), _C["RANGE"]: (0, 1, 2),
}

# op -> input slot that must be a constant from the file for the output to be computed
# once and kept in the persistent arena; None = always
TO_PERSISTENT_ARENA: dict[int, int | None] = {
    _C["DEQUANTIZE"]: 0, _C["CAST"]: 0, _C["DENSIFY"]: None, _C["VAR_HANDLE"]: None,
}

# kernels that may add temporaries to the arena (not modelled)
_TEMPORARIES = {_C[n] for n in (
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL",
    "LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "SVDF", "RNN",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN", "SUM", "MEAN", "REDUCE_PROD",
    "CONV_3D", "CONV_3D_TRANSPOSE", "EMBEDDING_LOOKUP", "SELECT_V2", "DEPTH_TO_SPACE")}


class _Tensor:
    """What the planner tracks per tensor: LiteRT's allocation type and its bytes."""

    __slots__ = ("kind", "bytes")

    def __init__(self, kind: str, nbytes: int) -> None:
        self.kind = kind      # "arena", "persistent", "const", "persistent_ro", "dynamic"
        self.bytes = nbytes


def _kinds(sg: MemorySubgraphFacts) -> list[_Tensor]:
    out = []
    for t in range(sg.n_tensors):
        nbytes = litert_bytes(sg.types[t], sg.shapes[t])
        if sg.has_any_data[t]:
            kind = "const"
        elif nbytes is None:
            kind = "dynamic"
        elif sg.is_variable[t]:
            kind = "persistent"
        else:
            kind = "arena"
        out.append(_Tensor(kind, max(nbytes or 0, 0)))
    # what Prepare decides, node by node
    for k in range(sg.n_ops):
        code = sg.op_codes[k]
        ins = sg.op_inputs[k]

        def const(slot: int) -> bool:
            if slot >= len(ins):
                return True
            t = ins[slot]
            return t < 0 or out[t].kind in ("const", "persistent_ro")

        outs = [t for t in sg.op_outputs[k] if 0 <= t < sg.n_tensors]
        if code in TO_PERSISTENT_ARENA:
            slot = TO_PERSISTENT_ARENA[code]
            if slot is None or (slot < len(ins) and ins[slot] >= 0
                                and out[ins[slot]].kind == "const"):
                for t in outs:
                    out[t].kind = "persistent"
                continue
        if code in DYNAMIC_UNLESS_CONSTANT:
            slots = DYNAMIC_UNLESS_CONSTANT[code]
            if not slots or not all(const(s) for s in slots):
                for t in outs:
                    if out[t].kind == "arena":
                        out[t].kind = "dynamic"
                continue
        if code in PERSISTENT_RO:
            slots = PERSISTENT_RO[code]
            if slots is None or all(const(s) for s in slots):
                for t in outs:
                    out[t].kind = "persistent_ro"
        for t in outs:
            if any(d < 0 for d in sg.shapes[t]) and out[t].kind == "arena":
                out[t].kind = "dynamic"
    return out


def plan_litert(model: Model | MemoryFacts, preserve_all_tensors: bool = False) -> MemoryPlan:
    """LiteRT's arenas for every subgraph of ``model`` (builtin kernels, no delegate)."""
    facts = model if isinstance(model, MemoryFacts) else read_facts(model)
    arenas, notes = [], []
    persistent = 0
    temporaries = set()
    for sg in facts.subgraphs:
        arena, persist = _plan_subgraph(sg, preserve_all_tensors)
        arenas.append(arena)
        persistent += persist
        temporaries |= {builtin_name(code) for code in sg.op_codes if code in _TEMPORARIES}
    if temporaries:
        notes.append("kernels' temporary tensors are not modelled; LiteRT may add some for "
                     + ", ".join(sorted(temporaries)) + " in the same arena")
    total = sum(a.size for a in arenas)
    return MemoryPlan("litert", ALIGNMENT, total, persistent, {"persistent arena": persistent},
                      arenas, [], notes)


def _plan_subgraph(sg: MemorySubgraphFacts, preserve: bool) -> tuple[Arena, int]:
    n = sg.n_ops
    info = _kinds(sg)
    alloc = [NOT_ASSIGNED] * sg.n_tensors
    dealloc = [NOT_ASSIGNED] * sg.n_tensors
    nodes_to_tensors: list[list[int]] = [[] for _ in range(max(n, 1))]  # insertion order
    refcounts_ = [0] * sg.n_tensors
    valid = range(sg.n_tensors)

    def allocate(node: int, t: int) -> None:
        if alloc[t] == NOT_ASSIGNED:
            alloc[t] = node

    def deallocate(node: int, t: int) -> None:
        if alloc[t] != NOT_ASSIGNED:
            dealloc[t] = node

    for t in sg.outputs:
        if t in valid:
            refcounts_[t] += 1
    for t in range(sg.n_tensors):
        if sg.is_variable[t]:
            refcounts_[t] += 1
            allocate(0, t)
            nodes_to_tensors[0].append(t)
    for t in sg.inputs:
        if t in valid:
            refcounts_[t] += 1
            allocate(0, t)
            nodes_to_tensors[0].append(t)
    refcounts = list(refcounts_)
    for k in range(n):
        for t in sg.op_inputs[k]:
            if t in valid:
                refcounts_[t] += 1
    shared = _in_place(sg, info, refcounts_, preserve)

    def root(t: int) -> int:
        return shared.get(t, t)

    for k in range(n):
        for t in sg.op_inputs[k]:
            if t in valid:
                refcounts[root(t)] += 1
    for k in range(n):
        for t in sg.op_outputs[k]:
            if t in valid:
                nodes_to_tensors[k].append(t)
                allocate(k, t)
        if not preserve:
            for t in sg.op_inputs[k]:
                if t in valid:
                    r = root(t)
                    refcounts[r] -= 1
                    if refcounts[r] == 0:
                        deallocate(k, r)

    offsets, sizes, persistent_size = _place(sg, info, alloc, dealloc, nodes_to_tensors,
                                             shared)
    buffers = []
    for t, off in offsets.items():
        r = root(t)
        last = dealloc[r] if dealloc[r] != NOT_ASSIGNED else max(n - 1, 0)
        buffers.append(PlannedBuffer(sg.index, t, -1, sg.names[t], info[t].bytes,
                                     sizes[t], alloc[t], last, off,
                                     shares=r if r != t else -1))
    steps = [(sg.index, k) for k in range(n)]
    top_size = max([b.end for b in buffers], default=0)
    live, top = profile([b for b in buffers if b.shares < 0], max(n, 1))
    arena = Arena(sg.index, top_size, buffers, steps, live, top,
                  peak_step(live, top) if n else None)
    return arena, persistent_size


def _in_place(sg: MemorySubgraphFacts, info: list[_Tensor], refcounts_: list[int],
              preserve: bool) -> dict[int, int]:
    """``IdentifyInPlaceTensors``: output -> the input whose memory it reuses."""
    shared: dict[int, int] = {}
    inputs, outputs = set(sg.inputs), set(sg.outputs)
    for k in range(sg.n_ops):
        rule = INPLACE.get(sg.op_codes[k])
        if rule is None or not sg.op_outputs[k]:
            continue
        slots, unmodified = rule
        changed = not unmodified
        out = sg.op_outputs[k][0]
        if not 0 <= out < sg.n_tensors:
            continue
        chosen = -1
        ins = sg.op_inputs[k]
        for i in range(min(_MAX_SHARED_INPUTS, len(ins))):
            t = ins[i]
            if t < 0 or i not in slots or not 0 <= t < sg.n_tensors:
                continue
            if _can_share(info[t], info[out], t, out, changed, refcounts_, inputs, outputs,
                          preserve):
                chosen = t
                break
        if chosen < 0:
            continue
        actual = shared.get(chosen, chosen)
        if changed and refcounts_[actual] > 1:
            continue
        shared[out] = actual
    return shared


def _can_share(x: _Tensor, y: _Tensor, xi: int, yi: int, changed: bool, refcounts_: list[int],
               inputs: set[int], outputs: set[int], preserve: bool) -> bool:
    """``InputTensorCanBeShared``, with allocation types as they are before Prepare."""
    if changed:
        if x.bytes != y.bytes or x.bytes <= _SCALAR_BYTES:
            return False
        if refcounts_[xi] > 1:
            return False
    if xi in inputs or yi in outputs:
        return False
    before = {"persistent_ro": "arena", "dynamic": "arena"}  # both decided later, at Prepare
    xk, yk = before.get(x.kind, x.kind), before.get(y.kind, y.kind)
    if xk != yk and xk != "arena":
        return False
    return not preserve


def _chunks(sg: MemorySubgraphFacts, info: list[_Tensor]) -> list[tuple[int, int]]:
    """Node ranges planned together: preparation stops after a node with a dynamic output."""
    out, start = [], 0
    for k in range(sg.n_ops):
        if any(0 <= t < sg.n_tensors and info[t].kind == "dynamic" for t in sg.op_outputs[k]):
            out.append((start, k))
            start = k + 1
    if start < sg.n_ops or not out:
        out.append((start, max(sg.n_ops - 1, 0)))
    return out


def _place(sg, info, alloc, dealloc, nodes_to_tensors, shared):
    """``CalculateAllocations`` for each chunk, then offsets of the tensors that share."""
    active = _Active(sg.n_ops)
    persistent = _Active(sg.n_ops)
    persistent_size = 0
    offsets: dict[int, int] = {}
    sizes: dict[int, int] = {}
    planned: set[int] = set()
    last_active = NOT_ASSIGNED
    for first, last in _chunks(sg, info):
        todo = []
        for k in range(first, min(last, len(nodes_to_tensors) - 1) + 1):
            for t in unordered_set_order(nodes_to_tensors[k]):
                if t in planned:
                    continue
                if (info[t].kind == "arena" and info[t].bytes > 0) or info[t].kind == "persistent":
                    todo.append(t)
        if not todo:
            last_active = last
            continue
        if first < last_active:
            active.reset()
        else:
            active.purge_before(first)
        last_active = last

        def less(a: int, b: int) -> bool:
            whole_a = alloc[a] == 0 and dealloc[a] == NOT_ASSIGNED
            whole_b = alloc[b] == 0 and dealloc[b] == NOT_ASSIGNED
            if whole_a:
                return (a < b) if whole_b else True
            if whole_b:
                return False
            if info[a].bytes != info[b].bytes:
                return info[a].bytes > info[b].bytes
            return alloc[a] < alloc[b]

        std_sort(todo, less)
        for t in todo:
            planned.add(t)
            if info[t].kind == "persistent":
                off = persistent.allocate(info[t].bytes, alloc[t], NOT_ASSIGNED)
                persistent_size = max(persistent_size, off + info[t].bytes)
                continue
            r = shared.get(t)
            if r is not None and info[r].kind == "arena" and info[r].bytes == info[t].bytes:
                continue  # shares its input's memory
            if r is not None:
                shared.pop(t)
            offsets[t] = active.allocate(info[t].bytes, alloc[t], dealloc[t])
            sizes[t] = info[t].bytes
    for t, r in list(shared.items()):
        base = r
        while base in shared:
            base = shared[base]
        if base in offsets and t in planned:
            offsets[t] = offsets[base]
            sizes[t] = info[t].bytes
    return offsets, sizes, persistent_size


class _Active:
    """``SimpleMemoryArena``'s active allocations, also kept in per-node buckets so that an
    allocation looks only at those whose lifetimes overlap its own (LiteRT scans them all
    and skips the others; the offsets are the same)."""

    def __init__(self, n_nodes: int) -> None:
        self.horizon = max(n_nodes, 1)  # a lifetime reaching NOT_ASSIGNED ends here
        self.reset()

    def reset(self) -> None:
        self.entries: list[tuple[int, int, int, int, int]] = []  # offset, size, first, last, seq
        self.buckets: dict[int, list[int]] = {}
        self.seq = 0

    def purge_before(self, node: int) -> None:
        """``PurgeActiveAllocs``: drop allocations that ended before ``node``."""
        kept = [e for e in self.entries if e[3] >= node]
        if len(kept) != len(self.entries):
            self.entries, self.buckets = [], {}
            for e in kept:
                self._add(e)

    def _span(self, first: int, last: int) -> range:
        return range(max(first, 0), min(last, self.horizon) + 1)

    def _add(self, e: tuple[int, int, int, int, int]) -> None:
        i = len(self.entries)
        self.entries.append(e)
        for t in self._span(e[2], e[3]):
            self.buckets.setdefault(t, []).append(i)

    def allocate(self, size: int, first: int, last: int) -> int:
        """``SimpleMemoryArena::Allocate``: the best-fitting gap among overlapping allocations."""
        if size == 0:
            return 0
        span = self._span(first, last)
        if len(span) * 4 > len(self.entries):
            live = [e for e in self.entries if not (e[3] < first or e[2] > last)]
        else:
            seen: set[int] = set()
            live = []
            for t in span:
                for i in self.buckets.get(t, ()):
                    if i not in seen:
                        seen.add(i)
                        live.append(self.entries[i])
        live.sort(key=lambda e: (e[0], e[4]))  # by offset; equal offsets in insertion order
        best, best_fit = None, None
        current = 0
        for off, sz, _f, _l, _s in live:
            aligned = -(-current // ALIGNMENT) * ALIGNMENT
            if aligned + size <= off and (best_fit is None or off - aligned < best_fit):
                best = aligned
                best_fit = off - current
            current = max(current, off + sz)
            if best_fit == 0:
                break
        if best is None:
            best = -(-current // ALIGNMENT) * ALIGNMENT
        self._add((best, size, first, last, self.seq))
        self.seq += 1
        return best
