"""A small submission in the reference submission's shape (haopeng-nlp/submission entrypoint.py),
written for the tests from docs/guide/serving-and-pentathlon.md's protocol: plain stdio, no serving
imports.

    python -m tests.serving.reference_submission MODE [--offline]

Rows in, label strings out. MODE answer predicts by a trivial rule, `rule(row)`: the number of
"[" in the row's input, mod 10, as a string (a line of log noise first, on stdout, as a driver must
skip); with --offline it does the offline handshake. Other modes misbehave: sentinel (the
exception line and a traceback, then exit 1), crash (exit 3 at the first request), hang (never
answers), not_labels ("x" for every row), numbers (the rule's label as a JSON number), short (one
output fewer than rows).
"""

import json
import sys
import time
import traceback

SENTINEL = "Efficiency benchmark exception: SubprocessError"


def rule(row):
    return str(row["input"].count("[") % 10)


ANSWERS = {
    "answer": lambda rows: [rule(row) for row in rows],
    "not_labels": lambda rows: ["x" for _ in rows],
    "numbers": lambda rows: [int(rule(row)) for row in rows],
    "short": lambda rows: [rule(row) for row in rows][1:],
}


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def misbehave(mode):
    """At a request: crash, hang or fail as `mode` says (nothing for the answering modes)."""
    if mode == "crash":
        print("reference submission crashed", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "hang":
        time.sleep(3600)
    if mode == "sentinel":
        raise ValueError("this submission refuses everything")


def online(mode):
    for line in sys.stdin:
        misbehave(mode)
        say("loading nothing, this is log noise")
        say(json.dumps(ANSWERS[mode](json.loads(line))))


def offline(mode):
    config = json.loads(sys.stdin.readline())
    misbehave(mode)
    with open(config["offline_data_path"]) as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    if config.get("limit", -1) > 0:
        rows = rows[: config["limit"]]
    say("Model and data loaded. Start the timer.")
    outputs = ANSWERS[mode](rows)
    say("Offiline prediction done. Stop the timer.")
    with open(config["offline_output_path"], "w") as out:
        out.writelines(json.dumps({"output": output}) + "\n" for output in outputs)
    say("Offiline outputs written. Exit.")


def main(mode, flags):
    try:
        (offline if "--offline" in flags else online)(mode)
    except Exception:  # noqa: BLE001 (the protocol: every failure gets the sentinel)
        say(SENTINEL)
        say(traceback.format_exc())
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
