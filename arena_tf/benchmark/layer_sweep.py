"""The layer benchmark: every mechanism (and peer) alone, forward and forward + backward.

    python -m arena_tf.benchmark layers --lengths 1024 2048 4096 8192 16384
    python -m arena_tf.benchmark layers --backend jax \\
        --output docs/results/efficiency/layers-jax.json

Each (mechanism or peer, length) runs in a fresh process (`isolated`): time of the forward and of
forward + backward (gradients for the input and every weight), warm-up excluded, median and spread
of several calls; peak memory; FLOPs from the cost formula; achieved GFLOP/s and its fraction of
the dense matmul rate measured in the same run. A length whose estimated memory exceeds the cap is
skipped and said so.

This module owns the measuring: the sweep, and the child entries timing our mechanisms and the
peers (`peers` says what a peer is, how to build it and whether it computes our function; it
imports nothing from here). How a call is measured is the
backend's (`backends`): under TensorFlow (the default) `tf.function`, memory the peak resident set
above the process's baseline, FLOPs checked against TensorFlow's profiler on the same graph; under
`--backend jax` (children with KERAS_BACKEND=jax, no TensorFlow) `jax.jit`, compile time stored
apart, memory the device's peak or, on CPU, XLA's memory analysis of the compiled executable
(`jax_measure`). The results record the backend and its device, so the report labels them.
"""

import dataclasses
import functools
import time

import arena_tf.layers as attention_layers
from arena_tf import files
from arena_tf.benchmark import backends, costs, isolated, machine, memory, peers, timing
from arena_tf.cli import UsageError
from arena_tf.config import CONFIGS_DIR, read_yaml

DEFAULT_LENGTHS = (1024, 2048, 4096, 8192, 16384)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One row family of the table: our mechanism or a peer, with the parameters it runs with.

    `formula` and `formula_params` name the cost formula (a peer's is its counterpart's)."""

    label: str
    kind: str  # "layer" (ours) or "peer"
    name: str
    params: dict
    formula: str
    formula_params: dict


def lra_params(name):
    """A mechanism's parameters in configs/models/<name>.yaml (the LRA settings)."""
    path = CONFIGS_DIR / "models" / f"{name}.yaml"
    if not path.exists():
        return {}
    return dict(read_yaml(path).get("model", {}).get("attention_params", {}))


def ours(name, params=None, label=None):
    """The Entry of our mechanism `name` (LRA parameters updated with `params`)."""
    merged = {**lra_params(name), **(params or {})}
    return Entry(label or name, "layer", name, merged, name, merged)


def entries(mechanisms, peer_names, device=None):
    """Our mechanisms, each peer right after its counterpart (measured side by side in time);
    a counterpart that needs other parameters than our row gets a row of its own, labelled
    name[param=value], and so does a peer built with parameters of the `device` record."""
    rows = [ours(name) for name in mechanisms]
    for peer_name in peer_names:
        peer = peers.lookup(peer_name)
        counterpart = ours(peer.counterpart, peer.counterpart_params)
        if counterpart not in rows:
            counterpart = ours(
                peer.counterpart,
                peer.counterpart_params,
                label=f"{peer.counterpart}[{params_text(peer.counterpart_params)}]",
            )
            rows.append(counterpart)
        params = peers.build_params(peer_name, device or {})
        label = f"{peer_name}[{params_text(params)}]" if params else peer_name
        rows.insert(
            rows.index(counterpart) + 1,
            Entry(
                label,
                "peer",
                peer_name,
                params,
                counterpart.formula,
                {**counterpart.formula_params, **peer.cost_params},
            ),
        )
    return rows


def params_text(params):
    return ",".join(f"{key}={value}" for key, value in sorted(params.items()))


# -- in the child process -----------------------------------------------------------------------


def measure(spec):
    """Child entry for our mechanism: build it on the spec's shape and measure it."""
    shape = costs.Shape(**spec["shape"])
    layer = attention_layers.get(
        spec["name"],
        num_heads=shape.heads,
        head_dim=shape.head_dim,
        max_len=shape.length,
        seed=spec.get("seed", 0),
        **spec["params"],
    )
    layer.build((shape.batch, shape.length, shape.width))
    result = measure_layer(layer, lambda x, training: layer(x, training=training), shape, spec)
    return {**result, "kernel": layer.attention_kernel(shape.length, training=True)}


def measure_peer(spec):
    """Child entry for a peer: build it (with the spec's "params") and measure it like ours."""
    shape = costs.Shape(**spec["shape"])
    layer, call = peers.build(spec["name"], shape, spec.get("seed", 0), **spec.get("params", {}))
    return measure_layer(layer, call, shape, spec)


def measure_layer(layer, call, shape, spec):
    """Measure `call(x, training)` of `layer` with this process's Keras backend."""
    return backends.current().measure_call(call, lambda: layer.trainable_variables, shape, spec)


# -- the sweep (parent process) -----------------------------------------------------------------


def shape_dict(shape):
    return dataclasses.asdict(shape)


def planned_row(entry, shape, cap_gb):
    """The row's fixed part: what runs, its cost formula, memory estimate, skip reason."""
    cost = costs.attention_cost(entry.formula, shape, entry.formula_params)
    estimate = memory.estimated_gb(cost, shape)
    return {
        "label": entry.label,
        "kind": entry.kind,
        "name": entry.name,
        "params": entry.params,
        "length": shape.length,
        "shape": shape_dict(shape),
        "formula_flops": cost.flops,
        "formula_train_flops": cost.train_flops,
        "estimated_gb": estimate,
        "skipped": memory.over_cap(estimate, cap_gb),
    }


