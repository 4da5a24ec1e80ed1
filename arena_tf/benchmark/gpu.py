"""`python -m arena_tf.benchmark gpu`: the GPU benchmark under JAX (no TensorFlow) in one run, sized
to finish within 8 minutes on one GPU (tools/gpu_benchmark.sh runs it on a GPU machine).

Three parts, in this order, each with a time budget (rows it does not reach are written as "not
measured", never estimated):

- layers: one layer with its four projections, forward + backward (gradients of every weight and
  of the input, `jax_measure.measure_call`), every mechanism and mixer at (1K tokens, batch 4),
  (4K, 4), (16K, 1) and (64K, 1), in mixed_bfloat16 and float32, beside the fused peer (the same
  four projections around `jax.nn.dot_product_attention`, cuDNN for bf16 on a GPU) and the bf16
  and float32 matmul rates (8192-cube). Each row names the attention kernel it ran
  (`arena_tf.layers.kernels`).
- table2: LRA Table 2's protocol (byte-level text classifier: 4 layers, width 256, batch 32, 1K-4K
  tokens) on random tokens, training steps/s and the step's memory (XLA's analysis), every
  mechanism, in mixed_bfloat16 (the GPU default), beside the paper's 4x4 TPU v3 numbers (Tay et
  al. 2021, Table 2: `paper`).
- listops: ListOps at the paper's configuration (configs/tasks/listops.yaml: 6 layers of 512,
  batch 32, 2,000 tokens) for full, linformer, performer and bigbird in float32 and bf16.

Every row is dated and names the device; the results name the commit (from git, or from
ARENA_TF_COMMIT, which tools/gpu_benchmark.sh sets from git or, in a copy without the history,
from the file tools/offline_wheels.sh wrote).
`--dry-run` runs the same code at tiny sizes on any device (the CPU) in seconds; tests use it.
The JSON is rendered into the GPU tables (`gpu_report.render`) after every part.
"""

import dataclasses
import functools
import os
import subprocess
import time

import keras

import arena_tf.layers as attention_layers
from arena_tf import files
from arena_tf.benchmark import costs, gpu_report, layer_sweep, lra_table2, machine, memory, paper
from arena_tf.cli import RunError, UsageError
from arena_tf.config import ModelConfig, load_experiment
from arena_tf.precision import POLICIES
from arena_tf.tasks.listops import ListOps

PRECISIONS = {name: POLICIES[name] for name in ("bf16", "fp32")}  # bf16 first: the targets' own
LISTOPS_MECHANISMS = gpu_report.LISTOPS_MECHANISMS
FUSED_PEER = gpu_report.FUSED
PARTS = ("layers", "table2", "listops")


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What one run measures: the layer shapes (length, batch), heads, the Table 2 and ListOps
    shapes (None: the paper's model), timing and the parts' time budgets (seconds)."""

    layer_shapes: tuple
    heads: int
    head_dim: int
    table2_lengths: tuple
    table2_batch: int
    table2_model: dict
    listops_length: int
    listops_batch: int
    listops_model: dict
    repeats: int
    max_seconds: float
    matmul_size: int
    budgets: dict


FULL = Sizes(
    ((1024, 4), (4096, 4), (16384, 1), (65536, 1)),
    8,
    64,
    lra_table2.DEFAULT_LENGTHS,
    32,
    {},
    2000,
    32,
    {},
    10,
    1.5,
    8192,
    {"layers": 230, "table2": 120, "listops": 80},
)
TINY_MODEL = {"num_layers": 1, "num_heads": 2, "emb_dim": 16, "qkv_dim": 16, "mlp_dim": 32}
DRY_RUN = Sizes(
    ((64, 2),),
    2,
    8,
    (64,),
    2,
    TINY_MODEL,
    96,
    2,
    TINY_MODEL,
    2,
    0.2,
    256,
    {"layers": 120, "table2": 60, "listops": 60},
)


def today():
    """The date and time a row was measured, UTC."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def commit():
    """The commit measured: ARENA_TF_COMMIT (tools/gpu_benchmark.sh sets it, from the file
    tools/offline_wheels.sh wrote where a copy has no history), else `git rev-parse` here ('+dirty'
    with uncommitted changes)."""
    if os.environ.get("ARENA_TF_COMMIT"):
        return os.environ["ARENA_TF_COMMIT"]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git here and no ARENA_TF_COMMIT)"
    return head + ("+dirty" if dirty else "")


def check_backend(dry_run):
    """A usage error unless Keras runs on JAX and (without --dry-run) the device is a GPU."""
    backend = keras.backend.backend()
    if backend != "jax":
        raise UsageError(
            f"`benchmark gpu` measures under JAX; this process's Keras backend is {backend}",
            "KERAS_BACKEND=jax",
            "run it as KERAS_BACKEND=jax python -m arena_tf.benchmark gpu ...",
        )
    import jax  # jax: optional, only under the JAX backend

    platform = jax.devices()[0].platform
    if platform != "gpu" and not dry_run:
        raise UsageError(
            f"no GPU here (JAX's device is {platform})",
            "a GPU, or --dry-run",
            "run it on a GPU (tools/gpu_benchmark.sh) or pass --dry-run for the tiny sizes",
        )


