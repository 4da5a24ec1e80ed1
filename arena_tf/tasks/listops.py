"""ListOps: the value (0-9) of a nested MIN / MAX / MED / SM expression, up to 2000 tokens.

Data, in order: the LRA release files `basic_{train,val,test}.tsv` in `data_dir` (or its
`listops-1000/` or `lra_release/listops-1000/` subfolder); otherwise the project's generator
(`arena_tf.generators.listops`, LRA rules, 96K / 2K / 2K, seed 0) writes them once into `data_dir`
(default ./data/listops) and later runs reuse them.

Checks: the first use of the files in a process reads each once and refuses
a malformed line (not two tab-separated columns, a value other than 0-9, a token outside the
vocabulary, brackets that do not pair up) with a BadDataError naming the file and line; the
label counts of `prepare` come from that reading.

Encoding: parentheses are dropped (as in the reference loader) and each remaining token gets its
id in the fixed VOCABULARY below (ids 1..15; the reference's order came from a Python set and
changed between processes); 0 is padding; vocabulary size 16; max_len 2000.

Without TensorFlow: `arrays` / `batches` read the same ids through `parse_file`, which tokenizes
the checked lines a few MB at a time with NumPy: 10,000 lines of about 2,000 tokens in 0.4 s, 5-6
times faster than a line at a time in Python (the first use in a process also checks every line,
`check_file`, about 1 s per 10,000, as for tf.data).

Rows: `{"input": EXPRESSION, "target": VALUE}`, the two columns of a line as they are (parentheses
kept); `encode_input` tokenizes an expression as load_split does.

    task = arena_tf.tasks.get("listops")
    tokens, label = next(iter(task.load_split("validation")))   # int32 [2000], int32 scalar
"""

import collections
import dataclasses
import itertools
import logging
import os

import numpy as np

from arena_tf.generators import listops as generator
from arena_tf.progress import Progress
from arena_tf.tasks import register, sources
from arena_tf.tasks.base import SPLITS, BadDataError, DataNotFoundError, RowError, Task

log = logging.getLogger(__name__)

# Token ids are positions here plus one: "0" -> 1, ..., "9" -> 10, "[MIN" -> 11, "[MAX" -> 12,
# "[MED" -> 13, "[SM" -> 14, "]" -> 15. Never reorder: trained models depend on it.
VOCABULARY = (*generator.VALUES, "[MIN", "[MAX", "[MED", "[SM", generator.END)
DROPPED = ("(", ")")
SUBFOLDERS = ("", "listops-1000", "lra_release/listops-1000")
HEADER = generator.HEADER.rstrip("\n")
TOKENS = frozenset(token.encode() for token in (*VOCABULARY, *DROPPED))
LABELS = {value.encode(): int(value) for value in generator.VALUES}
TOKEN_IDS = {
    **{token: index for index, token in enumerate(VOCABULARY, start=1)},
    **{token: 0 for token in DROPPED},
}  # 0: dropped
BLOCK_BYTES = 1 << 22  # text tokenized per NumPy pass (parse_file)
LINE_FORMAT = (
    "'EXPRESSION<tab>VALUE' lines as in the LRA release, e.g. '( [MAX 2 9 ] )<tab>9': a value "
    "0-9, ListOps tokens only, one ']' per operator and one ')' per '('"
)


