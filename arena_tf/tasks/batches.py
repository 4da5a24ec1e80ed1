"""Batches without TensorFlow: a task split as NumPy arrays, ordered and batched by grain.

The JAX backend trains from `Task.batches`, the twin of `Task.dataset` (same structure and
defaults, shuffled under the task's seed) that needs neither TensorFlow nor tf.data:

    task = arena_tf.tasks.get("listops")
    for tokens, labels in task.batches("train", 32, repeat=True, start=1000):
        ...   # tokens int32 [32, 2000], labels int32 [32]: batch 1000, 1001, ... of the stream

How: each call reads the split into memory (`Task.read_arrays`; ids kept in `ids_dtype`, one byte
for ListOps and pixels: ListOps' train split takes 192 MB, Pathfinder's 164 MB, Path-X's 655 MB
at the generated size) and grain's index-based MapDataset orders the *row indices*: range(N) ->
global shuffle (a new order each epoch: grain draws epoch e with its seed + e) -> repeat -> batch
-> [start:]. Batch k is a function of k alone, so `start` skips batches by arithmetic, reading
none of them, and a resumed run continues the same stream. Rows are gathered and widened to int32
in grain's prefetch threads, PREFETCH batches ahead. The order is not tf.data's (a 10,000-example
shuffle buffer): the two backends see the same batches' shapes, not the same batches.

Tasks that read their data only through tf.data / TFDS get an `arrays` through `load_split` when
TensorFlow is installed, and a DataNotFoundError saying how to install it when not.
"""

import numpy as np

from arena_tf.tasks.errors import DataNotFoundError

# Measured on 2 busy cores, batch 32: a ListOps batch (2000 tokens) costs 0.2-0.4 ms, a Path-X one
# (16384 pixels) 1-2 ms; these threads make them while a training step runs (a step that releases
# the GIL then waits for no batch). grain's process prefetch (mp_prefetch) was slower: 2.4 ms a
# Path-X batch through shared memory, after 2.4 s starting its worker.
PREFETCH = 8  # batches made ahead of the consumer
THREADS = 2  # grain threads making them
TF_CHUNK = 1024  # examples per batch when reading a split through load_split


def ids_dtype(vocab_size):
    """The narrowest unsigned dtype holding ids 0..vocab_size-1: what a split is kept in."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if vocab_size <= np.iinfo(dtype).max + 1:
            return dtype
    raise ValueError(f"vocab_size {vocab_size} needs more than 32 bits")


def map_inputs(fn, inputs):
    """`fn` applied to one input array, or to each of a tuple of them (two-input tasks)."""
    return tuple(map(fn, inputs)) if isinstance(inputs, tuple) else fn(inputs)


def widen(inputs):
    """Inputs as int32, what models read (and `dataset` gives)."""
    return map_inputs(lambda ids: ids.astype(np.int32), inputs)


def stream(arrays, batch_size, *, seed, shuffle, repeat, drop_remainder, start=0, shard=(0, 1)):
    """An iterator of (inputs int32 [batch, max_len] (a tuple for two inputs), labels int32
    [batch]) over `arrays` = (inputs, labels), batched as `Task.dataset` batches: shuffled under
    `seed` and reshuffled each epoch when `shuffle`, endless when `repeat` (batches then run
    across epochs), the last short batch kept unless `drop_remainder`; from batch `start` on.
    `shard` = (index, count): only this process's part of each batch (`shard_rows`)."""
    check_start(start)
    check_shard(shard, batch_size)
    import grain  # heavy (1.7 s to import here): only the batches of a training run need it

    inputs, labels = arrays
    order = grain.MapDataset.range(len(labels))
    if shuffle:
        order = order.shuffle(seed=shuffle_seed(seed))
    if repeat:
        order = order.repeat()
    batches = order.batch(batch_size, drop_remainder=drop_remainder, batch_fn=np.asarray)
    batches = batches[start:].map(lambda rows: gather(inputs, labels, shard_rows(rows, shard)))
    iterator = iter(
        batches.to_iter_dataset(
            grain.ReadOptions(num_threads=THREADS, prefetch_buffer_size=PREFETCH)
        )
    )
    iterator.start_prefetch()
    return iterator


