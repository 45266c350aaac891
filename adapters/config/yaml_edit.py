"""Editing one key of a YAML file through ruamel.yaml's round-trip mode, keeping comments, key order and formatting.

ruamel.yaml keeps a comment on the item *before* it: the lines between ``model: x`` and the next section belong to
``model``'s slot. Deleting an item, or adding one after it, would therefore drop or misplace the comments that sit
above the next item (or at the end of the file). :func:`set_key` and :func:`delete_key` move those lines so that
every comment of the rest of the file stays where it was. Quotes, flow collections, blank lines and the file's
indentation (guessed from the file) are kept; only the edited item is written anew.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, ScalarString
from ruamel.yaml.tokens import CommentToken
from ruamel.yaml.util import load_yaml_guess_indent

_COMMENTS_ONLY = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n?)*")

_Slot = tuple[Any, Any]
"""A container and one of its keys (a mapping) or indexes (a list): where ruamel keeps the comment after an item."""


class YamlDocument:
    """A YAML file's top-level mapping, loaded for editing; :meth:`text` writes it back.

    Args:
        text: The file's text (it must hold a mapping, or nothing but comments; check it with the bounded reader).
    """

    def __init__(self, text: str) -> None:
        self._yaml = YAML(typ="rt")
        self._yaml.preserve_quotes = True
        self._yaml.width = 1 << 16  # never re-wrap a long value
        self._prefix = ""
        self._suffix = ""
        """Comments after the last item while the file has no item: they go after the next item set."""
        loaded: Any = None
        if text.strip():
            self._yaml.explicit_start = text.startswith("---")  # a `---` first line stays
            loaded, sequence_indent, dash_offset = load_yaml_guess_indent(text, yaml=self._yaml)
            mapping_indent = _mapping_indent(text)
            if dash_offset is None:  # no block sequence to learn from: ruamel's style with the file's indent
                sequence_indent, dash_offset = mapping_indent, 0
            self._yaml.indent(mapping=mapping_indent, sequence=sequence_indent or mapping_indent, offset=dash_offset)
        if loaded is None:
            # Only comments (or nothing): ruamel would drop them, so they are kept as text in front.
            self._prefix = text if _COMMENTS_ONLY.fullmatch(text) else ""
            if self._prefix and not self._prefix.endswith("\n"):
                self._prefix += "\n"
            loaded = CommentedMap()
        if not isinstance(loaded, CommentedMap):
            raise TypeError("the document's top level is not a mapping")
        self.root: CommentedMap = loaded

    def text(self) -> str:
        """The document as YAML text."""
        if not self.root:  # ruamel writes an empty mapping as `{}` and drops its comments
            start = self.root.ca.comment[1] if self.root.ca.comment else None
            return self._prefix + "".join(token.value for token in start or ()) + self._suffix
        stream = io.StringIO()
        self._yaml.dump(self.root, stream)
        return self._prefix + stream.getvalue()

    def set_key(self, segments: Sequence[str], value: Any) -> None:
        """Set the value at a key path, creating missing sections (a ``null`` section becomes one).

        Raises:
            ValueError: A parent key holds a value rather than a section (its dotted path is the message).
        """
        node = self.root
        for depth, segment in enumerate(segments[:-1]):
            child = node.get(segment)
            if child is None:  # the rest of the path is new: added as one item, so comments move once
                for missing in reversed(segments[depth + 1 :]):
                    value = {missing: value}
                self._assign(node, segment, value)
                return
            if not isinstance(child, CommentedMap):
                raise ValueError(".".join(segments[: depth + 1]))
            node = child
        self._assign(node, segments[-1], value)

    def delete_key(self, segments: Sequence[str]) -> bool:
        """Remove the value at a key path; sections the removal leaves empty go too. Whether it was there."""
        trail: list[CommentedMap] = [self.root]
        for segment in segments[:-1]:
            child = trail[-1].get(segment)
            if not isinstance(child, CommentedMap):
                return False
            trail.append(child)
        if segments[-1] not in trail[-1]:
            return False
        depth = len(segments) - 1
        while depth > 0 and len(trail[depth]) == 1:  # the parent would be left empty: remove it instead
            depth -= 1
        self._remove(trail[depth], segments[depth])
        return True

    # -- moving comments --------------------------------------------------------------------------------------------

    def _assign(self, mapping: CommentedMap, key: str, value: Any) -> None:
        value = _round_trip(value)
        if key in mapping:
            old = mapping[key]
            if _is_collection(old):  # comments after the old block follow the new value
                tail = _take_tail(_last_slot((mapping, key)))
                mapping[key] = value
                _append(_last_slot((mapping, key)), tail)
            else:
                mapping[key] = value
            return
        previous = _last_slot(self._previous_of_new(mapping))
        tail = _take_tail(previous) if previous is not None else ""
        if not self.root:
            tail, self._suffix = self._suffix, ""
        mapping[key] = value
        _append(_last_slot((mapping, key)), tail)

    def _previous_of_new(self, mapping: CommentedMap) -> _Slot | None:
        """The slot an item appended to ``mapping`` follows in the text (its last item, else the section's key)."""
        if mapping:
            return (mapping, next(reversed(mapping)))
        return None

    def _remove(self, mapping: CommentedMap, key: str) -> None:
        slots = _document_slots(self.root)
        own = _subtree_slots((mapping, key))
        tail = _take_tail(own[-1])
        first = next(index for index, slot in enumerate(slots) if _same(slot, own[0]))
        del mapping[key]
        mapping.ca.items.pop(key, None)
        if not tail:
            return
        if first > 0:
            _append(slots[first - 1], tail)
        elif not self.root:  # the file's last item: its lines stay the last of the file
            self._suffix = tail
        else:  # the first item of the file: the lines after it join the comments at the top of the file
            if self.root.ca.comment is None:
                self.root.ca.comment = [None, []]
            if self.root.ca.comment[1] is None:
                self.root.ca.comment[1] = []
            self.root.ca.comment[1].append(CommentToken(tail, CommentMark(0), None))


def _mapping_indent(text: str) -> int:
    """How far the file indents a nested mapping: the first step in from a ``key:`` line to a ``child:`` line (2)."""
    parent: int | None = None
    for line in text.splitlines():
        content = line.split(" #", 1)[0].rstrip()
        stripped = content.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        width = len(content) - len(stripped)
        if parent is not None and width > parent and not stripped.startswith("-"):
            return width - parent
        parent = width if stripped.endswith(":") and not stripped.startswith("-") else None
    return 2


class _ReaderFloat(float):
    """A float written as PyYAML writes it (``1.0e+16``): ruamel's ``1e+16`` would read back as text."""


def _represent_reader_float(representer: RoundTripRepresenter, value: _ReaderFloat) -> ScalarNode:
    text = yaml.safe_dump(float(value), default_flow_style=True).split("\n", 1)[0]
    return representer.represent_scalar("tag:yaml.org,2002:float", text)


RoundTripRepresenter.add_representer(_ReaderFloat, _represent_reader_float)

_STRING_TAG = "tag:yaml.org,2002:str"
_READER_RESOLVER = yaml.resolver.Resolver()
_BREAKS = frozenset("\x85\u2028\u2029\ufeff")


def _as_read(text: str) -> str:
    """``text`` as a scalar the configuration reader (PyYAML, YAML 1.1) reads back as this very text.

    ruamel writes YAML 1.2, in which ``yes``, ``on`` or ``1:20`` are plain text; PyYAML would read them as a boolean
    or a number. Such text, and text with characters a plain or single-quoted scalar cannot hold, is double-quoted.
    """
    plain_tag = _READER_RESOLVER.resolve(yaml.ScalarNode, text, (True, False))
    if plain_tag != _STRING_TAG or any(not character.isprintable() or character in _BREAKS for character in text):
        quoted: str = DoubleQuotedScalarString(text)
        return quoted
    return text


def _round_trip(value: Any) -> Any:
    """A new value in ruamel's types: lists and dicts commented (so comments can follow their items), scalars written
    so the configuration reader reads them back unchanged."""
    if isinstance(value, bool | int) or value is None:
        return value
    if isinstance(value, float):
        return _ReaderFloat(value)
    if isinstance(value, str):
        return _as_read(value) if not isinstance(value, ScalarString) else value
    if isinstance(value, dict):
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[key] = _round_trip(item)
        return mapping
    if isinstance(value, list):
        return CommentedSeq(_round_trip(item) for item in value)
    return value


def _is_collection(value: object) -> bool:
    return isinstance(value, CommentedMap | CommentedSeq) and len(value) > 0


def _children(container: Any) -> list[Any]:
    """The keys or indexes of a block collection's items (a flow collection prints on one line: none)."""
    if not isinstance(container, CommentedMap | CommentedSeq) or container.fa.flow_style():
        return []
    if isinstance(container, CommentedMap):
        return list(container.keys())
    return list(range(len(container)))


def _subtree_slots(slot: _Slot) -> list[_Slot]:
    """``slot`` and every slot inside its value, in text order."""
    found: list[_Slot] = []
    stack: list[_Slot] = [slot]
    while stack:
        current = stack.pop()
        found.append(current)
        value = current[0][current[1]]
        stack.extend((value, child) for child in reversed(_children(value)))
    return found


def _document_slots(root: CommentedMap) -> list[_Slot]:
    return [slot for key in root for slot in _subtree_slots((root, key))]


def _last_slot(slot: _Slot | None) -> _Slot | None:
    """The slot whose comment is printed last for ``slot``'s item: its value's last item, at any depth."""
    if slot is None:
        return None
    while True:
        value = slot[0][slot[1]]
        children = _children(value)
        if not children:
            return slot
        slot = (value, children[-1])


def _same(first: _Slot, second: _Slot) -> bool:
    return first[0] is second[0] and first[1] == second[1]


def _position(container: Any) -> int:
    """Where ruamel keeps the comment after an item: index 2 of a mapping key's list, index 0 of a list item's."""
    return 2 if isinstance(container, CommentedMap) else 0


def _token(slot: _Slot) -> CommentToken | None:
    container, key = slot
    entry = container.ca.items.get(key)
    if not entry:
        return None
    token = entry[_position(container)]
    return token if isinstance(token, CommentToken) else None


def _take_tail(slot: _Slot | None) -> str:
    """Detach the whole lines after an item's own line from its comment (its end-of-line comment stays)."""
    if slot is None:
        return ""
    token = _token(slot)
    if token is None:
        return ""
    head, newline, tail = token.value.partition("\n")
    if not tail:
        return ""
    token.value = head + newline
    return tail


def _append(slot: _Slot | None, tail: str) -> None:
    """Print ``tail`` (whole comment and blank lines) after ``slot``'s item, after its own end-of-line comment."""
    if slot is None or not tail:
        return
    token = _token(slot)
    if token is not None:
        if not token.value.endswith("\n"):
            token.value += "\n"
        token.value += tail
        return
    container, key = slot
    entry = container.ca.items.setdefault(key, [None, None, None, None])
    entry[_position(container)] = CommentToken("\n" + tail, CommentMark(0), None)
