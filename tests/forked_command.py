"""`python -m MODULE ARGS` or `python -c CODE ARGS` without TensorFlow's import each time.

A server process imports what every command imports first (arena_tf, then TensorFlow, Keras and
the exporters' libraries, after `cli.quiet_tensorflow` as the commands do) and forks a child per
command. The child takes the command's working directory, environment (same Keras backend),
file-size limit and arguments, runs the module as `__main__` with runpy (as `python -m` does) or
the code, and ends as Python ends, its status, stdout and stderr those of the command. No
TensorFlow op runs in the server, so each child starts TensorFlow's runtime afresh, in memory of
its own. An environment naming another Keras backend than the server's starts a new process.

What a forked child cannot show is the import itself (a line printed while TensorFlow imports):
tests of a command's stderr keep cases on `python -m` for that.

    with CommandServer() as server:
        result = server.run(["-m", "arena_tf.train", "--task=listops"], cwd=..., env=...)
        result.returncode, result.stdout, result.stderr
"""

import importlib
import json
import os
import pathlib
import resource
import runpy
import select
import signal
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Not onnxruntime: a child forked after its import hangs when it exits.
PRELOADED = ("tensorflow", "keras", "onnx", "tf2onnx", "yaml", "numpy", "PIL")


class CommandServer:
    """One server process (a context manager); `run` forks a command from it."""

    def __enter__(self):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.forked_command"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.outputs = tempfile.TemporaryDirectory()
        return self

    def __exit__(self, *exc):
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.outputs.cleanup()

    def run(self, arguments, cwd, env=None, file_size_limit=None, timeout=900):
        """A subprocess.CompletedProcess of `python *arguments` (text stdout and stderr)."""
        env = dict(os.environ if env is None else env)
        if backend(env) != backend(os.environ):
            return new_process(arguments, cwd, env, file_size_limit, timeout)
        out = pathlib.Path(self.outputs.name)
        request = {
            "arguments": [str(a) for a in arguments],
            "cwd": str(cwd),
            "env": env,
            "file_size_limit": file_size_limit,
            "timeout": timeout,
            "stdout": str(out / "stdout"),
            "stderr": str(out / "stderr"),
        }
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        assert reply, f"the command server ended (status {self.process.poll()})"
        return subprocess.CompletedProcess(
            [sys.executable, *arguments],
            json.loads(reply)["returncode"],
            (out / "stdout").read_text(errors="replace"),
            (out / "stderr").read_text(errors="replace"),
        )


def new_process(arguments, cwd, env=None, file_size_limit=None, timeout=900):
    """The same in a new `python` process (subprocess.run)."""
    limit = None if file_size_limit is None else (lambda: limit_file_size(file_size_limit))
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
    )


def backend(env):
    return env.get("KERAS_BACKEND", "tensorflow")


def limit_file_size(limit):
    """RLIMIT_FSIZE as `ulimit -f` sets it."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def run_child(request):
    """In the forked child: become the command, run it, end as `python` would."""
    os.chdir(request["cwd"])
    sys.path[0] = request["cwd"] if request["arguments"][0] == "-m" else ""  # as python does
    os.environ.clear()
    os.environ.update(request["env"])
    if request["file_size_limit"] is not None:
        limit_file_size(request["file_size_limit"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    option, target, *arguments = request["arguments"]
    if option == "-m":
        sys.argv = [target, *arguments]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c", *arguments]
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 (-c code, run as python does)
    sys.exit(0)  # the interpreter's own exit: atexit handlers, flushed streams


def wait(pid, timeout):
    """The child's status as subprocess reports it (-N: killed by signal N); killed at timeout."""
    handle = os.pidfd_open(pid)  # readable once the child has ended
    try:
        if not select.select([handle], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(handle)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def serve():
    from arena_tf import cli

    cli.quiet_tensorflow()
    for name in PRELOADED:
        importlib.import_module(name)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            run_child(request)  # ends the child (SystemExit leaves this loop and the server code)
        print(json.dumps({"returncode": wait(pid, request["timeout"])}), flush=True)


if __name__ == "__main__":
    serve()
