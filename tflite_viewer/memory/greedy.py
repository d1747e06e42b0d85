"""TFLite Micro's ``GreedyMemoryPlanner`` (memory_planner/greedy_memory_planner.cc).

Buffers with an offline offset keep it and are placed first, in the order they were
added.  The others are placed largest first; TFLM fills its sort array from the tail and
bubble-sorts it (a stable sort), so among equal sizes the buffer added *last* goes first.
Each buffer then takes the first gap, scanning upward from offset 0 through the buffers
already placed whose lifetimes overlap its own, that is at least its size.

TFLM scans every placed buffer for each new one (quadratic).  Here placed buffers are
also kept in per-step buckets, so a buffer only looks at those live during its own
lifetime; the offsets are the same (the scan visits the overlapping buffers in the same
offset order, ties in placement order, as TFLM's offset-sorted list does).
"""
from __future__ import annotations

from dataclasses import dataclass

ONLINE = -1  # kOnlinePlannedBuffer


@dataclass(frozen=True)
class GreedyResult:
    offsets: list[int]
    max_size: int           # GetMaximumMemorySize
    order: list[int]        # the order buffers were placed in


def placement_order(sizes: list[int], offline: list[int]) -> list[int]:
    """Offline buffers in insertion order, then online buffers by size (ties: last added first)."""
    fixed = [i for i, o in enumerate(offline) if o != ONLINE]
    online = [i for i, o in enumerate(offline) if o == ONLINE]
    online.reverse()
    online.sort(key=lambda i: -sizes[i])  # stable, like TFLM's bubble sort
    return fixed + online


def plan_greedy(sizes: list[int], first: list[int], last: list[int],
                offline: list[int] | None = None, order: list[int] | None = None
                ) -> GreedyResult:
    """Offsets of buffers of ``sizes`` (already aligned) live from ``first`` to ``last``.

    ``order``: place the buffers in this order instead of TFLM's (the same first-fit scan;
    `offline_search` uses it to look for smaller plans).
    """
    n = len(sizes)
    if offline is None:
        offline = [ONLINE] * n
    offsets = [0] * n
    if n == 0:
        return GreedyResult(offsets, 0, [])
    if order is None:
        order = placement_order(sizes, offline)
    lo = min(first)
    hi = max(last)
    base = -lo
    buckets: list[list[tuple[int, int, int, int, int]]] = [[] for _ in range(hi - lo + 1)]
    placed: list[tuple[int, int, int, int, int]] = []  # (offset, seq, end, first, last)
    reversed_: list[tuple[int, int, int, int, int]] = []
    for k, b in enumerate(order):
        f, l_ = first[b], last[b]
        if offline[b] != ONLINE:
            cand = offline[b]
        else:
            size = sizes[b]
            if f > l_ or (l_ - f + 1) * 4 > len(placed):
                live = [e for e in placed if not (e[3] > l_ or f > e[4])]
            elif f == l_:
                live = buckets[f + base] + [e for e in reversed_ if not (e[3] > l_ or f > e[4])]
            else:
                # reversed lifetimes are in no bucket; TFLM's test still finds some overlaps
                found = {e[1]: e for e in reversed_ if not (e[3] > l_ or f > e[4])}
                for t in range(f + base, l_ + base + 1):
                    for e in buckets[t]:
                        found[e[1]] = e
                live = list(found.values())
            live.sort()  # by offset, then placement order (seq): TFLM's list order
            cand = 0
            for off, _seq, end, _f, _l in live:
                if off - cand >= size:
                    break
                if end > cand:
                    cand = end
        offsets[b] = cand
        entry = (cand, k, cand + sizes[b], f, l_)
        placed.append(entry)
        if f > l_:
            reversed_.append(entry)
        for t in range(max(f, lo) + base, min(l_, hi) + base + 1):
            buckets[t].append(entry)
    return GreedyResult(offsets, max(o + s for o, s in zip(offsets, sizes)), order)


def overlaps(sizes: list[int], first: list[int], last: list[int], offsets: list[int],
             limit: int = 50) -> list[tuple[int, int]]:
    """Pairs of buffers live at the same step whose bytes overlap (at most ``limit``).

    What ``DoAnyBuffersOverlap`` reports, found per step by sorting the live buffers by
    offset rather than by comparing every pair.
    """
    by_step: dict[int, list[int]] = {}
    for i in range(len(sizes)):
        if sizes[i] == 0:
            continue
        for t in range(first[i], last[i] + 1):
            by_step.setdefault(t, []).append(i)
    found: set[tuple[int, int]] = set()
    for live in by_step.values():
        live.sort(key=lambda i: offsets[i])
        open_: list[int] = []
        for i in live:
            open_ = [j for j in open_ if offsets[j] + sizes[j] > offsets[i]]
            for j in open_:
                found.add((min(i, j), max(i, j)))
                if len(found) >= limit:
                    return sorted(found)
            open_.append(i)
    return sorted(found)