def backend_name(options):
    """--backend (the default for options made before it existed)."""
    return getattr(options, "backend", backends.DEFAULT)


def measurer(options):
    """The function measuring one spec as `options` say: in a fresh process with the chosen
    backend's KERAS_BACKEND, or in this one with --in-process (see `backends.check_in_process`)."""
    backend = backends.BACKENDS[backend_name(options)]
    return functools.partial(isolated.runner(options.in_process), environment=backend.environment)


def run_row(row, entry, options):
    """Measure one planned row in a fresh process; the row with results or an error."""
    if row["skipped"]:
        return row
    spec = {
        "name": entry.name,
        "params": entry.params,
        "shape": row["shape"],
        "warmup": options.warmup,
        "repeats": options.repeats,
        "max_seconds": options.max_seconds,
        "profile": not options.no_profile,
    }
    result = measurer(options)(entry.kind, spec, timeout=options.timeout)
    return {**row, **result, "load": machine.load_average()}


def add_rates(row, matmul_gflops):
    """Achieved GFLOP/s (formula FLOPs / median time) and fraction of the matmul rate (printed
    against the rate at the start, stored against the better of the start and end rates)."""
    for stage, flops in (("forward", row["formula_flops"]), ("train", row["formula_train_flops"])):
        if stage in row:
            gflops = flops / (row[stage]["median_ms"] / 1e3) / 1e9
            row[stage].update(gflops=gflops, matmul_fraction=gflops / matmul_gflops)
    return row


def describe_row(row):
    """One console line for a row."""
    head = f"{row['label']:<24} L={row['length']:<6}"
    if row.get("skipped"):
        return f"{head} skipped: {row['skipped']}"
    if "error" in row:
        return f"{head} failed: {row['error']}"
    fwd, train = row["forward"], row["train"]
    return (
        f"{head} forward {fwd['median_ms']:9.1f} ms (IQR {timing.spread(fwd):4.0%})  "
        f"fwd+bwd {train['median_ms']:9.1f} ms (IQR {timing.spread(train):4.0%})  "
        f"{memory.describe_peak(train)}  {train['gflops']:6.1f} GFLOP/s "
        f"({train['matmul_fraction']:.0%} of matmul)  load {row['load']:.1f}"
    )


def matmul_rate(options):
    """The dense matmul rate (GFLOP/s), measured in a fresh process like every row (with the
    record of its device, under a backend that has one)."""
    result = measurer(options)("matmul", {"size": options.matmul_size}, timeout=options.timeout)
    if "error" in result:
        raise RuntimeError(f"matmul benchmark failed: {result['error']}")
    return result


def chosen_backend(options):
    """The backend of --backend, checked (installed; the one of this process with --in-process),
    and options.peers resolved: the backend's peers when --peers was not given."""
    backend = backends.lookup(backend_name(options))
    backends.check_in_process(backend, options.in_process)
    own = peers.names(backend.name)
    if options.peers is None:
        options.peers = own
    foreign = [name for name in options.peers if name not in own]
    if foreign:
        raise UsageError(
            f"--peers {' '.join(foreign)}: not a peer under --backend {backend.name}",
            f"peers of {backend.name}: {', '.join(own) or 'none'}",
            "drop them from --peers or pass the --backend they belong to",
        )
    return backend


def backend_record(backend, matmul):
    """The results' "backend": its name and, where the backend names one, the device the matmul
    rate ran on (`device_record` of the backend's measuring module)."""
    return {"name": backend.name, **matmul.get("device", {})}


def describe_backend(record):
    """One console line for a backend record that names its device (None otherwise: TensorFlow's
    results keep the console they always had)."""
    if "kind" not in record:
        return None
    return (
        f"backend: {backends.BACKENDS[record['name']].title} on {record['kind']} "
        f"({record['platform']}); dot-product attention peer: {record['attention_note']}"
    )


def run(options, say=print):
    """The whole layer sweep; writes options.output after every row and returns the results."""
    backend = chosen_backend(options)
    shapes = [
        costs.Shape(options.batch, length, options.heads, options.head_dim)
        for length in options.lengths
    ]
    results = {
        **machine.run_record("layers", options, backend.libraries),
        "rows": [],
        "agreement": [],
        "matmul": [matmul_rate(options)],
    }
    results["backend"] = backend_record(backend, results["matmul"][0])
    plan = entries(options.mechanisms, options.peers, results["backend"])
    device = describe_backend(results["backend"])
    if device:
        say(device)
    say(f"matmul rate: {results['matmul'][0]['gflops']:.1f} GFLOP/s")
    for peer_name in options.peers:
        checked = peers.check_agreement(
            peer_name,
            options.agreement_length,
            measurer(options),
            options.timeout,
            peers.build_params(peer_name, results["backend"]),
        )
        results["agreement"].append(checked)
        say(peers.describe_agreement(checked))
    for shape in shapes:
        for entry in plan:
            row = run_row(planned_row(entry, shape, options.memory_cap_gb), entry, options)
            if "train" in row:
                add_rates(row, results["matmul"][0]["gflops"])
            results["rows"].append(row)
            say(describe_row(row))
            files.write_json(options.output, results)
    results["matmul"].append(matmul_rate(options))
    best = max(m["gflops"] for m in results["matmul"])
    for row in results["rows"]:
        if "train" in row:
            add_rates(row, best)
    results.update(finished=time.strftime("%Y-%m-%d %H:%M:%S"), load_end=machine.load_average())
    files.write_json(options.output, results)
    say(
        f"matmul rate at the end: {results['matmul'][-1]['gflops']:.1f} GFLOP/s; "
        f"results in {options.output}"
    )
    return results
