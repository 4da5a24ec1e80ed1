"""Each of our mechanisms and its peer side by side: both built in one process and timed in
interleaved rounds, so that the speed-up comes with its spread.

    python -m arena_tf.benchmark pairs [--pairs performer:kernel_exp ...] [--length 4096]
        [--batches 1 4] [--masks none padded] [--rounds 7] [--calls 3] [--runs 2]
        [--output docs/results/efficiency/pairs.json]

A pair is one of `targets.PEER_TARGETS`, named OURS:PEER and built as `layers` builds it: ours by
`layer_sweep.ours` (the LRA parameters and the peer's counterpart parameters), the peer by its
builder in `peers`. Each configuration (pair, batch, mask) runs in a fresh child process
(`isolated`), so configurations share no memory; inside it Keras 3 (ours, keras_mha) and tf_keras
(the Model Garden's peers) live side by side on one TensorFlow runtime. Each side gets one
`tf.function` forward + backward step (`tf_measure.train_step`: gradients for the input and every
weight), traced and warmed up; then `rounds` rounds each call both `calls` times in alternating
pairs, (ours, peer), (peer, ours), ..., starting with ours in even rounds and with the peer in odd
ones (ABBA / BAAB), so that a drift of the machine hits both alike. A round's ratio is the peer's
median over ours. The whole sweep runs `runs` times (each configuration in a new process each time,
the runs minutes apart), and a configuration's spread pools the rounds of all its runs, so it covers
the variation between processes as well as within one. The record keeps every round's ratio, their
median, min and max, both medians in ms, the thread settings, the load, and both layers'
constructors (tools/side_by_side.py rebuilds the pairs from them without this package).

Masks: "none" passes no mask; "padded" pads the last quarter of the sequence at batch 1 and, at
larger batches, from nothing (first example) to a quarter (last). Each layer takes the padding
through its own mask argument (ours `mask=`, the peer's in `peers.Built.masking`); a peer that
takes none is recorded as unsupported.
"""

import importlib.util
import json
import time

import numpy as np

import arena_tf.layers as attention_layers
from arena_tf import files
from arena_tf.benchmark import backends, costs, layer_sweep, machine, peers, targets, tf_measure
from arena_tf.cli import UsageError

DEFAULT_LENGTH = 4096
HEADS, HEAD_DIM, SEED = 4, 64, 0
SIDES = ("ours", "peer")
# OURS:PEER -> (our row label, peer name), from the peer targets.
KNOWN = {f"{ours}:{peer}": (ours, peer) for ours, peer, _ in targets.PEER_TARGETS}
ORDER = (
    "rounds alternate ABBA / BAAB: within a round, calls go in pairs (ours, peer), "
    "(peer, ours), ..., the first pair starting with ours in even rounds and with the peer "
    "in odd ones"
)


