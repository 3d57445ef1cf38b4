"""A hang guard for tests of inputs that once took minutes: fail instead of hanging the suite."""
from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["hang_guard"]


@contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    """Raise ``AssertionError`` if the block runs past ``seconds`` (main thread, POSIX only).

    Not a speed test: the limit sits far above what a linear pass needs and far below what the
    old super-linear one took.
    """
    def fail(signum, frame):
        raise AssertionError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
