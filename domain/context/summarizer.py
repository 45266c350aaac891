"""ModelSummarizer: the compactor's summarizer — a model writes the summary of the pruned middle of a conversation."""

from __future__ import annotations

from collections.abc import Sequence

from ironhive.domain.transcript import render_transcript
from ironhive.ports.chat import ChatClient, ChatMessage, ChatOptions, Role

INSTRUCTIONS = """\
You summarise the earlier part of a conversation between a user and an agent that uses tools, so the agent can go on
without it. Keep, as short bullet points: the user's requests and every constraint or preference they stated (quote
them exactly); decisions taken and why; files read, created, modified or deleted; commands run and their outcomes;
errors met and approaches that failed; what was done and what remains. Write only the summary."""


class ModelSummarizer:
    """Asks a model for a summary of messages; raises when it cannot (the compactor then drops with a marker).

    Args:
        client: The model (the working model, or one configured for summaries).
        model: A model name to request, when the client serves several.
        max_input_chars: The longest transcript sent; longer ones keep their head and tail.
    """

    def __init__(self, client: ChatClient, *, model: str | None = None, max_input_chars: int = 60_000) -> None:
        self._client = client
        self._model = model
        self._max_input_chars = max_input_chars

    async def __call__(self, messages: Sequence[ChatMessage], target_tokens: int) -> str:
        """Summarise ``messages`` in about ``target_tokens`` tokens."""
        transcript = render_transcript(messages)
        if len(transcript) > self._max_input_chars:
            half = self._max_input_chars // 2
            transcript = f"{transcript[:half]}\n\n[... middle of the transcript left out ...]\n\n{transcript[-half:]}"
        request = [
            ChatMessage.of_text(Role.SYSTEM, INSTRUCTIONS),
            ChatMessage.of_text(Role.USER, f"Summarise in under {target_tokens} tokens:\n\n{transcript}"),
        ]
        options = ChatOptions(
            model=self._model, max_output_tokens=max(64, target_tokens), temperature=0.2, tools=(), tool_mode="none"
        )
        summary = (await self._client.get_response(request, options)).message.text.strip()
        if not summary:
            raise ValueError("the model returned an empty summary")
        return summary