@register
class ListOps(sources.TextPreview, Task):
    """ListOps from the LRA release files, or generated once under a seed.

    Extra arguments: `generator_spec` (a `ListOpsSpec`; sizes, lengths and seed of generated data),
    `processes` (generator processes; the data does not depend on it) and `generate` (False: read
    only, a missing set is a DataNotFoundError instead of being generated).
    """

    name = "listops"
    num_classes = 10
    vocab_size = len(VOCABULARY) + 1
    max_len = 2000
    num_inputs = 1
    padding_id = 0

    def __init__(
        self,
        data_dir=None,
        max_len=None,
        seed=0,
        generator_spec=None,
        processes=None,
        generate=True,
    ):
        super().__init__(data_dir=data_dir, max_len=max_len, seed=seed)
        self.generate = generate
        if isinstance(generator_spec, dict):  # from YAML: task.params.generator_spec
            generator_spec = generator.ListOpsSpec(**generator_spec)
        self.requested_spec = generator_spec
        self.generator_spec = generator_spec or generator.ListOpsSpec()
        self.processes = processes

    def load_split(self, split):
        import tensorflow as tf

        table = _token_table()
        return self._lines(split).map(
            lambda line: self._parse(line, table),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )

    def read_arrays(self, split):
        """The split's ids (uint8) and labels read with NumPy, as load_split parses the lines."""
        return parse_file(self.files()[sources.check_split(split)], self.max_len)

    def rows(self, split):
        """The split's rows, read with Python alone (the XLA serving bench runs without
        TensorFlow)."""
        path = self.files()[sources.check_split(split)]
        with open(path, "rb") as lines:
            if _has_header(path):
                lines.readline()
            for line in lines:
                fields = line.rstrip(b"\r\n").split(b"\t")  # checked: two columns, a value 0-9
                yield {"input": fields[0].decode(), "target": self.target(fields[-1].strip())}

    def encode_input(self, value):
        """Token ids of an expression: parentheses dropped, the others by VOCABULARY, cut and
        padded to max_len (as `_parse`)."""
        if not isinstance(value, str):
            raise row_error(f"a ListOps input is a {type(value).__name__}")
        tokens = value.split()
        unknown = [token for token in tokens if token not in TOKEN_IDS]
        if unknown:
            raise row_error(f"{unknown[0][:20]!r} is not a ListOps token")
        ids = [TOKEN_IDS[token] for token in tokens]
        return sources.fit_ids([i for i in ids if i > 0], self.max_len)

    def _lines(self, split):
        """The lines of the split's file, without its header."""
        import tensorflow as tf

        path = self.files()[sources.check_split(split)]
        lines = tf.data.TextLineDataset(str(path))
        return lines.skip(1) if _has_header(path) else lines

    def prepare(self):
        files = self.files()
        return {split: check_file(files[split]).summary for split in SPLITS}

    def files(self):
        """{split: path} of the release files, generating them first if no folder holds them, each
        checked line by line (once per process); BadDataError at the first malformed line."""
        root = sources.data_root(self.name, self.data_dir)
        names = list(generator.SPLIT_FILES.values())
        folder = sources.found_or_generated(
            self,
            root,
            self.name,
            lambda: sources.find_folder(root, names, SUBFOLDERS),
            lambda: self._generate(root, names),
        )
        made_with = generator.generated_spec(folder)
        if self.requested_spec and made_with and made_with != self.requested_spec:
            raise BadDataError(
                f"listops: {folder} holds data generated with {made_with}",
                f"data generated with the requested {self.requested_spec}",
                "use another --data-dir or delete that folder to generate it again",
            )
        paths = {split: folder / name for split, name in generator.SPLIT_FILES.items()}
        fix = (
            f"delete {folder} to generate it again"
            if made_with
            else "correct or delete that line, or restore the file from the LRA release "
            "(listops-1000/)"
        )
        for path in paths.values():
            check_file(path, fix)
        return paths

    def location(self):
        """The folder holding the split files."""
        return str(self.files()["train"].parent)

    def decode(self, tokens):
        """Token ids back to ListOps text (without parentheses, padding dropped)."""
        return " ".join(VOCABULARY[i - 1] for i in tokens if i > 0)

    def _generate(self, root, names):
        sources.check_generation(self, sources.places(root, SUBFOLDERS))
        partial = sources.present_files(root, names, SUBFOLDERS)
        if partial:
            raise DataNotFoundError(
                f"listops: found only {', '.join(map(str, partial))} of {', '.join(names)} in "
                f"{sources.places(root, SUBFOLDERS)}",
                "all three files in one folder",
                "restore the missing files, or remove these to let the generator write all three",
            )
        log.info("listops: no release files in %s; generating %s", root, self.generator_spec)
        with sources.generator_writing(
            f"listops: no {', '.join(names)} in {sources.places(root, SUBFOLDERS)}",
            "the LRA release files there, or a writable folder",
            "pass --data-dir=DIR with DIR holding the LRA release files or writable",
        ):
            generator.generate(root, self.generator_spec, processes=self.processes)
        return root

    def _parse(self, line, table):
        import tensorflow as tf

        fields = tf.strings.split(line, "\t")
        ids = table.lookup(tf.strings.split(fields[0]))
        check = tf.debugging.assert_non_negative(
            ids, message=f"listops: a line holds a token outside {' '.join(VOCABULARY)} ( )"
        )
        with tf.control_dependencies([check]):
            ids = tf.boolean_mask(ids, ids > 0)
        label = tf.strings.to_number(tf.strings.strip(fields[-1]), tf.int32)
        return sources.fit_length(ids, self.max_len), label


def row_error(what):
    """A RowError for a ListOps row input."""
    return RowError(what, "an expression of ListOps tokens, e.g. '( [MAX 2 9 ] )'", "fix the row")


