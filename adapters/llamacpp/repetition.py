"""Spots a local model stuck in a loop: the end of its output repeating one block, or one line over and over."""

from __future__ import annotations

import bisect
from collections import deque
from typing import Final

MIN_REPEATS: Final = 4
"""Back-to-back copies of one block at the end of the output that can count as a loop..."""
MIN_SPAN_CHARS: Final = 160
"""...once they cover this many characters..."""
MIN_SPAN_PIECES: Final = 64
"""...or this many generated pieces (tokens), whichever comes first (one emoji is several tokens)."""
MAX_PERIOD: Final = 256
"""The longest block (in characters) looked for."""
LINE_REPEATS: Final = 3
"""Times one line may occur among the recent lines before it counts as a loop."""
MIN_LINE: Final = 20
"""Shorter lines (stripped) are not counted: short lines (``}``, ``---``, ``return x``) repeat legitimately."""
RECENT_LINES: Final = 32
_WINDOW: Final = MAX_PERIOD * MIN_REPEATS + MIN_SPAN_CHARS


class RepetitionDetector:
    """Fed the generated text piece by piece (one token's text at a time); says when it has started to repeat itself.

    Two rules, either is enough: the output ends with ``MIN_REPEATS``+ back-to-back copies of one block of up to
    ``MAX_PERIOD`` characters that together cover ``MIN_SPAN_CHARS`` characters or ``MIN_SPAN_PIECES`` pieces
    (``ha ha ha ...``, an emoji or a paragraph over and over), or a line of at least ``MIN_LINE`` characters
    occurs ``LINE_REPEATS`` times among the last ``RECENT_LINES`` lines (a loop whose lines are separated by others).
    """

    def __init__(self) -> None:
        self._tail = ""
        self._total = 0
        self._ends: deque[int] = deque(maxlen=4 * MIN_SPAN_PIECES)
        self._line = ""
        self._lines: deque[str] = deque(maxlen=RECENT_LINES)
        self.reason: str | None = None

    def feed(self, text: str) -> bool:
        """Add one generated piece; ``True`` once the output repeats (and from then on)."""
        if self.reason is not None:
            return True
        if not text:
            return False
        self._total += len(text)
        self._ends.append(self._total)
        self._tail = (self._tail + text)[-_WINDOW:]
        if (found := self._repeated_block()) is not None:
            period, repeats = found
            self.reason = f"the output ended with {repeats} copies of a {period}-character block"
            return True
        *complete, self._line = (self._line + text).split("\n")
        for line in complete:
            stripped = line.strip()
            if len(stripped) >= MIN_LINE and self._lines.count(stripped) + 1 >= LINE_REPEATS:
                self.reason = f"a line occurred {LINE_REPEATS} times"
                return True
            self._lines.append(stripped)
        return False

    def _pieces_within(self, span: int) -> int:
        """Pieces that ended inside the last ``span`` characters."""
        ends = list(self._ends)
        return len(ends) - bisect.bisect_right(ends, self._total - span)

    def _repeated_block(self) -> tuple[int, int] | None:
        tail = self._tail
        for period in range(1, MAX_PERIOD + 1):
            if period * MIN_REPEATS > len(tail):
                return None
            block = tail[-period:]
            repeats = MIN_REPEATS
            if tail[-period * repeats :] != block * repeats:
                continue
            limit = len(tail) // period
            while repeats < limit and tail[-period * (repeats + 1) : -period * repeats] == block:
                repeats += 1
            span = period * repeats
            if span >= MIN_SPAN_CHARS or self._pieces_within(span) >= MIN_SPAN_PIECES:
                return period, repeats
        return None
