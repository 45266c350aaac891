"""Doctor's local-inference check: llama-cpp-python is installed and the GGUF model file is there (not loaded)."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

from ironhive.adapters.config.schema import LMSupplySection
from ironhive.adapters.diagnostics.report import CONNECTIVITY, Check, CheckStatus, human_size
from ironhive.domain.errors import ConfigurationError

NAME = "lmsupply (local)"
_INSTALL = 'Install local inference: pip install "ironhive[local]"'


def local_model_check(section: LMSupplySection, *, home: Path, environ: Mapping[str, str], verbose: bool) -> Check:
    """Whether local inference can run: the runtime is installed and the model file present (or downloadable).

    The model is not loaded (that takes seconds and memory); ``verbose`` adds the file's path and size.

    Args:
        section: The ``lmsupply`` settings.
        home: The user's home directory (downloaded models are cached under it).
        environ: The environment (``HF_HUB_OFFLINE`` forbids downloads).
        verbose: Show the model file's path and size.

    Returns:
        The check.
    """
    if importlib.util.find_spec("llama_cpp") is None:
        return _check("error", "llama-cpp-python is not installed", _INSTALL)
    from ironhive.adapters.llamacpp.model_files import bundled_model_path
    from ironhive.adapters.llamacpp.model_resolution import cached_model_path, default_model_cache

    if section.model_path:
        path = Path(section.model_path).expanduser()
        if not path.is_file():
            return _check(
                "error",
                f"Model file not found: {path} (lmsupply.modelPath)",
                "Point lmsupply.modelPath at a GGUF file, or unset it to use the bundled model.",
            )
        return _present(path, verbose)
    if section.hugging_face_repo or section.hugging_face_file:
        repo, file = section.hugging_face_repo, section.hugging_face_file
        if not (repo and file):
            return _check(
                "error",
                "A Hugging Face model needs both lmsupply.huggingFaceRepo and lmsupply.huggingFaceFile",
                "Set the missing key, or unset both to use the bundled model.",
            )
        try:
            cached = cached_model_path(default_model_cache(home), repo, file)
        except ConfigurationError as error:
            return _check("error", str(error), "Correct lmsupply.huggingFaceRepo / lmsupply.huggingFaceFile.")
        if cached.is_file():
            return _present(cached, verbose)
        if environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
            return _check(
                "error",
                f"{repo}/{file} is not downloaded and HF_HUB_OFFLINE forbids downloading it",
                "Run once without HF_HUB_OFFLINE, or set lmsupply.modelPath to a local GGUF file.",
            )
        where = f" to {cached}" if verbose else ""
        return _check("pass", f"{repo}/{file} is not downloaded yet; the first run downloads it{where}")
    try:
        bundled = bundled_model_path()
    except ConfigurationError as error:
        return _check("error", str(error), _INSTALL)
    return _present(bundled, verbose)


def _present(path: Path, verbose: bool) -> Check:
    if verbose:
        return _check("pass", f"Model file present: {path} ({human_size(path.stat().st_size)})")
    return _check("pass", f"Model file present: {path.name}")


def _check(status: CheckStatus, message: str, hint: str | None = None) -> Check:
    return Check(category=CONNECTIVITY, name=NAME, status=status, message=message, hint=hint)
