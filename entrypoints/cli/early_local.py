"""Starts the local model's worker at the beginning of a one-shot run that will use it, so it loads meanwhile."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.domain.errors import IronHiveError

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.adapters.llamacpp.resident import ResidentPlace

LOCAL_PROVIDER = "lmsupply"
"""The local provider's name in the registry (``ironhive.adapters.llamacpp.spec``)."""

_log = logging.getLogger(__name__)


def start_local_model_early(
    config: IronHiveConfig, provider: str | None, model: str | None, environ: Mapping[str, str]
) -> bool:
    """Start the worker of the local model this run will select, if it selects the local provider.

    The choice is made as the run makes it (its merged configuration, ``--provider`` and ``-m``), but without asking
    the user anything and without downloading: a Hugging Face model that is not cached yet, an invalid configuration
    or any other provider starts nothing. The client the run builds later takes the worker over when its load
    settings are the same (:mod:`ironhive.adapters.llamacpp.early_start`); otherwise it is ended unused.

    Args:
        config: The run's merged configuration.
        provider: The ``--provider`` value.
        model: The ``-m`` value.
        environ: The process environment.

    Returns:
        Whether a worker was started.
    """
    from ironhive.providers import select_provider, split_model

    try:
        if select_provider(provider, model, config).name != LOCAL_PROVIDER:
            return False
        from ironhive.adapters.llamacpp.client import LlamaCppChatClient
        from ironhive.adapters.llamacpp.spec import local_load

        # Only a model already on disk: the run itself downloads, with its progress bar.
        load = local_load(config, split_model(model)[1], environ={**environ, "HF_HUB_OFFLINE": "1"})
        client = LlamaCppChatClient(
            model_path=load.model_path, n_ctx=load.n_ctx, extra_buffer_types=load.extra_buffer_types
        )
    except (IronHiveError, OSError, ValueError):
        _log.debug("the local model is not started early", exc_info=True)
        return False
    client.start_early(resident_place(environ))
    return True


def resident_place(environ: Mapping[str, str]) -> ResidentPlace | None:
    """Where this user's resident local-model workers live, when runs may use resident processes at all.

    They follow the warm process's rule (``IRONHIVE_DAEMON``, ``daemon.enabled``; off where ``CI`` is set unless
    configured), share its private runtime folder and idle timeout, and end with ``ironhive daemon stop``.
    """
    from ironhive.adapters.llamacpp.resident import ResidentPlace
    from ironhive.daemon.paths import ensure_private_directory, runtime_directory
    from ironhive.daemon.settings import decide

    home = environ.get("HOME") or str(Path.home())
    decision = decide(environ, home)
    if not decision.enabled:
        return None
    directory = runtime_directory(environ, home, os.getuid())
    try:
        ensure_private_directory(directory, os.getuid())
    except OSError:
        _log.debug("no resident local model: the runtime folder is not usable", exc_info=True)
        return None
    return ResidentPlace(directory=Path(directory), idle_seconds=decision.idle_seconds)
