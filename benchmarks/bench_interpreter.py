"""Interpreter speed against LiteRT, in one run on this machine.

For each model (the float ones, then the quantized ones): the median whole-model time of
our `invoke()` beside LiteRT with its reference kernels (BUILTIN_REF), and beside LiteRT
with its default kernels (BUILTIN: the XNNPACK delegate for what it takes, LiteRT's
optimized kernels for the rest), each pair's ratio, and the stepping overhead per op ((time
of a step()-driven run - time of run()) / ops).  Our two figures differ: each side of a
pair runs right after the other's invoke, on the caches it left, and REF's milliseconds
leave colder ones than XNNPACK's fraction of one.  With ``--rounds R`` both pairs are
measured R times in turn and each figure is the lowest of its R medians: on a shared
machine a burst of someone else's work only ever adds time, and alternating spreads it
over both sides.

Ours and LiteRT's invokes alternate one by one in this process.  Quantized models are first
tried in a child process, since LiteRT's reference kernels abort on mobilenet_v2_int8 (shown
as "abort", with our median alone); person_detect is given to LiteRT with its rank-1 bias
quantized_dimension patched to 0 (LiteRT refuses the original); keyword_scrambled_8bit
crashes every LiteRT resolver (also shown as "abort"; we run it as TFLite Micro does).

    python benchmarks/bench_interpreter.py [--runs N] [--rounds R] [--blas-threads N]
                                           [--float|--quantized] [--float-sums MODE]
                                           [--no-step] [--clock wall|cpu] [--stat median|min]
                                           [MODEL|FILE|DIR ...]

A MODEL is a corpus name; a FILE a .tflite anywhere; a DIR every .tflite in it (the
hold-out models of issue 40: ``benchmarks/holdout_models.py DIR`` gathers them).
``--float-sums`` is the interpreter's (default auto: BLAS products); ``--no-step`` leaves
out the stepping column (a step-driven run of a model of seconds takes long); ``--clock
cpu`` times this process's CPU time in place of the wall clock; ``--stat min`` keeps each
side's fastest invoke of a round (best of N, still alternating) in place of its median.

``--big [DIR]``: the > 2 GB decoder of big_decoder.py and its int8 and int4 forms (written
to DIR when missing), ``tflite-viewer run MODEL --signature decode --inputs IN.npz`` as a
whole process against LiteRT's builtin kernels running the same signature on the same
inputs (benchmarks/litert_run.py), alternating, each with BLAS on one thread: wall time and
peak resident memory of each process (the float model twice: with the default BLAS float
sums and with ``--float-sums reference``).  The issue-28 targets: within 2x LiteRT's time,
at most 1.2x its peak memory.

    python benchmarks/bench_interpreter.py --big /tmp/big --rounds 3
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import blas_threads  # noqa: E402

blas_threads.apply_from_argv()  # before numpy loads its BLAS

import numpy as np  # noqa: E402

from tflite_viewer.interpreter import Interpreter  # noqa: E402
from tflite_viewer.model import load_model  # noqa: E402

MODELS = ROOT / "tests" / "data" / "models"
FLOAT_MODELS = [
    "mobilenet_v2_float", "mobilenet_v1_0.25_224_1_default_1", "mobilenet_v2_fp16",
    "sine_float", "small_cnn_dilated_float", "dilated_conv", "sparse_conv_float",
    "sparse_conv_fp16", "control_flow", "lstm_float", "multi_signature", "movie_review",
    "face_detection_short_range", "hand_landmark_lite", "palm_detection_lite", "trained_lstm",
]
QUANTIZED_MODELS = [
    "mobilenet_v1_0.25_224_quant", "ssd_mobilenet_v1", "micro_speech_quantized",
    "small_cnn_dilated_int8", "trained_lstm_int8", "yamnet_audio_classifier_with_metadata",
    "mobilenet_v2_dynamic", "mobilenet_v2_int8", "person_detect", "keyword_scrambled_8bit",
    "lstm_dynamic",
]


def inputs_for(name: str, model) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    sg = model.subgraphs[0]
    out = []
    for i in sg.inputs:
        t = sg.tensors[i]
        if t.type_name in ("INT8", "UINT8", "INT16"):
            info = np.iinfo(t.dtype)
            out.append(rng.integers(int(info.min), int(info.max) + 1, t.shape).astype(t.dtype))
        elif t.type_name == "INT32":
            if name == "movie_review":
                table = next(sg.tensors[op.inputs[0]] for op in sg.operators if op.name == "GATHER")
                out.append(rng.integers(0, table.shape[0], t.shape).astype(np.int32))
            else:
                out.append(np.asarray(3, dtype=np.int32).reshape(t.shape))
        else:
            out.append(rng.standard_normal(t.shape).astype(np.float32))
    return out


def prepared(name: str, float_sums: str = "auto") -> tuple[Path, list[np.ndarray], Interpreter]:
    """A model's path (a corpus name or a file), its benchmark inputs and our interpreter
    with them set."""
    path = Path(name) if name.endswith(".tflite") else MODELS / f"{name}.tflite"
    model = load_model(path)
    inputs = inputs_for(path.stem, model)
    interp = Interpreter(model, float_sums=float_sums)
    interp.set_inputs(inputs)
    return path, inputs, interp


def expand(names: list[str]) -> list[str]:
    """Corpus names and .tflite files as given; a folder as the .tflite files in it."""
    out = []
    for name in names:
        folder = Path(name)
        out.extend(str(p) for p in sorted(folder.glob("*.tflite"))) if folder.is_dir() \
            else out.append(name)
    return out


def quantized(name: str, path: Path) -> bool:
    """Whether LiteRT is first tried in a child process: the corpus' quantized models, and
    any other file with an 8-bit tensor (LiteRT's reference kernels abort on some)."""
    if name in QUANTIZED_MODELS:
        return True
    if name in FLOAT_MODELS:
        return False
    model = load_model(path)
    return any(t.type_name in ("INT8", "UINT8") for sg in model.subgraphs for t in sg.tensors)


#: the clock of the in-process figures: wall time, or with ``--clock cpu`` this process's
#: CPU time (ours on one BLAS thread and LiteRT's invoke both run on this thread alone, so
#: on a quiet machine the two agree; on a shared one CPU time leaves out the time others
#: take the core, which lands on long invokes more often than on short ones)
CLOCK = [time.perf_counter]
#: what a round keeps of each side's invoke times: the median, or with ``--stat min`` the
#: fastest (best of N: on a shared machine others' work, and the cache lines it takes,
#: only ever add time, and the fastest invoke is the one least disturbed)
STAT = [statistics.median]


def median_time(fn, runs: int) -> float:
    """The round's figure (`STAT`: median by default) of ``runs`` timed calls of ``fn``."""
    fn()
    times = []
    for _ in range(runs):
        t = CLOCK[0]()
        fn()
        times.append(CLOCK[0]() - t)
    return STAT[0](times)


_LITERT_CHILD = """
import sys, time, statistics, warnings, numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
src, inp, resolver, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    li = Interpreter(model_path=src, experimental_op_resolver_type=getattr(OpResolverType, resolver))
li.allocate_tensors()
x = np.load(inp)
for k, d in enumerate(li.get_input_details()):
    li.set_tensor(d["index"], x[f"in{k}"])
li.invoke()
times = []
for _ in range(runs):
    t = time.perf_counter(); li.invoke(); times.append(time.perf_counter() - t)
print(statistics.median(times))
"""


def litert_time_subprocess(model_bytes: bytes, inputs, resolver: str, runs: int) -> float | None:
    """LiteRT's median invoke time in a child process (None if LiteRT aborts or fails)."""
    with tempfile.TemporaryDirectory() as tmp:
        model_file = Path(tmp) / "model.tflite"
        model_file.write_bytes(model_bytes)
        np.savez(Path(tmp) / "in.npz", **{f"in{k}": x for k, x in enumerate(inputs)})
        proc = subprocess.run([sys.executable, "-c", _LITERT_CHILD, str(model_file),
                               str(Path(tmp) / "in.npz"), resolver, str(runs)],
                              capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return None
    return float(proc.stdout.strip().splitlines()[-1])


def litert_bytes(name: str, path: Path) -> bytes:
    if name == "person_detect":
        sys.path.insert(0, str(ROOT))
        from tests.model.test_reader_litert import _patched_person_detect
        return _patched_person_detect(path)
    return path.read_bytes()


def stepping_overhead(interp: Interpreter, runs: int) -> tuple[float, int]:
    """Seconds per op that step() adds over run(), and the ops of a run op by op."""
    def stepped():
        interp.reset()
        stop = interp.step()
        while not stop.finished:
            stop = interp.step()

    def whole():
        interp.reset()
        interp.run()

    ops = sum(interp.op_calls.values()) or 1
    t_step = median_time(stepped, runs)
    t_run = median_time(whole, runs)
    ops = sum(interp.op_calls.values()) or ops
    return (t_step - t_run) / ops, ops


def why_slower(ours: float, ref: float | None, ops: int) -> str:
    """The reason printed for a model above 1.0x: the time per operator (of the run op by
    op) on each side.  A model whose operators take LiteRT less than our per-operator floor
    (a numpy call is about 1 us, a kernel's Python a few) cannot be brought to 1.0x by
    binding or fusing alone."""
    if ref is None or ours <= ref:
        return ""
    return (f"{ops} ops op by op: LiteRT {ref / ops * 1e6:.2f} us/op, "
            f"ours {ours / ops * 1e6:.2f} us/op")


def _one_round(name: str, path: Path, interp: Interpreter, inputs, runs: int):
    """((ours, LiteRT REF), (ours, LiteRT BUILTIN)): each pair's figures (`STAT`) from its
    own alternation.  Where LiteRT runs safely in this process, ours and LiteRT's invokes
    alternate one by one, so a slow spell of the machine lands on both sides alike and each
    side runs right after the other; quantized models are first tried in a child process,
    since LiteRT's reference kernels abort on some (that side is then None, ours timed
    alone)."""
    if name == "keyword_scrambled_8bit":
        alone = median_time(interp.invoke, runs)  # crashes every LiteRT resolver
        return (alone, None), (alone, None)
    if quantized(name, path):
        data = litert_bytes(name, path)
        probe = [litert_time_subprocess(data, inputs, r, 1) for r in ("BUILTIN_REF", "BUILTIN")]
    else:
        data, probe = path.read_bytes(), [0.0, 0.0]
    results = []
    for resolver, works in zip(("BUILTIN_REF", "BUILTIN"), probe):
        if works is None:
            results.append((median_time(interp.invoke, runs), None))
        else:
            results.append(alternating_times(interp.invoke, _litert_invoke(data, inputs, resolver),
                                             runs))
    return results[0], results[1]


def _litert_invoke(data: bytes, inputs, resolver: str):
    return litert_interpreter(data, inputs, resolver).invoke


def litert_interpreter(data: bytes, inputs, resolver: str = "BUILTIN_REF"):
    """LiteRT's interpreter of the model ``data`` with that op resolver, inputs set."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    with warnings.catch_warnings(), _quiet_stderr():
        # LiteRT's "INFO: Created TensorFlow Lite XNNPACK delegate" would land in the table
        warnings.simplefilter("ignore")
        li = LiteRT(model_content=data,
                    experimental_op_resolver_type=getattr(OpResolverType, resolver))
        li.allocate_tensors()
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], x)
    return li


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null for a moment: LiteRT's C++ logs bypass Python."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def alternating_times(ours, theirs, runs: int) -> tuple[float, float]:
    """The round's figures (`STAT`) of two callables invoked in turn, one call each per
    round."""
    ours()
    theirs()
    a, b = [], []
    for _ in range(runs):
        t = CLOCK[0]()
        ours()
        a.append(CLOCK[0]() - t)
        t = CLOCK[0]()
        theirs()
        b.append(CLOCK[0]() - t)
    return STAT[0](a), STAT[0](b)


def _lowest(times) -> float | None:
    """The lowest time, or None when LiteRT could not run (it aborts every time)."""
    times = [t for t in times if t is not None]
    return min(times) if times else None


def decode_inputs(model_path: Path, out: Path) -> Path:
    """Inputs of the decoder's ``decode`` signature: a token, the cache position 3, a mask
    letting it see positions 0..3, seeded caches."""
    model = load_model(model_path)
    sig = model.signature("decode")
    sg = model.subgraphs[sig.subgraph_index]
    arrays = {}
    for i in sig.inputs:
        t = sg.tensors[i.tensor_index]
        if i.name == "tokens":
            arrays[i.name] = np.full(t.shape, 17, np.int32)
        elif i.name == "kv_slice_start":
            arrays[i.name] = np.array([0, 3, 0, 0], np.int32)
        elif i.name == "mask":
            mask = np.full(t.shape, -1e9, np.float32)
            mask[..., :4] = 0
            arrays[i.name] = mask
        else:
            rng = np.random.default_rng(len(i.name))
            arrays[i.name] = (rng.standard_normal(t.shape) * 0.1).astype(np.float32)
    np.savez(out, **arrays)
    return out


def big(directory: Path, rounds: int) -> None:
    """`run --signature decode` against LiteRT on the big decoder's three forms."""
    from benchmarks import child_process as cp

    paths = cp.ensure_big_models(directory)
    tmp = Path(tempfile.mkdtemp(prefix="bench_interpreter_big_"))
    env = cp.fresh_env(tmp / "pycache")
    inputs = decode_inputs(paths["float"], tmp / "decode_inputs.npz")
    print(f"run --signature decode, whole processes, median of {rounds} alternating rounds "
          "(after a warm-up), BLAS on 1 thread: wall seconds, peak resident MB")
    print(f"{'model':<24} {'GB':>5} {'ours s':>7} {'LiteRT s':>8} {'ratio':>6} "
          f"{'ours MB':>8} {'LiteRT MB':>9} {'ratio':>6}  logits (first value) ours / LiteRT")
    # the float model also with --float-sums reference: its default (auto) takes BLAS
    # sums; reference adds each float32 product in LiteRT's reference order (its results
    # to the bit), which no BLAS call does
    cases = [(path.name, path, []) for path in paths.values()]
    cases.insert(1, (f"{paths['float'].stem} ref", paths["float"],
                     ["--float-sums", "reference"]))
    for label, path, extra in cases:
        commands = {
            "ours": [sys.executable, "-m", "tflite_viewer", "run", str(path), "--signature",
                     "decode", "--inputs", str(inputs), *extra],
            "litert": [sys.executable, str(ROOT / "benchmarks" / "litert_run.py"), str(path),
                       "--signature", "decode", "--inputs", str(inputs)]}
        runs = cp.alternate(commands, rounds, env)
        t_ours, t_lite = cp.median(runs["ours"], "wall"), cp.median(runs["litert"], "wall")
        m_ours, m_lite = cp.median(runs["ours"], "peak_mb"), cp.median(runs["litert"], "peak_mb")
        ours_first = runs["ours"][0].out.split("logits", 1)[1].split("first [", 1)[1].split(",")[0]
        lite_first = runs["litert"][0].out.split("logits", 1)[1].split("[", 2)[2].split(",")[0]
        print(f"{label:<24} {path.stat().st_size / 1e9:>5.2f} {t_ours:>7.2f} {t_lite:>8.2f} "
              f"{t_ours / t_lite:>6.2f} {m_ours:>8.0f} {m_lite:>9.0f} {m_ours / m_lite:>6.2f}  "
              f"{ours_first} / {lite_first}", flush=True)
    print("Targets (issue 28): time within 2x LiteRT's, peak memory at most 1.2x")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--big", nargs="?", default=None, metavar="DIR",
                    const=str(Path(tempfile.gettempdir()) / "tflite_viewer_big"),
                    help="the > 2 GB decoder and its int8 / int4 forms, whole processes")
    ap.add_argument("--float", dest="only", action="store_const", const="float")
    ap.add_argument("--quantized", dest="only", action="store_const", const="quantized")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure ours and LiteRT this many times in turn; keep the lowest "
                         "median of each")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="numpy BLAS threads (LiteRT's reference kernels use one); "
                         "on a busy machine 1 gives steadier figures")
    ap.add_argument("--float-sums", default="auto", choices=("auto", "reference", "blas"),
                    help="our interpreter's float sums (default auto: BLAS products)")
    ap.add_argument("--no-step", action="store_true", help="leave out the stepping column")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time invokes by the wall clock (default) or this process's CPU "
                         "time (steadier on a shared machine)")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="keep each side's median invoke of a round (default) or its fastest "
                         "(best of N)")
    args = ap.parse_args(argv)
    if args.big:
        big(Path(args.big), max(1, args.rounds))
        return 0
    if not args.models:
        args.models = ([] if args.only == "quantized" else FLOAT_MODELS) + \
            ([] if args.only == "float" else QUANTIZED_MODELS)
    if args.clock == "cpu":
        CLOCK[0] = time.process_time
    if args.stat == "min":
        STAT[0] = min
    print(f"clock {args.clock}, {args.stat} of {args.runs}, float sums {args.float_sums}, BLAS threads "
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}, load {os.getloadavg()[0]:.2f}")
    print("each 'ours ms' is timed alternating with the LiteRT column to its right")
    print(f"{'model':36s} {'ours ms':>9s} {'REF ms':>9s} {'ours/REF':>9s} {'ours ms':>9s} "
          f"{'XNNPACK ms':>10s} {'ours/XNNPACK':>12s} {'step ms/op':>10s}  "
          "why above 1.0x REF")
    for name in expand(args.models):
        path, inputs, interp = prepared(name, args.float_sums)
        name = path.stem
        rounds = [_one_round(name, path, interp, inputs, args.runs)
                  for _ in range(max(1, args.rounds))]
        # each ratio pairs LiteRT's figure with ours from the same alternation: ours after
        # REF's invoke (milliseconds of other memory) runs on colder caches than ours after
        # XNNPACK's, and the ratio of times taken in different company would tell that
        # apart from the kernels
        ours, ours_x = (min(r[k][0] for r in rounds) for k in (0, 1))
        ref, fast = (_lowest(r[k][1] for r in rounds) for k in (0, 1))
        step, ops = (float("nan"), sum(interp.op_calls.values()) or 1) if args.no_step \
            else stepping_overhead(interp, max(3, args.runs // 3))

        def cell(t, width):
            return f"{'abort':>{width}s}" if t is None else f"{t * 1e3:{width}.3f}"

        def ratio(mine, t, width):
            return f"{'-':>{width}s}" if t is None else f"{mine / t:{width}.2f}"
        # stepping costs nothing measurable on some models: noise then makes it negative
        step_text = f"{'-':>10s}" if step != step else \
            f"{step * 1e3:10.3f}" if step * 1e3 >= 0.0005 else f"{'~0':>10s}"
        print(f"{name:36s} {ours * 1e3:9.3f} {cell(ref, 9)} {ratio(ours, ref, 9)} "
              f"{ours_x * 1e3:9.3f} {cell(fast, 10)} {ratio(ours_x, fast, 12)} {step_text}  "
              f"{why_slower(ours, ref, ops)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
