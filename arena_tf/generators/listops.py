"""ListOps (Nangia & Bowman, 2018) as Long Range Arena generated it, fast and deterministic.

Rules (those of the LRA generator): a node at depth d (the root has depth 1) becomes a value leaf
with probability 0.75 while d < max_depth (always at max_depth); otherwise it is an operator, one of
MIN, MAX, MED (median, floored) and SM (sum mod 10), with 2 to max_args arguments. Values are 0-9.
A tree's length counts operators, values and closing brackets (not parentheses); trees are kept when
min_length < length < max_length. Splits of 96K / 2K / 2K distinct trees (no tree in two splits).

Output: the LRA release files `basic_{train,val,test}.tsv`, header `Source\\tTarget`, one tree a
line in the release's parenthesised form with its value, e.g. `( ( ( [MAX 2 ) 9 ) ] )\\t9`. Each
file is written to a temporary file and renamed into place.

Determinism: each shard of SHARD_SIZE accepted trees comes from its own random stream, seeded by
(seed, split, shard index), and shards are merged in index order, so the files are the same bytes
for the same spec whatever the number of processes.

    spec = ListOpsSpec(seed=0)                   # the LRA sizes
    paths = generate("data/listops", spec)       # {"train": Path(".../basic_train.tsv"), ...}
    evaluate("[MAX 2 9 ]")                       # 9, with or without the parentheses

The full 100K set (640 MB) takes about a CPU-minute: measured 57 CPU-seconds, 165 s wall time on
two cores shared with other jobs (`python -m arena_tf.generators.listops --out-dir=DIR`).
"""

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path

from arena_tf import cli
from arena_tf.generators import atomic_writer
from arena_tf.progress import Progress

log = logging.getLogger(__name__)

END = "]"
VALUES = tuple("0123456789")
SPLIT_FILES = {"train": "basic_train.tsv", "validation": "basic_val.tsv", "test": "basic_test.tsv"}
HEADER = "Source\tTarget\n"
SHARD_SIZE = 250  # accepted trees per shard; part of the data's identity: changing it changes files
LEAF_PROBABILITY = 0.75


def _median_floor(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) // 2


OPERATIONS = {
    "[MIN": min,
    "[MAX": max,
    "[MED": _median_floor,
    "[SM": lambda values: sum(values) % 10,
}
OPERATORS = tuple(OPERATIONS)


@dataclasses.dataclass(frozen=True)
class ListOpsSpec:
    """What to generate: split sizes, length bounds (exclusive), tree shape and the seed."""

    train: int = 96_000
    validation: int = 2_000
    test: int = 2_000
    min_length: int = 500
    max_length: int = 2000
    max_depth: int = 10
    max_args: int = 10
    seed: int = 0

    def __post_init__(self):
        sizes = {"train": self.train, "validation": self.validation, "test": self.test}
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes.values()):
            raise ValueError(
                "ListOps split sizes must be whole numbers >= 1; got "
                + ", ".join(f"{split}={n!r}" for split, n in sizes.items())
            )
        if not 0 <= self.min_length < self.max_length - 1 or self.max_length <= 4:
            raise ValueError(
                f"ListOps lengths must satisfy 0 <= min_length < max_length - 1 and max_length > 4 "
                f"(the shortest operator tree has 4 tokens); got min_length={self.min_length}, "
                f"max_length={self.max_length}"
            )
        if self.max_args < 2 or self.max_depth < 2:
            raise ValueError(
                f"ListOps needs max_args >= 2 and max_depth >= 2 for any operator; got "
                f"max_args={self.max_args}, max_depth={self.max_depth}"
            )
        if self.min_length >= self.longest_tree():
            raise ValueError(
                f"ListOps min_length={self.min_length} is out of reach: trees of depth "
                f"{self.max_depth} with {self.max_args} arguments have at most "
                f"{self.longest_tree()} tokens; lower min_length or raise max_depth / max_args"
            )

    def longest_tree(self):
        """The most tokens a tree can have under max_depth and max_args."""
        length = 1  # a leaf at max_depth
        for _ in range(self.max_depth - 1):
            length = 2 + self.max_args * length
        return length

    def size(self, split):
        return getattr(self, split)


class _TooLong(Exception):
    """A tree reached max_length while growing: it would be rejected, so stop drawing it."""


