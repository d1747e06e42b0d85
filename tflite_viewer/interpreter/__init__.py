"""A numpy interpreter for TFLite models, shaped like TFLite's own runtime, with a
debugger API (step, step_into, step_out, run_to, breakpoints, hooks, tensor snapshots).

>>> from tflite_viewer.interpreter import Interpreter
>>> interp = Interpreter("mobilenet.tflite")      # UnsupportedOpError lists what it can't run
>>> interp.set_input(0, image)
>>> interp.add_breakpoint("SOFTMAX")
>>> stop = interp.run()                           # pauses before the SOFTMAX
>>> logits = interp.tensor(0, interp.current_node().inputs[0])   # a copy
>>> stop = interp.run()                           # on to the end
>>> stop.finished, stop.outputs
"""
from .debugger import (Breakpoint, ConditionBreakpoint, Frame, NonFiniteBreakpoint,
                       OpBreakpoint, OpEvent, OpTypeBreakpoint, RangeBreakpoint,
                       SaturationBreakpoint, Stop)
from .budget import DEFAULT_MAX_ALLOCATION_BYTES, DEFAULT_MAX_ITERATIONS, DEFAULT_TIMEOUT
from .errors import (AllocationError, BudgetError, ExecutionError, IterationBudgetError,
                     ModelFormatError, RunCancelled, TimeBudgetError, UnsupportedOpError)
from .interpreter import Interpreter
from .node import Node
from .op_resolver import BuiltinOpResolver, OpResolver
from .registration import Kernel, Registration, register
from .signature_runner import SignatureRunner
from .subgraph import Subgraph
from .tensor import AllocationType, Tensor

__all__ = [
    "AllocationError", "AllocationType", "Breakpoint", "BudgetError", "BuiltinOpResolver",
    "ConditionBreakpoint", "DEFAULT_MAX_ALLOCATION_BYTES", "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_TIMEOUT", "ExecutionError", "Frame", "Interpreter", "IterationBudgetError",
    "ModelFormatError", "RunCancelled", "TimeBudgetError", "Kernel", "Node", "NonFiniteBreakpoint", "OpBreakpoint", "OpEvent",
    "OpResolver", "OpTypeBreakpoint", "RangeBreakpoint", "Registration",
    "SaturationBreakpoint", "SignatureRunner", "Stop", "Subgraph", "Tensor",
    "UnsupportedOpError", "register",
]
