"""Read a file that someone else named, with bounds: never hang on it, never read it without end.

A request, a hook or a project can name any path: a FIFO (whose ``open`` waits for a writer),
``/dev/zero`` (which never ends), a socket, a huge log. kairosd reads such paths (transcripts,
agent definitions) and so does the CLI (``kairos import``). Every such read goes through here:

* :func:`open_regular` opens with ``O_NONBLOCK`` (a FIFO's open returns at once), checks with
  ``fstat`` on the open descriptor (no gap between check and use) that it is a regular file, and
  only then switches back to blocking reads. Anything else raises :class:`NotRegularFile`, an
  ``OSError`` so callers that already report ``OSError`` need nothing new.
* :class:`CappedFile` is a binary file object that yields at most ``limit`` bytes and then behaves
  as at end of file; ``truncated`` says whether more was there. Readers that stream (JSON lines)
  stay bounded without knowing it.
* :func:`read_capped` reads a whole small file (a config, an import) up to a cap, refusing larger.

Links are followed: the user's own transcripts may be links. What is refused is a target that is
not a regular file, whoever made the link. Writing is :mod:`.atomic`'s, never done here.

Must not import anything else from kairosd.
"""

from __future__ import annotations

import errno
import fcntl
import io
import os
import stat
from typing import IO

__all__ = ["CappedFile", "NotRegularFile", "TooLarge", "open_capped", "open_regular", "read_capped"]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class NotRegularFile(OSError):
    """The path names something other than a regular file (a FIFO, a device, a socket, a folder)."""


class TooLarge(OSError):
    """The file is larger than the caller's cap."""


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """``path`` opened for binary reading, after checking that it is a regular file.

    Never blocks in ``open`` (a FIFO with no writer returns at once and is refused). Raises
    :class:`NotRegularFile` for anything but a regular file, and ``OSError`` as ``open`` does.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(path, flags)
    except IsADirectoryError as exc:  # some systems refuse O_RDONLY on a folder only at read time
        raise NotRegularFile(errno.EISDIR, f"{os.fspath(path)} is a folder, not a file") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"{os.fspath(path)} is {_kind(mode)}, not a regular file")
        # A regular file never blocks; blocking mode again so buffered reads behave as usual.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class CappedFile(io.RawIOBase):
    """A binary file that ends after ``limit`` bytes; ``truncated`` is True once more was found.

    Wraps an open regular file (it is closed with this one). Use it buffered
    (:func:`open_capped`) for ``readline``.
    """

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        super().__init__()
        self._raw = raw
        self.limit = limit
        self.consumed = 0
        self.truncated = False
        self.size = os.fstat(raw.fileno()).st_size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        left = self.limit - self.consumed
        if left <= 0:
            if not self.truncated and self._raw.read(1):
                self.truncated = True
            return 0
        view = memoryview(buffer)[: min(len(buffer), left)]
        got = self._raw.readinto(view)  # type: ignore[attr-defined]
        self.consumed += got or 0
        return got or 0

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR and offset == 0:
            return self.consumed
        if whence != io.SEEK_SET:
            raise io.UnsupportedOperation("CappedFile seeks from the start only")
        self.consumed = self._raw.seek(min(offset, self.limit))
        return self.consumed

    def tell(self) -> int:
        return self.consumed

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def open_capped(path: str | os.PathLike[str], limit: int) -> tuple[io.BufferedReader, CappedFile]:
    """A buffered reader of at most ``limit`` bytes of the regular file ``path``, and its :class:`CappedFile`
    (for ``truncated``, ``consumed`` and ``size`` once read)."""
    capped = CappedFile(open_regular(path), limit)
    return io.BufferedReader(capped), capped


def read_capped(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole of the regular file ``path``; :class:`TooLarge` if it holds more than ``limit`` bytes."""
    with open_regular(path) as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"{os.fspath(path)} is larger than {limit} bytes; not read")
    return data
