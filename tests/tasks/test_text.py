"""Text (IMDb bytes): the pipeline over mocked TFDS, its splits, the message for missing data."""

import socket

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import arena_tf.tasks as tasks
from arena_tf.tasks import sources
from tests.tasks.mock_tfds import mock_data_splits, split_mock

LONG = "é" * 700  # 1400 bytes: cut to 1000


def reviews(spec):
    return {
        "text": np.array([f"a review from {spec}", "héllo", LONG]),
        "label": np.array([0, 1, 1]),
    }


def test_text_pipeline_over_tfds_mock_data_has_static_shapes_and_byte_ids():
    task = tasks.get("text")
    for examples in mock_data_splits(task, num_examples=6).values():
        assert len(examples) == 6
        for tokens, label in examples:
            assert 0 <= tokens.min() and tokens.max() < task.vocab_size == 257
            assert label in (0, 1)
    assert task.max_len == 1000


def test_text_encodes_utf8_bytes_plus_one_and_cuts_to_max_len():
    with split_mock(reviews):
        examples = list(tasks.get("text").load_split("train").as_numpy_iterator())
    (_, _), (hello, hello_label), (long, _) = examples
    want = np.frombuffer("héllo".encode(), np.uint8).astype(np.int32) + 1
    np.testing.assert_array_equal(hello[: len(want)], want)
    assert not hello[len(want) :].any() and hello_label == 1
    assert long.all() and tasks.get("text").decode(long) == "é" * 500


def test_text_validation_is_the_imdb_test_split():
    with split_mock(reviews) as requested:
        task = tasks.get("text")
        texts = {s: task.decode(next(iter(task.load_split(s)))[0].numpy()) for s in tasks.SPLITS}
    assert texts == {
        "train": "a review from train",
        "validation": "a review from test",
        "test": "a review from test",
    }
    assert requested == ["train", "test", "test"]


def test_text_missing_data_says_where_it_looked_and_how_to_get_it(tmp_path):
    with pytest.raises(tasks.DataNotFoundError) as caught:
        tasks.get("text", data_dir=tmp_path).load_split("train")
    message = str(caught.value)
    for part in ("imdb_reviews", str(tmp_path), "downloading is off", "prepare --task=text"):
        assert part in message


def test_download_is_tried_only_when_enabled_and_the_host_answers(tmp_path, monkeypatch):
    calls = []

    def fake_load(name, split, data_dir, download, **kwargs):
        calls.append(download)
        if not download:
            raise AssertionError("not prepared")
        return tf.data.Dataset.from_tensor_slices((["downloaded"], [1]))

    monkeypatch.setattr(tfds, "load", fake_load)
    with pytest.raises(tasks.DataNotFoundError, match="ai.stanford.edu:80 is unreachable"):
        tasks.get("text", data_dir=tmp_path, download=True).load_split("train")
    assert calls == [False]
    monkeypatch.setattr(sources, "host_reachable", lambda host, port: True)
    task = tasks.get("text", data_dir=tmp_path, download=True)
    assert task.decode(next(iter(task.load_split("train")))[0].numpy()) == "downloaded"
    assert calls == [False, False, True]


_real_probe = sources.host_reachable  # captured at import, before the offline fixture stubs it


def test_download_probe_tells_an_open_port_from_a_closed_one_by_refusal_not_timeout(monkeypatch):
    failures = []
    connect = socket.create_connection

    def recording(*args, **kwargs):
        try:
            return connect(*args, **kwargs)
        except OSError as error:
            failures.append(type(error))
            raise

    monkeypatch.setattr(socket, "create_connection", recording)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert _real_probe("127.0.0.1", port, timeout=30)
    assert failures == []
    assert not _real_probe("127.0.0.1", port, timeout=30)  # closed now
    assert failures == [ConnectionRefusedError]  # refused, not waited out (socket.timeout)
