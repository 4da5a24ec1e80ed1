"""Run one measurement in a fresh Python process, so its peak memory and its state are its own.

    result = isolated.run("layer", spec)          # parent: a dict, or {"error": ...}
    python -m arena_tf.benchmark.isolated layer '<spec json>' result.json   # the child

The child imports the measuring function named in MEASUREMENTS, calls it with the spec and writes
its result atomically; the parent reads it back. A child that crashes, is killed (out of memory)
or times out gives a result with an "error" sentence, so one bad configuration never stops a sweep.
"""

import importlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from arena_tf import cli, files

# kind -> "module:function" measuring one spec in the current process.
MEASUREMENTS = {
    "layer": "arena_tf.benchmark.layer_sweep:measure",
    "peer": "arena_tf.benchmark.layer_sweep:measure_peer",
    "pair": "arena_tf.benchmark.pairs:measure",
    "agreement": "arena_tf.benchmark.peers:agreement",
    "train": "arena_tf.benchmark.lra_table2:measure",
    "matmul": "arena_tf.benchmark.backends:measure_matmul",
    "xla_kernels": "arena_tf.benchmark.xla:measure_kernels",
    "precision": "arena_tf.benchmark.precision:measure",
    "precision_matmul": "arena_tf.benchmark.precision:measure_matmul",
}


def measurement(kind):
    """The function measuring `kind`."""
    if kind not in MEASUREMENTS:
        raise ValueError(f"unknown measurement {kind!r}; expected one of {', '.join(MEASUREMENTS)}")
    module, function = MEASUREMENTS[kind].split(":")
    return getattr(importlib.import_module(module), function)


def run(kind, spec, timeout=None, environment=None):
    """Measure `spec` in a fresh process, with `environment` added to ours (KERAS_BACKEND: the
    backend it measures under); its result dict, or {"error": what went wrong}."""
    measurement(kind)  # an unknown kind fails here, not in the child
    with tempfile.TemporaryDirectory(prefix="arena_bench_") as tmp:
        out = pathlib.Path(tmp) / "result.json"
        command = [sys.executable, "-m", __name__, kind, json.dumps(spec), str(out)]
        env = {
            **os.environ,
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONWARNINGS": "ignore",
            **(environment or {}),
        }
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:g} s"}
        if done.returncode != 0 or not out.exists():
            return {"error": failure(done.returncode, done.stderr)}
        return json.loads(out.read_text())


def run_here(kind, spec, timeout=None, environment=None):
    """Measure `spec` in this process: for quick checks only, since peaks then include all
    earlier work of the process (`timeout` is not enforced; `environment` is this process's own,
    whose Keras backend the caller has checked). Errors become {"error": ...}."""
    try:
        return json.loads(json.dumps(measurement(kind)(spec)))
    except Exception as error:  # noqa: BLE001 (one failed configuration must not stop a sweep)
        return {"error": f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"}


def runner(in_process):
    """`run_here` when `in_process`, else `run` (a fresh process per measurement)."""
    return run_here if in_process else run


def failure(returncode, stderr):
    """One sentence for a child that failed: its exit status and its last line naming an error
    (TensorFlow ends with the failing op's name, after the error itself), else its last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line] or lines or ["no output"]
    killed = " (killed: out of memory?)" if returncode in (-9, 137) else ""
    return f"exit status {returncode}{killed}: {errors[-1]}"


def main(argv):
    kind, spec, out = argv
    files.write_json(out, measurement(kind)(json.loads(spec)))


if __name__ == "__main__":
    cli.prepare_process()
    main(sys.argv[1:])