def _token_table():
    """String token -> id: VOCABULARY ids 1..15, parentheses 0 (dropped), anything else -1."""
    import tensorflow as tf

    keys = list(VOCABULARY) + list(DROPPED)
    values = list(range(1, len(VOCABULARY) + 1)) + [0] * len(DROPPED)
    initializer = tf.lookup.KeyValueTensorInitializer(keys, tf.constant(values, tf.int32))
    return tf.lookup.StaticHashTable(initializer, default_value=-1)


def parse_file(path, max_len):
    """(uint8 ids [lines, max_len], int32 labels [lines]) of a ListOps file, as `_parse` reads
    its lines: the header skipped, parentheses dropped, the ids cut and right-padded to max_len.
    The file is checked first (`check_file`: its BadDataError for a malformed line), so each line
    holds one tab, ListOps tokens before it and one digit after; the lines are then tokenized a
    block at a time with NumPy (`_parse_block`), not one by one."""
    count = check_file(path).lines
    ids, labels = np.zeros((count, max_len), np.uint8), np.zeros(count, np.int32)
    done = 0
    with open(path, "rb") as f:
        if _has_header(path):
            f.readline()
        for block in _line_blocks(f, BLOCK_BYTES):
            done += _parse_block(block, ids[done:], labels[done:])
    return ids, labels


def _line_blocks(f, size):
    """Blocks of about `size` bytes of whole lines read from `f`, each ending with a newline (one
    added after a last line without it)."""
    rest = b""
    while block := f.read(size):
        block = rest + block
        cut = block.rfind(b"\n") + 1
        rest = block[cut:]
        if cut:
            yield block[:cut]
    if rest:
        yield rest + b"\n"


def _parse_block(block, ids, labels):
    """Tokenize the checked lines of `block` into the first rows of `ids` and `labels`; the
    number of lines. Checked lines hold token bytes (all above 41), parentheses (40, 41) and
    blanks (the bytes bytes.split and tf.strings.split split on, all <= 32): so a kept token
    starts at a byte above 41 after one of 41 or below, and parentheses drop out as blanks. In
    each line the tokens before the tab are the expression, the one after it the label."""
    data = np.frombuffer(block, np.uint8)
    solid = data > ord(")")
    starts = solid.copy()
    starts[1:] &= ~solid[:-1]
    starts = np.flatnonzero(starts)
    line_starts = np.flatnonzero(data == ord("\n"))[:-1] + 1
    first = np.searchsorted(starts, np.concatenate([[0], line_starts]))  # a line's first token
    label = np.searchsorted(starts, np.flatnonzero(data == ord("\t")))  # its token after the tab
    count = len(first)
    labels[:count] = data[starts[label]] - ord("0")
    expression = np.ones(len(starts), bool)
    expression[label] = False
    tokens = starts[expression]  # line k's are tokens[first[k] - k:label[k] - k]
    lengths = label - first
    rank = np.arange(len(tokens)) - np.repeat(first - np.arange(count), lengths)
    line = np.repeat(np.arange(count), lengths)
    fits = rank < ids.shape[1]
    tokens = tokens[fits]
    token_ids = PAIR_IDS[data[tokens], data[tokens + 2]]  # no token ends a line: a tab follows
    np.put(ids, line[fits] * ids.shape[1] + rank[fits], token_ids)
    return count


def _pair_ids():
    """PAIR_IDS[first byte, third byte]: the id of the VOCABULARY token starting with them. The
    first byte tells the tokens apart but for the operators ('[MIN', '[MAX', '[MED', '[SM'),
    which the third does."""
    table = np.zeros((256, 256), np.uint8)
    for index, token in enumerate(VOCABULARY, start=1):
        raw = token.encode()
        table[raw[0], raw[2] if raw.startswith(b"[") else slice(None)] = index
    return table


PAIR_IDS = _pair_ids()


Scan = collections.namedtuple("Scan", ["lines", "summary"])
_SCANS = {}  # (path, size, mtime) -> Scan: each file is read once per process


def check_file(path, fix="correct or delete that line, or restore the file from the LRA release"):
    """Scan(lines, summary) of a ListOps TSV after checking every line once per process (cached
    while the file is unchanged); BadDataError naming the first malformed line, what is wrong
    with it, how many lines are, and `fix`. Lines are split on '\\n' as TextLineDataset does;
    a first line 'Source<tab>Target' is the header."""
    stat = os.stat(path)
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _SCANS:
        _SCANS[key] = _scan(path, stat.st_size, fix)
    return _SCANS[key]


