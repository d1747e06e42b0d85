"""Recipes for LiteRT's quantizer, built from the analysis: a base recipe, per-op overrides
and ops kept in float, as one recipe in the quantizer's own JSON format.

The quantizer is ``litert-quantizer`` (module ``litert_quantizer``, ai-edge-quantizer's
successor), the optional extra ``[quantize]``; it is imported on first use, so everything
else in the project works without it (`QuantizerMissing` says how to install it).

A recipe is a list of entries ``{"regex", "operation", "algorithm_key", "op_config"}``.
The quantizer gives each op the last entry that selects it and whose config it supports
for the op's type: an entry selects an op when ``operation`` is the op's type (or ``*``)
and ``regex`` is found (`re.search`) in the op's *scope*, its output tensor names joined
by ``;`` with a trailing ``;`` (`op_scope`).  A selector of this module says which ops
an override or a float op concerns (`select`):

* ``N`` or ``S:N``: operator N of subgraph S (0 when left out), by an anchored regex of
  its scope (tensor names are unique in a model the quantizer takes, so it selects that op);
* an op type, ``FULLY_CONNECTED`` (the schema's name, or the quantizer's own, which calls
  TRANSPOSE_CONV ``CONV_2D_TRANSPOSE``): ``operation`` set, regex ``.*``;
* anything else: the quantizer's own regex, searched in the scope, kept as it is, so a
  saved recipe selects the same ops in ``litert quantize --custom-recipe``.

`build_recipe` appends to the base recipe each override's entries narrowed to its
selector and an entry with ``algorithm_key`` ``no_quantize`` per float selector, in that
order, so the later wins.  The quantizer files entries by regex text and lets a later
entry of an earlier regex replace one in place, which would reorder them: an added entry
whose regex text is taken gets it wrapped in ``(?:...)`` (the same pattern), so the list
means what its order says, in this tool and in the quantizer loading the saved JSON.
"""
from __future__ import annotations

import difflib
import inspect
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..model import Model
from ..model.errors import TFLiteViewerError
from ..model.opcodes import builtin_name

Recipe = list  # list[dict]: the quantizer's ModelQuantizationRecipe, plain JSON values
#: how to get the quantizer, in every message that needs it
INSTALL = "pip install 'tflite-viewer[quantize]'"
#: the quantizer's longest scope (longer ones are cut there before matching)
SCOPE_MAX = 10000
NO_QUANTIZE = "no_quantize"
ALL_OPS = "*"


class QuantizerMissing(TFLiteViewerError):
    """LiteRT's quantizer is not installed (the optional extra ``[quantize]``)."""


class RecipeError(TFLiteViewerError, ValueError):
    """A recipe name, recipe file or selector the quantizer cannot take; says why."""


def quantizer() -> Any:
    """The ``litert_quantizer`` package, imported now; `QuantizerMissing` (one line that
    says how to install it) when it cannot be."""
    try:
        import litert_quantizer
        from litert_quantizer import recipe_manager  # noqa: F401  (the pieces used here)
        from litert_quantizer.utils import recipe_utils, tfl_flatbuffer_utils  # noqa: F401
    except ImportError as exc:
        raise QuantizerMissing(
            f"quantizing needs LiteRT's quantizer (litert-quantizer 0.11), the optional "
            f"extra [quantize]: {INSTALL} ({exc})") from None
    return litert_quantizer


def quantizer_available() -> bool:
    """Whether `quantizer` can import the quantizer (the window greys its actions out)."""
    try:
        quantizer()
    except QuantizerMissing:
        return False
    return True


# -- named recipes ------------------------------------------------------------------------
def _plain(recipe: Any) -> Any:
    """The quantizer's values (str enums) as plain JSON values."""
    return json.loads(json.dumps(recipe))


def _is_entry_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(e, dict) for e in value)


def _candidate_names() -> list[str]:
    """Every name the quantizer resolves: the public functions of ``litert_quantizer.recipe``
    and the files ``recipes/NAME_recipe.json`` beside it (its `resolve_recipe`'s rule)."""
    q = quantizer()
    from litert_quantizer import recipe as recipe_module
    names = {n for n, f in inspect.getmembers(recipe_module, inspect.isfunction)
             if not n.startswith("_") and f.__module__ == recipe_module.__name__}
    folder = Path(q.__file__).parent / "recipes"
    names |= {p.name.removesuffix(".json").removesuffix("_recipe")
              for p in folder.glob("*.json")}
    return sorted(names)


_NAMES: dict[str, Recipe] | None = None


