"""The processes of a multi-process JAX run, as a user names them: flags, or the variables of
`keras.distribution.initialize` (KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES,
KERAS_DISTRIBUTION_PROCESS_ID), or nothing where JAX finds them itself (Cloud TPU, SLURM, ...).

Checked here before any process waits for another: all three or none, a process id in range, a
coordinator of the form host:port.
"""

import os
import typing

from arena_tf.training.errors import StrategyError

ENVIRONMENT = {
    "coordinator": "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "processes": "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "process_id": "KERAS_DISTRIBUTION_PROCESS_ID",
}
FLAGS = {
    "coordinator": "--coordinator",
    "processes": "--num-processes",
    "process_id": "--process-id",
}
DEFAULT_TIMEOUT_S = 300  # JAX's own default wait for every process to join


class Cluster(typing.NamedTuple):
    """Where this process stands in a multi-process run.

    Args:
        coordinator: str or None. host:port of process 0, where JAX's coordination service
            listens (every process names the same one); None: JAX detects it.
        processes: int or None. How many processes the run has; None: JAX detects it.
        process_id: int or None. This process's number, 0 to processes - 1; process 0 writes the
            run directory. None: JAX detects it.
        timeout: int. Seconds to wait for every process to join before giving up (default 300).
    """

    coordinator: typing.Optional[str] = None
    processes: typing.Optional[int] = None
    process_id: typing.Optional[int] = None
    timeout: int = DEFAULT_TIMEOUT_S

    @classmethod
    def named(
        cls,
        coordinator=None,
        processes=None,
        process_id=None,
        timeout=DEFAULT_TIMEOUT_S,
        environ=os.environ,
    ):
        """The cluster the flags name, each missing one taken from Keras' variable in `environ`
        (the first of a comma-separated KERAS_DISTRIBUTION_JOB_ADDRESSES is the coordinator);
        a StrategyError for a partial or inconsistent description."""
        given = {"coordinator": coordinator, "processes": processes, "process_id": process_id}
        for key, variable in ENVIRONMENT.items():
            if given[key] is None and environ.get(variable):
                given[key] = environ[variable]
        if isinstance(given["coordinator"], str):
            given["coordinator"] = given["coordinator"].split(",")[0].strip()
        for key in ("processes", "process_id"):
            given[key] = _whole(key, given[key])
        cluster = cls(**given, timeout=timeout)
        cluster.check()
        return cluster

    def check(self):
        fields = {
            "coordinator": self.coordinator,
            "processes": self.processes,
            "process_id": self.process_id,
        }
        missing = [FLAGS[key] for key, value in fields.items() if value is None]
        if missing and len(missing) < len(fields):
            raise StrategyError(
                f"a multi-process run needs {', '.join(FLAGS.values())} together; "
                f"{', '.join(missing)} is missing",
                "all three, or none where JAX finds them itself (Cloud TPU, SLURM)",
                f"pass {', '.join(missing)} (or set "
                f"{', '.join(ENVIRONMENT[k] for k, v in fields.items() if v is None)})",
            )
        if self.processes is not None and self.processes < 1:
            raise StrategyError(
                f"--num-processes={self.processes}",
                "at least 1",
                "pass the number of processes the run has",
            )
        if self.process_id is not None and not 0 <= self.process_id < self.processes:
            raise StrategyError(
                f"--process-id={self.process_id} with --num-processes={self.processes}",
                f"a process id from 0 to {self.processes - 1}",
                "give each process its own id, process 0 on the coordinator's host",
            )
        if self.coordinator is not None:
            host, _, port = self.coordinator.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise StrategyError(
                    f"--coordinator={self.coordinator[:80]!r}",
                    "host:port of process 0, e.g. 10.0.0.1:1234",
                    "pass the address and a free port of process 0's host",
                )
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int) or self.timeout < 1:
            raise StrategyError(
                f"--join-timeout={self.timeout!r}",
                "a whole number of seconds >= 1",
                "pass how long to wait for the other processes",
            )

    def describe(self):
        if self.coordinator is None:
            return "the processes JAX detects"
        return f"process {self.process_id} of {self.processes}, coordinator {self.coordinator}"


def _whole(key, value):
    """An int from a flag or an environment variable's text."""
    if value is None or isinstance(value, int):
        return value
    text = str(value).strip()
    if not text.lstrip("-").isdigit():
        raise StrategyError(
            f"{FLAGS[key]} (or {ENVIRONMENT[key]}) = {text[:40]!r}",
            "a whole number",
            f"pass {FLAGS[key]}=N",
        )
    return int(text)
