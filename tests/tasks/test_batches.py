"""Batches without TensorFlow (arena_tf/tasks/batches.py): `arrays` gives what tf.data's load_split
gives, element by element (the oracle); `batches` covers every example once an epoch, the same
under the same seed, reshuffled each epoch, from any batch on; nothing on the way imports
TensorFlow, and a task that needs it says how to install it in one line."""

import itertools
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import arena_tf.tasks as tasks
from arena_tf.generators import listops as generator
from arena_tf.tasks import batches, listops
from arena_tf.tasks.pathfinder import PNG_SIGNATURE, SkippedImageWarning, png_problem
from tests.one_line import assert_one_error_line
from tests.tasks.conftest import TINY_LISTOPS
from tests.tasks.helpers import ROOT, pathfinder_set, write_listops
from tests.tasks.test_retrieval import write_aan

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_batches")

EPOCH = TINY_LISTOPS.train  # 60 training examples


def assert_arrays_are_load_split(task, split):
    """`task.arrays(split)` holds load_split's examples, in its order: same structure, int32."""
    inputs, labels = task.arrays(split)
    examples = list(task.load_split(split).as_numpy_iterator())
    assert len(examples) == len(labels) > 0 and labels.dtype == np.int32
    assert isinstance(inputs, tuple) == isinstance(examples[0][0], tuple)
    for column in batches.as_tuple(inputs):
        assert column.dtype == np.int32 and column.shape == (len(examples), task.max_len)
    for index, (want_inputs, want_label) in enumerate(examples):
        assert labels[index] == want_label, f"example {index}"
        for got, want in zip(batches.as_tuple(inputs), batches.as_tuple(want_inputs), strict=True):
            np.testing.assert_array_equal(got[index], want, err_msg=f"example {index}")


# ----------------------------------------------------------------------------- arrays: ListOps


@pytest.mark.parametrize("split, max_len", [("train", None), ("validation", None), ("test", 24)])
def test_listops_arrays_are_load_split(tiny_listops_dir, split, max_len):
    assert_arrays_are_load_split(
        tasks.get("listops", data_dir=tiny_listops_dir, max_len=max_len), split
    )


def test_listops_arrays_do_not_depend_on_the_blocks_read(tiny_listops_dir, monkeypatch):
    monkeypatch.setattr(listops, "BLOCK_BYTES", 97)  # less than a line: lines span blocks
    assert_arrays_are_load_split(tasks.get("listops", data_dir=tiny_listops_dir), "validation")


@pytest.mark.parametrize("header", ["Source\tTarget\r\n", ""])
def test_listops_arrays_read_release_quirks_as_load_split(tmp_path, header):
    lines = [
        "( ( ( [MAX 2 ) 9 ) ] )\t9",
        "[SM 3  [MIN 4 8 ] ]\t 7 ",  # two blanks; blanks around the value
        " [MAX 1 ]\t1",  # a leading blank
        "[MAX [MED 1 7 4 2 ] [MIN 0 1 ] ]\t3",  # longer than max_len: cut
        "5\t5",
    ]
    body = header + "\r\n".join(lines)  # CRLF line ends, none after the last line
    for name in generator.SPLIT_FILES.values():
        (tmp_path / name).write_bytes(body.encode())
    assert_arrays_are_load_split(tasks.get("listops", data_dir=tmp_path, max_len=6), "test")


def test_listops_arrays_refuse_a_malformed_line_as_load_split(tmp_path):
    folder = write_listops(tmp_path, "[MAX 2 9 ]\t9\n[MAX 2 9\t9\n")
    errors = []
    for read in ("arrays", "load_split"):
        with pytest.raises(tasks.BadDataError) as raised:
            getattr(tasks.get("listops", data_dir=folder), read)("train")
        errors.append(str(raised.value))
    assert errors[0] == errors[1] and "basic_train.tsv:3: unbalanced brackets" in errors[0]


# -------------------------------------------------------------------- arrays: Pathfinder, Path-X


@pytest.fixture(scope="module")
def pathfinder_root(tmp_path_factory):
    """20 generated Pathfinder images (16 / 2 / 2), kept pristine: tests that break some copy."""
    root = tmp_path_factory.mktemp("pathfinder20")
    pathfinder_set(root, 20)
    return root


@pytest.mark.parametrize("split", ["train", "test"])
def test_pathfinder_arrays_are_load_split(pathfinder_root, split):
    assert_arrays_are_load_split(tasks.get("pathfinder", data_dir=pathfinder_root), split)


