"""The repository stands alone: a fresh clone has every file its tracked text refers to. No tracked
file mentions a path outside the repository (a sibling folder of the clone, an absolute path of
one machine), and every repository path named in code, configs and docs exists."""

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Paths that point outside the repository: a sibling folder, a user's or a machine's directory, a
# local file URL. (Scratch folders such as /tmp are the same on every machine and allowed.)
OUTSIDE = re.compile(r"\.\./shared|(?<![\w.~$-])/(?:work|home|Users|root|mnt|scratch)/|file://")
# A repository path in text: a top-level folder of the project, then a file with an extension.
# (A path after "owner/repo:" is another repository's; one after --output is what a command writes.)
FOLDERS = "arena_tf|tests|serving|export|tools|configs|docs|archive"
NAMED_PATH = re.compile(
    rf"(?<![\w./:-])((?:{FOLDERS})/[\w./-]*\w\.(?:py|md|yaml|sh|json|jsonl|csv|png))(?!\w)"
)
# Code, configs and docs; records of past runs (.json, .log ...) are scanned for OUTSIDE only.
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".sh", ".txt", ".ini", ".cfg", ".toml", ""}


def tracked_files():
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    itself = pathlib.Path(__file__).resolve()  # its own examples of what it refuses
    return [
        ROOT / name
        for name in listed.split("\0")
        if name and (ROOT / name).is_file() and (ROOT / name).resolve() != itself
    ]


def text_of(path):
    """The file's text, or None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def placeholder(named):
    """A path written with a placeholder (`arena_tf/layers/NAME.py`), not a file's."""
    return any(
        re.search(r"(?:^|[_-])[A-Z]{2,}(?:[_-]|$)", pathlib.PurePath(part).stem)
        for part in pathlib.PurePath(named).parts
    )


def test_no_tracked_file_refers_outside_the_repository():
    found = []
    for path in tracked_files():
        text = text_of(path)
        for number, line in enumerate((text or "").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "paths outside the repository:\n" + "\n".join(found)


def test_every_repository_path_named_in_code_configs_and_docs_exists():
    missing = []
    for path in tracked_files():
        if path.suffix not in TEXT_SUFFIXES:
            continue
        for number, line in enumerate((text_of(path) or "").splitlines(), 1):
            for named in NAMED_PATH.findall(line):
                if placeholder(named) or f"--output {named}" in line:
                    continue
                if not (ROOT / named).exists():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {named}")
    assert not missing, "named paths that do not exist:\n" + "\n".join(missing)


def test_the_checks_catch_what_they_are_for():
    sibling = "/".join(["see ..", "sha" + "red", "FACTS.md"])  # built here, so this file names none
    machine = "/".join(["", "wo" + "rk", "x", "y.py"])
    assert OUTSIDE.search(sibling) and OUTSIDE.search(machine)
    assert OUTSIDE.search("pkg @ file:" + "/" * 3 + "ho" + "me/me/pkg.whl")
    assert OUTSIDE.search("/".join(["", "ho" + "me", "me", "data"]))
    assert not OUTSIDE.search("files go to OUT/work/offline/") and not OUTSIDE.search("/tmp/out")
    assert NAMED_PATH.findall("(tests/test_remat.py)") == ["tests/test_remat.py"]
    assert NAMED_PATH.findall("configs/models/<model>.yaml, state-spaces/s4:configs/x.yaml") == []
    assert NAMED_PATH.findall("in docs/results/serving/results.jsonl.") == [
        "docs/results/serving/results.jsonl"
    ]
    assert NAMED_PATH.findall("docs/results/serving/results.csv_old") == []
    assert placeholder("arena_tf/layers/NAME.py") and placeholder("tests/layers/test_NAME.py")
    assert not placeholder("tests/test_remat.py")
