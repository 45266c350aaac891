"""The cyclopts application: the default command (``ironhive -p``) and its flags."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from cyclopts import Parameter

from ironhive import __version__
from ironhive.adapters.provider_registry import provider_names_help
from ironhive.cli.prepared_parse import PreparedApp, resolve_annotations

HELP = """ironhive — a universal agent host: give it a task, it plans, runs tools and reports.

For example:

  ironhive                               interactive mode (on a terminal)
  ironhive "explain this repo"           one prompt, then exit (as -p)
  git diff | ironhive -p "commit message for this"   stdin follows the prompt
  ironhive --provider ollama -m llama3.2 "hi"
  ironhive sessions list                 this project's sessions
  ironhive --install-completion          tab completion for bash, zsh or fish
"""


class IronHiveApp(PreparedApp):
    """The CLI application: once a command line is parsed, before its command runs, dependency-injector is imported
    without the packages it probes for (:func:`ironhive.lean_imports.import_dependency_injector`).

    After the parse, not before it: cyclopts checks every parsed value with pydantic when pydantic is already imported
    (building a ``TypeAdapter`` per parameter, some 40 ms of a one-shot's start), and dependency-injector imports
    pydantic. ironhive's command lines are strings, numbers, flags and choices, which cyclopts converts and checks
    itself. Help and the version (cyclopts' own commands) need no import at all.
    """

    def parse_args(self, *args: Any, **kwargs: Any) -> Any:
        """cyclopts' parse, then the import."""
        from cyclopts import App

        from ironhive.lean_imports import import_dependency_injector

        parsed = super().parse_args(*args, **kwargs)
        if not isinstance(getattr(parsed[0], "__self__", None), App):
            import_dependency_injector()  # this process never uses dependency-injector's wiring: skip its probes
        return parsed


app = IronHiveApp(
    name="ironhive",
    help=HELP,
    help_format="plaintext",
    version=f"ironhive {__version__}",
    default_parameter=Parameter(negative=()),
    result_action="return_value",
)

OutputFormat = Literal["text", "json", "jsonl"]

PROVIDER_HELP = f"Provider to use (default: the first configured): {provider_names_help()}."
"""The ``--provider`` help: every registered provider with its aliases."""


@app.default
def chat(
    *words: Annotated[str, Parameter(name="PROMPT", help="Run this one prompt and exit (quote it; the same as -p).")],
    prompt: Annotated[str | None, Parameter(name=["-p", "--prompt"], help="Run this one prompt and exit.")] = None,
    model: Annotated[str | None, Parameter(name=["-m", "--model"], help="Model to use (or provider/model).")] = None,
    provider: Annotated[str | None, Parameter(help=PROVIDER_HELP)] = None,
    output: Annotated[OutputFormat, Parameter(name=["-o", "--output"], help="Output format.")] = "text",
    plain: Annotated[bool, Parameter(help="Plain text output without ANSI formatting.")] = False,
    no_stream: Annotated[bool, Parameter(help="Wait for the complete response instead of streaming.")] = False,
    show_tokens: Annotated[bool, Parameter(help="Show token usage.")] = False,
    show_thinking: Annotated[bool, Parameter(help="Show the model's thinking/reasoning.")] = False,
    plan: Annotated[bool, Parameter(help="Start in planning mode (read-only tools only).")] = False,
    dry_run: Annotated[bool, Parameter(help="Show what would be done without executing (planning mode).")] = False,
    continue_: Annotated[
        bool, Parameter(name=["-c", "--continue"], help="Continue the most recent session of this project.")
    ] = False,
    resume: Annotated[str | None, Parameter(name=["-r", "--resume"], help="Resume the session with this id.")] = None,
    fork: Annotated[bool, Parameter(help="With -c/-r: continue in a copy of that session.")] = False,
) -> int:
    """Interactive mode on a terminal, or one prompt (an argument, -p, or piped on stdin) and exit."""
    from ironhive.cli.prompt_input import PromptInputError, one_shot_prompt, positional_prompt
    from ironhive.cli.render import set_plain_output
    from ironhive.domain.sessions import SessionRequest

    set_plain_output(plain)  # also for what never sees the command line (download bar, local progress line)
    try:
        positional = positional_prompt(words, command_names())
    except PromptInputError as error:
        return _input_error(error)
    if positional is not None and prompt is not None:
        sys.stderr.write("Error: Give the prompt once: as an argument or with -p, not both.\n")
        return 2
    prompt = positional if positional is not None else prompt
    session = SessionRequest(continue_latest=continue_, resume=resume, fork=fork)
    from ironhive.cli.one_shot import OneShotRequest, run_one_shot

    if prompt is None and sys.stdin is not None and sys.stdin.isatty():
        from ironhive.cli.interactive import InteractiveRequest, run_interactive

        return run_interactive(
            InteractiveRequest(
                model=model,
                provider=provider,
                plain=plain,
                show_thinking=show_thinking,
                show_tokens=show_tokens,
                planning=plan or dry_run,
                session=session,
            ),
            environ=os.environ,
        )
    try:
        prompt = one_shot_prompt(prompt)
    except PromptInputError as error:
        return _input_error(error)
    if prompt is None:
        sys.stderr.write(
            "Error: Prompt is required: pass a PROMPT or -p PROMPT, pipe it on stdin, or start on a terminal.\n"
        )
        return 1
    return run_one_shot(
        OneShotRequest(
            prompt=prompt,
            model=model,
            provider=provider,
            output=output,
            plain=plain,
            stream=not no_stream,
            show_tokens=show_tokens,
            show_thinking=show_thinking,
            planning=plan or dry_run,
            dry_run=dry_run,
            session=session,
        ),
        environ=os.environ,
    )


@app.command
def run(
    prompt_argument: Annotated[str | None, Parameter(name="PROMPT", help="The prompt (wins over -p).")] = None,
    *,
    prompt: Annotated[str | None, Parameter(name=["-p", "--prompt"], help="The prompt.")] = None,
    model: Annotated[str | None, Parameter(name=["-m", "--model"], help="Model to use (or provider/model).")] = None,
    provider: Annotated[str | None, Parameter(help=PROVIDER_HELP)] = None,
    show_tokens: Annotated[bool, Parameter(help="Show token usage.")] = False,
    show_thinking: Annotated[bool, Parameter(help="Show the model's thinking/reasoning.")] = False,
    json: Annotated[bool, Parameter(help="Output the response as JSON.")] = False,
    server: Annotated[
        bool, Parameter(help="Server mode: the turn-stream protocol as JSON Lines on stdin/stdout.")
    ] = False,
    http: Annotated[
        str | None,
        Parameter(
            help="HTTP mode: serve the turn-stream protocol to the agent host at this URL (ready, SSE inbox, events); "
            "IRONHIVE_HOST_TOKEN, when set, is sent as a bearer token.",
        ),
    ] = None,
    session_id: Annotated[
        str | None, Parameter(help="Session id for server and HTTP mode (default: a new id).")
    ] = None,
    auto_commit: Annotated[
        bool, Parameter(help="Commit the files the run's tools wrote, edited or deleted (nothing else).")
    ] = False,
    commit_message: Annotated[
        str | None, Parameter(help="Message of the --auto-commit commit (default: 'ironhive: <prompt>').")
    ] = None,
    approval_timeout: Annotated[
        float | None,
        Parameter(
            help="Server and HTTP mode: seconds an approval waits for its answer (default: approval.timeoutSeconds, "
            "300)."
        ),
    ] = None,
) -> int:
    """Run a single prompt and exit, or serve the turn-stream protocol on stdio (--server) or to a host (--http)."""
    if server and http is not None:
        sys.stderr.write("Error: --server and --http cannot be used together: choose stdio or an HTTP host.\n")
        return 2
    if server or http is not None:
        from ironhive.server import ServeRequest, run_http, run_server

        request = ServeRequest(
            session_id=session_id,
            provider=provider,
            model=model,
            environ=os.environ,
            approval_timeout_seconds=approval_timeout,
        )
        return run_server(request) if http is None else run_http(http, request)
    from ironhive.cli.prompt_input import PromptInputError, one_shot_prompt

    try:
        text = one_shot_prompt(prompt_argument or prompt or None)
    except PromptInputError as error:
        return _input_error(error)
    if not text:
        sys.stderr.write("Error: Prompt is required.\n")
        return 1
    from ironhive.cli.one_shot import OneShotRequest, run_one_shot

    return run_one_shot(
        OneShotRequest(
            prompt=text,
            model=model,
            provider=provider,
            output="run-json" if json else "run-text",
            plain=True,
            stream=False,
            show_tokens=show_tokens,
            show_thinking=show_thinking,
            planning=False,
            dry_run=False,
            idle_mode=True,
            auto_commit=auto_commit,
            commit_message=commit_message,
        ),
        environ=os.environ,
    )


@app.command(name="completion")
def completion(shell: Annotated[Literal["bash", "zsh", "fish"], Parameter(name="SHELL")], /) -> int:
    """Print the shell completion script for bash, zsh or fish (or install it with --install-completion)."""
    sys.stdout.write(app.generate_completion(shell=shell, prog_name="ironhive"))
    return 0


def command_names() -> list[str]:
    """The names of the top-level commands (``run``, ``sessions``, …), registered or not, without the
    ``--help``-style ones."""
    return list(dict.fromkeys([*(name for name in app if not name.startswith("-")), *COMMAND_MODULES]))


def _input_error(error: Exception) -> int:
    sys.stderr.write(f"Error: {error}\n")
    return getattr(error, "code", 1)


def _usage_error(error: Exception) -> str:
    """A usage error's text; words a command does not take say what to type instead (not "Unused Tokens")."""
    from cyclopts.exceptions import UnusedCliTokensError

    if isinstance(error, UnusedCliTokensError) and error.app is not None and error.unused_tokens:
        from ironhive.cli.unexpected_arguments import unexpected_arguments

        options = [name for argument in error.app.assemble_argument_collection() for name in argument.names]
        return unexpected_arguments(error.command_chain or (), error.unused_tokens, options)
    return str(error)


def run_app(args: list[str]) -> int:
    """Parse ``args`` and run the matching command; returns the exit code."""
    from ironhive.cli.render import color_enabled

    console = None
    if not color_enabled(sys.stdout) and sys.stdout is not None and sys.stdout.isatty():
        from ironhive.cli.render import rich_console

        console = rich_console()  # help on a terminal under NO_COLOR: laid out as usual, without escape sequences
    register_commands(args)
    try:
        result = app(args, console=console, exit_on_error=False, print_error=False)
    except SystemExit as stop:  # cyclopts exits for --help/--version
        return stop.code if isinstance(stop.code, int) else 0
    except Exception as error:
        from cyclopts import CycloptsError

        if isinstance(error, CycloptsError):
            sys.stderr.write(f"Error: {_usage_error(error)}\n")  # one plain line, as every other error (no colour)
            return 2
        raise
    return result if isinstance(result, int) else 0


COMMAND_MODULES = {
    **dict.fromkeys(("set", "get", "unset", "config"), "ironhive.cli.config_commands"),
    "mcp": "ironhive.cli.mcp_commands",
    "models": "ironhive.cli.models_command",
    "sessions": "ironhive.cli.session_commands",
    "trust": "ironhive.cli.trust_command",
    "doctor": "ironhive.cli.doctor",
    "update": "ironhive.cli.update",
    "protocol": "ironhive.cli.protocol_command",
    "daemon": "ironhive.cli.daemon_command",
    "acp": "ironhive.cli.acp_command",
    "serve": "ironhive.serve.serve_command",
    "worker": "ironhive.serve.worker_command",
}
"""The commands defined elsewhere, each with the module whose ``register(app)`` adds it, in the order help lists them.

They are registered when a command line may need them (:func:`register_commands`): building a command's parser and
checking its signature, for fifteen commands and the completion installer, is some 25 ms a prompt has no use for."""

INSTALL_COMPLETION = "--install-completion"
LISTING_TOKENS = frozenset({"-h", "--help", INSTALL_COMPLETION, "completion"})
"""Tokens whose command needs every command registered: help lists them, completion covers them."""


def register_commands(args: Sequence[str] | None = None) -> None:
    """Register the commands ``args`` may run: those any of its tokens names, or all of them (and the completion
    installer) when ``args`` is ``None`` or asks for help or completion. Registering one again changes nothing."""
    from importlib import import_module

    everything = args is None or not LISTING_TOKENS.isdisjoint(args)
    named = set(COMMAND_MODULES) if everything else set(args or ())
    for name, module in COMMAND_MODULES.items():  # in the table's order, whatever the command line's
        if name in named and name not in app:
            import_module(module).register(app)  # every command of that module
    if everything and INSTALL_COMPLETION not in app:
        app.register_install_completion_command(
            add_to_startup=True, help="Install shell completion (bash, zsh or fish)."
        )


resolve_annotations(chat)  # evaluated once, not on each of cyclopts' reads of them in a parse
resolve_annotations(run)