def _scan(path, size, fix):
    labels = collections.Counter()
    first, bad, lines = None, 0, 0
    progress = Progress(f"listops: checking {path}", size, "MB", scale=1e6)
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            progress.update(len(line))
            line = line.rstrip(b"\n").rstrip(b"\r")
            if number == 1 and line.decode("utf-8", "replace") == HEADER:
                continue
            problem, label = _check_line(line)
            if problem is None:
                labels[label] += 1
                lines += 1
                continue
            bad += 1
            first = first or (number, problem)
    progress.finish()
    if first:
        more = f" (and {bad - 1} more malformed line{'s' * (bad > 2)})" if bad > 1 else ""
        raise BadDataError(f"listops: {path}:{first[0]}: {first[1]}{more}", LINE_FORMAT, fix)
    if not lines:
        raise BadDataError(
            f"listops: {path} holds no example",
            LINE_FORMAT,
            "restore the file from the LRA release, or delete the folder to generate it again",
        )
    return Scan(lines, {"examples": lines, "labels": dict(sorted(labels.items()))})


def _check_line(line):
    """(None, label) for a well-formed line, (what is wrong, None) otherwise."""
    fields = line.split(b"\t")
    if len(fields) != 2:
        shown = line.decode("utf-8", "replace")
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return (
            f"{len(fields)} tab-separated column{'s' * (len(fields) != 1)} instead of 2 ({shown!r})"
        ), None
    expression, value = fields[0], fields[1].strip()
    if value not in LABELS:
        return f"the value {value.decode('utf-8', 'replace')[:20]!r} is not a number 0-9", None
    tokens = expression.split()
    if not tokens:
        return "no expression before the tab", None
    unknown = set(tokens) - TOKENS
    if unknown:
        token = min(unknown, key=tokens.index).decode("utf-8", "replace")[:20]
        return f"{token!r} is not a ListOps token", None
    operators, closing = expression.count(b"["), expression.count(b"]")
    if operators != closing:
        return f"unbalanced brackets ({_count(operators, 'operator')}, {closing} ']')", None
    opening, closed = expression.count(b"("), expression.count(b")")
    if opening != closed:
        return f"unbalanced parentheses ({opening} '(', {closed} ')')", None
    return None, LABELS[value]


def _count(number, noun):
    return f"{number} {noun}{'s' * (number != 1)}"


def _has_header(path):
    with open(path, "rb") as f:
        return f.readline().rstrip(b"\r\n").decode("utf-8", "replace") == HEADER


@dataclasses.dataclass(frozen=True)
class RuleBaselines:
    """What rules that read a ListOps tree only so far score on a split (`rule_baselines`).

    majority: (the most common value of the fitted trees, its accuracy on the scored ones);
    levels: {level: accuracy} of `generator.read_to_level` at each level (0: the root operator
    alone; 1: the root over its direct children), the usual values fitted on `fitted` trees of
    the train split and scored on the `scored` trees of the test split.
    """

    majority: tuple
    levels: dict
    fitted: int
    scored: int


# Rule levels `listops-baselines` scores by default, and the names the report gives them.
RULE_LEVELS = {0: "root operator", 1: "root over its children", 2: "two levels", 3: "three levels"}


def rule_baselines(task, levels=tuple(RULE_LEVELS), fit_trees=10_000):
    """`RuleBaselines` of `task`'s data (its files, generated first where absent): the usual
    values fitted on the first `fit_trees` trees of the train split, every tree of the test split
    scored. The data's checks apply (BadDataError at a malformed line)."""
    files = task.files()
    fitted = list(itertools.islice(_trees(files["train"]), fit_trees))
    scored = list(_trees(files["test"]))
    labels = collections.Counter(label for _, label in fitted)
    common = max(labels, key=lambda value: (labels[value], -value))
    accuracy = {}
    for level in levels:
        usual = generator.usual_values([tree for tree, _ in fitted], level)
        hits = sum(generator.read_to_level(tree, level, usual) == label for tree, label in scored)
        accuracy[level] = hits / len(scored)
    majority = sum(label == common for _, label in scored) / len(scored)
    return RuleBaselines((common, majority), accuracy, len(fitted), len(scored))


def _trees(path):
    """(tree, value) of each line of a checked split file."""
    with open(path, encoding="ascii") as lines:
        if _has_header(path):
            lines.readline()
        for line in lines:
            expression, value = line.rstrip("\r\n").split("\t")
            yield generator.parse(expression), int(value)
