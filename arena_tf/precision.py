"""The one precision vocabulary of the garden: training, export, the benchmarks and the serving
bench all name a precision `fp32`, `fp16` or `bf16`, and take Keras's dtype policy names
(`float32`, `mixed_float16`, `mixed_bfloat16`) and the dtypes' own names as synonyms. Training also
takes `auto`: mixed_bfloat16 where a GPU is found, float32 elsewhere
(arena_tf/training/auto_precision.py).

    from arena_tf import precision
    precision.short_name("mixed_bfloat16")   # 'bf16'
    precision.policy("fp16")                 # 'mixed_float16'
"""

# short name -> Keras dtype policy, in the order tables and --help list them
POLICIES = {"fp32": "float32", "fp16": "mixed_float16", "bf16": "mixed_bfloat16"}
NAMES = tuple(POLICIES)
# any accepted spelling -> its short name
SYNONYMS = {
    **{name: name for name in POLICIES},
    **{policy: name for name, policy in POLICIES.items()},
    "float16": "fp16",
    "bfloat16": "bf16",
}
AUTO = "auto"


def short_name(text):
    """`fp32`, `fp16` or `bf16` for any spelling of a precision (case and spaces ignored).

    Args:
        text: str, a short name, a Keras dtype policy name or a dtype name.

    Returns:
        The short name.

    Raises:
        ValueError: `text` names no precision; the message lists the known spellings.
    """
    try:
        return SYNONYMS[str(text).strip().lower()]
    except KeyError:
        raise ValueError(f"unknown precision {text!r} (known: {', '.join(SYNONYMS)})") from None


def policy(text):
    """Keras's dtype policy name (`float32`, `mixed_float16`, `mixed_bfloat16`) for any spelling of
    a precision; ValueError as `short_name`."""
    return POLICIES[short_name(text)]
