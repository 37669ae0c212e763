"""A wall-clock limit for a test that must not hang: an alarm far above the time the work needs, so that a
loaded CI machine never fails it, while a hang (a search that grows with a divisor, say) still does."""

import signal
from contextlib import contextmanager

HANG_SECONDS = 60  # far above what any guarded call needs (well under a second)


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException, so that no ``except Exception`` in the library turns it into
    an ExpressionError."""


@contextmanager
def time_limit(seconds: float = HANG_SECONDS):
    def expire(signum, frame):
        raise CaseTimeout(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
