"""Finds the GGUF file to run: a configured path, a Hugging Face download (cached), or the bundled model."""

from __future__ import annotations

import contextlib
import http.client
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Final

from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.domain.errors import ConfigurationError, ProviderError

DEFAULT_HF_ENDPOINT: Final = "https://huggingface.co"
"""Where models are downloaded from unless ``HF_ENDPOINT`` says otherwise."""

Progress = Callable[[int, int | None], None]
"""Called as a download proceeds with the bytes received so far and the total (``None`` when the server did not say)."""

_CHUNK: Final = 1 << 20
_TIMEOUT_SECONDS: Final = 60.0
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_PROVIDER: Final = "local"


def default_model_cache(home: Path) -> Path:
    """The folder downloaded models are kept in: ``<home>/.ironhive/models``."""
    return home / ".ironhive" / "models"


def resolve_model_path(
    *,
    model_path: str | None,
    hf_repo: str | None,
    hf_file: str | None,
    cache_dir: Path,
    environ: Mapping[str, str],
    progress: Progress | None = None,
) -> Path:
    """Find the GGUF model to run, downloading it first if it is configured from Hugging Face and not cached yet.

    In this order: ``model_path`` (``lmsupply.modelPath``); else ``hf_repo``/``hf_file``
    (``lmsupply.huggingFaceRepo``/``huggingFaceFile``), kept in ``<cache_dir>/<repo with "/" as "--">/<file>`` and
    downloaded only when not there yet; else the bundled SmolLM2 model. This blocks while downloading: call it off the
    event loop.

    Args:
        model_path: A local GGUF file (``~`` is expanded).
        hf_repo: A Hugging Face model repository, ``owner/name``.
        hf_file: The GGUF file in that repository (may be in a folder of it).
        cache_dir: Where downloaded models are kept.
        environ: The environment: ``HF_ENDPOINT`` replaces ``https://huggingface.co``; ``HF_HUB_OFFLINE=1`` forbids
            any download (only the cache is used).
        progress: Called as the download proceeds (bytes done, total or ``None``).

    Returns:
        The GGUF file's path.

    Raises:
        ConfigurationError: ``model_path`` does not exist; only one of ``hf_repo``/``hf_file`` is set or either is
            malformed; the file is not in the repository or may not be read (HTTP 401/403/404); offline mode is on and
            the file is not cached; or the bundled model is not installed.
        ProviderError: The download failed on the way (network, server error, connection dropped); nothing is left
            in the cache and a later call tries again.
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
        return _hugging_face_model(hf_repo, hf_file, cache_dir, environ, progress)
    return bundled_model_path()


def cached_model_path(cache_dir: Path, hf_repo: str, hf_file: str) -> Path:
    """Where a Hugging Face model file is kept in ``cache_dir``.

    Raises:
        ConfigurationError: The repository is not ``owner/name`` or the file name leaves its folder.
    """
    repo = PurePosixPath(hf_repo)
    if len(repo.parts) != 2 or any(part in (".", "..") or not part.strip() for part in repo.parts):
        raise ConfigurationError(f"The Hugging Face repository must be 'owner/name', got {hf_repo!r}")
    file = PurePosixPath(hf_file)
    if file.is_absolute() or not file.parts or any(part in (".", "..") for part in file.parts) or "\\" in hf_file:
        raise ConfigurationError(f"The Hugging Face file must be a path inside the repository, got {hf_file!r}")
    return cache_dir.joinpath("--".join(repo.parts), *file.parts)


def _hugging_face_model(
    repo: str, file: str, cache_dir: Path, environ: Mapping[str, str], progress: Progress | None
) -> Path:
    target = cached_model_path(cache_dir, repo, file)
    if target.is_file():
        return target
    if environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        raise ConfigurationError(
            f"The model {file} from {repo} is not cached in {target.parent} and HF_HUB_OFFLINE is set; "
            "download it once without offline mode, or set lmsupply.modelPath"
        )
    endpoint = (environ.get("HF_ENDPOINT") or DEFAULT_HF_ENDPOINT).rstrip("/")
    url = f"{endpoint}/{urllib.parse.quote(repo)}/resolve/main/{urllib.parse.quote(file)}"
    _download(url, target, repo=repo, file=file, progress=progress)
    return target


def _download(url: str, target: Path, *, repo: str, file: str, progress: Progress | None) -> None:
    """Fetch ``url`` into ``target``: into a temporary file beside it first, renamed into place once complete."""
    what = f"{file} from the Hugging Face repository {repo}"
    target.parent.mkdir(parents=True, exist_ok=True)
    request = urllib.request.Request(url, headers={"User-Agent": "ironhive"})
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as sink:
            try:
                with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
                    _copy(response, sink, _content_length(response.headers.get("Content-Length")), what, progress)
            except urllib.error.HTTPError as exc:
                exc.close()
                raise _http_error(exc.code, what, url) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                raise ProviderError(f"Downloading {what} failed: {exc}", retryable=True, provider=_PROVIDER) from exc
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _copy(source: BinaryIO, sink: BinaryIO, total: int | None, what: str, progress: Progress | None) -> None:
    done = 0
    if progress is not None:
        progress(0, total)
    while chunk := source.read(_CHUNK):
        sink.write(chunk)
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    if total is not None and done != total:
        raise ProviderError(
            f"Downloading {what} stopped after {done} of {total} bytes", retryable=True, provider=_PROVIDER
        )


def _content_length(value: str | None) -> int | None:
    try:
        total = int(value) if value is not None else None
    except ValueError:
        return None
    return total if total is not None and total >= 0 else None


def _http_error(status: int, what: str, url: str) -> ConfigurationError | ProviderError:
    if status == 404:
        return ConfigurationError(f"The model {what} was not found ({url} answered 404)")
    if status in (401, 403):
        return ConfigurationError(
            f"The model {what} may not be downloaded without access rights (HTTP {status}); it may be gated or private"
        )
    return ProviderError(
        f"Downloading {what} failed with HTTP {status}", status=status, retryable=status >= 500, provider=_PROVIDER
    )
