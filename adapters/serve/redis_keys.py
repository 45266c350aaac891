"""Where ``ironhive serve`` keeps turns and events in Redis: every key name, and what a turns stream entry holds."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

WORKERS_GROUP = "workers"
"""The consumer group of the turns stream that every ``ironhive worker`` reads with."""

_STREAM_ID = re.compile(r"\A([0-9]{1,20})(?:-([0-9]{1,20}))?\Z")
_MAX_PART = 2**64 - 1


def stream_id(text: str | None) -> str | None:
    """``text`` when it is a Redis stream id (``<ms>`` or ``<ms>-<n>``, parts 64-bit unsigned numbers), else None."""
    if text is None:
        return None
    match = _STREAM_ID.match(text)
    if match is None or any(int(part) > _MAX_PART for part in match.groups() if part is not None):
        return None
    return text


def text(value: bytes | str) -> str:
    """A Redis reply as text (replies are bytes unless the client decodes them)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


@dataclass(frozen=True, slots=True)
class TurnKeys:
    """The key names of turns and events, all under one prefix: a project's prefix of the session store
    (``ironhive:{<project key>}:``), so a project's turns, events and sessions share one Redis Cluster slot and one
    transaction may write them all; two projects' workers never take each other's turns.

    Per session ``S``: ``<p>events:S`` (its event stream), ``<p>turn-seq:S`` (the last turn number given out),
    ``<p>turn-done:S`` (the last turn number finished), ``<p>turns-open:S`` (a hash: turn id → number of every turn
    taken and not finished). Per turn ``T``: ``<p>turn-cancelled:T`` (a cancel was asked) and ``<p>turn-started:T``
    (an attempt began running it). Shared: ``<p>turns`` (the turns stream, consumer group ``workers``) and the
    ``<p>control`` channel (answers and cancels for the workers).

    Attributes:
        prefix: The common prefix, ending with ``:``.
    """

    prefix: str = "ironhive:"

    @property
    def turns(self) -> str:
        """The stream of taken turns."""
        return f"{self.prefix}turns"

    @property
    def control(self) -> str:
        """The Pub/Sub channel carrying answers and cancels to the workers."""
        return f"{self.prefix}control"

    def events(self, session_id: str) -> str:
        """The session's event stream."""
        return f"{self.prefix}events:{session_id}"

    def seq(self, session_id: str) -> str:
        """The session's last given-out turn number."""
        return f"{self.prefix}turn-seq:{session_id}"

    def done(self, session_id: str) -> str:
        """The session's last finished turn number."""
        return f"{self.prefix}turn-done:{session_id}"

    def open_turns(self, session_id: str) -> str:
        """The session's taken, unfinished turns: turn id → turn number."""
        return f"{self.prefix}turns-open:{session_id}"

    def cancelled(self, turn_id: str) -> str:
        """Set when the turn is to be cancelled."""
        return f"{self.prefix}turn-cancelled:{turn_id}"

    def started(self, turn_id: str) -> str:
        """Set when an attempt at the turn began running it."""
        return f"{self.prefix}turn-started:{turn_id}"


@dataclass(frozen=True, slots=True)
class QueuedTurn:
    """One entry of the turns stream.

    Attributes:
        entry_id: Its stream id.
        session_id: The session.
        turn_id: The turn's id (what the front answered the message with).
        seq: The turn's number within the session (1, 2, ...).
        request: The ``user_message`` line.
        reclaimed: Taken over from a worker that stopped answering.
    """

    entry_id: str
    session_id: str
    turn_id: str
    seq: int
    request: str
    reclaimed: bool

    @classmethod
    def read(cls, entry_id: bytes | str, fields: Mapping[bytes | str, bytes | str], *, reclaimed: bool) -> QueuedTurn:
        """The turn an entry holds.

        Raises:
            ValueError: The entry is not a turn (a field is missing or the number is not one).
        """
        values = {text(name): text(value) for name, value in fields.items()}
        try:
            return cls(
                entry_id=text(entry_id),
                session_id=values["session_id"],
                turn_id=values["turn_id"],
                seq=int(values["seq"]),
                request=values["request"],
                reclaimed=reclaimed,
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"not a turn entry: {error}") from None
