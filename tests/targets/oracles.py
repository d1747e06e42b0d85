"""The targets' own verdicts, where a target runs here: LiteRT's default XNNPACK delegate and
TensorFlow Lite Micro's Python interpreter."""
from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np


def xnnpack_partitions(model: bytes) -> list[tuple[list[int], list[int]]]:
    """LiteRT's DELEGATE nodes (inputs, outputs), in order, with the default delegate."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=model)
    it.allocate_tensors()
    return [(sorted(int(x) for x in o["inputs"]), sorted(int(x) for x in o["outputs"]))
            for o in it._get_ops_details() if o["op_name"] == "DELEGATE"]


def litert_invoked(model: bytes, inputs: list[np.ndarray],
                   resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES", preserve: bool = False):
    """A LiteRT interpreter (no delegate by default) after running the model on these
    inputs, resized to them (``preserve``: every tensor kept)."""
    from tests.litert_oracle import litert

    li = litert(model, resolver, preserve=preserve)
    for d, x in zip(li.get_input_details(), inputs):
        if tuple(d["shape"]) != x.shape:
            li.resize_tensor_input(d["index"], x.shape)
    li.allocate_tensors()
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], x)
    li.invoke()
    return li


def litert_outputs(model: bytes, inputs: list[np.ndarray],
                   resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES") -> list[np.ndarray]:
    """LiteRT's outputs (no delegate by default) for these inputs."""
    li = litert_invoked(model, inputs, resolver)
    return [li.get_tensor(d["index"]) for d in li.get_output_details()]


def default_path_error(model: bytes) -> str | None:
    """What LiteRT with its default delegate (XNNPACK) says when it cannot prepare the
    model (None: it prepares it)."""
    from tests.litert_oracle import litert

    try:
        li = litert(model, "AUTO", preserve=False)
        li.allocate_tensors()
    except (RuntimeError, ValueError) as exc:
        return str(exc)
    return None


