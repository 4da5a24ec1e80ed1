"""Read back the TensorBoard scalars a run wrote (train/ and validation/ event files)."""

import pathlib

import tensorflow as tf


def read_scalars(event_dir):
    """{tag: {step: value}} of every scalar in a TensorBoard event directory (later files win)."""
    scalars = {}
    for path in sorted(pathlib.Path(event_dir).glob("events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(str(path)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    return scalars
