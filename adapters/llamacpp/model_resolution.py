"""Finds the GGUF file to run: a configured path, a Hugging Face file (in the shared HF cache) or the bundled model."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.domain.errors import ConfigurationError, ProviderError

Progress = Callable[[int, int | None], None]
"""Called as a download proceeds with the bytes received so far and the total (``None`` when the server did not say)."""

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_PROVIDER: Final = "local"


def default_model_cache(home: Path) -> Path:
    """Where earlier ironhive versions kept downloaded models (``<home>/.ironhive/models``): read, never written."""
    return home / ".ironhive" / "models"


def offline(environ: Mapping[str, str]) -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids downloading."""
    return environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def resolve_model_path(
    *,
    model_path: str | None,
    hf_repo: str | None,
    hf_file: str | None,
    environ: Mapping[str, str],
    cache_dir: Path | None = None,
    legacy_dir: Path | None = None,
    progress: Progress | None = None,
) -> Path:
    """Find the GGUF model to run, downloading it first if it is configured from Hugging Face and not cached yet.

    In this order: ``model_path`` (``lmsupply.modelPath``); else ``hf_repo``/``hf_file``
    (``lmsupply.huggingFaceRepo``/``huggingFaceFile``) from the Hugging Face cache that other tools share (a file
    already there, or in ``legacy_dir``, is used without asking the network), downloaded by ``hf_hub_download`` when
    not there yet; else the bundled SmolLM2 model. This blocks while downloading: call it off the event loop.

    Args:
        model_path: A local GGUF file (``~`` is expanded).
        hf_repo: A Hugging Face model repository, ``owner/name``.
        hf_file: The GGUF file in that repository (may be in a folder of it).
        environ: The environment: ``HF_ENDPOINT`` replaces ``https://huggingface.co``, ``HF_TOKEN`` is sent as the
            bearer token (else huggingface_hub's stored login), ``HF_HUB_OFFLINE=1`` forbids any download.
        cache_dir: The Hugging Face cache (``None``: huggingface_hub's, from ``HF_HUB_CACHE``/``HF_HOME``).
        legacy_dir: Where earlier versions downloaded models (see :func:`default_model_cache`), read first.
        progress: Called as the download proceeds (bytes done, total or ``None``).

    Returns:
        The GGUF file's path.

    Raises:
        ConfigurationError: ``model_path`` does not exist; only one of ``hf_repo``/``hf_file`` is set or either is
            malformed; the file or repository is not there or may not be read (HTTP 401/403/404); offline mode is on
            and the file is not cached; or the bundled model is not installed.
        ProviderError: The download failed on the way (network, server error, connection dropped for good); the
            cache keeps no partial file and a later call starts again.
    """
    if model_path:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ConfigurationError(f"The local model file {path} (lmsupply.modelPath) does not exist")
        return path
    if hf_repo or hf_file:
        if not (hf_repo and hf_file):
            raise ConfigurationError(
                "A Hugging Face model needs both lmsupply.huggingFaceRepo and lmsupply.huggingFaceFile"
            )
        cached = cached_model_path(hf_repo, hf_file, cache_dir=cache_dir, legacy_dir=legacy_dir)
        if cached is not None:
            return cached
        if offline(environ):
            raise ConfigurationError(
                f"The model {hf_file} from {hf_repo} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; "
                "download it once without offline mode, or set lmsupply.modelPath"
            )
        return _download(hf_repo, hf_file, cache_dir=cache_dir, environ=environ, progress=progress)
    return bundled_model_path()


def cached_model_path(
    hf_repo: str, hf_file: str, *, cache_dir: Path | None = None, legacy_dir: Path | None = None
) -> Path | None:
    """The cached copy of a Hugging Face model file (its ``main`` revision), or ``None``; never asks the network.

    Raises:
        ConfigurationError: The repository is not ``owner/name`` or the file name leaves its folder.
    """
    repo, file = _checked(hf_repo, hf_file)
    if legacy_dir is not None:
        legacy = legacy_dir.joinpath("--".join(repo.parts), *file.parts)
        if legacy.is_file():
            return legacy
    found = _hub().try_to_load_from_cache(hf_repo, hf_file, cache_dir=cache_dir)
    return Path(found) if isinstance(found, str) and Path(found).is_file() else None


