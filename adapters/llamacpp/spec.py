"""The local-inference provider's spec (``lmsupply``, llama.cpp in-process): its names, settings, model and checks."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ironhive.adapters.provider_spec import ByteProgress, Choice, ClientSurface, ProviderSpec
from ironhive.domain.errors import ConfigurationError

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.adapters.diagnostics.report import Check
    from ironhive.ports.chat import ChatClient
    from ironhive.ports.models import ModelLister

BUNDLED_MODEL = "SmolLM2-135M-Instruct"
"""The model shown when no other is configured: the one bundled with ``ironhive[local]``."""


def local_inference_available() -> bool:
    """Whether llama-cpp-python and the bundled model are installed (without importing either)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    from ironhive.adapters.llamacpp.model_files import bundled_model_path

    try:
        bundled_model_path()
    except ConfigurationError:
        return False
    return True


class QuietSurface:
    """Builds local clients that show no progress (for callers without a terminal of their own)."""

    def downloading(self, description: str) -> AbstractContextManager[ByteProgress]:
        """A context that ignores the download's progress."""
        return _ignored()

    def local_client(self, *, model_path: Path, n_ctx: int | None, extra_buffer_types: bool | None) -> ChatClient:
        """A plain :class:`~ironhive.adapters.llamacpp.client.LlamaCppChatClient`."""
        from ironhive.adapters.llamacpp.client import LlamaCppChatClient

        return LlamaCppChatClient(model_path=model_path, n_ctx=n_ctx, extra_buffer_types=extra_buffer_types)


@contextmanager
def _ignored() -> Iterator[ByteProgress]:
    yield lambda done, total: None


def _ready(config: IronHiveConfig) -> bool:
    section = config.lmsupply
    return bool(section.model_path or section.hugging_face_repo) or local_inference_available()


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalLoad:
    """What a local client loads: the model file and the settings llama.cpp loads it with."""

    model_path: Path
    n_ctx: int | None
    extra_buffer_types: bool | None


def local_load(
    config: IronHiveConfig, model: str | None, *, environ: Mapping[str, str], progress: ByteProgress | None = None
) -> LocalLoad:
    """The model a run on the local provider loads (``-m`` or ``lmsupply.modelPath``, else the Hugging Face file,
    downloaded unless ``HF_HUB_OFFLINE`` is set in ``environ``, else the bundled model) and its load settings.

    Raises:
        ConfigurationError: The model file cannot be found or fetched.
    """
    from ironhive.adapters.llamacpp.model_resolution import default_model_cache, resolve_model_path

    section = config.lmsupply
    model_path = resolve_model_path(
        model_path=model or section.model_path,
        hf_repo=section.hugging_face_repo,
        hf_file=section.hugging_face_file,
        legacy_dir=default_model_cache(Path.home()),
        environ=environ,
        progress=progress,
    )
    return LocalLoad(
        model_path=model_path, n_ctx=section.max_context_length, extra_buffer_types=section.extra_buffer_types
    )


def _choose(config: IronHiveConfig, model: str | None, surface: ClientSurface | None) -> Choice:
    """Local inference: ``-m`` or ``lmsupply.modelPath``, else a configured Hugging Face file (downloaded once into
    the shared Hugging Face cache, honouring ``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE``), else the bundled
    SmolLM2 model."""
    section = config.lmsupply
    configured_path = model or section.model_path
    repo, file = section.hugging_face_repo, section.hugging_face_file
    if configured_path:
        shown = Path(configured_path).stem
    elif repo and file:
        shown = Path(file).stem
    else:
        shown = BUNDLED_MODEL
    shows = surface or QuietSurface()

    def build() -> ChatClient:
        with shows.downloading(f"Downloading {file}") as progress:
            load = local_load(config, model, environ=os.environ, progress=progress)
        return shows.local_client(
            model_path=load.model_path, n_ctx=load.n_ctx, extra_buffer_types=load.extra_buffer_types
        )

    return Choice(model=shown, build=build)


def _default(config: IronHiveConfig) -> str | None:
    """The local model a run would load: ``modelPath``, else the Hugging Face file, else the bundled model."""
    from ironhive.adapters.llamacpp.model_files import bundled_model_path
    from ironhive.adapters.llamacpp.models import local_model_id

    section = config.lmsupply
    if section.model_path:
        return local_model_id(Path(section.model_path).expanduser())
    if section.hugging_face_file:
        return PurePosixPath(section.hugging_face_file).stem
    try:
        return local_model_id(bundled_model_path())
    except ConfigurationError:
        return None


def _lister(config: IronHiveConfig, home: Path) -> ModelLister:
    from ironhive.adapters.llamacpp.models import LlamaCppModelLister

    section = config.lmsupply
    files = [Path(section.model_path).expanduser()] if section.model_path else []
    downloaded = _downloaded_model(config, home)
    if downloaded is not None and downloaded.is_file():
        files.append(downloaded)
    return LlamaCppModelLister(model_files=files, include_bundled=True)


def _downloaded_model(config: IronHiveConfig, home: Path) -> Path | None:
    from ironhive.adapters.llamacpp.model_resolution import cached_model_path, default_model_cache

    section = config.lmsupply
    if not (section.hugging_face_repo and section.hugging_face_file):
        return None
    try:
        return cached_model_path(
            section.hugging_face_repo, section.hugging_face_file, legacy_dir=default_model_cache(home)
        )
    except ConfigurationError:
        return None  # a malformed repository or file name: the run reports it, and the listing shows the name only


def _check(config: IronHiveConfig, home: Path, environ: Mapping[str, str], verbose: bool) -> list[Check]:
    from ironhive.adapters.diagnostics.local_model import local_model_check

    return local_model_check(config.lmsupply, home=home, environ=environ, verbose=verbose)


LMSUPPLY = ProviderSpec(
    name="lmsupply",
    title="local",
    aliases=("local",),
    section="lmsupply",
    environment=(("LMSUPPLY_ENABLED", "enabled"),),
    switch="enabled",
    ready=_ready,
    through="llama.cpp, in-process",
    choose=_choose,
    default=_default,
    local_lister=_lister,
    local_check=_check,
)
