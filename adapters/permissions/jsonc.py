"""JSON with comments and trailing commas: a string-aware scanner that turns it into plain JSON for ``json.loads``."""

from __future__ import annotations


class JsoncSyntaxError(ValueError):
    """The text has a comment that never ends.

    Attributes:
        line: The 1-based line the comment starts on.
    """

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def to_plain_json(text: str) -> str:
    """Blank out ``//`` and ``/* */`` comments and trailing commas, leaving strings untouched.

    Removed characters become spaces (newlines stay), so line and column numbers of later JSON errors still point at
    the original text.

    Args:
        text: JSON that may contain comments and trailing commas.

    Returns:
        Plain JSON of the same length.

    Raises:
        JsoncSyntaxError: A ``/*`` comment is not closed.
    """
    return _blank_trailing_commas(_blank_comments(text))


def _blank_comments(text: str) -> str:
    out: list[str] = []
    index = 0
    in_string = False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                out.append(text[index : index + 2])
                index += 2
                continue
            in_string = char != '"'
            out.append(char)
            index += 1
        elif char == '"':
            in_string = True
            out.append(char)
            index += 1
        elif text.startswith("//", index):
            end = text.find("\n", index)
            end = len(text) if end < 0 else end
            out.append(" " * (end - index))
            index = end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            if end < 0:
                raise JsoncSyntaxError("unterminated /* comment", text.count("\n", 0, index) + 1)
            out.append("".join("\n" if c == "\n" else " " for c in text[index : end + 2]))
            index = end + 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _blank_trailing_commas(text: str) -> str:
    out = list(text)
    in_string = False
    index = 0
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 2
                continue
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char == ",":
            after = index + 1
            while after < len(text) and text[after] in " \t\r\n":
                after += 1
            if after < len(text) and text[after] in "]}":
                out[index] = " "
        index += 1
    return "".join(out)