def test_pathfinder_arrays_skip_the_images_load_split_skips(pathfinder_root, tmp_path):
    shutil.copytree(pathfinder_root, tmp_path / "data")
    task = tasks.get("pathfinder", data_dir=tmp_path / "data", max_bad_images=1)
    paths = [path for path, _ in task.examples("train")]
    Image.fromarray(np.zeros((32, 32), np.uint8)).save(paths[1])  # all zero: skipped, warned
    open(paths[3], "wb").close()  # unreadable: left out by examples()
    task = tasks.get("pathfinder", data_dir=tmp_path / "data", max_bad_images=1)
    with pytest.warns(SkippedImageWarning, match="sample_1.png") as caught:
        assert_arrays_are_load_split(task, "train")
    assert len(task.arrays("train")[1]) == len(paths) - 2
    assert {str(warning.message) for warning in caught} == {
        f"skipped {paths[1]}: all-zero or unreadable PNG"
    }


def png_chunk(kind, data):
    return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")


GRAY_32 = (32).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])  # IHDR: 32 x 32, 8-bit grey
UNDECODABLE = b"".join(
    [
        PNG_SIGNATURE,
        png_chunk(b"IHDR", GRAY_32),
        png_chunk(b"IDAT", b"not zlib data"),
        png_chunk(b"IEND", b""),
    ]
)


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda path: Image.open(path).convert("RGB").save(path), "a RGB image"),
        (lambda path: Image.new("L", (16, 16), 7).save(path), "16 x 16 pixels"),
        (lambda path: path.write_bytes(UNDECODABLE), "cannot be decoded"),  # whole, checksums right
    ],
)
def test_pathfinder_arrays_refuse_images_pillow_cannot_read_as_tf_in_one_line(
    pathfinder_root, tmp_path, damage, says
):
    shutil.copytree(pathfinder_root, tmp_path / "data")
    task = tasks.get("pathfinder", data_dir=tmp_path / "data")
    path = Path(task.examples("test")[0][0])
    damage(path)
    assert png_problem(path) is None  # a whole PNG: not left out by the file check
    with pytest.raises(tasks.BadDataError) as raised:
        task.arrays("test")
    assert_one_error_line(f"error: {raised.value}\n", f"{path}: {says}", "8-bit grayscale PNGs")


def test_pathx_arrays_are_load_split(tmp_path):
    task = tasks.get("pathx", data_dir=tmp_path, num_examples=5, processes=1)
    assert_arrays_are_load_split(task, "train")


# ----------------------------------------------------------- arrays: tasks read through TensorFlow


def test_a_two_input_task_is_read_through_load_split_where_tensorflow_is(tmp_path):
    write_aan(tmp_path, ["1\tP1\tP2\tfirst doc\tsecond doc", "bad line", "0\tP3\tP4\tü\tz"] * 3)
    task = tasks.get("retrieval", data_dir=tmp_path, max_len=16)
    assert_arrays_are_load_split(task, "validation")
    (first, second), labels = next(task.batches("train", 4))
    assert first.shape == second.shape == (4, 16) and first.dtype == np.int32
    assert labels.shape == (4,)