class _TreeDrawer:
    """Draws one random tree as its release text, tracking its value and length on the way."""

    def __init__(self, rng, spec):
        self.rng = rng
        self.spec = spec
        self.parts = []
        self.length = 0

    def node(self, depth):
        """Append one subtree's text; return its value."""
        rng = self.rng
        if depth >= self.spec.max_depth or rng.random() < LEAF_PROBABILITY:
            return self._leaf(int(rng.random() * 10))
        arity = 2 + int(rng.random() * (self.spec.max_args - 1))
        operator = OPERATORS[int(rng.random() * len(OPERATORS))]
        self._count(2)
        self.parts.append("( " * (arity + 1) + operator)
        values = []
        for _ in range(arity):
            self.parts.append(" ")
            values.append(self.node(depth + 1))
            self.parts.append(" )")
        self.parts.append(" ] )")
        return OPERATIONS[operator](values)

    def _leaf(self, value):
        self._count(1)
        self.parts.append(VALUES[value])
        return value

    def _count(self, tokens):
        self.length += tokens
        if self.length >= self.spec.max_length:
            raise _TooLong


def draw_tree(rng, spec):
    """One tree (text, value, length) within the spec's length bounds, or None if rejected."""
    drawer = _TreeDrawer(rng, spec)
    try:
        value = drawer.node(1)
    except _TooLong:
        return None
    if drawer.length <= spec.min_length:
        return None
    return "".join(drawer.parts), value, drawer.length


def shard_rng(spec, split, index):
    """The random stream of one shard, fixed by (seed, split, shard index) on every machine."""
    return random.Random(f"listops/{spec.seed}/{split}/{index}")


def generate_shard(spec, split, index):
    """SHARD_SIZE accepted trees of shard `index` as (text, value) pairs."""
    rng = shard_rng(spec, split, index)
    trees = []
    while len(trees) < SHARD_SIZE:
        tree = draw_tree(rng, spec)
        if tree:
            trees.append(tree[:2])
    return trees


def _generate_shard_args(args):
    return generate_shard(*args)


def tokens(text):
    """The ListOps tokens of `text`, parentheses dropped."""
    return [token for token in text.split() if token not in ("(", ")")]


def evaluate(text):
    """The value (0-9) of a ListOps expression, with or without parentheses; ValueError if
    malformed."""
    return read_to_level(parse(text), math.inf, {})


def parse(text):
    """The tree of a ListOps expression, parentheses or not: a value (int) or (operator,
    [subtrees]); ValueError if malformed."""
    frames, done = [], []
    for token in tokens(text):
        target = frames[-1][1] if frames else done
        if token in OPERATIONS:
            frames.append((token, []))
        elif token in VALUES:
            target.append(int(token))
        elif token == END and frames and frames[-1][1]:
            node = frames.pop()
            (frames[-1][1] if frames else done).append(node)
        else:
            raise ValueError(f"malformed ListOps at token {token!r} in {text[:80]!r}")
    if frames or len(done) != 1:
        raise ValueError(f"malformed ListOps: unclosed operator or not one value in {text[:80]!r}")
    return done[0]


def read_to_level(tree, level, usual):
    """The value of `tree` read down to `level` operators below the root: the operators there
    replaced by `usual[operator]` (their arguments unread), those above evaluated from their
    arguments, values read as they are. Level 0 reads only the root operator; level 1 evaluates
    the root over its direct children."""
    if isinstance(tree, int):
        return tree
    operator, arguments = tree
    if level == 0:
        return usual[operator]
    return OPERATIONS[operator]([read_to_level(a, level - 1, usual) for a in arguments])


def usual_values(trees, level):
    """{operator: its most common value (the smallest of a tie)} over the operators `level`
    below the roots of `trees`; operators never seen there get the most common value of all."""
    counts = {operator: [0] * len(VALUES) for operator in OPERATORS}

    def visit(tree, depth):
        if isinstance(tree, int):
            return tree
        operator, arguments = tree
        value = OPERATIONS[operator]([visit(a, depth + 1) for a in arguments])
        if depth == level:
            counts[operator][value] += 1
        return value

    for tree in trees:
        visit(tree, 0)
    overall = [sum(c[v] for c in counts.values()) for v in range(len(VALUES))]
    return {
        operator: max(range(len(VALUES)), key=lambda v: (c[v], -v))
        if any(c)
        else max(range(len(VALUES)), key=lambda v: (overall[v], -v))
        for operator, c in counts.items()
    }


