"""Folders that appear whole: built beside their final place under a lock, then swapped in.

Every build step (the test model, query towers, rerankers, trained folders) writes this way, so a
reader (a serving process, a parallel test worker) sees the old folder or the new one, never a
half-written one, and two builders of one folder take turns.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def swap_in(tmp: Path, dest: Path) -> None:
    """Put a finished folder at ``dest``: readers see the old folder or the new one, never a
    half-written one (the old folder is renamed aside, then deleted)."""
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
        os.replace(tmp, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, dest)


def write_atomically(dest: Path, write: Callable[[Path], None]) -> None:
    """Run ``write`` on a fresh folder beside ``dest``, then swap it in (``swap_in``): a failed
    or interrupted build leaves nothing, and readers never see a half-written folder."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.build-", dir=dest.parent))
    try:
        write(tmp)
        tmp.chmod(0o755)
        swap_in(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Serialise concurrent builders (e.g. parallel test workers) on one cache folder."""
    try:
        import fcntl
    except ImportError:  # not POSIX: last rename wins, still never a half-written folder
        yield
        return
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
