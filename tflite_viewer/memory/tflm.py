"""TFLite Micro's tensor arena for a model, computed as TFLM computes it.

``MicroAllocator::CommitStaticMemoryPlan`` (micro_allocator.cc) builds one
``AllocationInfo`` per tensor of every subgraph and per scratch buffer, marks lifetimes
(`tflm_lifetimes`), hands the buffers that need arena memory to ``GreedyMemoryPlanner``
(`greedy`) with their sizes rounded up to ``MicroArenaBufferAlignment()`` (16), and
reserves the plan's maximum as the arena's *head*, which RecordingMicroAllocator prints as
"Arena allocation head".  A tensor needs arena memory when it has no buffer bytes in the
file, is not a variable, and is not empty.  Variables go to the persistent *tail* unless
the offline plan places them.

The tail here is a lower bound: the parts computed from the model (variables, one
``TfLiteEvalTensor`` per tensor, one ``NodeAndRegistration`` per operator, for the
pointer size given); kernels' own persistent data (``OpData``) is not modelled.
"""
from __future__ import annotations

from ..model import Model
from ..model.opcodes import BUILTIN_CODES
from .facts import MemoryFacts, read_facts
from .greedy import ONLINE, overlaps, plan_greedy
from .offline import check_offline, header, read_offline
from .plan import Arena, MemoryPlan, OfflineCheck, PlannedBuffer, peak_step, profile
from .sizes import align_up, tflm_bytes
from .tflm_lifetimes import UNMARKED, Lifetimes, mark_lifetimes
from .tflm_scratch import scratch_requests

ALIGNMENT = 16  # MicroArenaBufferAlignment()
RESHAPE = BUILTIN_CODES["RESHAPE"]
VAR_HANDLE = BUILTIN_CODES["VAR_HANDLE"]


def plan_tflm(model: Model | MemoryFacts, pointer_bytes: int = 4,
              orders: dict[int, list[int]] | None = None,
              offline: bool | list[int] = True) -> MemoryPlan:
    """TFLM's plan of ``model``.

    ``pointer_bytes``: 4 for 32-bit microcontrollers, 8 for a 64-bit host such as the
    ``tflite-micro`` Python package (ADD_N's scratch and the tail's structs depend on it).
    ``orders``: execute subgraph S's operators in ``orders[S]`` (file indices) instead.
    ``offline``: use the model's OfflineMemoryAllocation when it has one (as TFLM does);
    False ignores it; a list of offsets plans as if the model carried that one.
    """
    facts = model if isinstance(model, MemoryFacts) else read_facts(model)
    for s, order in (orders or {}).items():
        facts = facts.with_order(s, order)
    problems: list[str] = []
    notes: list[str] = []
    shapes = [_prepared_shapes(sg, problems) for sg in facts.subgraphs]
    requests = scratch_requests(facts, pointer_bytes)
    life = mark_lifetimes(facts, requests)
    problems += life.problems
    if facts.offset_buffers:
        notes.append("some buffers are stored after the flatbuffer (> 2 GB layout); TFLM reads "
                     "only inline buffer data, so those tensors would be planned in the arena")

    offsets, check = None, None
    if isinstance(offline, list):
        offsets = list(offline)
        check = check_offline(offsets, facts.total_tensors, ALIGNMENT)
        if check.errors:
            problems += [f"offline plan: {e}" for e in check.errors]
            offsets = None
    elif offline:
        offsets, errors = read_offline(facts.model)
        if errors or offsets is not None:
            check = check_offline(offsets or [], facts.total_tensors, ALIGNMENT)
            check.errors[:0] = errors
            check.version, check.subgraphs = header(facts.model)
            if check.errors:
                problems += [f"offline plan: {e}" for e in check.errors]
                offsets = None

    # VAR_HANDLE's Prepare points its output at the resource id in its own persistent data,
    # so that output already has data when the plan is made (var_handle.cc)
    prepared = {(sg.index, t) for sg in facts.subgraphs for k in range(sg.n_ops)
                if sg.op_codes[k] == VAR_HANDLE for t in sg.op_outputs[k]}
    sizes, firsts, lasts, fixed, meta = [], [], [], [], []
    variables: list[int] = []
    flat = 0
    for sg, shp in zip(facts.subgraphs, shapes):
        for t in range(sg.n_tensors):
            off = offsets[flat] if offsets is not None else ONLINE
            flat += 1
            nbytes = tflm_bytes(sg.types[t], shp[t])
            if nbytes is None:
                if not sg.has_data[t]:
                    problems.append(f"subgraphs[{sg.index}].tensors[{t}]: TFLM has no size for "
                                    f"type {sg.types[t]} and refuses the model")
                continue
            nbytes = max(nbytes, 0)
            needs = (not sg.has_data[t] and not sg.is_variable[t] and nbytes != 0
                     and (sg.index, t) not in prepared)
            if sg.is_variable[t]:
                if off != ONLINE:
                    needs = True
                    if check is not None:
                        check.warnings.append(
                            f"variable subgraphs[{sg.index}].tensors[{t}] is placed in the head "
                            "at an offline offset: TFLM plans it like an activation, so other "
                            "buffers may overwrite its state between invocations")
                else:
                    variables.append(nbytes)
            if not needs:
                continue
            sizes.append(align_up(nbytes, ALIGNMENT))
            firsts.append(life.first[sg.index][t])
            lasts.append(life.last[sg.index][t])
            fixed.append(off)
            meta.append((sg.index, t, -1, sg.names[t], nbytes))
    problems += _add_scratch(requests, life, facts, (sizes, firsts, lasts, fixed, meta))
    _check_intermediates(facts, shapes, problems)

    too_big = [m for m, size in zip(meta, sizes) if size >= 2**31]
    if too_big:
        s_, t_, op_, name_, _ = too_big[0]
        problems.append(f"subgraphs[{s_}].{'tensors' if t_ >= 0 else 'operators'}"
                        f"[{t_ if t_ >= 0 else op_}] ({name_!r}) needs 2 GiB or more; TFLM's "
                        "planner holds sizes and offsets as int and cannot plan this model")
    result = plan_greedy(sizes, firsts, lasts, fixed)
    buffers = [PlannedBuffer(s, t, op, name, nbytes, size, f, l_, o, fx != ONLINE)
               for (s, t, op, name, nbytes), size, f, l_, o, fx
               in zip(meta, sizes, firsts, lasts, result.offsets, fixed)]
    if check is not None and offsets is not None:
        _check_overlaps(check, buffers)
    arena = _arena(buffers, life, facts, result.max_size)
    tail_parts = _tail(facts, sum(variables), pointer_bytes)
    tail = (sum(align_up(v, ALIGNMENT) for v in variables) + tail_parts["TfLiteEvalTensor"]
            + tail_parts["NodeAndRegistration"])
    return MemoryPlan("tflm", ALIGNMENT, result.max_size, tail, tail_parts, [arena], problems,
                      notes, check)


