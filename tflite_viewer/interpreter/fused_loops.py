"""WHILE loops recognised as a standard Keras LSTM layer and run as one compiled step.

A Keras ``LSTM`` converted by the TFLite converter without the fused LSTM op becomes a
WHILE whose body computes one time step in 19 to 26 small operators (two FULLY_CONNECTED,
a SPLIT into the four gates, LOGISTIC, TANH, MUL, ADD, and the bookkeeping of the loop
counter, the time index and the output sequence). Run op by op, each step costs the
interpreter's per-op overhead 20 to 26 times; run here, a step is the same numpy calls
in the same order, with nothing in between.

`match_keras_lstm` accepts a (cond, body) pair only when it is exactly that structure:
the cond compares the counter and the time index with constants; the body's operators,
their wiring, their options (no fused activation, no bias on the two products, gates
split in four along the last axis) and its constants are checked one by one, the weights
and bias are constant float32 tensors, and the output sequence is either written at the
time index (``return_sequences``: SLICE, SLICE, CONCATENATION) or is the last ``h``. Any
other WHILE runs op by op, as does this one whenever something watches its operators
(stepping, breakpoints, hooks).

The step computes what the body's kernels compute, in the same order and with the same
numpy functions (the FULLY_CONNECTED kernel's float product of the transposed view of the
weights it multiplies by -- `float32.ordered_matmul` unless `Interpreter.reference_float_sums`
is off -- or the hybrid kernel's function for int8 weights, `activations.logistic`,
``np.tanh``), so its results equal the op-by-op path's bit for bit;
``tests/interpreter/test_fused_loops.py`` checks that on the corpus models (lstm_float,
and lstm_dynamic with int8 weights).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from .kernels.activations import logistic
from .tensor import AllocationType

if TYPE_CHECKING:
    from .subgraph import Subgraph

#: the operators of one step, in the body's order (after them: the sequence bookkeeping)
_STEP_OPS = ("ADD", "ADD", "FULLY_CONNECTED", "RESHAPE", "GATHER", "FULLY_CONNECTED", "ADD",
             "ADD", "SPLIT", "LOGISTIC", "LOGISTIC", "MUL", "LOGISTIC", "TANH", "MUL", "ADD",
             "TANH", "MUL")
_SCATTER_OPS = ("RESHAPE", "CONCATENATION", "SLICE", "RESHAPE", "CONCATENATION", "SLICE",
                "RESHAPE", "CONCATENATION")


@dataclass
class KerasLstmLoop:
    """The constants of one recognised loop and the step that runs it."""

    counter_limit: int
    time_limit: int
    counter_step: int
    time_step: int
    recurrent: Callable[[np.ndarray], np.ndarray]  # h -> its FULLY_CONNECTED product [rows, 4u]
    inputs: Callable[[np.ndarray], np.ndarray]  # x_t -> its FULLY_CONNECTED product
    units: int
    bias: np.ndarray  # [4u]
    scatter: bool  # the sequence output gets h at the time index (else it is the last h)
    sequence_shape: tuple[int, ...]
    #: float32 input weights, transposed (None: int8 weights, through the hybrid kernel)
    input_w_t: np.ndarray | None = None
    #: the float product of the body's FULLY_CONNECTED kernel: (rows, transposed weights)
    float_product: Callable[[np.ndarray, np.ndarray], np.ndarray] = np.matmul
    #: per input shape: whether one product of the whole sequence equals its per-step ones
    _batch_exact: dict = field(default_factory=dict, init=False, repr=False)

    def _input_products(self, x: np.ndarray) -> np.ndarray | None:
        """``x[t] @ W.T`` for every t in one product, when that gives the per-step
        products bit for bit (else None: the loop multiplies step by step).

        BLAS may add in another order for a taller matrix, and the order depends on the
        shapes only, never on the values; so whether the orders agree is found once per
        input shape, on random values of that shape (one differing bit in any of the
        products means they do not).  Float32 weights only: the hybrid kernel's integer
        sums are exact in any order but it quantizes each step's row on its own."""
        w_t = self.input_w_t
        if w_t is None or x.ndim != 3:
            return None
        product = self.float_product
        key = (x.shape, getattr(product, "mode", lambda: None)())
        exact = self._batch_exact.get(key)
        if exact is None:
            probe = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)
            whole = product(probe.reshape(-1, probe.shape[-1]), w_t)
            steps = np.concatenate([product(probe[t], w_t) for t in range(probe.shape[0])])
            exact = self._batch_exact[key] = bool(
                np.array_equal(whole.view(np.uint32), steps.view(np.uint32)))
        if not exact:
            return None
        return product(x.reshape(-1, x.shape[-1]), w_t).reshape(x.shape[0], x.shape[1], -1)

    def run(self, values: list[np.ndarray], iteration: Callable[[int], None]) -> list[np.ndarray]:
        """The loop from the WHILE's inputs to its outputs; ``iteration(count)`` is called
        before each iteration's condition, as the WHILE kernel calls the budget."""
        counter_in, time_in, seq, h, c, x = values
        counter, t = int(counter_in), int(time_in)
        recurrent, inputs, bias, u = self.recurrent, self.inputs, self.bias, self.units
        out_seq = seq.copy() if self.scatter else seq
        row_shape = out_seq.shape[1:]
        # the gate pre-activations and their logistic in two buffers reused by every step,
        # with the gate views taken once (the step's values are those of fresh arrays)
        rows = h.shape[0]
        z = np.empty((rows, 4 * u), np.float32)
        s = np.empty((rows, 4 * u), np.float32)
        z_g = z[:, 2 * u:3 * u]
        s_i, s_f, s_o = s[:, :u], s[:, u:2 * u], s[:, 3 * u:]
        products = self._input_products(x)
        count = 0
        while True:
            count += 1
            iteration(count)
            if not (counter < self.counter_limit and t < self.time_limit):
                break
            if not 0 <= t < x.shape[0]:
                raise IndexError(f"GATHER index out of range [0, {x.shape[0]})")
            # FULLY_CONNECTED(x_t); then ADD(., FULLY_CONNECTED(h)), ADD bias
            np.add(inputs(x[t]) if products is None else products[t], recurrent(h), out=z)
            np.add(z, bias, out=z)
            # LOGISTIC of the i, f, o gates and TANH of g are elementwise: one call each on
            # the whole gate row gives the same numbers as the body's one call per gate
            s[...] = logistic(z)
            g = np.tanh(z_g)
            c = s_f * c
            c += s_i * g
            h = np.tanh(c)
            np.multiply(s_o, h, out=h)
            if self.scatter:
                if not 0 <= t < out_seq.shape[0]:
                    raise IndexError(f"SLICE: time index {t} outside the sequence")
                out_seq[t] = h if h.shape == row_shape else h.reshape(row_shape)
            counter += self.counter_step
            t += self.time_step
        if not self.scatter and count > 1:
            out_seq = h.reshape(self.sequence_shape)
        itype = counter_in.dtype
        return [np.asarray(counter, itype), np.asarray(t, time_in.dtype), out_seq, h, c, x]


