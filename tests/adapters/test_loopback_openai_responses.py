"""The loopback OpenAI server's Responses API, read by the official SDK (its typed events are the wire contract)."""

from __future__ import annotations

import openai

from tests.support.openai_server import LoopbackOpenAIServer


def test_streamed_text_arrives_as_the_responses_events_with_usage() -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_text("Hello there.", chunks=["Hello ", "there."], usage=(12, 3))
        client = openai.OpenAI(api_key="sk-loopback", base_url=server.base_url, max_retries=0)
        with client.responses.stream(model="gpt-test", input="hi") as stream:
            types = [event.type for event in stream]
            final = stream.get_final_response()
        client.close()
        (request,) = server.requests
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert final.output_text == "Hello there." and final.status == "completed"
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (12, 3)
    assert request["input"] == "hi" and request["stream"] is True


def test_a_whole_response_without_stream() -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_text("Hi.", usage=(5, 1))
        client = openai.OpenAI(api_key="sk-loopback", base_url=server.base_url, max_retries=0)
        response = client.responses.create(model="gpt-test", input="hi")
        client.close()
    assert response.output_text == "Hi." and response.usage is not None and response.usage.total_tokens == 6
