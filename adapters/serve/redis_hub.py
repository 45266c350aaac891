"""RedisTurnHub: the ``serve`` front's side of turns on Redis — queue them on a stream, pass answers and cancels on."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from redis.exceptions import ResponseError

from ironhive.adapters.serve import redis_scripts as scripts
from ironhive.adapters.serve.hub import HubLoad, TurnQueueFullError
from ironhive.adapters.serve.redis_keys import WORKERS_GROUP, TurnKeys, text
from ironhive.protocol.models import HitlResponseRequest, UserMessageRequest, serialize_request

if TYPE_CHECKING:
    from redis.asyncio import Redis

CANCEL_TTL_SECONDS = 24 * 3600
"""How long a cancel asked for a waiting turn is remembered (the key goes when the turn finishes)."""

NO_RUNNING_TURN = "no turn of this session is running"


@dataclass(frozen=True, slots=True)
class ControlMessage:
    """What the fronts tell the workers on the control channel.

    Attributes:
        session_id: The session concerned.
        kind: ``answer`` (an approval answer for its running turn), ``cancel``, or ``done`` (a worker finished one of
            its turns: a worker holding the next one starts it).
        turn_id: The turn to cancel (``cancel`` only).
        line: The ``hitl_response`` request line (``answer`` only).
    """

    session_id: str
    kind: str
    turn_id: str | None = None
    line: str | None = None

    def encode(self) -> str:
        """The message as published."""
        return json.dumps(
            {"session_id": self.session_id, "kind": self.kind, "turn_id": self.turn_id, "line": self.line}
        )

    @classmethod
    def decode(cls, data: bytes | str) -> ControlMessage | None:
        """A published message, or None when it is not one (it is then ignored)."""
        try:
            value = json.loads(data)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        session_id, kind, turn_id, line = (value.get(name) for name in ("session_id", "kind", "turn_id", "line"))
        if not isinstance(session_id, str) or kind not in ("answer", "cancel", "done"):
            return None
        return cls(
            session_id=session_id,
            kind=kind,
            turn_id=turn_id if isinstance(turn_id, str) else None,
            line=line if isinstance(line, str) else None,
        )


async def ensure_group(redis: Redis, keys: TurnKeys) -> None:
    """Create the turns stream and its ``workers`` group unless they exist (from the stream's start)."""
    try:
        await redis.xgroup_create(keys.turns, WORKERS_GROUP, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


class RedisTurnHub:
    """Takes a front's turns onto the Redis turns stream; ``ironhive worker`` processes run them.

    ``submit`` gives the turn the session's next number and adds it to the stream in one script, refusing it when
    ``max_queued_turns`` of the session's turns already wait behind the running one. ``answer`` and ``cancel`` are
    published on the control channel that every worker listens to; the worker running the session's turn acts on
    them. A cancel is also remembered for the turn, so a turn cancelled while it waits ends without running.

    Closing a front leaves the turns alone: they belong to the workers, and any front serves their events.

    Args:
        redis: The client (owned by the caller, who closes it).
        max_queued_turns: Most turns of one session waiting behind its running turn.
        keys: The key names.
        retry_after_seconds: The ``Retry-After`` of a refused turn.
    """

    def __init__(
        self, redis: Redis, *, max_queued_turns: int, keys: TurnKeys | None = None, retry_after_seconds: float = 1.0
    ) -> None:
        if max_queued_turns < 1:
            raise ValueError("max_queued_turns must be positive")
        self._redis = redis
        self._keys = keys or TurnKeys()
        self._max_queued = max_queued_turns
        self._retry_after = retry_after_seconds
        self._submit = redis.register_script(scripts.SUBMIT)
        self._group_ready = False

    async def submit(self, session_id: str, message: UserMessageRequest) -> str:
        """Queue a turn of the session on the turns stream; returns its turn id.

        Raises:
            TurnQueueFullError: ``max_queued_turns`` of the session's turns wait already; nothing was queued.
        """
        if not self._group_ready:
            await ensure_group(self._redis, self._keys)
            self._group_ready = True
        keys = self._keys
        turn_id = uuid.uuid4().hex
        seq = await self._submit(
            keys=[keys.seq(session_id), keys.done(session_id), keys.open_turns(session_id), keys.turns],
            args=[self._max_queued, session_id, turn_id, serialize_request(message)],
        )
        if int(seq) < 0:
            raise TurnQueueFullError(
                f"The session has {self._max_queued} turns waiting already; send the message again when one ended",
                retry_after_seconds=self._retry_after,
            )
        return turn_id

    async def answer(self, session_id: str, response: HitlResponseRequest) -> str | None:
        """Pass an approval answer to the worker running the session's turn; ``None`` when one runs, else why not.

        The worker's approval bridge judges the answer; one it drops is reported in the session's events.
        """
        if not await self._redis.hlen(self._keys.open_turns(session_id)):
            return NO_RUNNING_TURN
        line = serialize_request(response)
        await self._publish(ControlMessage(session_id=session_id, kind="answer", line=line))
        return None

    async def cancel(self, session_id: str, turn_id: str | None = None) -> bool:
        """Cancel the session's running turn (its oldest unfinished one), or the turn named; whether there was one."""
        open_turns = await self._open_turns(session_id)
        if turn_id is None:
            if not open_turns:
                return False
            turn_id = min(open_turns, key=open_turns.__getitem__)
        elif turn_id not in open_turns:
            return False
        await self._cancel(session_id, [turn_id])
        return True

    async def drop(self, session_id: str) -> None:
        """Cancel every unfinished turn of the session."""
        await self._cancel(session_id, list(await self._open_turns(session_id)))

    async def load(self) -> HubLoad:
        """Turns the workers hold (running, or waiting for the session's previous turn) and turns not yet taken."""
        if not await self._redis.exists(self._keys.turns):
            return HubLoad(running=0, queued=0)
        length = int(await self._redis.xlen(self._keys.turns))
        try:
            pending = int((await self._redis.xpending(self._keys.turns, WORKERS_GROUP))["pending"])
        except ResponseError as error:  # no group yet: nothing was delivered
            if "NOGROUP" not in str(error):
                raise
            pending = 0
        # finished turns are deleted from the stream, so what it holds is held by a worker or not yet delivered
        return HubLoad(running=pending, queued=max(0, length - pending))

    async def aclose(self) -> None:
        """Nothing to stop: the turns run on the workers (the client is the caller's to close)."""

    async def _open_turns(self, session_id: str) -> dict[str, int]:
        raw = await self._redis.hgetall(self._keys.open_turns(session_id))
        return {text(turn): int(seq) for turn, seq in raw.items()}

    async def _cancel(self, session_id: str, turn_ids: list[str]) -> None:
        if not turn_ids:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for turn in turn_ids:
                pipe.set(self._keys.cancelled(turn), 1, ex=CANCEL_TTL_SECONDS)
                pipe.publish(self._keys.control, ControlMessage(session_id, "cancel", turn_id=turn).encode())
            await pipe.execute()

    async def _publish(self, message: ControlMessage) -> None:
        await self._redis.publish(self._keys.control, message.encode())
