"""The one-line error style every command shares (arena_tf/cli.py), as a test assertion."""

import re

STYLE = re.compile(r"^error: [^\n]+; expected [^\n]+; [^\n]+\n$")


def assert_one_error_line(stderr, *fragments):
    """`stderr` is exactly `error: <what>; expected <what>; <fix>` and holds every fragment."""
    assert STYLE.match(stderr), f"not one line in the error style:\n{stderr[-3000:]}"
    for fragment in fragments:
        assert fragment in stderr, f"{fragment!r} not in {stderr!r}"
