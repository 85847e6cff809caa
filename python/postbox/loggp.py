"""LogGP parameters of one MPI library on one path.

The one type that the LogP bench (which measures and fits them) and the
model (which predicts with them) share.  Times are in seconds; ``G`` is in
seconds per byte.  Following Alexandrov et al.'s LogGP: a message of m bytes
costs the sender ``o_s``, the wire ``L + (m - 1) * G``, the receiver
``o_r``, and consecutive messages leave one sender at least ``g`` apart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LogGP:
    """L latency, o_s/o_r send/receive overheads, g gap between messages,
    G gap per byte; @library and @path ("node" or "net") say whose."""

    L: float
    o_s: float
    o_r: float
    g: float
    G: float
    library: str = ""
    path: str = ""

    def __post_init__(self) -> None:
        for name in ("L", "o_s", "o_r", "g", "G"):
            value = getattr(self, name)
            if not value >= 0.0:
                raise ValueError("LogGP %s must be a time >= 0, not %r" % (name, value))

    def one_way(self, size: int) -> float:
        """Time from the send's start to the receive's end of one @size-byte
        message: o_s + L + (size - 1) G + o_r (size 0 counts as 1)."""
        return self.o_s + self.L + max(size - 1, 0) * self.G + self.o_r

    def gap(self, size: int) -> float:
        """Time between two consecutive @size-byte messages of one sender:
        max(g, o_s) + (size - 1) G."""
        return max(self.g, self.o_s) + max(size - 1, 0) * self.G
