"""The interpreter a `run` computes with, from its options (``--rounding``,
``--float-sums``, ``--kernels``), and how its report names what the run took: shared by a
single run (`run`) and a generation loop (`run_generate`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..interpreter import Interpreter


def new_interpreter(model, args, budgets: dict) -> "Interpreter":
    """The interpreter `run` computes with: ``--rounding``, ``--float-sums`` and
    ``--kernels`` applied (without ``--rounding`` the interpreter's default)."""
    from ..interpreter import Interpreter
    if args.rounding is not None:
        budgets = {**budgets, "rounding": args.rounding}
    return Interpreter(model, float_sums=args.float_sums,
                       kernels=getattr(args, "kernels", "auto"), **budgets)


def float_sums_said(taken: str, asked: str) -> str:
    """The float sums a run took, and that ``auto`` chose them."""
    return f"{taken} (auto)" if asked == "auto" else taken


def kernels_said(model, taken: str, asked: str) -> str:
    """``LiteRT's builtin kernels (auto: an LLM export ...)``: the kernel set a run follows,
    and why when ``auto`` chose it."""
    from ..interpreter.kernel_sets import XNNPACK, why_builtin
    if taken == XNNPACK:
        return "LiteRT's default path (XNNPACK's kernels where its delegate takes an op)"
    said = f"LiteRT's {taken} kernels"
    if asked == "auto":
        why = why_builtin(model)
        said += f" (auto: {why})" if why else " (auto)"
    return said


def xnnpack_said(interp, doc: dict) -> str:
    """Under the xnnpack set: how many ops XNNPACK's partitions take, and those computed
    here as LiteRT's builtin kernels (`xnnpack_kernels.unreproduced`); into ``doc`` too."""
    from collections import Counter
    from ..interpreter.xnnpack_kernels import unreproduced
    taken = interp.xnnpack.partition_of
    parts = len({p for ops in taken.values() for p in ops.values()})
    count = sum(len(ops) for ops in taken.values())
    left = unreproduced(interp)
    doc["xnnpack"] = {"partitions": parts, "ops": count,
                      "builtin_here": [{"subgraph": s, "op": k, "name": n} for s, k, n in left]}
    names = Counter(n for _, _, n in left)
    said = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(names.items()))
    return (f"XNNPACK takes {count} op{'s' if count != 1 else ''} in {parts} "
            f"partition{'s' if parts != 1 else ''}; "
            + (f"computed here as LiteRT's builtin kernels (their bits may differ from "
               f"XNNPACK's): {said}" if left else "every one computed as XNNPACK does"))
