"""A read-only sequence that builds its items on first access.

A 20,000-operator model should not build 60,000 Python view objects just to open; the
views are created when something (the graph, a panel) asks for them, then kept.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class LazySequence(Sequence[T]):
    __slots__ = ("_make", "_items")

    def __init__(self, length: int, make: Callable[[int], T]) -> None:
        self._make = make
        self._items: list[T | None] = [None] * length

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._items)))]
        n = len(self._items)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"index {i} out of range (0..{n - 1})")
        item = self._items[i]
        if item is None:
            item = self._items[i] = self._make(i)
        return item

    def fill(self, make: Callable[[int], T]) -> None:
        """Build every item not built yet with ``make``: another way to the same items,
        cheaper for all of them at once (see `Subgraph.prime_views`)."""
        items = self._items
        for i, item in enumerate(items):
            if item is None:
                items[i] = make(i)

    def __iter__(self) -> Iterator[T]:
        for i in range(len(self._items)):
            yield self[i]

    def __repr__(self) -> str:
        return f"<{len(self)} items>"
