"""The Efficiency Pentathlon stdio protocol (allenai/efficiency-pentathlon;
docs/guide/serving-and-pentathlon.md), as one module: its fixed lines, and the driver's side
(`ModelProcess`), which starts a submission, sends it rows and reads its answers with a deadline,
and kills the process group of one that crashes or hangs. The submission's side is
serving/submission.py.

Online: the driver writes one line per batch, `json.dumps(rows)`: a JSON list of row objects
(`{"input": ..., "target": ...}`, python -m arena_tf.data rows); the submission answers one line, a
JSON list of strings (the predicted targets), one per row, in order. Stdout lines that are not JSON
are skipped ("irrelevant output").

    -> [{"input": "( [MAX 2 9 ] )", "target": "9"}, {"input": "[SM 1 ]", "target": "1"}]
    <- ["9", "1"]

Offline: the driver writes the instances as JSON Lines, then one config line; the submission prints
three fixed lines (Pentathlon's spelling) and writes `{"output": str}` JSON Lines in input order:

    -> {"offline_data_path": ".../data.json", "offline_output_path": ".../outputs.json",
        "limit": -1}
    <- Model and data loaded. Start the timer.
    <- Offiline prediction done. Stop the timer.
    <- Offiline outputs written. Exit.

Errors: the submission prints the SENTINEL line, then its traceback, and exits non-zero; the driver
raises ModelError with the traceback's last line (its exception).

Side channel (ours; a Pentathlon driver never sees it): stderr lines `SIDE_PREFIX{json}`, which the
bench reads from the model's log (`side_events`): the runtime actually used, in-model latency.
"""

import json
import os
import pathlib
import select
import signal
import subprocess
import time

SENTINEL = "Efficiency benchmark exception: SubprocessError"
LOADED = "Model and data loaded. Start the timer."
PREDICTED = "Offiline prediction done. Stop the timer."
WRITTEN = "Offiline outputs written. Exit."
OFFLINE_LINES = (LOADED, PREDICTED, WRITTEN)
SIDE_PREFIX = "arena_tf.submission: "
MAX_NOISE_LINES = 10_000  # irrelevant stdout lines tolerated between two answers


class ModelError(RuntimeError):
    """The submission printed the sentinel, exited, broke the protocol or did not answer.

    `kind` is one of "error", "unsupported", "exited", "timeout", "protocol".
    """

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def batch_line(fragments):
    """A request line from already-encoded rows (bytes each), byte for byte what Pentathlon's
    `json.dumps(batch) + "\n"` writes: `[a, b, ...]\n`."""
    return b"[" + b", ".join(fragments) + b"]\n"


def encode_line(value):
    """One line (bytes) holding `value` as `json.dumps` writes it."""
    return (json.dumps(value) + "\n").encode()


def side_events(text):
    """The side-channel events (dicts) in a submission's stderr `text`, in order."""
    events = []
    for line in text.splitlines():
        if line.startswith(SIDE_PREFIX):
            try:
                events.append(json.loads(line[len(SIDE_PREFIX) :]))
            except ValueError:
                pass
    return events


def failure(traceback_text):
    """The ModelError for a sentinel and the traceback after it: its last line (the exception);
    kind "unsupported" when that exception is a runtimes.Unsupported (it cannot run here)."""
    lines = [line.strip() for line in traceback_text.splitlines() if line.strip()]
    last = lines[-1] if lines else "no traceback"
    name = last.split(":", 1)[0].rsplit(".", 1)[-1]
    return ModelError(
        "unsupported" if name == "Unsupported" else "error", f"the submission failed: {last[:300]}"
    )


