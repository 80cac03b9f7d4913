"""Opening files of a tree that may change under us: regular files only, never blocking.

A path scanned as a regular file can be replaced before it is read: by a FIFO
(whose open waits for a writer forever), a device, a socket or a symlink. Every
file the indexer or the scan reads is opened here, without blocking and without
following symlinks, and checked with ``fstat`` once open.
"""

import errno
import os
import stat


def read_regular_file(
    path: str | os.PathLike[str], *, follow_symlinks: bool = False, max_bytes: int | None = None
) -> bytes:
    """The bytes of a file that is still a regular file, never blocking on what replaced it.

    Raises OSError (with a ``strerror`` fit for a message) when the path is gone
    or became a FIFO, device, socket, directory or symlink since the scan, or
    holds more than ``max_bytes`` now (it grew since the scan: never read whole).
    """
    fd = open_regular(path, follow_symlinks=follow_symlinks)
    with open(fd, "rb") as f:
        if max_bytes is None:
            return f.read()
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"grew past indexing.maxFileSize ({max_bytes:,} bytes) since the scan")
    return data


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` bytes of a regular file (OSError as ``read_regular_file``)."""
    fd = open_regular(path)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = False) -> int:
    """A descriptor of ``path`` if it is a regular file; OSError otherwise."""
    # O_NONBLOCK: opening a FIFO with no writer would wait forever; it changes
    # nothing for a regular file. O_NOFOLLOW: a symlink swapped in is refused.
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags if follow_symlinks else flags | os.O_NOFOLLOW)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "no longer a regular file (replaced since the scan)")
    return fd
