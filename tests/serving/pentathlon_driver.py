"""A small Efficiency Pentathlon driver, written from the protocol as
docs/guide/serving-and-pentathlon.md states it (not from arena_tf/serving/protocol.py), to check a
submission against Pentathlon's protocol rather than our own.

    batches = fixed_batch(rows)                       # Random(42)-shuffled split, chunks of 128
    with Online(command) as submission:
        outputs = submission.run(batches)             # warm-up (the last batch), then every batch
    outputs = offline(command + ["--offline"], offline_instances(rows, 8000), work_dir)

Instances are the rows' JSON objects as they are; answers are JSON lists of strings, one per
instance. Stdout lines that are not JSON are skipped; the sentinel line raises SubmissionFailed
with the traceback that follows it. A watchdog kills a submission after `deadline` seconds, so a
hung one fails a test instead of stopping it.
"""

import json
import math
import random
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

BATCH_SIZE = 128  # EXPECTED_BATCH_SIZE
SINGLE_STREAM_INSTANCES = 1000
OFFLINE_INSTANCES = 8000
SENTINEL = "Efficiency benchmark exception: SubprocessError"
OFFLINE_LINES = (
    "Model and data loaded. Start the timer.",
    "Offiline prediction done. Stop the timer.",
    "Offiline outputs written. Exit.",
)
DEADLINE = 300  # seconds a submission may run in a test (Pentathlon: 3600 for the command)


class SubmissionFailed(RuntimeError):
    """The submission printed the sentinel, exited early or broke the protocol."""


def chunks(instances, size):
    return [instances[start : start + size] for start in range(0, len(instances), size)]


def limited(instances, limit):
    """Pentathlon's --limit: `np.random.choice(len, size=limit, replace=False)` after
    `np.random.seed(42)` (the same draws, from a generator of its own)."""
    if limit is None:
        return instances
    chosen = np.random.RandomState(42).choice(len(instances), size=limit, replace=False)
    return [instances[i] for i in chosen]


def sampled(rows, count):
    """`count` instances: the rows repeated until there are enough, `Random(0).sample`, then
    `Random(42).shuffle`."""
    repeated = list(rows) * math.ceil(count / len(rows))
    picked = random.Random(0).sample(repeated, k=count)
    random.Random(42).shuffle(picked)
    return picked


def fixed_batch(rows, limit=None):
    """The whole split shuffled with Random(42), in batches of 128."""
    instances = list(rows)
    random.Random(42).shuffle(instances)
    return chunks(limited(instances, limit), BATCH_SIZE)


def single_stream(rows, limit=None):
    """1,000 sampled instances, one per batch."""
    return chunks(limited(sampled(rows, SINGLE_STREAM_INSTANCES), limit), 1)


def offline_instances(rows, count=OFFLINE_INSTANCES):
    """The instances the offline scenario writes to its data file."""
    return sampled(rows, count)


class Process:
    """A submission started with stdin and stdout as pipes, stderr kept in a temporary file (read
    it with `stderr()`), killed by a watchdog after `deadline` seconds."""

    def __init__(self, command, deadline=DEADLINE):
        self.stderr_file = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file
        )
        self.watchdog = threading.Timer(deadline, self.process.kill)
        self.watchdog.start()

    def send(self, value):
        self.process.stdin.write((json.dumps(value) + "\n").encode())
        self.process.stdin.flush()

    def next_line(self):
        """The next stdout line, stripped; SubmissionFailed at the sentinel or end of output."""
        line = self.process.stdout.readline()
        if not line:
            raise SubmissionFailed(
                f"the submission exited (status {self.process.wait()}) without "
                f"answering; stderr ends:\n{self.stderr()[-2000:]}"
            )
        text = line.decode("utf-8").strip()
        if text == SENTINEL:
            raise SubmissionFailed(self.process.stdout.read().decode("utf-8", "replace"))
        return text

    def close(self):
        """Close stdin and wait for the exit status."""
        self.process.stdin.close()
        status = self.process.wait()
        self.watchdog.cancel()
        return status

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode("utf-8", "replace")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
        self.close()


class Online(Process):
    """An online scenario: one request line per batch, one answer line back."""

    def predict(self, batch):
        """The submission's outputs for one batch; SubmissionFailed on a wrong answer."""
        self.send(batch)
        while True:
            text = self.next_line()
            try:
                answer = json.loads(text)
            except ValueError:
                continue  # irrelevant output
            if (
                not isinstance(answer, list)
                or len(answer) != len(batch)
                or not all(isinstance(output, str) for output in answer)
            ):
                raise SubmissionFailed(f"{len(batch)} instances answered with {text[:200]}")
            return answer

    def run(self, batches):
        """Warm up with the last batch, then every batch in order; the outputs, flat."""
        self.predict(batches[-1])
        return [output for batch in batches for output in self.predict(batch)]


def offline(command, instances, work_dir, limit=-1):
    """The offline handshake: write the data file, send the config line, wait for the three lines
    in order; the outputs read back from the output file."""
    data = Path(work_dir, "offline", "data.json")
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps(instance) + "\n" for instance in instances))
    output = data.parent / "outputs.json"
    with Process(command) as submission:
        submission.send(
            {"offline_data_path": str(data), "offline_output_path": str(output), "limit": limit}
        )
        for expected in OFFLINE_LINES:
            while submission.next_line() != expected:
                pass
        status = submission.close()
    if status != 0:
        raise SubmissionFailed(f"exit status {status} after the offline handshake")
    outputs = [json.loads(line)["output"] for line in output.read_text().splitlines()]
    count = len(instances) if limit is None or limit < 0 else min(limit, len(instances))
    if len(outputs) != count:
        raise SubmissionFailed(f"{len(outputs)} outputs for {count} instances")
    return outputs