def _hub() -> Any:
    """huggingface_hub, imported with its telemetry off unless the user chose otherwise.

    With telemetry on it adds the Python packages and the detected agent to its user agent and fetches a list of agent
    harnesses from the Hub: requests a model download has no need of. It reads the setting once, at import.
    """
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import huggingface_hub

    return huggingface_hub


def _checked(hf_repo: str, hf_file: str) -> tuple[PurePosixPath, PurePosixPath]:
    repo = PurePosixPath(hf_repo)
    if len(repo.parts) != 2 or any(part in (".", "..") or not part.strip() for part in repo.parts):
        raise ConfigurationError(f"The Hugging Face repository must be 'owner/name', got {hf_repo!r}")
    file = PurePosixPath(hf_file)
    if file.is_absolute() or not file.parts or any(part in (".", "..") for part in file.parts) or "\\" in hf_file:
        raise ConfigurationError(f"The Hugging Face file must be a path inside the repository, got {hf_file!r}")
    return repo, file


def _download(
    repo: str, file: str, *, cache_dir: Path | None, environ: Mapping[str, str], progress: Progress | None
) -> Path:
    hf_hub_download = _hub().hf_hub_download
    endpoint = environ.get("HF_ENDPOINT", "").strip().rstrip("/") or None
    try:
        found = hf_hub_download(
            repo,
            file,
            cache_dir=cache_dir,
            endpoint=endpoint,
            token=environ.get("HF_TOKEN") or None,
            library_name="ironhive",
            tqdm_class=_progress_bar(progress),
        )
    except Exception as error:  # huggingface_hub's errors and httpx's, translated in one place
        raise _translated(error, f"{file} from the Hugging Face repository {repo}") from error
    return Path(str(found))


def _translated(error: Exception, what: str) -> ConfigurationError | ProviderError:
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    http = _in_chain(error, HfHubHTTPError)
    status = http.response.status_code if http is not None else None
    if isinstance(http, GatedRepoError) or status in (401, 403):
        return ConfigurationError(
            f"The model {what} may not be downloaded without access rights (HTTP {status}); it may be gated or "
            "private: accept its terms on the Hub and set HF_TOKEN"
        )
    if isinstance(http, RepositoryNotFoundError) or status == 404:
        return ConfigurationError(f"The model {what} was not found (the Hub answered {status})")
    if status is not None:
        return ProviderError(
            f"Downloading {what} failed with HTTP {status}",
            status=status,
            retryable=status >= 500 or status in (408, 429),
            provider=_PROVIDER,
        )
    cause = error.__cause__ or error
    return ProviderError(f"Downloading {what} failed: {cause}", retryable=True, provider=_PROVIDER)


def _in_chain(error: BaseException, kind: type[Any]) -> Any:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _progress_bar(progress: Progress | None) -> Any:
    """A stand-in for the tqdm class huggingface_hub reports through, passing bytes done and total to ``progress``."""
    report: Progress = progress or (lambda done, total: None)  # None: no display at all, not huggingface_hub's own

    class _Bar:
        def __init__(self, *_: object, total: float | None = None, initial: float = 0, **__: object) -> None:
            self._total = int(total) if total is not None else None
            self._done = int(initial)
            report(self._done, self._total)

        def update(self, count: float | None = 1) -> None:
            self._done += int(count or 0)
            report(self._done, self._total)

        def close(self) -> None:
            """Nothing to release: the display belongs to the caller."""

        def __enter__(self) -> _Bar:
            return self

        def __exit__(self, *_: object) -> None:
            self.close()

    return _Bar
