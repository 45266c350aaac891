"""Starts the local model's worker at the beginning of a one-shot run that will use it, so it loads meanwhile."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ironhive.domain.errors import IronHiveError

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig

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
    client.start_early()
    return True
