"""An exclusive lock of an output shared between processes: a lock file holding the owner's pid,
locked with fcntl.flock. The kernel drops the lock when its process dies, however it dies, so the
file of a killed owner is stale and never blocks; the owner removes the file when it is done.

    with FileLock(out / ".bench.lock", busy=lambda who: BenchError(f"{out} is in use by {who}")):
        ...                       # refused at once when another process holds it
    with FileLock(results.with_suffix(".lock")):
        ...                       # waits for the other writer (a short read-modify-write)
"""

import contextlib
import errno
import fcntl
import os
import pathlib

UNSUPPORTED = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)  # a filesystem without locks


class FileLock:
    """`busy(who)` makes the exception raised when another process holds the lock (`who`: 'pid
    123'); without it, acquiring waits for the lock."""

    def __init__(self, path, busy=None):
        self.path = pathlib.Path(path)
        self.busy = busy
        self.fd = None

    def holder(self, fd):
        """The pid written in the lock file, or None when it is not (yet) there."""
        try:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        except OSError:
            return None
        return int(text) if text.isdecimal() else None

    def _lock(self, fd):
        """True when locked (or locks are unsupported); raise `busy` or wait otherwise."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if self.busy else 0))
        except OSError as error:
            if error.errno in UNSUPPORTED:
                return True  # go on unguarded
            pid = self.holder(fd)
            os.close(fd)
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise self.busy(f"pid {pid}" if pid else "a pid not yet recorded") from None
        return True

    def acquire(self):
        """Take the lock (or raise `busy`, naming the pid that holds it)."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._lock(fd)
            # The previous owner may have removed the file between our open and flock: retry
            # on the file that is there now.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                break
            os.close(fd)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
        return self

    def release(self):
        """Remove the lock file and drop the lock (removing first: nobody else holds it now)."""
        if self.fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self.fd)
        self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()