def match_keras_lstm(cond: "Subgraph", body: "Subgraph") -> KerasLstmLoop | None:
    """The loop if (cond, body) is the standard Keras LSTM step, else None."""
    try:
        return _match(cond, body)
    except (IndexError, KeyError, TypeError, ValueError, AttributeError):
        return None


def _const(sg: "Subgraph", t: int) -> np.ndarray | None:
    if t < 0:
        return None
    tensor = sg.tensors[t]
    if tensor.allocation_type is not AllocationType.MMAP_RO or tensor.data is None:
        return None
    return tensor.data


def _no_activation(node) -> bool:
    return node.builtin_data.get("fused_activation_function", "NONE") in ("NONE", None, 0)


def _match_cond(cond: "Subgraph") -> tuple[int, int] | None:
    nodes = cond.nodes
    if [n.name for n in nodes] != ["LESS", "LESS", "LOGICAL_AND"] or len(cond.inputs) != 6:
        return None
    a, b, both = nodes
    p = cond.inputs
    if a.inputs[0] != p[0] or b.inputs[0] != p[1]:
        return None
    ka, kb = _const(cond, a.inputs[1]), _const(cond, b.inputs[1])
    if ka is None or kb is None or ka.size != 1 or kb.size != 1:
        return None
    if sorted(both.inputs) != sorted((a.outputs[0], b.outputs[0])) or cond.outputs != both.outputs:
        return None
    return int(ka.reshape(-1)[0]), int(kb.reshape(-1)[0])


