"""Two runs started side by side on a fresh machine ask for the same generated data: the second
waits for the first to write it, then reads it, instead of generating it alongside (which for
Pathfinder meant two processes writing one .partial folder, the second failing at its move)."""

import os
import threading
import time
import types

import pytest

from arena_tf.locks import FileLock
from arena_tf.tasks import sources
from arena_tf.tasks.listops import ListOps

TASK = types.SimpleNamespace(generate=True)
LOCK = ".pathfinder32-curv_contour_length_9.generating.lock"


def ask(root, find, generate, task=TASK):
    return sources.found_or_generated(
        task, root, "pathfinder32/curv_contour_length_9", find, generate
    )


def test_a_second_caller_waits_for_the_first_generation_and_finds_its_data(tmp_path):
    data = tmp_path / "made"
    calls = {"generate": 0}
    first_generating, second_asked = threading.Event(), threading.Event()

    def find():
        folder = data if data.is_dir() else None
        if threading.current_thread().name == "second":
            second_asked.set()
        return folder

    def generate():
        calls["generate"] += 1
        first_generating.set()
        # The second caller has looked (and found nothing) before the data appears.
        assert second_asked.wait(timeout=60)
        data.mkdir()
        return data

    found = {}

    def caller():
        found[threading.current_thread().name] = ask(tmp_path, find, generate)

    first = threading.Thread(target=caller, name="first")
    first.start()
    assert first_generating.wait(timeout=60)
    second = threading.Thread(target=caller, name="second")
    second.start()
    first.join(timeout=60)
    second.join(timeout=60)
    assert found == {"first": data, "second": data}
    assert calls["generate"] == 1  # the second found the first's data
    assert not (tmp_path / LOCK).exists()  # released, its file removed


def test_a_waiting_caller_says_whom_it_waits_for(tmp_path, capfd):
    data = tmp_path / "made"
    err = ""
    with FileLock(tmp_path / LOCK):
        waiter = threading.Thread(
            target=ask,
            args=(tmp_path, lambda: data if data.is_dir() else None, lambda: data.mkdir() or data),
        )
        waiter.start()
        for _ in range(600):  # the waiter's line, however long a loaded machine takes to print it
            err += capfd.readouterr().err
            if err:
                break
            time.sleep(0.1)
        assert waiter.is_alive()  # held back while the lock is held
        data.mkdir()
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert err == (
        f"waiting for pid {os.getpid()}, which is generating "
        f"pathfinder32/curv_contour_length_9 in {tmp_path}\n"
    )


def test_a_task_that_may_not_generate_takes_no_lock_and_creates_no_folder(tmp_path):
    root = tmp_path / "typo" / "listops"
    task = ListOps(data_dir=str(root), generate=False)
    with pytest.raises(sources.DataNotFoundError, match="generating it is off"):
        task.files()
    assert not (tmp_path / "typo").exists()
