"""The memory guard: a run whose estimated peak memory exceeds what the machine has available is
refused before its first step, in one line with the estimate and the memory available, instead of
growing until the kernel kills it without a word.

The estimate is the benchmark's cost model (`arena_tf/benchmark/costs.py` for the attention
tensors, `arena_tf/benchmark/memory.py` for the copies alive at the peak of forward + backward) over
the model's layers and towers, plus the weights with their gradients and two AdamW moments. It is a
coarse upper estimate of what the model adds; it compares against host memory (MemAvailable), the
memory of a CPU run, and so guards CPU runs only: where a GPU is detected the tensors live in its
memory, which host memory does not measure, and XLA fuses what the estimate counts as stored (on an
NVIDIA H200 of 143,771 MiB, LRA ListOps with full attention trained 2,142 steps under JAX where the
estimate said 199.4 GB: docs/results/reproduction/device/2026-11-28-call*-lra.log).
ARENA_TF_MEMORY_GUARD=0 turns the guard off where the estimate is wrong.
"""

import os

from arena_tf import cli
from arena_tf.benchmark import costs, memory
from arena_tf.training import auto_precision

WEIGHT_COPIES = 4  # the weights, their gradients, AdamW's two moments


def weight_count(model):
    """Parameters of the encoder classifier, near enough: embeddings, per layer the four
    projections and the MLP, the classifier head."""
    per_layer = 4 * model.emb_dim * model.qkv_dim + 2 * model.emb_dim * model.mlp_dim
    return (
        model.vocab_size * model.emb_dim
        + model.num_layers * per_layer
        + model.encoder_len * model.emb_dim
        + 4 * model.emb_dim * model.num_classes
    )


def estimate_gb(model, batch_size):
    """Estimated peak memory (GB) of one training step of `model` on `batch_size` examples."""
    shape = costs.Shape(
        batch=batch_size * (2 if model.two_tower else 1),
        length=model.encoder_len,
        heads=model.num_heads,
        head_dim=model.head_dim,
    )
    try:
        cost = costs.attention_cost(model.attention, shape, model.attention_params)
    except (ValueError, TypeError, KeyError):  # a mechanism without a formula: activations only
        cost = costs.Cost(0.0, 0.0)
    activations = memory.estimated_gb(cost, shape, layers=model.num_layers)
    mlp = (
        model.num_layers
        * memory.ACTIVATION_COPIES
        * shape.batch
        * shape.length
        * max(0, model.mlp_dim - shape.width)
        * memory.FLOAT_BYTES
        / 1e9
    )
    weights = WEIGHT_COPIES * weight_count(model) * memory.FLOAT_BYTES / 1e9
    return activations + mlp + weights


def check_fits(model, batch_size, available=None, gpu=None):
    """Raise UsageError when a training step of `model` on `batch_size` cannot fit in host memory;
    nothing where a GPU is detected (`gpu`, or `auto_precision.gpu_detected()` when None)."""
    if os.environ.get("ARENA_TF_MEMORY_GUARD") == "0":
        return
    if auto_precision.gpu_detected() if gpu is None else gpu:
        return
    needed = estimate_gb(model, batch_size)
    available = memory.available_gb() if available is None else available
    if needed > available:
        raise cli.UsageError(
            f"this run needs about {needed:.1f} GB of memory at its peak (estimated from "
            f"train.batch_size={batch_size}, model.max_len={model.max_len}, "
            f"model.attention_params={model.attention_params or {}}), but this machine has "
            f"{available:.1f} GB available",
            "a run that fits in the memory available",
            "lower train.batch_size, model.max_len or the attention's sizes "
            "(ARENA_TF_MEMORY_GUARD=0 skips this check)",
        )