class LineReader:
    """Reads newline-terminated lines from a pipe with a deadline (select + os.read, no thread)."""

    def __init__(self, fd):
        self.fd = fd
        self.buffer = b""

    def readline(self, deadline):
        """The next line (bytes, with its newline); TimeoutError past `deadline` (perf_counter
        seconds); EOFError when the pipe is closed before a full line."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"


class ModelProcess:
    """A model under test, started from `command` (a list), driven over the stdio protocol.

    stderr goes to `log_path`; the process runs in its own session so that a hanging model and
    everything it started can be killed by its process group id.
    """

    def __init__(self, command, env=None, log_path=os.devnull):
        self.command = list(command)
        self.env = env
        self.log_path = log_path
        self.process = None
        self.reader = None
        self.exit = None
        self.log_start = 0

    def start(self):
        with open(self.log_path, "ab") as log:
            self.log_start = log.tell()  # this process's side-channel lines start here
            try:
                self.process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=self.env,
                    start_new_session=True,
                )
            except OSError as error:
                raise ModelError(
                    "exited", f"could not start {self.command[0]!r}: {error}"
                ) from None
        self.reader = LineReader(self.process.stdout.fileno())
        return self

    @property
    def pid(self):
        return self.process.pid

    def send(self, line):
        """Write one request line; a model that already exited raises ModelError."""
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._ended("before reading its input") from None

    def line(self, deadline, timeout):
        """The next stdout line (str, stripped); ModelError at the sentinel (with the traceback's
        exception), at end of output or past `deadline`."""
        try:
            text = self.reader.readline(deadline).decode("utf-8", "replace").strip()
        except TimeoutError:
            raise ModelError("timeout", f"no answer within {timeout:g} s") from None
        except EOFError:
            raise self._ended("before answering") from None
        if text == SENTINEL:
            raise failure(self.rest(time.perf_counter() + 5))
        return text

    def rest(self, deadline):
        """What is left on stdout (the sentinel's traceback), read until end of output or
        `deadline`."""
        lines = []
        try:
            while True:
                lines.append(self.reader.readline(deadline).decode("utf-8", "replace"))
        except (TimeoutError, EOFError):
            lines.append(self.reader.buffer.decode("utf-8", "replace"))
        return "".join(lines)

    def answer(self, timeout):
        """The next JSON value on stdout; lines that are not JSON are skipped."""
        deadline = time.perf_counter() + timeout
        for _ in range(MAX_NOISE_LINES):
            text = self.line(deadline, timeout)
            try:
                return json.loads(text)
            except ValueError:
                continue  # irrelevant output, as Pentathlon's driver skips it
        raise ModelError("protocol", f"more than {MAX_NOISE_LINES} non-JSON lines on stdout")

    def request(self, line, count, timeout):
        """Send one batch line of `count` rows; their outputs (a list of that length)."""
        self.send(line)
        outputs = self.answer(timeout)
        if not isinstance(outputs, list):
            raise ModelError(
                "protocol",
                f"answered a JSON {type(outputs).__name__}; expected a "
                "list of strings, one per row",
            )
        if len(outputs) != count:
            raise ModelError("protocol", f"{len(outputs)} outputs for {count} rows")
        return outputs

    def offline(self, config, timeout, on_line=None):
        """The offline handshake: send the `config` line, then wait for Pentathlon's three lines
        in order (other lines skipped); `on_line` maps each line to a callable run as soon as it
        arrives."""
        self.send(encode_line(config))
        for expected in OFFLINE_LINES:
            deadline = time.perf_counter() + timeout
            for _ in range(MAX_NOISE_LINES):
                if self.line(deadline, timeout) == expected:
                    break
            else:
                raise ModelError("protocol", f"no line {expected!r} within {MAX_NOISE_LINES} lines")
            (on_line or {}).get(expected, lambda: None)()

    def events(self):
        """The side-channel events the submission has written to its log so far."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self.log_start)
                return side_events(log.read().decode("utf-8", "replace"))
        except OSError:
            return []

    @property
    def alive(self):
        """Started, and neither exited nor killed."""
        return self.process is not None and self.exit is None and self.process.poll() is None

    def close(self, timeout):
        """End of input, then wait up to `timeout` s for the exit (killed past it).

        Returns {"returncode", "killed", "peak_rss_bytes"}: the model's peak resident memory,
        read just before its input ends (see `peak_rss_bytes`).
        """
        if self.exit is not None:
            return self.exit
        peak = peak_rss_bytes(self.process.pid)
        try:
            self.process.stdin.close()
        except OSError:
            pass
        if not self._wait(timeout):
            self.kill()
        self.exit["peak_rss_bytes"] = peak  # read before the end of input: the run's peak
        return self.exit

    def kill(self):
        """Kill the model's process group (it runs in its own session) and reap it."""
        if self.exit is not None:
            return
        peak = peak_rss_bytes(self.process.pid)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reap(0)
        self.exit.update(killed=True, peak_rss_bytes=peak)

    def _wait(self, timeout):
        """Reap the process if it exits within `timeout` s; True if it did."""
        deadline = time.perf_counter() + timeout
        while not self._reap(os.WNOHANG):
            if time.perf_counter() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def _reap(self, flags):
        if self.exit is not None:
            return True
        try:
            pid, status = os.waitpid(self.process.pid, flags)
        except ChildProcessError:
            pid, status = self.process.pid, None
        if pid == 0:
            return False
        code = self.process.poll() if status is None else os.waitstatus_to_exitcode(status)
        self.process.returncode = code
        self.exit = {"returncode": code, "killed": False, "peak_rss_bytes": None}
        for stream in (self.process.stdout, self.process.stdin):
            stream.close()
        return True

    def _ended(self, when):
        """The ModelError for a process that stopped talking: the failure it reported with the
        sentinel on stdout before we read it (a submission failing while it loads), else its exit
        code and last log line."""
        unread = self.rest(time.perf_counter() + 5)
        if SENTINEL in unread:
            return failure(unread.split(SENTINEL, 1)[1])
        if not self._wait(5):
            return ModelError("exited", f"closed its output {when} but kept running")
        code = self.exit["returncode"]
        return ModelError("exited", f"exited with code {code} {when}{last_log_line(self.log_path)}")


def peak_rss_bytes(pid):
    """Peak resident memory (VmHWM) of process `pid` plus that of its descendants, in bytes; None
    when /proc cannot tell. (The kernel's rusage maximum is not used: it keeps the bench's own
    size from before the model process's exec.)"""
    status = pathlib.Path(f"/proc/{pid}/status")
    try:
        fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        own = int(fields["VmHWM"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None
    return own + sum(peak_rss_bytes(child) or 0 for child in children(pid))


def children(pid):
    """Child process ids of `pid` (from /proc/PID/task/*/children)."""
    found = []
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            pass
    return found


def last_log_line(path, limit=300):
    """': <last non-empty line of the log>' (cut to `limit` chars), or '' when there is none."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, os.path.getsize(path) - 8192))
            lines = [x for x in log.read().decode(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return f": {lines[-1].strip()[:limit]}" if lines else ""
