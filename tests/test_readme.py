"""The README promises what the code does: its catalogue is the registry's, its commands exist."""

import pathlib
import re

from arena_tf import catalogue

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_readme_catalogue_is_the_generated_one():
    text = (ROOT / "README.md").read_text()
    assert catalogue.with_table(text) == text, "run `python -m arena_tf.catalogue --write`"


def test_every_mechanism_names_its_paper_and_complexity():
    for line in catalogue.table().splitlines()[2:]:
        name, paper, complexity, _ = [cell.strip() for cell in line.strip("|").split("|")]
        assert re.search(r"\(\d{4}\)", paper), f"{name}: paper missing"
        assert complexity.startswith("O("), f"{name}: complexity missing"


def test_quickstart_commands_are_make_targets_and_ci_runs_the_tests():
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", readme, flags=re.M):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    assert "make test" in (ROOT / ".ci" / "run").read_text()
