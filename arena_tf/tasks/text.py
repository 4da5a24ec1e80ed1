"""Text: IMDb review sentiment (positive / negative) from UTF-8 bytes, up to 1000 bytes.

Data: TFDS `imdb_reviews` (25K train, 25K test), from a prepared TFDS directory (`data_dir`, else
TFDS's own) or downloaded where the machine is online. Splits: train = train; validation = test
and test = test, as in the reference code, which had no separate validation set (the validation
figures are therefore test figures: do not tune on them).

Encoding: each UTF-8 byte b becomes id b + 1 (1..256), 0 is padding, vocabulary 257; reviews are cut
to max_len = 1000 bytes (the LRA code; the paper says 4000).

Rows: `{"input": REVIEW, "target": "0" or "1"}`, the review whole (1 = positive).

    task = arena_tf.tasks.get("text")
    tokens, label = next(iter(task.load_split("train")))   # int32 [1000], int32 0 / 1
"""

from arena_tf.tasks import register, sources


@register
class Text(sources.ByteTextRows, sources.TextPreview, sources.TfdsTask):
    """IMDb as byte tokens; validation is the test split (the reference's choice)."""

    name = "text"
    num_classes = 2
    vocab_size = 257
    max_len = 1000
    num_inputs = 1
    padding_id = 0

    tfds_name = "imdb_reviews"
    tfds_splits = {"train": "train", "validation": "test", "test": "test"}
    download_host = ("ai.stanford.edu", 80)
    decode = staticmethod(sources.decode_bytes)  # token ids back to text, for previews

    def encode(self, features, label):
        import tensorflow as tf

        return sources.encode_bytes(features, self.max_len), tf.cast(label, tf.int32)

    def rows(self, split):
        for text, label in self.tfds_examples(split).as_numpy_iterator():
            yield {"input": sources.row_text(text), "target": self.target(label)}
