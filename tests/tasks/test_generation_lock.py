"""Two runs started side by side on a fresh machine ask for the same generated data: the second
waits for the first to write it, then reads it, instead of generating it alongside (which for
Pathfinder meant two processes writing one .partial folder, the second failing at its move)."""

import threading

from arena_tf.locks import FileLock
from arena_tf.tasks import sources


def test_a_second_caller_waits_for_the_first_generation_and_finds_its_data(tmp_path):
    data = tmp_path / "made"
    calls = {"generate": 0, "find": 0}
    first_generating, second_asked = threading.Event(), threading.Event()

    def find():
        calls["find"] += 1
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
        found[threading.current_thread().name] = sources.found_or_generated(tmp_path, find,
                                                                            generate)

    first = threading.Thread(target=caller, name="first")
    first.start()
    assert first_generating.wait(timeout=60)
    second = threading.Thread(target=caller, name="second")
    second.start()
    first.join(timeout=60)
    second.join(timeout=60)
    assert found == {"first": data, "second": data}
    assert calls["generate"] == 1  # the second found the first's data
    assert not (tmp_path / sources.GENERATION_LOCK).exists()  # released, its file removed


def test_a_waiting_caller_says_whom_it_waits_for(tmp_path, capfd):
    data = tmp_path / "made"
    with FileLock(tmp_path / sources.GENERATION_LOCK):
        waiter = threading.Thread(target=sources.found_or_generated,
                                  args=(tmp_path, lambda: data if data.is_dir() else None,
                                        lambda: data.mkdir() or data))
        waiter.start()
        waiter.join(timeout=1)
        assert waiter.is_alive()  # held back while the lock is held
        data.mkdir()
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    err = capfd.readouterr().err
    assert err.startswith("waiting for pid ") and f"generating the data in {tmp_path}" in err
