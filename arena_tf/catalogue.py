"""The README's catalogue of attention mechanisms, generated from the registry.

    python -m arena_tf.catalogue            # print the Markdown table
    python -m arena_tf.catalogue --write    # replace the table between the README's markers
"""

import argparse
import inspect
import pathlib

import arena_tf.layers as layers
from arena_tf.layers.base import Attention
from arena_tf.markdown import replace_section

BASE_PARAMS = set(inspect.signature(Attention.__init__).parameters) - {"self", "kwargs"}
README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def mechanism_params(cls):
    """The mechanism's own constructor parameters and their defaults, as `name=default` text."""
    params = inspect.signature(cls.__init__).parameters.values()
    own = [p for p in params if p.default is not p.empty and p.name not in BASE_PARAMS]
    return ", ".join(f"`{p.name}={p.default!r}`" for p in own) or "none"


def table():
    rows = ["| mechanism | paper | cost | parameters (defaults) |", "|---|---|---|---|"]
    for name in layers.available():
        cls = layers.lookup(name)
        rows.append(f"| `{name}` | {cls.paper} | {cls.complexity} | {mechanism_params(cls)} |")
    return "\n".join(rows)


def with_table(text):
    """README text with the table between the markers replaced by the generated one."""
    return replace_section(text, "catalogue", table())


def main(argv=None):
    parser = argparse.ArgumentParser(description="Print or write the README's mechanism table.")
    parser.add_argument("--write", action="store_true", help="update README.md in place")
    if parser.parse_args(argv).write:
        README.write_text(with_table(README.read_text()))
    else:
        print(table())


if __name__ == "__main__":
    main()