def _match(cond: "Subgraph", body: "Subgraph") -> KerasLstmLoop | None:
    limits = _match_cond(cond)
    if limits is None or len(body.inputs) != 6 or len(body.outputs) != 6:
        return None
    nodes = body.nodes
    names = tuple(n.name for n in nodes)
    if names[:len(_STEP_OPS)] != _STEP_OPS:
        return None
    tail = names[len(_STEP_OPS):]
    if tail == _SCATTER_OPS:
        scatter = True
    elif tail == ("RESHAPE",):
        scatter = False
    else:
        return None
    p = body.inputs  # counter, time, sequence, h, c, x
    T = body.tensors
    ctr, tim, rh, rh_flat, xt, rx, z0, z, split, si, sf, fc, so, sg_, ig, c2, tc, h2 = nodes[:18]

    def ins(n, *want) -> bool:
        return tuple(n.inputs) == tuple(want)

    one_c, one_t = _const(body, ctr.inputs[1]), _const(body, tim.inputs[1])
    w_h, w_x = _const(body, rh.inputs[1]), _const(body, rx.inputs[1])
    bias = _const(body, z.inputs[1])
    axis = _const(body, split.inputs[0])
    checks = [
        ctr.inputs[0] == p[0] and one_c is not None and one_c.size == 1,
        tim.inputs[0] == p[1] and one_t is not None and one_t.size == 1,
        len(rh.inputs) == 3 and rh.inputs[0] == p[3] and rh.inputs[2] < 0 and w_h is not None,
        rh_flat.inputs[0] == rh.outputs[0],
        ins(xt, p[5], p[1]) and int(xt.builtin_data.get("axis", 0) or 0) == 0
        and int(xt.builtin_data.get("batch_dims", 0) or 0) == 0,
        len(rx.inputs) == 3 and rx.inputs[0] == xt.outputs[0] and rx.inputs[2] < 0 and w_x is not None,
        sorted(z0.inputs) == sorted((rx.outputs[0], rh_flat.outputs[0])),
        z.inputs[0] == z0.outputs[0] and bias is not None,
        split.inputs[1] == z.outputs[0] and axis is not None and axis.size == 1
        and len(split.outputs) == 4,
        ins(si, split.outputs[0]), ins(sf, split.outputs[1]), ins(so, split.outputs[3]),
        ins(sg_, split.outputs[2]),
        sorted(fc.inputs) == sorted((sf.outputs[0], p[4])),
        sorted(ig.inputs) == sorted((si.outputs[0], sg_.outputs[0])),
        sorted(c2.inputs) == sorted((fc.outputs[0], ig.outputs[0])),
        ins(tc, c2.outputs[0]),
        sorted(h2.inputs) == sorted((so.outputs[0], tc.outputs[0])),
        all(_no_activation(n) for n in (ctr, tim, rh, rx, z0, z, fc, ig, c2, h2)),
        all(not n.builtin_data.get("keep_num_dims") for n in (rh, rx)),
    ]
    if not all(checks):
        return None
    floats = [T[i] for i in (p[2], p[3], p[4], p[5], z.inputs[1])]
    if any(t.dtype != np.float32 for t in floats):
        return None
    recurrent, inputs = _product(body, rh, w_h), _product(body, rx, w_x)
    if recurrent is None or inputs is None:
        return None
    u4, u = w_h.shape
    if w_h.ndim != 2 or u4 != 4 * u or w_x.ndim != 2 or w_x.shape[0] != u4 or bias.shape != (u4,):
        return None
    h_shape, c_shape, x_shape = T[p[3]].shape, T[p[4]].shape, T[p[5]].shape
    if h_shape is None or c_shape != h_shape or len(h_shape) != 2 or h_shape[1] != u \
            or x_shape is None or len(x_shape) != 3 or x_shape[2] != w_x.shape[1] \
            or x_shape[1] != h_shape[0] or int(axis.reshape(-1)[0]) not in (1, -1):
        return None
    seq_shape = T[p[2]].shape
    outs = body.outputs
    if outs[0] != ctr.outputs[0] or outs[1] != tim.outputs[0] or outs[3] != h2.outputs[0] \
            or outs[4] != c2.outputs[0] or outs[5] != p[5]:
        return None
    if scatter:
        if not _match_scatter(body, nodes[18:], p, tim.outputs[0], h2.outputs[0], outs[2]):
            return None
        if seq_shape is None or len(seq_shape) != 3 or tuple(seq_shape[1:]) != tuple(h_shape):
            return None
    else:
        (last,) = nodes[18:]
        if last.inputs[0] != h2.outputs[0] or outs[2] != last.outputs[0] or seq_shape is None \
                or int(np.prod(seq_shape)) != int(np.prod(h_shape)):
            return None
    input_w_t = w_x.T if w_x.dtype == np.float32 else None  # the kernel's view
    return KerasLstmLoop(limits[0], limits[1], int(one_c.reshape(-1)[0]), int(one_t.reshape(-1)[0]),
                         recurrent, inputs, u, bias, scatter, tuple(seq_shape), input_w_t,
                         _float_product(body))


