"""Providers' opaque reasoning state in the domain: the loop keeps closed blocks with it; a cut block loses it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.context.fit import fit_to_limit
from ironhive.domain.context.tokens import MessageTokenCache
from ironhive.domain.turn import ThinkingDelta
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
)
from tests.support.fakes import FakeClock


class UpdatesClient:
    """Answers every request with the same updates (streamed) or parts (whole)."""

    def __init__(self, updates: Sequence[ChatUpdate], parts: Sequence[ThinkingPart | TextPart] = ()) -> None:
        self._updates = tuple(updates)
        self._parts = tuple(parts)

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        return ChatResponse(message=ChatMessage(role=Role.ASSISTANT, parts=self._parts), finish_reason="stop")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        for update in self._updates:
            yield update


def state(n: int) -> OpaqueState:
    return OpaqueState(provider="p", data=f"sig-{n}")


async def streamed(updates: Sequence[ChatUpdate]) -> tuple[ChatMessage, list[str]]:
    loop = AgentLoop(UpdatesClient([*updates, ChatUpdate(text_delta="ok")]), clock=FakeClock(step=0.001))
    shown = [chunk.text async for chunk in loop.run_streaming("hi") if isinstance(chunk, ThinkingDelta)]
    return loop.history[-1], shown


async def test_a_closed_block_replaces_the_text_streamed_for_it_and_open_thinking_follows() -> None:
    message, shown = await streamed(
        [
            ChatUpdate(thinking_delta="a"),
            ChatUpdate(thinking_delta="b"),
            ChatUpdate(thinking_block=ThinkingPart(text="ab", opaque=state(1))),
            ChatUpdate(thinking_block=ThinkingPart(text="", opaque=state(2))),  # redacted: nothing was shown
            ChatUpdate(thinking_delta="c"),
        ]
    )

    assert shown == ["a", "b", "c"]
    assert message.parts == (
        ThinkingPart(text="ab", opaque=state(1)),
        ThinkingPart(text="", opaque=state(2)),
        ThinkingPart(text="c"),
        TextPart(text="ok"),
    )


@settings(max_examples=50, deadline=None)
@given(blocks=st.lists(st.lists(st.text(min_size=1), max_size=3), max_size=4), tail=st.lists(st.text(min_size=1)))
async def test_every_closed_block_is_kept_in_order_and_no_streamed_thinking_is_lost(
    blocks: list[list[str]], tail: list[str]
) -> None:
    updates: list[ChatUpdate] = []
    for n, pieces in enumerate(blocks):
        updates.extend(ChatUpdate(thinking_delta=piece) for piece in pieces)
        updates.append(ChatUpdate(thinking_block=ThinkingPart(text="".join(pieces), opaque=state(n))))
    updates.extend(ChatUpdate(thinking_delta=piece) for piece in tail)

    message, _ = await streamed(updates)

    thinking = [part for part in message.parts if isinstance(part, ThinkingPart)]
    expected = [ThinkingPart(text="".join(pieces), opaque=state(n)) for n, pieces in enumerate(blocks)]
    assert thinking == expected + ([ThinkingPart(text="".join(tail))] if tail else [])


async def test_whole_responses_keep_each_thinking_part_with_its_state() -> None:
    parts = (ThinkingPart(text="x", opaque=state(1)), ThinkingPart(text="", opaque=state(2)), TextPart(text="ok"))
    loop = AgentLoop(UpdatesClient((), parts), clock=FakeClock(step=0.001))

    turn = await loop.run("hi")

    assert loop.history[-1].parts == parts
    assert turn.content == "ok"


def test_a_signed_thinking_block_cut_to_fit_the_window_loses_its_signature_and_an_uncut_one_keeps_it() -> None:
    long = ThinkingPart(text="t" * 40_000, opaque=state(1))
    short = ThinkingPart(text="brief", opaque=state(2))
    history = [
        ChatMessage.of_text(Role.USER, "go"),
        ChatMessage(role=Role.ASSISTANT, parts=(short, TextPart(text="one"))),
        ChatMessage.of_text(Role.USER, "again"),
        ChatMessage(role=Role.ASSISTANT, parts=(long, TextPart(text="two"))),
        ChatMessage.of_text(Role.USER, "last"),
    ]

    fitted = fit_to_limit(history, limit=3000, tokens=MessageTokenCache()).messages

    kept = [part for message in fitted for part in message.parts if isinstance(part, ThinkingPart)]
    assert kept[0] == short
    assert len(kept[1].text) < len(long.text) and kept[1].opaque is None