def _named() -> dict[str, Recipe]:
    """name -> recipe, for the names whose recipe is a list of entries (the LiteRT-LM
    recipes, a recipe per model type of a .litertlm, are left out)."""
    global _NAMES
    if _NAMES is None:
        from litert_quantizer.utils import recipe_utils
        found = {}
        for name in _candidate_names():
            got = recipe_utils.resolve_recipe(name)
            if _is_entry_list(got):
                found[name] = _plain(got)
        _NAMES = found
    return _NAMES


def recipe_names() -> list[str]:
    """The quantizer's named recipes that `named_recipe` takes, sorted."""
    return sorted(_named())


def named_recipe(name: str) -> Recipe:
    """The quantizer's recipe ``name`` (``dynamic_wi4b32_afp32``, ``static_wi8_ai8``, ...),
    as the quantizer builds it; `RecipeError` naming the close ones for another name."""
    named = _named()
    if name in named:
        return json.loads(json.dumps(named[name]))
    if name in _candidate_names():
        raise RecipeError(f"recipe {name!r} is a LiteRT-LM recipe (one recipe per model type "
                          "of a .litertlm file), not a recipe for one .tflite model")
    close = difflib.get_close_matches(name, list(named), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise RecipeError(f"unknown recipe {name!r}{hint}; the quantizer's recipes: "
                      + ", ".join(sorted(named)))


def canonical(recipe: Any, what: str = "the recipe") -> Recipe:
    """``recipe`` as the quantizer holds it once loaded (its `RecipeManager`: entries filed
    by regex, every field filled in), plain JSON; `RecipeError` saying why the quantizer
    refuses it."""
    quantizer()
    from litert_quantizer import recipe_manager
    if not _is_entry_list(recipe) or not recipe:
        kind = "an empty list" if recipe == [] else type(recipe).__name__
        raise RecipeError(f"{what} is {kind}, not a recipe (a list of entries with regex, "
                          "operation, algorithm_key and op_config)")
    manager = recipe_manager.RecipeManager()
    try:
        manager.load_quantization_recipe(recipe)
    except KeyError as exc:
        raise RecipeError(f"{what}: {exc.args[0]!r} is missing from an entry") from None
    except (ValueError, TypeError, AttributeError) as exc:
        raise RecipeError(f"{what}: the quantizer refuses it: {_first_line(exc)}") from None
    return _plain(manager.get_quantization_recipe())


def load_recipe(path: str | os.PathLike) -> Recipe:
    """A recipe file in the quantizer's JSON format (what ``--save-recipe`` writes and
    ``litert quantize --custom-recipe`` reads), checked by the quantizer."""
    try:
        data = json.loads(Path(path).read_text())
    except UnicodeDecodeError:
        raise RecipeError(f"{path}: not a JSON file (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise RecipeError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                          f"column {exc.colno})") from None
    if isinstance(data, dict) and data and all(_is_entry_list(v) or isinstance(v, str)
                                               for v in data.values()):
        raise RecipeError(f"{path}: a LiteRT-LM recipe (one recipe per model type: "
                          f"{', '.join(list(data)[:4])}), not a recipe for one .tflite model")
    return canonical(data, str(path))


def needs_calibration(recipe: Recipe) -> bool:
    """Whether the quantizer calibrates for ``recipe`` (integer activations, GPTQ)."""
    quantizer()
    from litert_quantizer import recipe_manager
    manager = recipe_manager.RecipeManager()
    manager.load_quantization_recipe(recipe)
    return bool(manager.need_calibration())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


# -- selectors ----------------------------------------------------------------------------
def op_scope(model: Model, subgraph: int, op: int) -> str:
    """The quantizer's scope of an op: its output tensor names (its input names when no
    output has one) joined by ``;``, with a trailing ``;``, cut at `SCOPE_MAX`."""
    sg = model.subgraphs[subgraph]
    o = sg.operators[op]

    def names(indices: Sequence[int]) -> list[str]:
        return [n for n in (sg.tensors[i].name for i in indices if i >= 0) if n]

    got = names(o.outputs) or names(o.inputs)
    return (";".join(got) + ";" if got else "")[:SCOPE_MAX]


def quantizer_op_names() -> dict[str, str]:
    """The quantizer's op type names -> the schema's names of the same builtins (the ops
    its recipes can select by type; it leaves every other op in float)."""
    quantizer()
    from litert_quantizer.utils import tfl_flatbuffer_utils as tfu
    return {str(getattr(k, "value", k)): builtin_name(int(code))
            for k, code in tfu.TFL_OP_NAME_TO_CODE.items()}


@dataclass(frozen=True)
class Selector:
    """Which ops a ``--override`` or ``--keep-float`` concerns, as recipe fields."""

    text: str
    kind: str                            # "op", "type" or "name"
    regex: str
    operation: str                       # the quantizer's op name, or "*"
    ops: tuple[tuple[int, int], ...]     # the (subgraph, op) it selects, in model order

    def to_dict(self) -> dict:
        return {"selector": self.text, "kind": self.kind, "regex": self.regex,
                "operation": self.operation, "ops": [list(k) for k in self.ops]}


_OP_INDEX = re.compile(r"(?:(\d+):)?(\d+)")
_OP_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")


def _all_ops(model: Model):
    for s, sg in enumerate(model.subgraphs):
        for k in range(len(sg.operators)):
            yield s, k


def select(model: Model, text: str) -> Selector:
    """The selector ``text`` (see the module docstring) resolved on ``model``;
    `RecipeError` when it selects no op, or cannot select its op alone."""
    text = text.strip()
    m = _OP_INDEX.fullmatch(text)
    if m:
        return _select_op(model, text, int(m.group(1) or 0), int(m.group(2)))
    if _OP_TYPE.fullmatch(text):
        names = quantizer_op_names()
        by_schema = {v: k for k, v in names.items()}
        if text in names or text in by_schema:
            op_name = text if text in names else by_schema[text]
            schema = names[op_name]
            ops = tuple(k for k in _all_ops(model)
                        if model.subgraphs[k[0]].operators[k[1]].name == schema)
            if not ops:
                raise RecipeError(f"selector {text!r}: the model has no {schema} op")
            return Selector(text, "type", ".*", op_name, ops)
        if text in _schema_names():
            raise RecipeError(f"selector {text!r}: the quantizer leaves {text} ops in float "
                              "(the op types it quantizes: " + ", ".join(sorted(names)) + ")")
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise RecipeError(f"selector {text!r}: not a valid regular expression ({exc}); a "
                          "name selector is the quantizer's regex, searched in an op's "
                          "output tensor names, e.g. 'attn' or 'layers_1/.*/mlp'") from None
    ops = tuple(k for k in _all_ops(model) if pattern.search(op_scope(model, *k)))
    if not ops:
        raise RecipeError(f"selector {text!r} matches no op (it is searched in each op's "
                          f"output tensor names, e.g. {op_scope(model, 0, 0)!r})"
                          if model.subgraphs[0].operators else
                          f"selector {text!r} matches no op")
    return Selector(text, "name", text, ALL_OPS, ops)


def _schema_names() -> set[str]:
    from ..model.opcodes import BUILTIN_NAMES
    return set(BUILTIN_NAMES.values())


def _select_op(model: Model, text: str, s: int, k: int) -> Selector:
    if not 0 <= s < len(model.subgraphs):
        raise RecipeError(f"selector {text!r}: no subgraph {s} (the model has "
                          f"{len(model.subgraphs)})")
    n = len(model.subgraphs[s].operators)
    if not 0 <= k < n:
        raise RecipeError(f"selector {text!r}: subgraph {s} has no operator {k} "
                          f"(it has {n}: 0..{n - 1})")
    scope = op_scope(model, s, k)
    if not scope:
        raise RecipeError(f"selector {text!r}: operator {s}:{k} has no named tensor, and "
                          "the quantizer selects ops by their tensor names")
    regex = "^" + re.escape(scope) + "$"
    others = [o for o in _all_ops(model) if o != (s, k) and op_scope(model, *o) == scope]
    if others:
        o = others[0]
        raise RecipeError(f"selector {text!r}: operator {s}:{k} cannot be selected alone: "
                          f"the quantizer selects ops by their output tensor names, and "
                          f"operator {o[0]}:{o[1]} has the same ones ({scope!r})")
    return Selector(text, "op", regex, ALL_OPS, ((s, k),))


# -- building -----------------------------------------------------------------------------
def _both(a: str, b: str) -> str:
    """A regex found where both ``a`` and ``b`` are found (`re.search`)."""
    if a in (".*", ""):
        return b
    if b in (".*", ""):
        return a
    return f"^(?=.*?(?:{a}))(?=.*?(?:{b}))"


def narrowed(entries: Recipe, sel: Selector) -> Recipe:
    """``entries`` (a recipe) restricted to the ops ``sel`` selects: each regex joined with
    the selector's, each operation narrowed to its type; an entry for another type drops."""
    out = []
    for e in entries:
        op = e["operation"]
        if sel.operation != ALL_OPS:
            if op not in (ALL_OPS, sel.operation):
                continue
            op = sel.operation
        out.append({**e, "regex": _both(e["regex"], sel.regex), "operation": op})
    return out


def _unique_regex(entry: dict, taken: set[str]) -> dict:
    regex = entry["regex"]
    while regex in taken:
        regex = f"(?:{regex})"
    taken.add(regex)
    return {**entry, "regex": regex}


def build_recipe(model: Model, base: str | Recipe,
                 overrides: Sequence[tuple[str, str | Recipe]] = (),
                 keep_float: Sequence[str] = ()) -> Recipe:
    """One recipe in the quantizer's format: ``base`` (a recipe name or a recipe), then
    for each ``(selector, recipe)`` of ``overrides`` that recipe's entries narrowed to the
    selector's ops, then for each selector of ``keep_float`` a ``no_quantize`` entry; the
    later wins.  `RecipeError` for an unknown name, a bad recipe, a selector that selects
    no op, or an override none of whose entries concerns the selector's op type."""
    recipe = canonical(named_recipe(base) if isinstance(base, str) else base,
                       f"recipe {base!r}" if isinstance(base, str) else "the base recipe")
    taken = {e["regex"] for e in recipe}
    for text, which in overrides:
        sel = select(model, text)
        entries = canonical(named_recipe(which) if isinstance(which, str) else which,
                            f"recipe {which!r}" if isinstance(which, str) else
                            f"the recipe of {text!r}")
        got = narrowed(entries, sel)
        if not got:
            raise RecipeError(f"override {text}={which}: no entry of that recipe concerns "
                              f"{sel.operation} ops")
        recipe += [_unique_regex(e, taken) for e in got]
    for text in keep_float:
        sel = select(model, text)
        recipe.append(_unique_regex({"regex": sel.regex, "operation": sel.operation,
                                     "algorithm_key": NO_QUANTIZE}, taken))
    return canonical(recipe, "the recipe built")


# -- what each op gets --------------------------------------------------------------------
_GRANULARITY = {"TENSORWISE": "tensor", "CHANNELWISE": "channel"}


def describe_config(algorithm: str, op_config: dict | None) -> str:
    """A recipe entry's settings in a few words: ``float``, ``dynamic w4 b32``,
    ``weight-only w8 channel``, ``static a8w8 channel``, ``fp16 weights``, with the
    algorithm named when it is not min/max (``dynamic w4 channel, hadamard_rotation``)."""
    if algorithm == NO_QUANTIZE:
        return "float"
    cfg = op_config or {}
    w = cfg.get("weight_tensor_config") or {}
    a = cfg.get("activation_tensor_config") or {}
    gran = w.get("granularity", "")
    gran = _GRANULARITY.get(gran, gran.replace("BLOCKWISE_", "b").lower())
    if w.get("dtype") == "FLOAT":
        text = f"fp{w.get('num_bits', 16)} weights"
    elif a and cfg.get("compute_precision") == "INTEGER":
        text = f"static a{a.get('num_bits')}w{w.get('num_bits')} {gran}".rstrip()
    elif cfg.get("explicit_dequantize"):
        text = f"weight-only w{w.get('num_bits')} {gran}".rstrip()
    elif w:
        text = f"dynamic w{w.get('num_bits')} {gran}".rstrip()
    else:
        text = "activations only" if a else "no weights quantized"
    return text if algorithm == "min_max_uniform_quantize" else f"{text}, {algorithm}"


def op_settings(model: Model, recipe: Recipe) -> dict[tuple[int, int], str]:
    """Each op's settings under ``recipe`` (`describe_config`), as the quantizer's
    `RecipeManager` picks them (the last entry that selects the op and whose config the
    quantizer supports for its type), by (subgraph, op).  Ops of a type the quantizer does
    not quantize are ``float``.  What the quantizer then writes also depends on the op:
    one without weights keeps float values under a weight-only or dynamic entry."""
    quantizer()
    from litert_quantizer import recipe_manager
    manager = recipe_manager.RecipeManager()
    manager.load_quantization_recipe(recipe)
    by_schema = {v: k for k, v in quantizer_op_names().items()}
    out = {}
    for s, k in _all_ops(model):
        op_name = by_schema.get(model.subgraphs[s].operators[k].name)
        if op_name is None:
            out[(s, k)] = "float"
            continue
        algorithm, config = manager.get_quantization_configs(op_name, op_scope(model, s, k))
        out[(s, k)] = describe_config(str(getattr(algorithm, "value", algorithm)),
                                      _plain(config.to_dict()))
    return out
