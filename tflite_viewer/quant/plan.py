"""What an analysis runs: for each entry of the quantized model (`runner.entries`), its
float counterpart, the samples and the two runners, each model fed its own inputs by name.

`plan` makes the runs of `analysis.analyze`; `make_samples` the samples of one entry;
`input_order` which of a sample's arrays feeds each input of the other model;
`pair_problem` says why a float model cannot be the quantized model's original.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from ..interpreter.inputs import InputError, InputSpec, input_specs
from ..model import Model
from . import samples as smp
from .pairing import Pairing
from .runner import Entry, ModelRunner, entries, first_entry, reached_subgraphs


def pair_problem(qm: Model, fm: Model, signature: str | None = None) -> str | None:
    """Why ``fm`` cannot be the float original of ``qm``, or None: their first subgraphs
    (or ``signature``'s, in both when the float model has it) must take as many inputs,
    of the same shapes (-1 in a shape signature matches any size), and give as many
    outputs."""
    qs, fs = qm.subgraphs[0], fm.subgraphs[0]
    if signature is not None:
        qs = qm.subgraphs[qm.signature(signature).subgraph_index]
        if any(s.key == signature for s in fm.signature_defs):
            fs = fm.subgraphs[fm.signature(signature).subgraph_index]
    if len(qs.inputs) != len(fs.inputs):
        return (f"the quantized model takes {len(qs.inputs)} input(s), the float model "
                f"{len(fs.inputs)}")
    for i, (a, b) in enumerate(zip(qs.inputs, fs.inputs)):
        ta, tb = qs.tensors[a], fs.tensors[b]
        sa = tuple(ta.shape_signature if ta.shape_signature is not None else ta.shape)
        sb = tuple(tb.shape_signature if tb.shape_signature is not None else tb.shape)
        if len(sa) != len(sb) or any(x != y and x != -1 and y != -1 for x, y in zip(sa, sb)):
            return (f"input {i} is {ta.name!r} {list(ta.shape)} in the quantized model but "
                    f"{tb.name!r} {list(tb.shape)} in the float model")
    if len(qs.outputs) != len(fs.outputs):
        return (f"the quantized model gives {len(qs.outputs)} output(s), the float model "
                f"{len(fs.outputs)}")
    return None


def make_samples(model: Model, float_model: Model | None, *, count: int = 10, seed: int = 0,
                 npz: str | os.PathLike | None = None, images: str | os.PathLike | None = None,
                 given: Sequence | None = None, signature: str | None = None
                 ) -> list[smp.Sample]:
    """The samples of an analysis: given arrays (inputs of ``model``, the quantized one:
    a debugger session's Inputs, integers for its quantized inputs), a .npz, an image
    folder, else seeded ones (from the float model when there is one: its inputs are what
    the data looks like), for the inputs of subgraph 0 or of ``signature``."""
    source = float_model if float_model is not None else model
    if given is not None:
        got = smp.given_samples(model, given, signature)
        return got[:count] if count else got
    if npz is not None:
        return smp.npz_samples(model, npz, count, signature)
    if images is not None:
        return smp.image_samples(model, images, count, signature)
    return smp.seeded_samples(source, count, seed, signature)


@dataclass
class Run:
    """One entry of the quantized model, its float counterpart, samples and runners.

    ``samples`` are in the order of one model's entry inputs (``source``); ``q_order`` and
    ``f_order`` pick each runner's inputs from a sample (`input_order`), so the two models
    get the same values for the same named input even when their inputs are listed in
    other orders."""

    entry: Entry
    covers: frozenset[int]               # the subgraphs compared on this run
    samples: list[smp.Sample]
    qrun: ModelRunner
    frun: ModelRunner | None
    out_pairs: list[tuple[int, tuple[int, int]]]   # (quantized output, float (sg, tensor))
    q_order: list[int] | None = None
    f_order: list[int] | None = None


def input_order(src: list[InputSpec], dst: list[InputSpec],
                partner: Callable[[InputSpec], tuple[int, int] | None] | None = None
                ) -> list[int] | None:
    """For each input of ``dst``, the index of the ``src`` input that feeds it: same name
    (signature input name, else tensor name), else the tensor ``partner`` pairs it with
    ((subgraph, tensor) of ``src``), else the same position.  None when that is the
    identity; an `InputError` when an input finds no source."""
    by_name = {s.name: k for k, s in enumerate(src)}
    by_tensor = {(s.subgraph, s.tensor): k for k, s in enumerate(src)}
    order = []
    for pos, d in enumerate(dst):
        k = by_name.get(d.name)
        if k is None and partner is not None:
            k = by_tensor.get(partner(d) or (-1, -1))
        if k is None and len(src) == len(dst):
            k = pos
        if k is None:
            raise InputError(f"input {d.name!r} {d.describe()}: no input of the other model "
                             f"feeds it (those are {', '.join(repr(s.name) for s in src)})")
        order.append(k)
    return None if order == list(range(len(src))) else order


def float_entry(qm: Model, fm: Model, entry: Entry, pairing: Pairing) -> Entry | None:
    """The float model's entry that runs what ``entry`` runs in the quantized one: the
    same signature, else the paired subgraph (subgraph 0, or a signature of it)."""
    if entry.signature is not None and any(s.key == entry.signature
                                           for s in fm.signature_defs):
        k = fm.signature(entry.signature).subgraph_index
        return Entry(entry.signature, k, reached_subgraphs(fm, k))
    k = pairing.subgraphs.get(entry.subgraph)
    if k is None:
        return None
    if k == 0:
        return Entry(None, 0, reached_subgraphs(fm, 0))
    key = next((s.key for s in fm.signature_defs if s.subgraph_index == k), None)
    return None if key is None else Entry(key, k, reached_subgraphs(fm, k))


def plan(qm: Model, fm: Model | None, pairing: Pairing | None, backend: str, *, count: int,
         seed: int, npz, images, given, signature: str | None, float_sums: str,
         only: bool = False) -> list[Run]:
    """The runs of an analysis: the entry of ``signature`` (default: subgraph 0's) fed the
    samples supplied, then (unless ``only``) every other entry on seeded samples."""
    runs: list[Run] = []
    covered: set[int] = set()
    first = first_entry(qm, signature)  # the supplied samples' entry first
    todo = [first] + ([] if only else [e for e in entries(qm) if e.subgraph != first.subgraph])
    for n, e in enumerate(todo):
        covers = frozenset(e.reached - covered)
        if not covers:
            continue
        covered |= covers
        fe = float_entry(qm, fm, e, pairing) if fm is not None else None
        supplied = n == 0 and (given is not None or npz is not None or images is not None)
        if supplied:  # in the quantized entry's order
            batch = make_samples(qm, None, count=count, seed=seed, npz=npz, images=images,
                                 given=given, signature=e.signature)
        else:  # seeded, for the float entry's inputs when there is one (what data is like)
            batch = smp.seeded_samples(fm if fe is not None else qm, count, seed,
                                       fe.signature if fe is not None else e.signature)
        run = make_run(qm, fm, pairing, e, fe, backend, float_sums, covers, batch)
        if fe is not None:
            qspecs, fspecs = input_specs(qm, e.signature), input_specs(fm, fe.signature)
            if not supplied:   # samples in the float entry's order
                run.q_order = input_order(fspecs, qspecs, lambda q: pairing.partner(
                    (q.subgraph, q.tensor)))
            else:                   # samples in the quantized entry's order
                back = {v[0]: k for k, v in pairing.tensors.items()}
                run.f_order = input_order(qspecs, fspecs,
                                          lambda f: back.get((f.subgraph, f.tensor)))
        runs.append(run)
    return runs


def make_run(qm: Model, fm: Model | None, pairing: Pairing | None, e: Entry,
             fe: Entry | None, backend: str, float_sums: str, covers: frozenset[int],
             batch: list[smp.Sample]) -> Run:
    """The run of quantized entry ``e`` (and float entry ``fe``) on ``batch``; its inputs
    are fed in each runner's own order (the caller sets `Run.q_order`/`f_order`)."""
    qsg = qm.subgraphs[e.subgraph]
    outs = [(qi, pairing.tensors[(e.subgraph, qi)][0]) for qi in qsg.outputs
            if pairing is not None and (e.subgraph, qi) in pairing.tensors] \
        if fe is not None else []
    return Run(e, covers, batch, ModelRunner(qm, backend, e, float_sums),
               ModelRunner(fm, backend, fe, float_sums) if fe is not None else None, outs)