def outputs_close(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, and values within one step (integers) or 1e-4 of the range (floats)."""
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
        return bool(np.all(np.abs(a.astype(np.float64) - b) <= 1e-4 * scale))
    return bool(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)), initial=0) <= 1)


@contextmanager
def _captured_stderr():
    """What native code writes to file descriptor 2 (TFLM's MicroPrintf)."""
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        box: list[str] = []
        try:
            yield box
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box.append(tmp.read().decode("utf-8", "replace"))


@dataclass
class MicroResult:
    ok: bool
    op: str | None  # the operator TFLM names when it fails
    index: int | None
    log: str
    outputs: list[np.ndarray] | None = None
    prepared: bool = False  # AllocateTensors succeeded (every operator prepared)
    timed_out: bool = False
    tensors: list[np.ndarray] | None = None  # the ``wanted`` tensors after invoke


_NODE = re.compile(r"Node (\S+) \(number (\d+)\) failed to (prepare|invoke)")
_MISSING = re.compile(r"Didn't find op for builtin opcode '([^']+)'|"
                      r"Failed to get registration from op code (\S+)|"
                      r"Didn't find op for custom opcode '([^']+)'")


def micro_inputs(model: bytes, seed: int = 0) -> list[np.ndarray]:
    """Inputs every single-op case accepts: positive floats, small positive integers."""
    from tflite_viewer.model import load_model

    rng = np.random.default_rng(seed)
    sg = load_model(model).subgraphs[0]
    out = []
    for t in sg.inputs:
        tensor = sg.tensors[t]
        dtype = tensor.dtype
        shape = tensor.shape
        if dtype.kind == "f":
            out.append(rng.uniform(0.5, 1.5, shape).astype(dtype))
        elif dtype.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(bool))
        else:
            out.append(rng.integers(1, 3, shape).astype(dtype))
    return out


def _count_outputs(model: bytes) -> int:
    from tflite_viewer.model import load_model

    return len(load_model(model).subgraphs[0].outputs)


def tflm_run(model: bytes, inputs: list[np.ndarray] | None = None,
             prepared_marker: str | None = None,
             wanted: list[tuple[int, int]] | None = None) -> MicroResult:
    """Build, allocate and invoke the model in TFLM; what it says when it refuses.
    ``wanted`` (subgraph, tensor) pairs are kept (kPreserveAllTensors) and returned as
    ``tensors``."""
    from tflite_micro.python.tflite_micro import runtime

    outputs = None
    prepared = False
    config = (runtime.InterpreterConfig.kPreserveAllTensors if wanted
              else runtime.InterpreterConfig.kAllocationRecording)
    with _captured_stderr() as box:
        try:
            it = runtime.Interpreter.from_bytes(model, arena_size=max(1 << 20, 20 * len(model)),
                                                intrepreter_config=config)
            prepared = True
            if prepared_marker:
                open(prepared_marker, "w").close()  # noqa: SIM115 - a marker file
            for i, x in enumerate(inputs or []):
                it.set_input(x, i)
            it.invoke()
            outputs = [np.array(it.get_output(i)) for i in range(_count_outputs(model))]
            for s, t in wanted or []:
                entry = it.GetTensor(t, s)
                outputs.append(np.asarray(entry["tensor_data"]).reshape(tuple(entry["shape"])))
            ok = True
        except Exception:  # noqa: BLE001 - the interpreter raises bare errors; the log says why
            ok = False
    log = box[0] if box else ""
    if ok:
        n = len(outputs) - len(wanted or [])
        return MicroResult(True, None, None, log, outputs[:n], prepared=True,
                           tensors=outputs[n:] if wanted else None)
    m = _NODE.search(log)
    if m:
        return MicroResult(False, m.group(1), int(m.group(2)), log, prepared=prepared)
    m = _MISSING.search(log)
    if m:
        return MicroResult(False, next(g for g in m.groups() if g), None, log,
                           prepared=prepared)
    return MicroResult(False, None, None, log, prepared=prepared)


def tflm_run_isolated(path: str, inputs: list[np.ndarray] | None = None,
                      timeout: float = 60.0,
                      wanted: list[tuple[int, int]] | None = None,
                      invoke_seconds: float | None = None) -> MicroResult:
    """`tflm_run` in a child process: a model TFLM crashes on or loops forever in cannot
    take the test run with it.  A child that prepared the model but did not finish invoking
    within ``timeout`` seconds (or, with ``invoke_seconds``, within that long after it
    prepared: a small model's invoke takes milliseconds, the Python start and imports
    before it seconds on a busy machine) reports ``prepared`` and ``timed_out``."""
    import json
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as tmp:
        feed = os.path.join(tmp, "in.npz")
        np.savez(feed, *(inputs or []))
        out = os.path.join(tmp, "out")
        with open(out + ".wanted", "w") as fh:
            json.dump(wanted or [], fh)
        cmd = [sys.executable, "-m", "tests.targets.oracles", path, feed, out]
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            if invoke_seconds is None:
                proc = subprocess.run(cmd, capture_output=True, timeout=timeout, text=True,
                                      cwd=root)
            else:
                proc = _run_until_invoke_stalls(cmd, root, out + ".prepared", timeout,
                                                invoke_seconds)
        except subprocess.TimeoutExpired:
            prepared = os.path.exists(out + ".prepared")
            return MicroResult(False, None, None, "timed out", prepared=prepared,
                               timed_out=True)
        if not os.path.exists(out + ".json"):
            return MicroResult(False, None, None, f"child exited {proc.returncode}: "
                               f"{proc.stderr[-300:]}")
        with open(out + ".json") as fh:
            d = json.load(fh)
        outputs = tensors = None
        if d["ok"]:
            with np.load(out + ".npz") as z:
                outputs = [z[f"arr_{i}"] for i in range(len(z.files))]
            if wanted:
                outputs, tensors = outputs[:-len(wanted)], outputs[-len(wanted):]
        return MicroResult(d["ok"], d["op"], d["index"], d["log"], outputs, d["prepared"],
                           tensors=tensors)


def _run_until_invoke_stalls(cmd: list[str], cwd: str, marker: str, timeout: float,
                             invoke_seconds: float):
    """The child's CompletedProcess; TimeoutExpired (the child killed) when it has not
    ended ``invoke_seconds`` after writing ``marker``, or ``timeout`` after it started."""
    import subprocess
    import time

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, text=True)
        start, prepared_at = time.monotonic(), None
        try:
            while proc.poll() is None:
                now = time.monotonic()
                if prepared_at is None and os.path.exists(marker):
                    prepared_at = now
                if now - start > timeout or (prepared_at is not None
                                             and now - prepared_at > invoke_seconds):
                    raise subprocess.TimeoutExpired(cmd, now - start)
                time.sleep(0.05)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())