def bucketed_stream(arrays, batch_size, padding_id, lengths, *, seed, start=0, shard=(0, 1)):
    """An endless iterator of training batches grouped by length (`Task.batches` with
    length_buckets), as `bucketed` groups tf.data's: each example goes to the bucket of its real
    length (`lengths`, the buckets' upper ends), and each batch is cut to its bucket's length.

    Epoch e: the examples in an order drawn from (seed, e), each bucket's run of that order cut
    into full batches (a bucket's last short batch is left out, as training drops a short batch),
    the batches of all buckets then in an order drawn from the same stream. Every epoch holds the
    same number of batches, so batch k is a function of k alone and `start` skips by arithmetic,
    as `stream` does; `shard` as `stream` takes it.
    """
    check_start(start)
    check_shard(shard, batch_size)
    import grain

    inputs, labels = arrays
    longest = np.max([real_lengths(ids, padding_id) for ids in as_tuple(inputs)], axis=0)
    bucket_of = np.searchsorted(np.asarray(lengths), longest)
    per_epoch = int(sum(np.bincount(bucket_of, minlength=len(lengths)) // batch_size))
    if per_epoch == 0:
        raise ValueError(
            f"no length bucket holds {batch_size} examples; expected a batch size "
            f"at most the examples of one bucket"
        )
    plans = {}

    def plan(epoch):
        """[(rows, bucket)] of the epoch's batches, in order."""
        if epoch not in plans:
            rng = np.random.default_rng([shuffle_seed(seed), epoch])
            order = rng.permutation(len(labels))
            batches = []
            for bucket in range(len(lengths)):
                members = order[bucket_of[order] == bucket]
                full = len(members) // batch_size * batch_size
                batches.extend(
                    (members[i : i + batch_size], bucket) for i in range(0, full, batch_size)
                )
            plans.clear()  # one epoch held at a time
            plans[epoch] = [batches[i] for i in rng.permutation(len(batches))]
        return plans[epoch]

    def make(index):
        rows, bucket = plan(index // per_epoch)[index % per_epoch]
        ids, chosen = gather(inputs, labels, shard_rows(np.sort(rows), shard))
        return map_inputs(lambda x: x[:, : lengths[bucket]], ids), chosen

    batches = grain.MapDataset.range(start, 2**62).map(make)
    iterator = iter(
        batches.to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=PREFETCH))
    )
    iterator.start_prefetch()
    return iterator


def check_start(start):
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start={start!r}; expected a batch number >= 0")


def check_shard(shard, batch_size):
    index, count = shard
    if not 0 <= index < count or batch_size % count:
        raise ValueError(
            f"shard {index} of {count} with batch size {batch_size}; expected "
            "0 <= index < count and a batch size divisible by count"
        )


def shard_rows(rows, shard):
    """Process `index`'s part of a global batch's rows, `shard` = (index, count): the index-th
    of `count` equal consecutive slices. The global batches do not depend on `count`, and the
    processes' parts, concatenated in process order, are the global batch."""
    index, count = shard
    size = len(rows) // count
    return rows[index * size : (index + 1) * size]


def real_lengths(ids, padding_id):
    """The real length of each row of ids [N, max_len] padded at the end with `padding_id`: one
    past its last other id (0 for a row of padding only)."""
    real = ids != padding_id
    return np.where(real.any(axis=1), ids.shape[1] - np.argmax(real[:, ::-1], axis=1), 0)


def gather(inputs, labels, rows):
    """The examples at `rows` as one batch, inputs widened to int32."""
    return widen(map_inputs(lambda ids: ids[rows], inputs)), labels[rows]


def shuffle_seed(seed):
    """grain's shuffle seed (32 bits) for a task seed: hashed, so that nearby task seeds draw
    unrelated orders (grain shuffles epoch e with seed + e: unhashed, seed 1 would replay seed 0's
    second epoch)."""
    return int(np.random.SeedSequence(seed).generate_state(1, np.uint32)[0])


def tensorflow_arrays(task, split, numpy_tasks=()):
    """`task.load_split(split)` read into NumPy: (inputs in `ids_dtype`, int32 labels); the
    DataNotFoundError of `require_tensorflow` (naming `numpy_tasks`, the tasks read without
    TensorFlow) when TensorFlow cannot be imported."""
    require_tensorflow(task, numpy_tasks)
    dtype = ids_dtype(task.vocab_size)
    columns, labels = [[] for _ in range(task.num_inputs)], [np.zeros(0, np.int32)]
    for inputs, label in task.load_split(split).batch(TF_CHUNK).as_numpy_iterator():
        for column, ids in zip(columns, as_tuple(inputs), strict=True):
            column.append(ids.astype(dtype))
        labels.append(label.astype(np.int32))
    inputs = tuple(
        np.concatenate([np.zeros((0, task.max_len), dtype), *column]) for column in columns
    )
    return (inputs if task.num_inputs > 1 else inputs[0]), np.concatenate(labels)


def as_tuple(inputs):
    """A tuple of input arrays: `inputs` itself for two inputs, (inputs,) for one."""
    return inputs if isinstance(inputs, tuple) else (inputs,)


def require_tensorflow(task, numpy_tasks=()):
    """Import TensorFlow for a task that reads its data through it; a one-line DataNotFoundError
    saying how to install it when it cannot be imported."""
    try:
        import tensorflow  # noqa: F401
    except ImportError as error:
        raise DataNotFoundError(
            f"{task.name}: its data is read through TensorFlow (tf.data / TFDS), which cannot be "
            f"imported here ({error})",
            f"the TensorFlow install to read {task.name}",
            'install it with `pip install -e ".[tf]"`, or train a task read without it '
            f"({', '.join(numpy_tasks) or 'none'})",
        ) from None


def bucket_lengths(max_len, buckets):
    """The lengths of `buckets` buckets of equal width up to max_len: [250, 500, ..., 2000] for
    2000 and 8."""
    return [-(-max_len * (i + 1) // buckets) for i in range(buckets)]


def bucketed(data, batch_size, padding_id, lengths, drop_remainder):
    """tf.data batches of `data` (unbatched (inputs [max_len] or a tuple of them, label), padded
    at the end with `padding_id`) grouped by the bucket of their real length (the last real
    position of the longest input), each cut to that bucket's length: tf.data's
    `group_by_window`, so an example waits in its bucket's window until `batch_size` of its
    length have come (one window per bucket at most)."""
    import tensorflow as tf

    bounds = tf.constant(lengths, tf.int32)

    def real_length(ids):
        real = tf.cast(tf.where(ids != padding_id), tf.int32)
        return tf.reduce_max(tf.concat([real[:, 0] + 1, [1]], 0))

    def key(inputs, label):
        longest = tf.reduce_max([real_length(ids) for ids in as_tuple(inputs)])
        return tf.cast(tf.searchsorted(bounds, [longest])[0], tf.int64)

    def cut(bucket):
        length = bounds[bucket]
        return lambda inputs, labels: (map_inputs(lambda ids: ids[:, :length], inputs), labels)

    def reduce(bucket, window):
        return window.batch(batch_size, drop_remainder=drop_remainder).map(cut(bucket))

    return data.group_by_window(key, reduce, window_size=batch_size)