def _add_scratch(requests, life: Lifetimes, facts: MemoryFacts, columns: tuple) -> list[str]:
    """Append the scratch buffers to the planner's columns (sizes, firsts, lasts, fixed
    offsets, descriptions); the problem with those TFLM never sizes, if any."""
    sizes, firsts, lasts, fixed, meta = columns
    unplanned: list[str] = []  # operators whose scratch buffers TFLM never sizes
    for i, req in enumerate(requests):
        sg = facts.subgraphs[req.subgraph]
        if life.scratch_first[i] == UNMARKED:
            where = f"subgraphs[{req.subgraph}].operators[{sg.original[req.op]}]"
            if where not in unplanned:
                unplanned.append(where)
        sizes.append(align_up(req.bytes, ALIGNMENT))
        firsts.append(life.scratch_first[i])
        lasts.append(life.scratch_last[i])
        fixed.append(ONLINE)
        meta.append((req.subgraph, -1, sg.original[req.op], f"scratch: {req.what}", req.bytes))
    return [_unplanned(unplanned, life, facts)] if unplanned else []


def _unplanned(where: list[str], life: Lifetimes, facts: MemoryFacts) -> str:
    """One problem for every scratch buffer in the subgraphs TFLM never reaches."""
    unreached = [sg.index for sg in facts.subgraphs if all(s != sg.index for s, _ in life.steps)]
    shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
    return (f"{shown}: scratch buffers in subgraphs no control flow reaches from subgraph 0 "
            f"({_list(unreached)}); TFLM never runs them, and reads an uninitialised size "
            "for their scratch buffers")


def unreached_subgraphs(plan: MemoryPlan) -> list[int]:
    """The subgraphs of ``plan`` TFLM never reaches from subgraph 0 (planned at step -1)."""
    a = plan.arena
    return sorted({b.subgraph for b in a.buffers if b.last < 0}
                  - {s for s, _ in a.steps})


