"""The bench's rows: a task split in its row form, encoded as Pentathlon encodes it, with the task's
label strings; a missing split is an error, never generated data or downloads."""

import json

import pytest

from arena_tf.serving import instances

# One worker runs every test of tiny_run (--dist loadgroup), so it is built once.
pytestmark = pytest.mark.xdist_group("tiny_run")


def test_rows_are_the_splits_rows_each_encoded_by_json_dumps(tiny_run):
    import yaml

    data_dir = yaml.safe_load((tiny_run / "config.yaml").read_text())["task"]["data_dir"]
    pool = instances.load("listops", data_dir=data_dir)
    rows = [json.loads(fragment) for fragment in pool.fragments]
    assert len(pool) == 20 and pool.source == "listops test split, 20 rows"
    assert [fragment.decode() for fragment in pool.fragments] == [json.dumps(r) for r in rows]
    assert pool.targets == [row["target"] for row in rows]
    assert pool.labels == tuple(str(i) for i in range(10))


def test_a_missing_split_is_an_error_and_writes_no_data(tmp_path):
    from arena_tf.tasks import DataNotFoundError

    with pytest.raises(DataNotFoundError, match="listops: no data in"):
        instances.load("listops", {"name": "listops", "data_dir": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []  # the ListOps generator did not run
