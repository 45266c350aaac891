"""``ironhive trust``: trust, list or revoke trust in this project's files; and the one start-up question.

A repository's ``.ironhive/config.yaml``, ``.ironhive/permissions.*``, plugin file and ``.env`` take effect only once
their exact content is trusted (see :mod:`ironhive.adapters.config.trust`): ``ironhive trust`` records each file's path
and SHA-256 in ``~/.ironhive/trust.json``; any edit (the model's included) needs trusting again. For one run without
remembering anything, set ``IRONHIVE_TRUST_PROJECT=1``. Only cyclopts is imported at module level.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

from cyclopts import App, Parameter

if TYPE_CHECKING:
    from ironhive.adapters.config.loader import LoadedConfig
    from ironhive.adapters.config.trust import ProjectTrust, TrustRecord


def register(app: App) -> None:
    """Add the ``trust`` command to ``app``."""
    app.command(trust_command, name="trust")


def trust_command(
    *,
    list_files: Annotated[
        bool, Parameter(name="--list", help="Show this project's files and whether each is trusted.")
    ] = False,
    revoke: Annotated[bool, Parameter(name="--revoke", help="Forget the trust of this project's files.")] = False,
) -> int:
    """Trust this project's files (.ironhive/config.yaml, permissions, plugins, .env) as they are now.

    Until then a project's files cannot set endpoints, keys, providers, the advisor or web tools, its permission
    rules only narrow yours, and its plugins do not start. Any edit to a file revokes its trust.
    """
    from ironhive.adapters.config.loader import project_trust_files
    from ironhive.adapters.config.trust import ProjectTrust

    home, project = Path.home(), Path.cwd()
    trust = ProjectTrust.for_user(home=home, environ={})
    files = project_trust_files(project, home)
    if list_files:
        return _list(files, project, trust)
    if revoke:
        return _revoke(files, project, trust)
    return _trust(files, trust)


def _trust(files: tuple[Path, ...], trust: ProjectTrust) -> int:
    from ironhive.adapters.config.safe_files import read_limited_bytes
    from ironhive.adapters.config.trust import sha256_of
    from ironhive.domain.errors import ConfigurationError

    if not files:
        sys.stdout.write(
            "This project has no files that need trust (.ironhive/config.yaml, permissions, plugins, .env).\n"
        )
        return 0
    failed = False
    for path in files:
        if trust.is_user_file(path):
            sys.stdout.write(f"{path} is in your own ~/.ironhive; it is always trusted.\n")
            continue
        try:
            data = read_limited_bytes(path)
        except ConfigurationError as error:
            sys.stderr.write(f"Error: {error}. Not trusted.\n")
            failed = True
            continue
        if data is None:
            continue
        digest = sha256_of(data)
        try:
            trust.store.remember(path, digest)  # the hash of exactly the bytes read
        except OSError as error:
            sys.stderr.write(f"Error: cannot write {trust.store.path}: {error}\n")
            return 1
        sys.stdout.write(f"Trusted {path}\n  sha256 {digest}\n")
    sys.stdout.write("Any edit to these files revokes their trust; review the change and run `ironhive trust` again.\n")
    return 1 if failed else 0


def _list(files: tuple[Path, ...], project: Path, trust: ProjectTrust) -> int:
    from ironhive.adapters.config.safe_files import read_limited_bytes
    from ironhive.adapters.config.trust import sha256_of
    from ironhive.domain.errors import ConfigurationError

    if not files:
        sys.stdout.write("This project has no files that need trust.\n")
    for path in files:
        if trust.is_user_file(path):
            state = "yours (always trusted)"
        else:
            try:
                data = read_limited_bytes(path)
            except ConfigurationError as error:
                sys.stdout.write(f"unreadable  {path}: {error}\n")
                continue
            state = {"trusted": "trusted", "changed": "changed since trusted", "untrusted": "not trusted"}[
                trust.store.state(path, sha256_of(data or b""))
            ]
        sys.stdout.write(f"{state:<22}  {path}\n")
    present = {str(path.resolve()) for path in files}
    for record in _records_under(project, trust):
        if str(record.path) not in present:
            sys.stdout.write(f"{'trusted, now missing':<22}  {record.path}\n")
    return 0


def _revoke(files: tuple[Path, ...], project: Path, trust: ProjectTrust) -> int:
    targets = {path.resolve() for path in files} | {record.path for record in _records_under(project, trust)}
    removed = 0
    for path in sorted(targets):
        try:
            if trust.store.revoke(path):
                removed += 1
                sys.stdout.write(f"No longer trusted: {path}\n")
        except OSError as error:
            sys.stderr.write(f"Error: cannot write {trust.store.path}: {error}\n")
            return 1
    if not removed:
        sys.stdout.write("Nothing of this project was trusted.\n")
    return 0


def _records_under(project: Path, trust: ProjectTrust) -> list[TrustRecord]:
    root = project.resolve()
    return [record for record in trust.store.records() if record.path.is_relative_to(root)]


def ask_to_trust(loaded: LoadedConfig, *, stdin: TextIO | None = None, stderr: TextIO | None = None) -> bool:
    """Ask once, on a terminal, whether to trust the project files whose settings were ignored; remember a yes.

    Nobody is asked when stdin or stderr is not a terminal (pipes, CI, the wire): the untrusted default holds. A no
    is remembered for the rest of the process, so the plugin start-up does not ask again.

    Returns:
        Whether the files were trusted (the configuration should then be loaded again).
    """
    from ironhive.adapters.config.trust import ProjectTrust, decline

    source, sink = stdin or sys.stdin, stderr or sys.stderr
    if not loaded.untrusted_files or not (source.isatty() and sink.isatty()):
        return False
    items = "\n".join(f"  - {item}" for item in loaded.ignored)
    sink.write(
        f"This project's files would change ironhive's settings, rights or plugins, and are not trusted:\n{items}\n"
        "Trust these files as they are now (remembered until they change)? [y] yes  [N] no: "
    )
    sink.flush()
    answer = source.readline().strip().lower()
    trust = ProjectTrust.for_user(environ={})
    if answer not in {"y", "yes"}:
        for path, digest in loaded.untrusted_files:
            decline(path, digest)
        return False
    try:
        for path, digest in loaded.untrusted_files:
            trust.store.remember(path, digest)
    except OSError as error:
        sink.write(f"Cannot write {trust.store.path}: {error}\n")
        return False
    return True
