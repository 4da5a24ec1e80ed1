"""Read back the TensorBoard scalars a run wrote (train/ and validation/ event files), with the
tensorboard package alone: runs of either backend, in an install with or without TensorFlow."""

import pathlib

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.util.tensor_util import make_ndarray


def read_scalars(event_dir):
    """{tag: {step: value}} of every scalar in a TensorBoard event directory (later files win)."""
    scalars = {}
    for path in sorted(pathlib.Path(event_dir).glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                number = (value.simple_value if value.WhichOneof("value") == "simple_value"
                          else make_ndarray(value.tensor))
                scalars.setdefault(value.tag, {})[event.step] = float(number)
    return scalars