def tflm_run_many(models: dict[str, bytes], timeout: float = 600.0,
                  fork: bool = False) -> dict[str, MicroResult]:
    """`tflm_run` on many models in one child process (micro_inputs as inputs); a model that
    aborts TFLM says ``crashed`` in its log.  The child runs them one after the other and
    is started again after a crash; with ``fork`` it runs each in a process forked from it
    (slower per model, far faster where many abort TFLM, as operators taken alone do)."""
    import json
    import subprocess
    import sys

    names = list(models)
    results: dict[str, MicroResult] = {}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(names):
            with open(os.path.join(tmp, f"{i}.tflite"), "wb") as fh:
                fh.write(models[name])
        start = 0
        while start < len(names):
            log = os.path.join(tmp, f"results{start}.jsonl")
            cmd = [sys.executable, "-m", "tests.targets.oracles", "--many", tmp,
                   str(start), str(len(names)), log, "fork" if fork else "inline"]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root,
                                  timeout=timeout)
            done = 0
            if os.path.exists(log):
                with open(log) as fh:
                    for line in fh:
                        d = json.loads(line)
                        outputs = None
                        if d["ok"]:
                            with np.load(os.path.join(tmp, f"{d['i']}.npz")) as z:
                                outputs = [z[f"arr_{j}"] for j in range(len(z.files))]
                        results[names[d["i"]]] = MicroResult(d["ok"], d["op"], d["index"],
                                                             d["log"], outputs, d["prepared"])
                        done = d["i"] + 1 - start
            start += done
            if start < len(names) and proc.returncode != 0:
                results[names[start]] = MicroResult(
                    False, None, None, f"crashed: the process ended with {proc.returncode}")
                start += 1
            elif start < len(names) and done == 0:
                raise RuntimeError(f"TFLM child made no progress: {proc.stderr[-500:]}")
    return results


def _many(folder: str, start: str, stop: str, log: str, how: str) -> None:
    """Each model in turn ("inline"), or each in a forked process of its own ("fork"), so
    that one TFLM aborts on (a failed TFLITE_CHECK) is reported as crashed and the rest go
    on without loading Python and TFLM again."""
    import json

    with open(log, "w") as out:
        if how == "inline":
            for i in range(int(start), int(stop)):
                result = os.path.join(folder, f"{i}.json")
                _one(os.path.join(folder, f"{i}.tflite"), os.path.join(folder, f"{i}.npz"),
                     result, i)
                with open(result) as fh:
                    out.write(fh.read())
                out.flush()
            return
        warm = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "models",
                            "sine_float.tflite")
        with open(warm, "rb") as fh:  # TFLM's first interpreter sets up what later ones
            model = fh.read()         # share: once here, not once per forked process
        tflm_run(model, micro_inputs(model))
        for i in range(int(start), int(stop)):
            result = os.path.join(folder, f"{i}.json")
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the forked child
                try:
                    _one(os.path.join(folder, f"{i}.tflite"), os.path.join(folder, f"{i}.npz"),
                         result, i)
                finally:
                    os._exit(0)
            _, status = os.waitpid(pid, 0)
            if os.path.exists(result):
                with open(result) as fh:
                    out.write(fh.read())
            else:  # TFLM aborted the process (a signal), or the harness did
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else \
                    os.WEXITSTATUS(status)
                what = "crashed" if code < 0 else HARNESS_ERROR
                out.write(json.dumps({"i": i, "ok": False, "op": None, "index": None,
                                      "log": f"{what}: the process ended with {code}",
                                      "prepared": False}) + "\n")
            out.flush()


HARNESS_ERROR = "harness error"  # the test's own code failed: TFLM said nothing


def _one(path: str, outputs: str, result: str, i: int) -> None:
    import json

    with open(path, "rb") as fh:
        model = fh.read()
    try:
        r = tflm_run(model, micro_inputs(model))
    except Exception as exc:  # noqa: BLE001 - reported, and never taken for TFLM's answer
        r = MicroResult(False, None, None, f"{HARNESS_ERROR}: {type(exc).__name__}: {exc}")
    if r.ok:
        np.savez(outputs, *(r.outputs or []))
    with open(result + ".part", "w") as fh:
        fh.write(json.dumps({"i": i, "ok": r.ok, "op": r.op, "index": r.index,
                             "log": r.log[-2000:], "prepared": r.prepared}) + "\n")
    os.replace(result + ".part", result)


def _child(path: str, feed: str, out: str) -> None:
    import json

    with np.load(feed) as z:
        inputs = [z[f"arr_{i}"] for i in range(len(z.files))] or None
    with open(path, "rb") as fh:
        model = fh.read()
    wanted = None
    if os.path.exists(out + ".wanted"):
        with open(out + ".wanted") as fh:
            wanted = [tuple(w) for w in json.load(fh)] or None
    r = tflm_run(model, inputs, prepared_marker=out + ".prepared", wanted=wanted)
    if r.ok:
        np.savez(out + ".npz", *(r.outputs or []), *(r.tensors or []))
    with open(out + ".json", "w") as fh:
        json.dump({"ok": r.ok, "op": r.op, "index": r.index, "log": r.log,
                   "prepared": r.prepared}, fh)


if __name__ == "__main__":
    import sys

    if sys.argv[1] == "--many":
        _many(*sys.argv[2:7])
    else:
        _child(*sys.argv[1:4])
