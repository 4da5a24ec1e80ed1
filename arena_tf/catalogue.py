"""The catalogue of mechanisms (arena_tf/layers/README.md), generated from the registry.

python -m arena_tf.catalogue            # print the Markdown table
make docs                               # write it into arena_tf/layers/README.md (and the rest)
"""

import inspect

from arena_tf import cli

if __name__ == "__main__":  # before TensorFlow and Keras are imported
    cli.prepare_process()

import arena_tf.layers as layers  # noqa: E402
from arena_tf.config import CONFIGS_DIR, read_yaml  # noqa: E402
from arena_tf.layers.base import Attention  # noqa: E402
from arena_tf.markdown import replace_section  # noqa: E402

BASE_PARAMS = set(inspect.signature(Attention.__init__).parameters) - {"self", "kwargs"}


def mechanism_params(cls):
    """The mechanism's own constructor parameters and their defaults, as `name=default` text."""
    params = inspect.signature(cls.__init__).parameters.values()
    own = [p for p in params if p.default is not p.empty and p.name not in BASE_PARAMS]
    return ", ".join(f"`{p.name}={p.default!r}`" for p in own) or "none"


def block_of(name, configs_dir=CONFIGS_DIR):
    """The encoder block `--model=NAME` trains in (configs/models/NAME.yaml's model.block, else
    the Transformer's)."""
    path = configs_dir / "models" / f"{name}.yaml"
    model = (read_yaml(path, ["model", "train"]) if path.is_file() else {}).get("model") or {}
    return model.get("block", "transformer")


def table():
    rows = [
        "| mechanism | paper | cost | block (`model.block`) | parameters (defaults) |",
        "|---|---|---|---|---|",
    ]
    for name in layers.available():
        cls = layers.lookup(name)
        rows.append(
            f"| `{name}` | {cls.paper} | {cls.complexity} | `{block_of(name)}` | "
            f"{mechanism_params(cls)} |"
        )
    return "\n".join(rows)


def with_table(text):
    """Text with the table between its catalogue markers replaced by the generated one."""
    return replace_section(text, "catalogue", table())


def main(argv=None):
    cli.ArgumentParser(
        prog="python -m arena_tf.catalogue",
        description="Print the catalogue of mechanisms as a Markdown table "
        "(`make docs` writes it into arena_tf/layers/README.md).",
    ).parse_args(argv)
    return cli.run_main(lambda: print(table()))


if __name__ == "__main__":
    main()
