"""The Efficiency Pentathlon stdio protocol, both sides.

The model under test is a separate process that talks JSON lines (UTF-8, one object per line):

Online (fixed batching, Poisson batching, single stream, server): the bench writes one line per
batch, a JSON list of instances; the model answers one line, a JSON list of outputs of the same
length and order. An instance is a list of token ids, or a list of two such lists for a two-input
(retrieval) model. An output is a list of logits, or a class id.

    -> [[3, 7, 1, 0, 0], [4, 4, 2, 9, 0]]
    <- [[0.12, -1.5], [2.0, 0.3]]

Offline: the bench writes one line naming an input file (JSON lines, one instance each) and an
output file; the model prints a line when it has read the inputs and is ready (timing starts), one
when prediction is done (timing stops) and one when the outputs are written (one JSON line each,
in input order):

    -> {"input_file": "/tmp/in.jsonl", "output_file": "/tmp/out.jsonl"}
    <- {"status": "ready"}
    <- {"status": "predicted"}
    <- {"status": "written"}

Errors: a line the model cannot use gets `{"error": "what was wrong"}` back and the model goes on
with the next line. A model that cannot run at all (e.g. the requested execution provider is
absent) prints `{"error": "...", "unsupported": true}` and exits. Lines on the model's stdout that
are not JSON are skipped by the bench (log noise), as Pentathlon's client does.

The model side is `serve(handler, stdin, stdout)`; the bench side is `ModelProcess`, which starts
a command, sends lines and reads answers with a deadline, and kills the process group of a model
that crashes or hangs.
"""

import json
import os
import pathlib
import select
import signal
import subprocess
import time

STATUSES = ("ready", "predicted", "written")
MAX_NOISE_LINES = 10_000  # non-JSON stdout lines tolerated between two answers


class ProtocolError(ValueError):
    """A request line the model cannot use (answered with an error line)."""


class ModelError(RuntimeError):
    """The model process answered with an error, exited, broke the protocol or did not answer.

    `kind` is one of "error", "unsupported", "exited", "timeout", "protocol".
    """

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def encode_line(value):
    """One protocol line (bytes, newline-terminated) holding `value` as compact JSON."""
    return (json.dumps(value, separators=(",", ":")) + "\n").encode()


def batch_line(fragments):
    """A request line from already-encoded instances (bytes each): `[a,b,...]\\n`."""
    return b"[" + b",".join(fragments) + b"]\n"


# -- model side ---------------------------------------------------------------------------------


def parse_request(line):
    """("batch", instances) or ("offline", (input_file, output_file)); ProtocolError otherwise."""
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError) as error:
        raise ProtocolError(f"not a JSON line ({error}); expected a JSON list of instances or "
                            '{"input_file": ..., "output_file": ...}') from None
    if isinstance(request, list):
        if not request:
            raise ProtocolError("empty batch; expected a list of at least one instance")
        return "batch", request
    if isinstance(request, dict) and {"input_file", "output_file"} <= set(request):
        return "offline", (request["input_file"], request["output_file"])
    raise ProtocolError(f"unexpected {type(request).__name__}; expected a JSON list of instances "
                        'or {"input_file": ..., "output_file": ...}')


def serve(handler, stdin, stdout):
    """Answer request lines from binary `stdin` on binary `stdout` until end of input.

    `handler.predict(instances)` returns one output per instance; `handler.offline(input_file,
    output_file, say)` runs the offline handshake, calling `say(status)` for each status. Any error
    becomes an error line; the loop goes on.
    """

    def say(value):
        stdout.write(encode_line(value))
        stdout.flush()

    for line in stdin:
        if not line.strip():
            continue
        try:
            kind, payload = parse_request(line)
            if kind == "batch":
                outputs = handler.predict(payload)
                if len(outputs) != len(payload):
                    raise ProtocolError(f"{len(outputs)} outputs for {len(payload)} instances")
                say(outputs)
            else:
                handler.offline(*payload, say=lambda status: say({"status": status}))
        except Exception as error:  # every failure is reported on the protocol, never fatal
            say({"error": f"{type(error).__name__}: {error}"})


# -- bench side ---------------------------------------------------------------------------------


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

    def start(self):
        with open(self.log_path, "ab") as log:
            try:
                self.process = subprocess.Popen(
                    self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                    env=self.env, start_new_session=True,
                )
            except OSError as error:
                raise ModelError("exited", f"could not start {self.command[0]!r}: {error}") from None
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

    def answer(self, timeout):
        """The next JSON answer (list or dict); error lines raise ModelError."""
        deadline = time.perf_counter() + timeout
        for _ in range(MAX_NOISE_LINES):
            try:
                line = self.reader.readline(deadline)
            except TimeoutError:
                raise ModelError("timeout", f"no answer within {timeout:g} s") from None
            except EOFError:
                raise self._ended("before answering") from None
            try:
                value = json.loads(line)
            except ValueError:
                continue  # log noise on stdout, as Pentathlon's client tolerates
            if isinstance(value, dict) and "error" in value:
                kind = "unsupported" if value.get("unsupported") else "error"
                raise ModelError(kind, str(value["error"]))
            return value
        raise ModelError("protocol", f"more than {MAX_NOISE_LINES} non-JSON lines on stdout")

    def request(self, line, count, timeout):
        """Send one batch line of `count` instances; their outputs (a list of that length)."""
        self.send(line)
        outputs = self.answer(timeout)
        if not isinstance(outputs, list):
            raise ModelError("protocol", f"answered {type(outputs).__name__}; expected a list")
        if len(outputs) != count:
            raise ModelError("protocol", f"{len(outputs)} outputs for {count} instances")
        return outputs

    def offline(self, input_file, output_file, timeout, on_status=None):
        """The offline handshake; {status: perf_counter time the bench read that line}.
        `on_status` maps a status to a callable run as soon as that line arrives."""
        self.send(encode_line({"input_file": str(input_file), "output_file": str(output_file)}))
        times = {}
        for status in STATUSES:
            value = self.answer(timeout)
            if value != {"status": status}:
                raise ModelError("protocol", f"answered {value!r}; expected {{'status': {status!r}}}")
            times[status] = time.perf_counter()
            (on_status or {}).get(status, lambda: None)()
        return times

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
        """The ModelError for a process that stopped talking: its exit code and last log line."""
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
