"""Task tests run offline (downloads off, no host reachable); a tiny generated ListOps set."""

import pytest

from arena_tf.generators import listops
from arena_tf.tasks import sources

TINY_LISTOPS = listops.ListOpsSpec(
    train=60, validation=20, test=20, min_length=40, max_length=150, seed=3
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv(sources.DOWNLOAD_ENV, "0")
    monkeypatch.setattr(sources, "host_reachable", lambda *args, **kwargs: False)


@pytest.fixture(scope="session")
def tiny_listops_dir(tmp_path_factory):
    """A folder holding ListOps release files generated from TINY_LISTOPS (60 / 20 / 20)."""
    out = tmp_path_factory.mktemp("listops")
    listops.generate(out, TINY_LISTOPS, processes=1)
    return out
