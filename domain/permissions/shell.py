"""Splits a shell command line into the simple commands it would run, for judging each one on its own.

The splitter follows bash's lexical rules closely enough for permission checks: it separates on ``;``, ``&&``, ``||``,
``|``, ``|&``, ``&`` and newlines; descends into ``$(…)``, backticks, ``( … )`` subshells, ``{ …; }`` groups and
process substitutions ``<(…)``/``>(…)`` (also inside double quotes, as bash does); honours single and double quotes,
``$'…'`` and backslash escapes; and skips comments. Where it is unsure it splits more, never less: an extra part only
means one more thing that must be allowed. Text it cannot make sense of raises ``ShellParseError`` so the caller can
ask instead of guessing.

Each returned part is the simple command's words, unquoted and joined by single spaces; leading assignments
(``FOO=1 cmd``) and redirections stay in the text. A substitution keeps its raw text inside the enclosing word, and its
own commands are returned as parts too. Leading reserved words (``if``, ``then``, ``do``, ``!``, ``{``, ``time``, …) are
dropped so ``then rm -rf x`` is judged as ``rm -rf x``.

``parse_shell_command`` returns the same parts with their structure: the argument words apart from the redirections
(only an unquoted ``<``/``>`` is one, so ``echo ">"`` has none), and whether the command reads a pipe.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

_MAX_DEPTH = 64
_SEPARATORS = frozenset(";&|\n")
_BLANKS = frozenset(" \t")  # bash's blanks: a carriage return is a word character ("git\rstatus" is one word)
_LEADING_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time", "esac"}
)


class ShellParseError(ValueError):
    """The command line is not something the splitter can take apart (unbalanced quotes, unclosed ``$(``, …)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Redirection:
    """One redirection of a simple command.

    Attributes:
        operator: The operator with its file descriptor, unquoted: ``>``, ``2>>``, ``&>``, ``>&``, ``<``, ``<<``, ….
        target: The word after the operator (a file, a descriptor number for ``>&``, a here-document delimiter).
    """

    operator: str
    target: str


@dataclass(frozen=True, kw_only=True, slots=True)
class SimpleCommand:
    """One simple command of a command line.

    Attributes:
        text: The unquoted words joined by single spaces, redirections included (what ``split_shell_command`` gives).
        words: The words without the redirections: leading assignments, the program and its arguments.
        redirections: The redirections, in order.
        piped: Whether the command reads the output of a ``|`` or ``|&`` before it.
    """

    text: str
    words: tuple[str, ...]
    redirections: tuple[Redirection, ...] = ()
    piped: bool = False


def split_shell_command(command: str) -> list[str]:
    """Split ``command`` into its simple commands, nested substitutions included.

    Args:
        command: A command line as ``bash -c`` would receive it.

    Returns:
        The simple commands, each as unquoted words joined by single spaces; empty commands are left out.

    Raises:
        ShellParseError: The command line is unbalanced or otherwise cannot be taken apart safely.
    """
    return [part.text for part in parse_shell_command(command)]


def parse_shell_command(command: str) -> list[SimpleCommand]:
    """Split ``command`` into its simple commands with their words, redirections and pipes.

    Args:
        command: A command line as ``bash -c`` would receive it.

    Returns:
        The simple commands in the order ``split_shell_command`` gives them.

    Raises:
        ShellParseError: The command line is unbalanced or otherwise cannot be taken apart safely.
    """
    parser = _Parser(command, depth=0, parts=[])
    parser.parse_list(closer=None)
    return parser.parts


class _Word:
    """The word being built, whether its last character is an unquoted redirection operator, and where its operator is.

    ``op_start``/``op_end`` span the unquoted operator characters (first to last), so ``2>&1`` keeps ``2`` before the
    span and ``1`` after it; text outside the span may have been quoted.
    """

    __slots__ = ("after_redirect", "op_end", "op_start", "text")

    def __init__(self) -> None:
        self.text = ""
        self.after_redirect = False
        self.op_start: int | None = None
        self.op_end = 0

    def add(self, text: str, *, redirect: bool = False, operator: bool = False) -> None:
        if redirect or operator:
            if self.op_start is None:
                self.op_start = len(self.text)
            self.op_end = len(self.text) + len(text)
        self.text += text
        self.after_redirect = redirect


class _Parser:
    """A recursive-descent scanner over one command line (or the inside of one substitution)."""

    def __init__(self, text: str, *, depth: int, parts: list[SimpleCommand], piped: bool = False) -> None:
        if depth > _MAX_DEPTH:
            raise ShellParseError("the command is nested too deeply")
        self.text = text
        self.pos = 0
        self.depth = depth
        self.nesting = 0  # ${…}, $((…)) and "…" opened inside this parser's text
        self.parts = parts
        self.piped = piped  # the next command reads a pipe (a subshell after "|" passes it on to its first command)

    # -- command lists ------------------------------------------------------------------------------------------

    def parse_list(self, closer: str | None) -> None:
        """Scan commands up to ``closer`` (a ``)`` ending a subshell or substitution) or the end of the text."""
        text = self.text
        words: list[_Word] = []
        word: _Word | None = None
        while self.pos < len(text):
            char = text[self.pos]
            nxt = text[self.pos + 1] if self.pos + 1 < len(text) else ""
            if char == ")":
                if closer != ")":
                    raise ShellParseError("unexpected ')'")
                self.pos += 1
                self._finish(words, word)
                return
            if char in _BLANKS:
                word = self._end_word(words, word)
                self.pos += 1
            elif char == "\r" and nxt == "\n":
                self.pos += 1  # a CRLF line end reads as a newline (bash would run "cmd\r", which is not found)
            elif char == "\\":
                word = word or _Word()
                if nxt == "\n":
                    self.pos += 2  # a line continuation joins the lines
                    continue
                word.add(nxt or "\\")
                self.pos += 2 if nxt else 1
            elif char == "#" and word is None:
                newline = text.find("\n", self.pos)
                self.pos = len(text) if newline < 0 else newline
            elif char in "<>" and nxt == "(":
                word = word or _Word()
                word.add(self._nested_command_text(start=self.pos, skip=2))
            elif char in "<>":
                word = word or _Word()
                word.add(char, redirect=True)
                self.pos += 1
            elif char == "&" and (nxt == ">" or (word is not None and word.after_redirect)):
                word = word or _Word()  # "&>file", "2>&1", "<&3": redirections, not separators
                word.add(char, redirect=True)
                self.pos += 1
            elif char == "|" and word is not None and word.after_redirect:
                word.add(char, operator=True)  # ">|file"
                self.pos += 1
            elif char in _SEPARATORS:
                word = self._end_word(words, word)
                self._end_command(words)
                words = []
                pipe = char == "|" and nxt != "|"
                self.pos += 2 if (char == "|" and nxt in "|&" and nxt) or (char == "&" and nxt == "&") else 1
                self.piped = pipe or (self.piped and char == "\n")  # "a |\n b" still pipes
            elif char == "(":
                if word is not None or words:
                    raise ShellParseError("unexpected '(' inside a command")
                self._nested_command_text(start=self.pos, skip=1, piped=self.piped)
                self.piped = False
            else:
                word = word or _Word()
                word.add(self._scan_word_piece(char))
        if closer is not None:
            raise ShellParseError("unclosed '(' or '$(' (missing ')')")
        self._finish(words, word)

    def _finish(self, words: list[_Word], word: _Word | None) -> None:
        self._end_word(words, word)
        self._end_command(words)

    @staticmethod
    def _end_word(words: list[_Word], word: _Word | None) -> None:
        if word is not None:
            words.append(word)

    def _end_command(self, words: list[_Word]) -> None:
        start = 0
        while start < len(words) and words[start].text in _LEADING_RESERVED:
            start += 1
        # Empty quoted words ("rm '' -rf x") are dropped so they cannot shift the text past a rule's pattern.
        kept = [word for word in words[start:] if word.text]
        part = " ".join(word.text for word in kept).strip()
        if part:
            arguments, redirections = _structure(kept)
            self.parts.append(SimpleCommand(text=part, words=arguments, redirections=redirections, piped=self.piped))
            self.piped = False

    def _sub_parser(self, text: str, *, start: int = 0, piped: bool = False) -> _Parser:
        parser = _Parser(text, depth=self.depth + self.nesting + 1, parts=self.parts, piped=piped)
        parser.pos = start
        return parser

    @contextmanager
    def _deeper(self) -> Iterator[None]:
        self.nesting += 1
        try:
            if self.depth + self.nesting > _MAX_DEPTH:
                raise ShellParseError("the command is nested too deeply")
            yield
        finally:
            self.nesting -= 1

    # -- word pieces --------------------------------------------------------------------------------------------

    def _scan_word_piece(self, char: str) -> str:
        """Consume one piece of a word starting at ``char`` (a quote, a ``$`` form, a backtick or a plain char)."""
        if char == "'":
            return self._single_quoted()
        if char == '"':
            return self._double_quoted()
        if char == "`":
            return self._backtick()
        if char == "$":
            return self._dollar(in_double_quotes=False)
        self.pos += 1
        return char

    def _single_quoted(self) -> str:
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            raise ShellParseError("unclosed single quote")
        value = self.text[self.pos + 1 : end]
        self.pos = end + 1
        return value

    def _ansi_c_quoted(self) -> str:
        text = self.text
        index = self.pos + 2
        value = ""
        while index < len(text):
            char = text[index]
            if char == "\\" and index + 1 < len(text):
                value += text[index : index + 2]
                index += 2
            elif char == "'":
                self.pos = index + 1
                return value
            else:
                value += char
                index += 1
        raise ShellParseError("unclosed $'…' quote")

    def _double_quoted(self) -> str:
        with self._deeper():
            text = self.text
            self.pos += 1
            value = ""
            while self.pos < len(text):
                char = text[self.pos]
                nxt = text[self.pos + 1] if self.pos + 1 < len(text) else ""
                if char == '"':
                    self.pos += 1
                    return value
                if char == "\\" and nxt in ('"', "\\", "$", "`", "\n"):
                    value += "" if nxt == "\n" else nxt
                    self.pos += 2
                elif char == "`":
                    value += self._backtick()
                elif char == "$":
                    value += self._dollar(in_double_quotes=True)
                else:
                    value += char
                    self.pos += 1
            raise ShellParseError("unclosed double quote")

    def _backtick(self) -> str:
        """Consume a backtick substitution; its commands become parts, its raw text is returned."""
        text = self.text
        index = self.pos + 1
        inner = ""
        while index < len(text):
            char = text[index]
            if char == "\\" and index + 1 < len(text):
                nxt = text[index + 1]
                # Inside backticks a backslash only quotes \, ` and $; anything else keeps its backslash.
                inner += nxt if nxt in "\\`$" else char + nxt
                index += 2
            elif char == "`":
                self._sub_parser(inner).parse_list(closer=None)
                raw = text[self.pos : index + 1]
                self.pos = index + 1
                return raw
            else:
                inner += char
                index += 1
        raise ShellParseError("unclosed backtick")

    def _dollar(self, *, in_double_quotes: bool) -> str:
        text = self.text
        nxt = text[self.pos + 1] if self.pos + 1 < len(text) else ""
        if nxt == "(":
            if text.startswith("$((", self.pos):
                return self._arithmetic()
            return self._nested_command_text(start=self.pos, skip=2)
        if nxt == "{":
            return self._braced_parameter()
        if nxt == "'" and not in_double_quotes:
            return self._ansi_c_quoted()
        if nxt == '"' and not in_double_quotes:
            self.pos += 1  # $"…" is a translatable double-quoted string
            return self._double_quoted()
        self.pos += 1
        return "$"

    def _nested_command_text(self, *, start: int, skip: int, piped: bool = False) -> str:
        """Parse ``$(…)``, ``<(…)``, ``>(…)`` or a ``( … )`` subshell starting at ``start``; return its raw text."""
        inner = self._sub_parser(self.text, start=start + skip, piped=piped)
        inner.parse_list(closer=")")
        self.pos = inner.pos
        return self.text[start : self.pos]

    def _arithmetic(self) -> str:
        """Consume ``$(( … ))``, descending into any substitution inside it."""
        with self._deeper():
            text = self.text
            start = self.pos
            self.pos += 3
            depth = 0
            while self.pos < len(text):
                char = text[self.pos]
                if char == "(":
                    depth += 1
                    self.pos += 1
                elif char == ")":
                    if depth == 0:
                        if text.startswith("))", self.pos):
                            self.pos += 2
                            return text[start : self.pos]
                        raise ShellParseError("unclosed '$(('")
                    depth -= 1
                    self.pos += 1
                else:
                    self._scan_word_piece(char)
            raise ShellParseError("unclosed '$(('")

    def _braced_parameter(self) -> str:
        """Consume ``${ … }``, descending into any substitution inside it (``${x:-$(cmd)}``)."""
        with self._deeper():
            text = self.text
            start = self.pos
            self.pos += 2
            depth = 0
            while self.pos < len(text):
                char = text[self.pos]
                if char == "\\":
                    self.pos += 2
                elif char == "{":
                    depth += 1
                    self.pos += 1
                elif char == "}":
                    if depth == 0:
                        self.pos += 1
                        return text[start : self.pos]
                    depth -= 1
                    self.pos += 1
                else:
                    self._scan_word_piece(char)
            raise ShellParseError("unclosed '${'")


def _structure(words: list[_Word]) -> tuple[tuple[str, ...], tuple[Redirection, ...]]:
    """Separate a simple command's argument words from its redirections (``2>&1``, ``> f``, ``foo>bar``)."""
    arguments: list[str] = []
    redirections: list[Redirection] = []
    pending: str | None = None  # an operator still waiting for its target word ("> file")
    for word in words:
        text = word.text
        if pending is not None and word.op_start is None:
            redirections.append(Redirection(operator=pending, target=text))
            pending = None
            continue
        if pending is not None:
            redirections.append(Redirection(operator=pending, target=""))
            pending = None
        if word.op_start is None:
            arguments.append(text)
            continue
        prefix, operator, target = text[: word.op_start], text[word.op_start : word.op_end], text[word.op_end :]
        if prefix.isdigit() or (prefix.startswith("{") and prefix.endswith("}")):
            operator = prefix + operator  # "2>", "{fd}>": the descriptor belongs to the operator
        elif prefix:
            arguments.append(prefix)  # "foo>bar" is the word "foo" and the redirection ">bar"
        if target:
            redirections.append(Redirection(operator=operator, target=target))
        else:
            pending = operator
    if pending is not None:
        redirections.append(Redirection(operator=pending, target=""))
    return tuple(arguments), tuple(redirections)
