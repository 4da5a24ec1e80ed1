"""The bench's instance pool: a missing test split falls back to generated tokens, never generated
data or downloads."""

from serving import instances

METADATA = {"task": "listops", "max_len": 32, "vocab_size": 16, "num_inputs": 1, "padding_id": 0}


def test_a_missing_split_gives_generated_tokens_and_writes_no_data(tmp_path):
    pool = instances.load(METADATA, {"name": "listops", "data_dir": str(tmp_path)}, "auto",
                          generated_count=5)
    assert len(pool) == 5 and pool.labels is None
    assert "test split unavailable: DataNotFoundError: listops: no data in" in pool.source
    assert list(tmp_path.iterdir()) == []  # the ListOps generator did not run
