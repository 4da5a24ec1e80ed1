"""`python -m tests.training.driver WEIGHTS.npz [arena_tf.train arguments]`: train as the command
line does, then save the final weights of this process's model (every worker's, not only the
chief's)."""

import sys

import numpy as np

from arena_tf import train


def main(argv):
    weights_path, *args = argv
    trainer = train.run(train.parse_args(args))
    np.savez(weights_path, *[variable.numpy() for variable in trainer.model.weights])


if __name__ == "__main__":
    main(sys.argv[1:])
