"""ListOps: the value (0-9) of a nested MIN / MAX / MED / SM expression, up to 2000 tokens.

Data, in order: the LRA release files `basic_{train,val,test}.tsv` in `data_dir` (or its
`listops-1000/` or `lra_release/listops-1000/` subfolder); otherwise the project's generator
(`arena_tf.generators.listops`, LRA rules, 96K / 2K / 2K, seed 0) writes them once into `data_dir`
(default ./data/listops) and later runs reuse them.

Encoding: parentheses are dropped (as in the reference loader) and each remaining token gets its
id in the fixed VOCABULARY below (ids 1..15; the reference's order came from a Python set and
changed between processes); 0 is padding; vocabulary size 16; max_len 2000.

    task = arena_tf.tasks.get("listops")
    tokens, label = next(iter(task.load_split("validation")))   # int32 [2000], int32 scalar
"""

import logging

import tensorflow as tf

from arena_tf.generators import listops as generator
from arena_tf.tasks import register, sources
from arena_tf.tasks.base import SPLITS, DataNotFoundError, Task

log = logging.getLogger(__name__)

# Token ids are positions here plus one: "0" -> 1, ..., "9" -> 10, "[MIN" -> 11, "[MAX" -> 12,
# "[MED" -> 13, "[SM" -> 14, "]" -> 15. Never reorder: trained models depend on it.
VOCABULARY = (*generator.VALUES, "[MIN", "[MAX", "[MED", "[SM", generator.END)
DROPPED = ("(", ")")
SUBFOLDERS = ("", "listops-1000", "lra_release/listops-1000")
HEADER = generator.HEADER.rstrip("\n")


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

    def __init__(self, data_dir=None, max_len=None, seed=0, generator_spec=None, processes=None,
                 generate=True):
        super().__init__(data_dir=data_dir, max_len=max_len, seed=seed)
        self.generate = generate
        if isinstance(generator_spec, dict):  # from YAML: task.params.generator_spec
            generator_spec = generator.ListOpsSpec(**generator_spec)
        self.requested_spec = generator_spec
        self.generator_spec = generator_spec or generator.ListOpsSpec()
        self.processes = processes

    def load_split(self, split):
        path = self.files()[sources.check_split(split)]
        lines = tf.data.TextLineDataset(str(path))
        if _has_header(path):
            lines = lines.skip(1)
        table = _token_table()
        return lines.map(
            lambda line: self._parse(line, table),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )

    def prepare(self):
        return {split: sources.summarize(self.load_split(split)) for split in SPLITS}

    def files(self):
        """{split: path} of the release files, generating them first if no folder holds them."""
        root = sources.data_root(self.name, self.data_dir)
        names = list(generator.SPLIT_FILES.values())
        folder = sources.find_folder(root, names, SUBFOLDERS) or self._generate(root, names)
        made_with = generator.generated_spec(folder)
        if self.requested_spec and made_with and made_with != self.requested_spec:
            raise DataNotFoundError(
                f"listops: {folder} holds data generated with {made_with}, not the requested "
                f"{self.requested_spec}; use another --data_dir or delete that folder"
            )
        return {split: folder / name for split, name in generator.SPLIT_FILES.items()}

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
                f"{sources.places(root, SUBFOLDERS)}; restore the missing files, or remove these "
                f"to let the generator write all three"
            )
        log.info("listops: no release files in %s; generating %s", root, self.generator_spec)
        try:
            generator.generate(root, self.generator_spec, processes=self.processes)
        except OSError as error:
            raise DataNotFoundError(
                f"listops: no {', '.join(names)} in {sources.places(root, SUBFOLDERS)} and the "
                f"generator could not write there ({error}); pass --data_dir=DIR with DIR holding "
                f"the LRA release files or writable"
            ) from error
        return root

    def _parse(self, line, table):
        fields = tf.strings.split(line, "\t")
        ids = table.lookup(tf.strings.split(fields[0]))
        check = tf.debugging.assert_non_negative(
            ids, message=f"listops: a line holds a token outside {' '.join(VOCABULARY)} ( )"
        )
        with tf.control_dependencies([check]):
            ids = tf.boolean_mask(ids, ids > 0)
        label = tf.strings.to_number(tf.strings.strip(fields[-1]), tf.int32)
        return sources.fit_length(ids, self.max_len), label


def _token_table():
    """String token -> id: VOCABULARY ids 1..15, parentheses 0 (dropped), anything else -1."""
    keys = list(VOCABULARY) + list(DROPPED)
    values = list(range(1, len(VOCABULARY) + 1)) + [0] * len(DROPPED)
    initializer = tf.lookup.KeyValueTensorInitializer(keys, tf.constant(values, tf.int32))
    return tf.lookup.StaticHashTable(initializer, default_value=-1)


def _has_header(path):
    with open(path, "rb") as f:
        return f.readline().rstrip(b"\r\n").decode("utf-8", "replace") == HEADER