def device():
    """{kind, platform, memory_gb}: JAX's first device."""
    import jax  # jax: optional, only under the JAX backend

    first = jax.devices()[0]
    limit = (first.memory_stats() or {}).get("bytes_limit")
    return {
        "kind": first.device_kind,
        "platform": first.platform,
        "memory_gb": None if limit is None else limit / 1e9,
    }


def matmul_rates(size):
    """{bf16, fp32} TFLOP/s of a jitted [size, size] matmul (the best of 10 calls)."""
    from arena_tf.benchmark import jax_measure  # imports jax: only under the JAX backend

    return {
        name: machine.matmul_rate(functools.partial(jax_measure.matmul_product, dtype=dtype), size)
        / 1e3
        for name, dtype in (("bf16", "bfloat16"), ("fp32", "float32"))
    }


class Clock:
    """Each part's deadline: rows after it are "not measured"."""

    def __init__(self, budgets):
        self.budgets, self.deadline = budgets, None

    def start(self, part):
        self.deadline = time.monotonic() + self.budgets[part]

    def left(self):
        return self.deadline - time.monotonic()


def not_measured(row, reason):
    return {**row, "status": "not measured", "reason": reason}


def measured(row, measure, clock):
    """`row` with what `measure()` returns, dated; "not measured" past the part's deadline; an
    error (out of memory, a refusal) as one line, so that one row never stops the run."""
    if clock.left() <= 0:
        return not_measured(row, "the part's time budget ran out before this row")
    try:
        return {**row, **measure(), "status": "measured", "date": today()}
    except Exception as error:  # noqa: BLE001 (a failed row is a result; the run goes on)
        line = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        return {
            **row,
            "status": "failed",
            "error": f"{type(error).__name__}: {line}",
            "date": today(),
        }


def set_precision(precision):
    keras.mixed_precision.set_global_policy(PRECISIONS[precision])


# -- part (a): layers ---------------------------------------------------------------------------


def first(names, leading):
    """`names` with those of `leading` first (the rows the targets need, measured first)."""
    return [name for name in leading if name in names] + [
        name for name in names if name not in leading
    ]


def layer_rows(mechanisms, sizes):
    """The planned rows of part (a): bf16 at every shape, then float32 (the targets are in bf16),
    per shape the fused peer, full and bigbird first, then the others."""
    for precision in PRECISIONS:
        for length, batch in sizes.layer_shapes:
            for name in (FUSED_PEER, *first(mechanisms, ("full", "bigbird"))):
                yield {
                    "part": "layers",
                    "name": name,
                    "length": length,
                    "batch": batch,
                    "precision": precision,
                }


def measure_layer(row, sizes, cap_gb, on_gpu):
    """Forward + backward of one layer (or the fused peer) as `row` says."""
    shape = costs.Shape(row["batch"], row["length"], sizes.heads, sizes.head_dim)
    peer = row["name"] == FUSED_PEER
    entry = layer_sweep.ours("full" if peer else row["name"])
    cost = costs.attention_cost(entry.formula, shape, entry.formula_params)
    skipped = memory.over_cap(memory.estimated_gb(cost, shape), cap_gb)
    if skipped:
        raise MemoryError(f"skipped: {skipped}")
    set_precision(row["precision"])
    spec = {
        "name": row["name"],
        "shape": layer_sweep.shape_dict(shape),
        "stages": ["train"],
        "repeats": sizes.repeats,
        "max_seconds": sizes.max_seconds,
        "warmup": 1,
        "profile": False,
        "params": entry.params,
    }
    if peer:
        implementation = "cudnn" if on_gpu and row["precision"] == "bf16" else "xla"
        spec["params"] = {"implementation": implementation}
        result = {**layer_sweep.measure_peer(spec), "kernel": f"jax.nn ({implementation})"}
    else:
        result = layer_sweep.measure(spec)
    train = result["train"]
    return {
        "ms": train["median_ms"],
        "train": train,
        "kernel": result["kernel"],
        "memory_mb": needed_mb(train["compiled"]),
        "train_flops": cost.train_flops,
    }


def needed_mb(analysed):
    """What XLA's memory analysis says a compiled executable needs, MiB."""
    return (
        analysed["argument_mb"] + analysed["output_mb"] + analysed["temp_mb"] - analysed["alias_mb"]
    )


# -- parts (b) and (c): training steps ------------------------------------------------------------


def table2_rows(mechanisms, sizes):
    """Per length, the mechanisms of the paper's Table 2 first."""
    for length in sizes.table2_lengths:
        for name in first(mechanisms, tuple(paper.STEPS_PER_SECOND)):
            yield {
                "part": "table2",
                "name": name,
                "length": length,
                "batch": sizes.table2_batch,
                "precision": "bf16",
            }