def padded_lengths(batch, length):
    """Real tokens per example: the last quarter padded at batch 1; from none padded (first
    example) to a quarter (last) at larger batches."""
    quarter = length // 4
    if batch == 1:
        return [length - quarter]
    return [length - quarter * index // (batch - 1) for index in range(batch)]


# --masks NAME -> real tokens per example (batch, length); "none" passes no mask at all.
MASKS = {"none": lambda batch, length: [length] * batch, "padded": padded_lengths}


def sides(pair):
    """(our Entry, peer name) of `pair`, as `layers` builds them."""
    label, peer_name = KNOWN[pair]
    peer = peers.lookup(peer_name)
    return layer_sweep.ours(peer.counterpart, peer.counterpart_params, label=label), peer_name


def chosen_pairs(names):
    """--pairs checked: known pairs whose peer's package is installed (one-line errors)."""
    unknown = [name for name in names if name not in KNOWN]
    if unknown:
        raise UsageError(
            f"--pairs {' '.join(unknown)}: not a pair",
            f"one of {', '.join(KNOWN)}",
            "pass OURS:PEER pairs from that list (default: all)",
        )
    for name in names:
        package = peers.lookup(KNOWN[name][1]).package
        if package and importlib.util.find_spec(package) is None:
            raise UsageError(
                f"--pairs {name}: its peer needs the {package} module "
                "(tf-models-official), which is not installed",
                "tf-models-official importable by this Python",
                f"install it ({peers.INSTALL[package]}) or leave {name} out",
            )
    return names


# -- in the child process -----------------------------------------------------------------------


def json_safe(config):
    """A layer's get_config() as JSON (TensorShapes as lists, other objects as their text)."""
    return json.loads(
        json.dumps(
            config,
            default=lambda value: value.as_list() if hasattr(value, "as_list") else str(value),
        )
    )


def build_ours(spec, shape, mask):
    """(layer, call, record) of our side: the mechanism of spec["ours"] on `shape`, called with
    `mask` (None: no mask)."""
    arguments = {
        "num_heads": shape.heads,
        "head_dim": shape.head_dim,
        "max_len": shape.length,
        "seed": spec.get("seed", SEED),
    }
    layer = attention_layers.get(spec["ours"]["name"], **arguments, **spec["ours"]["params"])
    layer.build((shape.batch, shape.length, shape.width))
    record = {
        **spec["ours"],
        "arguments": arguments,
        "masking": "mask= bool [batch, L] (True for real tokens)",
    }
    return layer, lambda x, training: layer(x, mask=mask, training=training), record


def peer_record(name, built):
    """What the pair's record says of the peer: enough to rebuild it and call it."""
    return {
        "name": name,
        "title": peers.lookup(name).title,
        **built.constructor,
        "masking": built.masking,
        "config": json_safe(built.layer.get_config()),
    }


def interleaved(steps, x, rounds, calls):
    """{side: [[seconds of each call] for each round]}, the sides called in ORDER."""
    seconds = {side: [] for side in SIDES}
    for index in range(rounds):
        taken = {side: [] for side in SIDES}
        for number in range(calls):
            for side in SIDES[::-1] if (index + number) % 2 else SIDES:
                start = time.perf_counter()
                steps[side](x)
                taken[side].append(time.perf_counter() - start)
        for side in SIDES:
            seconds[side].append(taken[side])
    return seconds


def summary(seconds):
    """Each round's ratio (peer median / ours median), their median, min and max, and each
    side's median in ms over all its calls and in each round."""
    medians = {side: [float(np.median(r)) * 1e3 for r in seconds[side]] for side in SIDES}
    ratios = [peer / ours for ours, peer in zip(medians["ours"], medians["peer"])]
    result = {
        "ratios": ratios,
        "ratio_median": float(np.median(ratios)),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
    }
    for side in SIDES:
        every = [t for each_round in seconds[side] for t in each_round]
        result.update(
            {f"{side}_ms": float(np.median(every)) * 1e3, f"{side}_round_ms": medians[side]}
        )
    return result


def measure(spec):
    """Child entry: the pair of `spec` built in this process and timed in interleaved rounds."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    shape = costs.Shape(**spec["shape"])
    built = peers.build_peer(spec["peer"]["name"], shape, spec.get("seed", SEED))
    if spec["mask"] != "none" and built.masking is None:
        return {
            "unsupported": f"{spec['peer']['name']} takes no padding mask",
            "peer": peer_record(spec["peer"]["name"], built),
        }
    lengths = MASKS[spec["mask"]](shape.batch, shape.length)
    mask = None if spec["mask"] == "none" else tf.sequence_mask(lengths, shape.length)
    ours, call, record = build_ours(spec, shape, mask)
    steps = {
        "ours": tf_measure.train_step(call, lambda: ours.trainable_variables),
        "peer": tf_measure.train_step(
            lambda x, training: built.call(x, training, mask),
            lambda: built.layer.trainable_variables,
        ),
    }
    x = tf_measure.normal((shape.batch, shape.length, shape.width), spec.get("seed", SEED))
    for _ in range(spec.get("warmup", 2)):  # the first traces
        for side in SIDES:
            steps[side](x)
    load_before = machine.load_average()
    seconds = interleaved(steps, x, spec["rounds"], spec["calls"])
    return {
        **summary(seconds),
        "ours": record,
        "peer": peer_record(spec["peer"]["name"], built),
        "valid_lengths": lengths,
        "threads": tf_measure.thread_settings(),
        "load_before": load_before,
        "load": machine.load_average(),
    }


# -- the sweep (parent process) -----------------------------------------------------------------


def planned_row(pair, batch, mask, options):
    """A configuration's fixed part: what is paired, on which shape, how often."""
    entry, peer_name = sides(pair)
    shape = costs.Shape(batch, options.length, HEADS, HEAD_DIM)
    return {
        "pair": pair,
        "ours": {"label": entry.label, "name": entry.name, "params": entry.params},
        "peer": {"name": peer_name, "title": peers.lookup(peer_name).title},
        "batch": batch,
        "mask": mask,
        "length": options.length,
        "shape": layer_sweep.shape_dict(shape),
        "rounds": options.rounds,
        "calls": options.calls,
    }


def run_row(row, options):
    """Measure one planned configuration (in a fresh process); the row with its results, or with
    "unsupported" or "error"."""
    spec = {key: row[key] for key in ("ours", "peer", "shape", "mask", "rounds", "calls")}
    spec.update(warmup=options.warmup, seed=SEED)
    return {**row, **layer_sweep.measurer(options)("pair", spec, timeout=options.timeout)}


def merged(runs):
    """One configuration's row over its runs (each a fresh process): the rounds of every run
    pooled for the median, min and max, each side's ms the median of the runs' medians, and each
    run's own summary under "runs". A run that failed or was unsupported stands for the row."""
    for run in runs:
        if "ratios" not in run:
            return run
    ratios = [ratio for run in runs for ratio in run["ratios"]]
    per_run = [{key: run[key] for key in RUN_SUMMARY} for run in runs]
    return {
        **runs[0],
        "ratios": ratios,
        "ratio_median": float(np.median(ratios)),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "runs": per_run,
        **{f"{side}_ms": float(np.median([run[f"{side}_ms"] for run in runs])) for side in SIDES},
    }


# What each run of a configuration keeps of its own in the merged row.
RUN_SUMMARY = ("ratio_median", "ratio_min", "ratio_max", "ours_ms", "peer_ms", "load")


def describe_row(row):
    """One console line for a configuration."""
    head = f"{row['pair']:<32} batch {row['batch']:<3} mask {row['mask']:<7}"
    if "unsupported" in row:
        return f"{head} unsupported: {row['unsupported']}"
    if "error" in row:
        return f"{head} failed: {row['error']}"
    return (
        f"{head} peer / ours {row['ratio_median']:5.2f}x [{row['ratio_min']:.2f}-"
        f"{row['ratio_max']:.2f}]  ours {row['ours_ms']:8.1f} ms  peer {row['peer_ms']:8.1f} "
        f"ms  load {row['load']:.1f}"
    )


def describe_rates(results):
    """The console line of the matmul rate beside the lscpu peak."""
    peak = results["peak"]
    stated = (
        f"{peak['cores']} cores x {peak['mhz']:.0f} MHz x {peak['flops_per_cycle']} "
        f"FLOPs/cycle = {peak['gflops']:.0f} GFLOP/s"
        if peak.get("gflops")
        else f"unknown ({peak.get('error', 'no clock or vector flags')})"
    )
    return f"matmul rate: {results['matmul_rate']['gflops']:.1f} GFLOP/s; lscpu peak: {stated}"


def run(options, say=print):
    """Every (pair, batch, mask); writes options.output after each and returns the results."""
    backends.check_in_process(backends.lookup("tensorflow"), options.in_process)
    names = chosen_pairs(options.pairs)
    results = {
        **machine.run_record("pairs", options),
        "order": ORDER,
        "matmul_rate": layer_sweep.matmul_rate(options),
        "peak": machine.lscpu_peak(),
        "rows": [],
    }
    say(describe_rates(results))
    plans = [
        planned_row(pair, batch, mask, options)
        for pair in names
        for batch in options.batches
        for mask in options.masks
    ]
    measured = [[] for _ in plans]
    for repeat in range(options.runs):  # every configuration once, then again: runs apart in time
        say(f"run {repeat + 1} of {options.runs}")
        for index, plan in enumerate(plans):
            measured[index].append(run_row(plan, options))
            results["rows"] = [merged(runs) for runs in measured if runs]
            say(describe_row(measured[index][-1]))
            files.write_json(options.output, results)
    results.update(finished=time.strftime("%Y-%m-%d %H:%M:%S"), load_end=machine.load_average())
    files.write_json(options.output, results)
    say(f"results in {options.output}")
    return results
