"""Training learns: a tiny transformer beats the majority class on short generated ListOps within a
fixed step budget (about 10 s on 2 CPU cores).

Pathfinder has no such test: it is not learnt in a minute on 2 CPU cores. Measured on 4,000
generated 32x32 images (3,200 for training): a 1-layer linear-attention model (width 32, batch 64)
stayed at chance (training loss 0.693, test accuracy 0.495) after 1,500 steps (30 epochs, 400 s);
the LRA `full` model (width 128) after 200 steps ran 0.4 steps/s and was at chance too; the same
small model did not even fit 80 training images in 200 steps.
"""

import collections

from arena_tf import train
from arena_tf.distribute import make_strategy
from tests.train.conftest import TINY, loop

LISTOPS_STEPS = 300


def majority_share(task, split):
    labels = [int(label) for _, label in task.load_split(split)]
    return collections.Counter(labels).most_common(1)[0][1] / len(labels)


def test_tiny_transformer_beats_the_majority_class_on_listops(listops_dir, tmp_path):
    config, task = train.build_experiment(
        "listops", "full", [*TINY, "model.num_layers=2", *loop(LISTOPS_STEPS, log_every=50)],
        data_dir=listops_dir,
    )
    metrics = train.Trainer(config, task, tmp_path, make_strategy(), verbose=False).fit()
    majority = majority_share(task, "test")
    print(f"ListOps after {LISTOPS_STEPS} steps: test accuracy {metrics['test_accuracy']:.3f}, "
          f"majority class {majority:.3f}, {metrics['wall_time_s']:.1f} s")
    assert metrics["test_accuracy"] >= majority + 0.15
