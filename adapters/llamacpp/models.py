"""LlamaCppModelLister: the ModelLister port over the GGUF model files local inference can run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from ironhive.adapters.llamacpp.model_files import bundled_model_path, gguf_trained_context
from ironhive.domain.errors import ConfigurationError
from ironhive.ports.models import ListedModel

BUNDLED_DISPLAY_NAME = "Bundled local model"
"""The display name of the model bundled with ``ironhive[local]``."""


def local_model_id(path: Path) -> str:
    """The id a local model is listed under: its file's stem (``SmolLM2-135M-Instruct.Q4_1``)."""
    return path.stem


class LlamaCppModelLister:
    """Lists local GGUF files with their size and trained context, read from the file header (no model is loaded).

    Args:
        model_files: GGUF files to list (a configured ``lmsupply.modelPath``, a downloaded model); ``~`` is expanded.
        include_bundled: Also list the model bundled with ``ironhive[local]``, when it is installed.
        provider_name: The provider the models belong to.
    """

    def __init__(
        self, *, model_files: Sequence[Path] = (), include_bundled: bool = True, provider_name: str = "lmsupply"
    ) -> None:
        self._model_files = tuple(Path(path).expanduser() for path in model_files)
        self._include_bundled = include_bundled
        self._provider_name = provider_name

    async def list_models(self) -> list[ListedModel]:
        """The given files, then the bundled model; a file listed twice appears once.

        Raises:
            ConfigurationError: A given file does not exist, or only the bundled model was asked for and it is not
                installed.
        """
        return await asyncio.to_thread(self._list)

    def _list(self) -> list[ListedModel]:
        files = [(path, False) for path in self._model_files]
        if self._include_bundled:
            try:
                files.append((bundled_model_path(), True))
            except ConfigurationError:
                if not files:
                    raise
        listed: list[ListedModel] = []
        seen: set[Path] = set()
        for path, bundled in files:
            if not path.is_file():
                raise ConfigurationError(f"The local model file {path} does not exist")
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            listed.append(self._entry(resolved, bundled=bundled))
        return listed

    def _entry(self, path: Path, *, bundled: bool) -> ListedModel:
        model_id = local_model_id(path)
        return ListedModel(
            model_id=model_id,
            provider=self._provider_name,
            display_name=BUNDLED_DISPLAY_NAME if bundled else None,
            context_window=gguf_trained_context(path),
            source="cached",
            local_path=path,
            size_bytes=path.stat().st_size,
        )


__all__ = ["BUNDLED_DISPLAY_NAME", "LlamaCppModelLister", "local_model_id"]
