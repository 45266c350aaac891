"""Compares version numbers as PEP 440 orders them (release, pre, post and dev parts; local labels ignored)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PATTERN = re.compile(
    r"""
    v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_label>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre>\d+)?)?
    (?:-(?P<post_implicit>\d+)|(?P<post_mark>[-_.]?(?:post|rev|r))[-_.]?(?P<post>\d+)?)?
    (?:(?P<dev_mark>[-_.]?dev)[-_.]?(?P<dev>\d+)?)?
    (?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?
    """,
    re.VERBOSE | re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


@dataclass(frozen=True, order=True, slots=True)
class Version:
    """A version number, ordered as PEP 440 orders them: ``1.0.dev1 < 1.0a1 < 1.0rc1 < 1.0 < 1.0.post1 < 1.1``.

    Build one with :meth:`parse`; the fields are the sort key.
    """

    epoch: int
    release: tuple[int, ...]
    pre: tuple[int, ...]
    post: tuple[int, ...]
    dev: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> Version:
        """Read a version number.

        Args:
            text: ``1.2.3``, ``2.0rc1``, ``1.0.post2.dev3``, ``v1.4``, ``1.0+local`` ...

        Returns:
            The version.

        Raises:
            ValueError: ``text`` is not a PEP 440 version.
        """
        match = _PATTERN.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"'{text}' is not a version number")
        release = tuple(int(part) for part in match["release"].split("."))
        while len(release) > 1 and release[-1] == 0:  # 1.0 == 1.0.0
            release = release[:-1]
        label, pre_number = match["pre_label"], match["pre"]
        post_number = match["post_implicit"] or match["post"]
        has_post = match["post_implicit"] is not None or match["post_mark"] is not None
        dev_number = match["dev"]
        has_dev = match["dev_mark"] is not None
        # The sort keys: a leading 0/1/2 says "before any", "a value" or "after any" so that tuples compare rightly.
        if label is not None:
            pre: tuple[int, ...] = (1, _PRE_RANK[label.lower()], int(pre_number or 0))
        elif has_dev and not has_post:
            pre = (0,)  # 1.0.dev1 comes before 1.0a1
        else:
            pre = (2,)
        post = (1, int(post_number or 0)) if has_post else (0,)
        dev = (0, int(dev_number or 0)) if has_dev else (1,)
        return cls(epoch=int(match["epoch"] or 0), release=release, pre=pre, post=post, dev=dev)


def is_newer(candidate: str, installed: str) -> bool:
    """Whether version ``candidate`` comes after ``installed``.

    Raises:
        ValueError: Either is not a PEP 440 version.
    """
    return Version.parse(candidate) > Version.parse(installed)