def _list(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:8])) + (f", ... ({len(ids)} in all)" if len(ids) > 8 else "")


def _arena(buffers: list[PlannedBuffer], life: Lifetimes, facts: MemoryFacts, size: int) -> Arena:
    steps = [(s, facts.subgraphs[s].original[k] if k >= 0 else -1) for s, k in life.steps]
    base = min([0] + [b.first for b in buffers])
    live, top = profile(buffers, len(steps) - base, base)
    peak = peak_step(live, top, base)
    return Arena(None, size, buffers, steps, live, top, peak, base)


def _prepared_shapes(sg, problems: list[str]) -> list[tuple[int, ...]]:
    """Tensor shapes after Prepare: RESHAPE resolves a -1 (and a legacy [0] scalar) in its
    output; any other negative dimension is a dynamic tensor TFLM refuses."""
    shapes = list(sg.shapes)
    for k in range(sg.n_ops):
        if sg.op_codes[k] != RESHAPE or not sg.op_outputs[k] or not sg.op_inputs[k]:
            continue
        out, x = sg.op_outputs[k][0], sg.op_inputs[k][0]
        if not (0 <= out < sg.n_tensors and 0 <= x < sg.n_tensors):
            continue
        shape = shapes[out]
        if len(sg.op_inputs[k]) == 1 and shape == (0,):
            shapes[out] = ()
        elif shape.count(-1) == 1:
            known = 1
            for d in shape:
                known *= d if d != -1 else 1
            total = 1
            for d in shapes[x]:
                total *= d
            shapes[out] = tuple(total // known if known and d == -1 else d for d in shape)
    for k in range(sg.n_ops):
        for t in sg.op_outputs[k]:
            if 0 <= t < sg.n_tensors and any(d <= 0 for d in shapes[t]) and shapes[t] != (0,):
                problems.append(f"subgraphs[{sg.index}].tensors[{t}] ({sg.names[t]!r}) has "
                                f"shape {list(shapes[t])}: a dynamic tensor, which TFLM refuses")
    return shapes


def _check_intermediates(facts: MemoryFacts, shapes, problems: list[str]) -> None:
    for sg in facts.subgraphs:
        for k, ids in sg.op_intermediates.items():
            for t in ids:
                if 0 <= t < sg.n_tensors and (tflm_bytes(sg.types[t], shapes[sg.index][t]) or 0):
                    problems.append(f"subgraphs[{sg.index}].operators[{sg.original[k]}]: "
                                    f"intermediate tensor {t} is not empty; TFLM refuses it")


def _check_overlaps(check: OfflineCheck, buffers: list[PlannedBuffer]) -> None:
    """Offline-placed tensors that are live together and share bytes."""
    fixed = [b for b in buffers if b.offline]
    pairs = overlaps([b.size for b in fixed], [b.first for b in fixed],
                     [b.last for b in fixed], [b.offset for b in fixed])
    for i, j in pairs[:10]:
        a, b = fixed[i], fixed[j]
        check.warnings.append(
            f"subgraphs[{a.subgraph}].tensors[{a.tensor}] [{a.offset}, {a.end}) and "
            f"subgraphs[{b.subgraph}].tensors[{b.tensor}] [{b.offset}, {b.end}) are live together "
            f"(steps {max(a.first, b.first)}..{min(a.last, b.last)}) and overlap")
    if len(pairs) > 10:
        check.warnings.append(f"... {len(pairs) - 10} more overlapping pairs")


def _tail(facts: MemoryFacts, variables: int, pointer_bytes: int) -> dict[str, int]:
    """Persistent bytes computed from the model, as TFLM requests them (RecordingMicroAllocator
    prints them per category): variable buffers, the ``TfLiteEvalTensor`` array (data and
    dims pointers and a type) and the ``NodeAndRegistration`` array of each subgraph.  The
    struct sizes are those of a 64-bit host (the Python package) or a 32-bit target."""
    eval_tensor = 24 if pointer_bytes == 8 else 12
    node = 64 if pointer_bytes == 8 else 32
    return {
        "variables": variables,
        "TfLiteEvalTensor": sum(sg.n_tensors * eval_tensor for sg in facts.subgraphs),
        "NodeAndRegistration": sum(sg.n_ops * node for sg in facts.subgraphs),
    }
