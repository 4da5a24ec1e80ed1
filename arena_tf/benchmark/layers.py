"""The layer benchmark: every mechanism (and peer) alone, forward and forward + backward.

    python -m arena_tf.benchmark layers --lengths 1024 2048 4096 8192 16384

Each (mechanism or peer, length) runs in a fresh process (`isolated`): time of the forward and of
forward + backward (gradients for the input and every weight) under `tf.function`, warm-up
excluded, median and spread of several calls; peak resident memory above the process's baseline;
FLOPs from the cost formula, checked against TensorFlow's profiler on the same graph; achieved
GFLOP/s and its fraction of the dense matmul rate measured in the same run. A length whose
estimated memory exceeds the cap is skipped and said so.
"""

import dataclasses
import time

from arena_tf import files
from arena_tf.benchmark import costs, isolated, machine, memory, timing
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
    return dict(read_yaml(path).get("model", {}).get("attention_params", {})) if path.exists() else {}


def ours(name, params=None, label=None):
    """The Entry of our mechanism `name` (LRA parameters updated with `params`)."""
    merged = {**lra_params(name), **(params or {})}
    return Entry(label or name, "layer", name, merged, name, merged)


def entries(mechanisms, peer_names):
    """Our mechanisms, each peer right after its counterpart (measured side by side in time);
    a counterpart that needs other parameters than our row gets a row of its own, labelled
    name[param=value]."""
    from arena_tf.benchmark import peers

    rows = [ours(name) for name in mechanisms]
    for peer_name in peer_names:
        peer = peers.lookup(peer_name)
        counterpart = ours(peer.counterpart, peer.counterpart_params)
        if counterpart not in rows:
            counterpart = ours(peer.counterpart, peer.counterpart_params,
                               label=f"{peer.counterpart}[{params_text(peer.counterpart_params)}]")
            rows.append(counterpart)
        rows.insert(rows.index(counterpart) + 1,
                    Entry(peer_name, "peer", peer_name, {}, counterpart.formula,
                          counterpart.formula_params))
    return rows


def params_text(params):
    return ",".join(f"{key}={value}" for key, value in sorted(params.items()))


# -- in the child process -----------------------------------------------------------------------


def measure(spec):
    """Child entry for our mechanism: build it on the spec's shape and measure it."""
    import tensorflow as tf

    import arena_tf.layers as attention_layers

    shape = costs.Shape(**spec["shape"])
    layer = attention_layers.get(spec["name"], num_heads=shape.heads, head_dim=shape.head_dim,
                                 max_len=shape.length, seed=spec.get("seed", 0), **spec["params"])
    layer.build((shape.batch, shape.length, shape.width))
    return measure_call(lambda x, training: layer(x, training=training),
                        lambda: layer.trainable_variables, shape, spec, tf)


def measure_call(call, variables, shape, spec, tf):
    """Time forward and forward + backward of `call(x, training)`, peak memory, profiled FLOPs.

    `variables()` gives the weights to differentiate (after the first trace has built them)."""
    x = tf.random.normal((shape.batch, shape.length, shape.width), seed=spec.get("seed", 0))

    def train_step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(call(x, True))
        return tape.gradient(loss, [x, *variables()])

    forward = tf.function(lambda x: call(x, False))
    backward = tf.function(train_step)
    result = {"profiled": profile(forward, backward, x, spec.get("profile", True), tf)}
    baseline = memory.current_rss_mb()
    options = {k: spec[k] for k in ("warmup", "repeats", "max_seconds") if k in spec}
    result["forward"] = timing.time_calls(lambda: forward(x), **options)
    result["forward"]["peak_mb"] = memory.peak_rss_mb() - baseline
    result["train"] = timing.time_calls(lambda: backward(x), **options)
    result["train"]["peak_mb"] = memory.peak_rss_mb() - baseline
    result.update(baseline_mb=baseline, peak_rss_mb=memory.peak_rss_mb())
    return result


def profile(forward, backward, x, enabled, tf):
    """FLOPs counted in the forward and forward + backward graphs: TensorFlow's profiler (matmul
    ops, and every op it has statistics for) and, for forward + backward, the adjoint-aware
    count of `costs.graph_matmul_flops`."""
    if not enabled:
        return {}
    spec = tf.TensorSpec(x.shape, x.dtype)
    graphs = {"forward": forward.get_concrete_function(spec),
              "train": backward.get_concrete_function(spec)}
    return {
        "forward_matmul_flops": costs.profiled_flops(graphs["forward"]),
        "forward_all_flops": costs.profiled_flops(graphs["forward"], op_types=None),
        "train_matmul_flops": costs.graph_matmul_flops(graphs["train"]),
        "train_profiler_matmul_flops": costs.profiled_flops(graphs["train"]),
        "train_all_flops": costs.profiled_flops(graphs["train"], op_types=None),
    }


# -- the sweep (parent process) -----------------------------------------------------------------


def shape_dict(shape):
    return dataclasses.asdict(shape)


def planned_row(entry, shape, cap_gb):
    """The row's fixed part: what runs, its cost formula, memory estimate, skip reason."""
    cost = costs.attention_cost(entry.formula, shape, entry.formula_params)
    estimate = memory.estimated_gb(cost, shape)
    return {
        "label": entry.label, "kind": entry.kind, "name": entry.name, "params": entry.params,
        "length": shape.length, "shape": shape_dict(shape),
        "formula_flops": cost.flops, "formula_train_flops": cost.train_flops,
        "estimated_gb": estimate, "skipped": memory.over_cap(estimate, cap_gb),
    }


def run_row(row, entry, options):
    """Measure one planned row in a fresh process; the row with results or an error."""
    if row["skipped"]:
        return row
    spec = {"name": entry.name, "params": entry.params, "shape": row["shape"],
            "warmup": options.warmup, "repeats": options.repeats,
            "max_seconds": options.max_seconds, "profile": not options.no_profile}
    result = isolated.runner(options.in_process)(entry.kind, spec, timeout=options.timeout)
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
    return (f"{head} forward {fwd['median_ms']:9.1f} ms (IQR {timing.spread(fwd):4.0%})  "
            f"fwd+bwd {train['median_ms']:9.1f} ms (IQR {timing.spread(train):4.0%})  "
            f"peak +{train['peak_mb']:7.0f} MB  {train['gflops']:6.1f} GFLOP/s "
            f"({train['matmul_fraction']:.0%} of matmul)  load {row['load']:.1f}")


def matmul_rate(options):
    """The dense matmul rate (GFLOP/s), measured in a fresh process like every row."""
    result = isolated.runner(options.in_process)("matmul", {"size": options.matmul_size},
                                                 timeout=options.timeout)
    if "error" in result:
        raise RuntimeError(f"matmul benchmark failed: {result['error']}")
    return result


def run(options, say=print):
    """The whole layer sweep; writes options.output after every row and returns the results."""
    from arena_tf.benchmark import peers

    shapes = [costs.Shape(options.batch, length, options.heads, options.head_dim)
              for length in options.lengths]
    plan = entries(options.mechanisms, options.peers)
    results = {**machine.run_record("layers", options), "rows": [], "agreement": [],
               "matmul": [matmul_rate(options)]}
    say(f"matmul rate: {results['matmul'][0]['gflops']:.1f} GFLOP/s")
    for peer_name in options.peers:
        checked = peers.check_agreement(peer_name, options.agreement_length,
                                        isolated.runner(options.in_process), options.timeout)
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
    say(f"matmul rate at the end: {results['matmul'][-1]['gflops']:.1f} GFLOP/s; "
        f"results in {options.output}")
    return results
