"""AsyncClosing: the ``close``/``async with`` surface shared by clients that own SDK connections."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class AsyncClosing:
    """Gives a class with an ``aclose()`` coroutine a ``close`` alias and ``async with`` support (closing on exit)."""

    async def aclose(self) -> None:
        """Release what the object holds; subclasses override it."""

    async def close(self) -> None:
        """The same as :meth:`aclose`."""
        await self.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()