@pytest.mark.parametrize("name", ["text", "image", "retrieval"])
def test_a_task_read_through_tensorflow_says_how_to_install_it(monkeypatch, tmp_path, name):
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` fails
    task = tasks.get(name, data_dir=tmp_path)
    for read in (lambda: task.arrays("train"), lambda: task.batches("test", 8)):
        with pytest.raises(tasks.DataNotFoundError) as raised:
            read()
        assert_one_error_line(
            f"error: {raised.value}\n",
            f"{name}: its data is read through",
            'pip install -e ".[tf]"',
            "(listops, pathfinder, pathx)",
        )


# ------------------------------------------------------------------------------------- batches


def example_numbers(task, stream):
    """Per batch of `stream`, the numbers (in `arrays` order) of its examples, after checking the
    batch's dtypes and that its labels are those examples' labels."""
    inputs, labels = task.arrays("train")
    number = {row.tobytes(): index for index, row in enumerate(inputs)}
    found = []
    for tokens, batch_labels in stream:
        assert tokens.dtype == batch_labels.dtype == np.int32
        assert tokens.shape == (len(batch_labels), task.max_len)
        found.append([number[row.tobytes()] for row in tokens])
        np.testing.assert_array_equal(batch_labels, labels[found[-1]])
    return found


@pytest.fixture(scope="module")
def listops_task(tiny_listops_dir):
    return tasks.get("listops", data_dir=tiny_listops_dir, max_len=160)


def test_an_epoch_covers_every_example_once_shuffled(listops_task):
    numbers = example_numbers(listops_task, listops_task.batches("train", 7, drop_remainder=False))
    assert [len(batch) for batch in numbers] == [7] * 8 + [4]
    flat = sum(numbers, [])
    assert sorted(flat) == list(range(EPOCH)) and flat != sorted(flat)


def test_defaults_are_dataset_ones_drop_and_shuffle_for_train_only(listops_task):
    train = example_numbers(listops_task, listops_task.batches("train", 7))
    assert [len(batch) for batch in train] == [7] * 8 and len(set(sum(train, []))) == 56
    tokens, labels = listops_task.arrays("validation")
    got = list(listops_task.batches("validation", 7))
    assert [len(batch_labels) for _, batch_labels in got] == [7, 7, 6]
    np.testing.assert_array_equal(np.concatenate([t for t, _ in got]), tokens)
    np.testing.assert_array_equal(np.concatenate([b for _, b in got]), labels)


def test_the_seed_fixes_the_order_and_each_epoch_is_reshuffled(listops_task, tiny_listops_dir):
    def stream(task):
        return example_numbers(task, itertools.islice(task.batches("train", 10, repeat=True), 12))

    first = stream(listops_task)
    assert stream(listops_task) == first
    epochs = sum(first[:6], []), sum(first[6:], [])  # 6 batches of 10 an epoch
    assert sorted(epochs[0]) == sorted(epochs[1]) == list(range(EPOCH))
    assert epochs[0] != epochs[1]
    other_seed = tasks.get("listops", data_dir=tiny_listops_dir, max_len=160, seed=1)
    assert stream(other_seed) != first


@pytest.mark.parametrize("repeat, start", [(True, 4), (True, 9), (False, 3), (False, 8)])
def test_start_continues_the_stream_at_that_batch(listops_task, repeat, start):
    def stream(start, count):
        batches_ = listops_task.batches("train", 7, repeat=repeat, start=start)
        return example_numbers(listops_task, itertools.islice(batches_, count))

    assert stream(start, 5) == stream(0, start + 5)[start:]


def test_start_skips_without_reading_the_batches_skipped(listops_task, monkeypatch):
    made, gather = [], batches.gather
    monkeypatch.setattr(batches, "gather", lambda *args: made.append(args[-1]) or gather(*args))
    tokens, labels = next(listops_task.batches("train", 7, repeat=True, start=10**12))
    assert tokens.shape == (7, 160) and len(made) <= batches.PREFETCH + 1
    with pytest.raises(ValueError, match="start=-1; expected a batch number >= 0"):
        listops_task.batches("train", 7, start=-1)


# --------------------------------------------------------------------------- without TensorFlow

NO_TENSORFLOW = """
import sys


class NoTensorFlow:
    '''An install without TensorFlow: importing it (or TFDS) fails.'''

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tensorflow_datasets"):
            raise ModuleNotFoundError(f"No module named {name!r}")


sys.meta_path.insert(0, NoTensorFlow())
import arena_tf.tasks as tasks

tokens, labels = next(tasks.get("listops", data_dir=sys.argv[1]).batches("train", 4))
print("listops", tokens.shape, tokens.dtype, labels.shape, labels.dtype)
pixels, labels = tasks.get("pathfinder", data_dir=sys.argv[2]).arrays("test")
print("pathfinder", pixels.shape, pixels.dtype)
try:
    tasks.get("text").batches("train", 4)
except tasks.DataNotFoundError as error:
    print(f"error: {error}")
print("imported:", sorted(name for name in sys.modules if name.startswith("tensorflow")))
"""


@pytest.mark.slow
def test_batches_are_built_without_tensorflow(tiny_listops_dir, pathfinder_root, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARENA_TF_DOWNLOAD": "0"}
    done = subprocess.run(
        [sys.executable, "-c", NO_TENSORFLOW, tiny_listops_dir, pathfinder_root],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["listops (4, 2000) int32 (4,) int32", "pathfinder (2, 1024) int32"]
    assert_one_error_line(lines[2] + "\n", 'pip install -e ".[tf]"')
    assert lines[3:] == ["imported: []"]


@pytest.mark.parametrize("length_buckets", [0, 4])
def test_the_shards_of_a_batch_make_the_global_batch(listops_task, length_buckets):
    """Process i of n reads the i-th of n slices of every global batch, whatever n is."""

    def stream(shard, batch_size=4):
        return itertools.islice(
            listops_task.batches(
                "train",
                batch_size,
                repeat=True,
                length_buckets=length_buckets,
                start=3,
                shard=shard,
            ),
            14,
        )

    for whole, *parts in zip(stream((0, 1)), stream((0, 2)), stream((1, 2))):
        for got, expected in zip(zip(*parts), whole):
            np.testing.assert_array_equal(np.concatenate(got), expected)
            assert len(got[0]) == len(got[1]) == 2
    with pytest.raises(ValueError, match="batch size divisible by count"):
        stream((0, 3))
