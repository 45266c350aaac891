"""Splits a ``SKILL.md`` into its front matter (between ``---`` lines) and its Markdown body."""

from __future__ import annotations

from dataclasses import dataclass

_DELIMITER = "---"


@dataclass(frozen=True, kw_only=True, slots=True)
class SplitSkillFile:
    """A ``SKILL.md`` split in two.

    Attributes:
        front_matter: The text between the opening and the closing ``---`` line (YAML, not parsed here).
        body: Everything after the closing line.
    """

    front_matter: str
    body: str


def split_front_matter(content: str) -> SplitSkillFile | None:
    """Split a ``SKILL.md``: an opening ``---`` on the first line, a closing ``---`` on a line of its own.

    A byte-order mark before the opening line is ignored, and so are trailing spaces and ``\\r`` on the delimiter
    lines.

    Args:
        content: The file's text.

    Returns:
        The two parts, or ``None`` when the opening or the closing line is missing.
    """
    lines = content.lstrip("\ufeff").split("\n")
    if lines[0].rstrip() != _DELIMITER:
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip() == _DELIMITER:
            front = "\n".join(line.removesuffix("\r") for line in lines[1:index])
            return SplitSkillFile(front_matter=front, body="\n".join(lines[index + 1 :]))
    return None