def _float_product(body: "Subgraph") -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The float FULLY_CONNECTED kernel's product as the run computes it now (read at
    each call: `RunState.reference_float_sums` may change between runs)."""
    from .kernels.matmul import fully_connected_product
    run = body.run

    def product(rows: np.ndarray, w_t: np.ndarray) -> np.ndarray:
        return fully_connected_product(rows, w_t, run.reference_float_sums)
    product.mode = lambda: run.reference_float_sums  # type: ignore[attr-defined]
    return product


def _product(body: "Subgraph", node, w: np.ndarray) -> Callable[[np.ndarray], np.ndarray] | None:
    """What the FULLY_CONNECTED ``node`` (no bias, no activation) computes from a 2-D input:
    float32 weights as the float kernel multiplies (by the transposed weights it caches),
    int8 weights as the hybrid kernel does (LiteRT's EvalHybridDense, `integer.hybrid`)."""
    tensor = body.tensors[node.inputs[1]]
    if tensor.sparsity is not None:
        return None
    if w.dtype == np.float32:
        w_t = w.T  # the transposed view the kernel multiplies by
        product = _float_product(body)
        return lambda x: product(x, w_t)
    if w.dtype != np.int8 or not tensor.is_quantized_int:
        return None
    from .integer import hybrid
    from .kernels.common import tensor_qparams

    dense, units = hybrid.HybridDense(w, None, tensor_qparams(tensor), node.builtin_data), w.shape[0]
    return lambda x: dense(x, (x.shape[0], units))


def _match_scatter(body: "Subgraph", tail: list, p, t_next: int, h_new: int, out_seq: int) -> bool:
    """SLICE(seq, 0, [t, -1, -1]), SLICE(seq, [t+1, 0, 0], -1), CONCATENATION with h between."""
    r1, size, head, r2, begin, rest, hrow, cat = tail

    def const_list(t: int) -> list[int] | None:
        v = _const(body, t)
        return None if v is None else [int(a) for a in v.reshape(-1)]

    return (r1.inputs[0] == p[1] and size.inputs[0] == r1.outputs[0]
            and const_list(size.inputs[1]) == [-1, -1]
            and head.inputs[0] == p[2] and const_list(head.inputs[1]) == [0, 0, 0]
            and head.inputs[2] == size.outputs[0]
            and r2.inputs[0] == t_next and begin.inputs[0] == r2.outputs[0]
            and const_list(begin.inputs[1]) == [0, 0]
            and rest.inputs[0] == p[2] and rest.inputs[1] == begin.outputs[0]
            and const_list(rest.inputs[2]) == [-1, -1, -1]
            and hrow.inputs[0] == h_new
            and tuple(cat.inputs) == (head.outputs[0], hrow.outputs[0], rest.outputs[0])
            and int(cat.builtin_data.get("axis", 0) or 0) == 0 and _no_activation(cat)
            and size.builtin_data.get("axis", 0) in (0, None)
            and begin.builtin_data.get("axis", 0) in (0, None)
            and cat.outputs[0] == out_seq)