def listops_rows(mechanisms, sizes):
    for name in [m for m in LISTOPS_MECHANISMS if m in mechanisms]:
        for precision in PRECISIONS:
            yield {
                "part": "listops",
                "name": name,
                "length": sizes.listops_length,
                "batch": sizes.listops_batch,
                "precision": precision,
            }


def table2_config(row, sizes):
    model = {**lra_table2.MODEL, **sizes.table2_model}
    return ModelConfig(
        attention=row["name"],
        attention_params=layer_sweep.lra_params(row["name"]),
        max_len=row["length"],
        **model,
    )


def listops_config(row, sizes):
    model = load_experiment("listops", row["name"]).model
    return dataclasses.replace(
        model,
        max_len=row["length"],
        vocab_size=ListOps.vocab_size,
        num_classes=10,
        **sizes.listops_model,
    )


CONFIGS = {"table2": table2_config, "listops": listops_config}


def measure_training(row, sizes, cap_gb):
    """Training steps/s of the part's model on random tokens, as `row` says."""
    from arena_tf.benchmark import jax_steps  # imports jax: only under the JAX backend

    config = CONFIGS[row["part"]](row, sizes)
    shape = lra_table2.encoder_shape(row["batch"], row["length"])
    shape = dataclasses.replace(
        shape, heads=config.num_heads, head_dim=config.qkv_dim // config.num_heads
    )
    flops = costs.model_train_flops(
        config.attention, shape, config.attention_params, config.num_layers, config.mlp_dim
    )
    set_precision(row["precision"])
    layer = _first_attention(config)
    result = jax_steps.measure(
        config,
        row["batch"],
        {"repeats": sizes.repeats, "warmup": 1, "max_seconds": sizes.max_seconds},
    )
    return {
        **result,
        "train_flops": flops,
        "kernel": layer.attention_kernel(row["length"] + 1, training=True),
    }


def _first_attention(config):
    """An attention layer as the model builds it (to name the kernel its steps take)."""
    return attention_layers.get(
        config.attention,
        num_heads=config.num_heads,
        head_dim=config.qkv_dim // config.num_heads,
        max_len=config.max_len + 1,
        attention_dropout=config.attention_dropout,
        **config.attention_params,
    )


# -- the run ------------------------------------------------------------------------------------


def plan(options, sizes):
    """{part: planned rows} of the parts asked for."""
    builders = {"layers": layer_rows, "table2": table2_rows, "listops": listops_rows}
    return {part: list(builders[part](options.mechanisms, sizes)) for part in options.parts}


def run(options, say=print):
    """Measure the parts, writing options.output after every row and the report after every
    part; returns the results."""
    check_backend(options.dry_run)
    sizes = DRY_RUN if options.dry_run else FULL
    where = device()
    cap_gb = options.memory_cap_gb or 0.9 * (where["memory_gb"] or 16.0)
    results = {
        "benchmark": "gpu",
        "dry_run": options.dry_run,
        "device": where,
        "commit": commit(),
        "started": today(),
        "sizes": dataclasses.asdict(sizes),
        "matmul_tflops": matmul_rates(sizes.matmul_size),
        "rows": [],
    }
    say(
        f"gpu benchmark on {where['kind']} ({where['platform']}), commit {results['commit']}; "
        f"matmul bf16 {results['matmul_tflops']['bf16']:.1f} TFLOP/s, "
        f"fp32 {results['matmul_tflops']['fp32']:.1f}"
    )
    clock = Clock(sizes.budgets)
    measures = {
        "layers": lambda row: measure_layer(row, sizes, cap_gb, where["platform"] == "gpu"),
        "table2": lambda row: measure_training(row, sizes, cap_gb),
        "listops": lambda row: measure_training(row, sizes, cap_gb),
    }
    for part, rows in plan(options, sizes).items():
        clock.start(part)
        for row in rows:
            row = measured(
                {**row, "device": where["kind"]}, lambda row=row: measures[part](row), clock
            )
            results["rows"].append(row)
            say(gpu_report.describe_row(row))
            files.write_json(options.output, results)
        gpu_report.write(results, options.report)
    results["finished"] = today()
    files.write_json(options.output, results)
    gpu_report.write(results, options.report)
    say(f"results in {options.output}; tables in {options.report}")
    if results["rows"] and not any(row["status"] == "measured" for row in results["rows"]):
        first = results["rows"][0]
        raise RunError(
            f"no row was measured (the first {first['status']}: "
            f"{first.get('reason') or first.get('error')})",
            "at least one row measured",
            f"see {options.output}; a --memory-cap-gb below every row's estimate skips them all",
        )
    return results


def render_only(options, say=print):
    """--report-only: the tables from options.output ("not measured" everywhere without it)."""
    results = gpu_report.read(options.output)
    gpu_report.write(results, options.report)
    say(f"tables in {options.report} from {options.output if results else 'no results'}")
    return results