def _digest(text):
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _write_split(out, spec, split, seen, pool_map, progress=None):
    """Write spec.size(split) distinct trees not in `seen` yet, shard by shard in index order;
    `progress.update` counts the trees written."""
    out.write(HEADER)
    written, next_shard = 0, 0
    while written < spec.size(split):
        shards = math.ceil((spec.size(split) - written) / SHARD_SIZE)
        jobs = [(spec, split, index) for index in range(next_shard, next_shard + shards)]
        next_shard += shards
        before = written
        for shard in pool_map(_generate_shard_args, jobs):
            shard_start = written
            for text, value in shard:
                key = _digest(text)
                if written < spec.size(split) and key not in seen:
                    seen.add(key)
                    out.write(f"{text}\t{value}\n")
                    written += 1
            if progress is not None:
                progress.update(written - shard_start)
        if written == before:
            raise ValueError(
                f"ListOps {split}: no new distinct tree in {shards * SHARD_SIZE} draws; the spec "
                f"allows too few trees for {spec.size(split)} examples: widen min_length/max_length"
            )


@contextlib.contextmanager
def _shard_mapper(processes):
    """An ordered map over shards: in this process for 1 process, else a pool of spawned processes
    (not forked: safe when the parent has TensorFlow's threads running), at most one per CPU."""
    processes = min(processes, os.cpu_count() or 1)
    if processes <= 1:
        yield map
        return
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        yield lambda fn, jobs: pool.imap(fn, jobs)


# Written beside generated split files: the spec that made them, so a different request is noticed.
SPEC_FILE = "generator.json"


def generated_spec(folder):
    """The ListOpsSpec that generated `folder`'s files, or None for release / unrecorded files."""
    path = Path(folder) / SPEC_FILE
    return ListOpsSpec(**json.loads(path.read_text())) if path.exists() else None


def generate(out_dir, spec=None, processes=None):
    """Write the three split files into `out_dir`; return {split: path}. Same spec, same bytes.
    A progress line (done/total, rate, ETA) goes to stderr every few seconds (`progress`)."""
    spec = spec or ListOpsSpec()
    processes = processes or os.cpu_count() or 1
    paths = {split: Path(out_dir) / name for split, name in SPLIT_FILES.items()}
    seen = set()
    started = time.perf_counter()
    total = sum(spec.size(split) for split in SPLIT_FILES)
    progress = Progress(f"listops: generating into {out_dir}", total, "expressions")
    with progress.ticking(), _shard_mapper(processes) as pool_map, contextlib.ExitStack() as files:
        for split, path in paths.items():
            _write_split(
                files.enter_context(atomic_writer(path)), spec, split, seen, pool_map, progress
            )
    progress.finish()
    with atomic_writer(Path(out_dir) / SPEC_FILE) as out:
        json.dump(dataclasses.asdict(spec), out, indent=2, sort_keys=True)
    log.info("generated ListOps %s in %.1f s into %s", spec, time.perf_counter() - started, out_dir)
    return paths


def main(argv=None):
    """`python -m arena_tf.generators.listops --out-dir=DIR`: generate and time the LRA-size set.

    Args:
        argv: --out-dir, --seed, --processes, --debug (default: sys.argv[1:]).

    Exit status:
        0 when the set is written and timed, 2 for a user's mistake (one `error: ...` line), 1
            when generating failed (`--debug` shows the traceback instead).

    Example:
        python -m arena_tf.generators.listops --out-dir=data/listops

    References:
        Nangia and Bowman, 2018, "ListOps: A Diagnostic Dataset for Latent Tree Learning",
            arXiv:1804.06028.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.generators.listops",
        description="Generate and time the LRA-size ListOps set.",
    )
    parser.add_argument("--out-dir", required=True, help="where the TSV files go")
    parser.add_argument("--seed", type=cli.whole_number(0), default=0)
    parser.add_argument(
        "--processes", type=cli.positive_int, default=None, help="default: all CPUs"
    )
    args = parser.parse_args(argv)
    return cli.run_main(lambda: run(args), debug=args.debug)


def run(args):
    started = time.perf_counter()
    generate(cli.output_dir(args.out_dir), ListOpsSpec(seed=args.seed), processes=args.processes)
    print(f"generated ListOps into {args.out_dir} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
