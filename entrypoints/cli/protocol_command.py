"""``ironhive protocol``: print the turn-stream protocol's JSON Schema, list and check conformance transcripts.

Only cyclopts is imported at module level, so ``ironhive --help`` does not pay for pydantic's schema generator.
"""

from __future__ import annotations

import sys
from typing import Annotated

from cyclopts import App, Parameter


def register(app: App) -> None:
    """Add the ``protocol`` sub-app (``schema``, ``transcripts``, ``check``) to ``app``."""
    protocol = App(
        name="protocol",
        help="The turn-stream protocol of run --server / --http: its JSON Schema and the conformance check.",
    )
    protocol.command(schema_command, name="schema")
    protocol.command(transcripts_command, name="transcripts")
    protocol.command(check_command, name="check")
    app.command(protocol)


def schema_command() -> int:
    """Print the JSON Schema (Draft 2020-12) of every request and event."""
    from ironhive.protocol.schema import schema_json

    sys.stdout.write(schema_json())
    return 0


def transcripts_command() -> int:
    """List the shipped conformance transcripts: name and the behaviour each pins."""
    from ironhive.protocol.conformance import load_transcript, shipped_transcripts

    for path in shipped_transcripts():
        transcript = load_transcript(path)
        sys.stdout.write(f"{transcript.name:<28} {transcript.description}\n")
    return 0


def check_command(
    transcript: Annotated[str, Parameter(help="A transcript file, a shipped transcript's name, or 'all'.")],
    /,
    *command: Annotated[str, Parameter(help="The command to check (after --); default: ironhive run --server.")],
    timeout: Annotated[float, Parameter(help="Seconds to wait for each expected event.")] = 15.0,
) -> int:
    """Replay a golden transcript against a command speaking the protocol and report each difference.

    Exit 0 when every line holds, 1 when something differs (each difference names the transcript line), 2 when the
    transcript cannot be read. ``{script}`` in the command is the path of the transcript's model script.
    """
    from ironhive.protocol.conformance import TranscriptError, iter_results, shipped_transcripts

    names = [str(path) for path in shipped_transcripts()] if transcript == "all" else [transcript]
    failed = False
    try:
        for result in iter_results(names, command, timeout=timeout):
            sys.stdout.write(result.report())
            failed = failed or not result.passed
    except (TranscriptError, OSError) as error:
        sys.stderr.write(f"Error: {error}\n")
        return 2
    return 1 if failed else 0
