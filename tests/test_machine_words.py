"""The repository speaks of machines as a user has them: a GPU machine, one without internet, an
output folder named by an argument or OUT_DIR. No tracked text file (archive/ aside) speaks of a
machine lent for a time or of the tool that lent it: "lent", "lending", "lease", "$OUT",
"files_at" or "carry [" (word boundaries, so "release" and "please" pass; "$OUT_DIR" too)."""

import pathlib
import re
import subprocess

import pytest

from tests.test_standalone import text_of

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORDS = re.compile(r"\blent\b|\blending\b|\bleases?\b|\$\{?OUT\b|\bfiles_at\b|\bcarry \[", re.I)


def scanned():
    """The tracked files, archive/ and this file left out (binary ones read as no text)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    itself = pathlib.Path(__file__).resolve()
    paths = [ROOT / name for name in listed.split("\0") if name and not name.startswith("archive/")]
    return [path for path in paths if path.is_file() and path.resolve() != itself]


def test_no_tracked_file_speaks_of_lent_machines():
    found = []
    for path in scanned():
        for number, line in enumerate((text_of(path) or "").splitlines(), 1):
            if WORDS.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "words of a lent machine (say it as a user has it):\n" + "\n".join(found)


def test_the_check_catches_what_it_is_for():
    for line in (
        "the machine is lent",
        "when the lease ran out",
        "two leases",
        "copied to $OUT.",
        'rm -rf "${OUT:?}/paused"',
        "cp <files_at>/gpu.json .",
        'carry [".whl"]',
        "Lending a GPU",
    ):
        assert WORDS.search(line), line
    for line in (
        "the LRA release",
        "please report it",
        "lock.release()",
        'mkdir -p "$OUT_DIR"',
        "${OUT_DIR:?}",
        "a scan's carry",
        "carry unfinished runs in the repository",
        "relentless",
        "silent",
    ):
        assert not WORDS.search(line), line
    assert {"README.md", "test_standalone.py"} <= {path.name for path in scanned()}
    assert not any(path.relative_to(ROOT).parts[0] == "archive" for path in scanned())
