"""GreedyMemoryPlanner: cases worked by hand (those of TFLM's greedy_memory_planner_test.cc,
re-derived), the tie order, offline offsets, and a literal transcription of TFLM's
linked-list scan as a second implementation on random buffers."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.memory.greedy import ONLINE, overlaps, plan_greedy


def test_buffers_apart_in_time_share_offset_zero():
    r = plan_greedy([10, 20], [0, 2], [1, 3])
    assert r.offsets == [0, 0] and r.max_size == 20


def test_medium_case_worked_by_hand():
    # largest first: 50@0; 40 (steps 3-4) meets nothing -> 0; 30 (2-3) sits on 40 -> 40;
    # 20 (1-2) meets 50@0 and 30@40 -> after both, 70; 10 (0-1) fits between 50 and 70
    r = plan_greedy([10, 20, 30, 40, 50], [0, 1, 2, 3, 0], [1, 2, 3, 4, 1])
    assert r.offsets == [50, 70, 40, 0, 0] and r.max_size == 90


def test_overlap_case_worked_by_hand():
    r = plan_greedy([100, 50, 20], [0, 2, 1], [1, 3, 2])
    assert r.offsets == [0, 0, 100] and r.max_size == 120


def test_equal_sizes_the_buffer_added_last_goes_first():
    # TFLM fills its sort array from the tail, then sorts stably: id 1 is placed first
    r = plan_greedy([16, 16], [0, 0], [1, 1])
    assert r.offsets == [16, 0] and r.order == [1, 0]


def test_offline_offsets_are_kept_and_placed_first():
    r = plan_greedy([32, 16, 16], [0, 0, 0], [2, 2, 2], [ONLINE, 64, ONLINE])
    # the offline buffer holds 64..80; the online ones fill from 0 (32 first, then 16)
    assert r.offsets == [0, 64, 32] and r.max_size == 80


def _tflm_reference(sizes, first, last, offline):
    """TFLM's CalculateOffsetsIfNeeded, line by line (linked list sorted by offset)."""
    n = len(sizes)
    ids_sorted, sizes_sorted = [0] * n, [0] * n
    head, tail = 0, n
    offsets = [-1] * n
    for i in range(n):
        if offline[i] == ONLINE:
            tail -= 1
            sizes_sorted[tail], ids_sorted[tail] = sizes[i], i
        else:
            sizes_sorted[head], ids_sorted[head] = sizes[i], i
            offsets[i] = offline[i]
            head += 1
    vals, ids = sizes_sorted[head:], ids_sorted[head:]
    swapped = True
    while swapped:  # ReverseSortInPlace: bubble sort, descending
        swapped = False
        for i in range(1, len(vals)):
            if vals[i - 1] < vals[i]:
                vals[i - 1], vals[i] = vals[i], vals[i - 1]
                ids[i - 1], ids[i] = ids[i], ids[i - 1]
                swapped = True
    ids_sorted[head:] = ids
    entries = []  # [offset, requirement index, next]
    first_entry = 0
    b = ids_sorted[0]
    if offline[b] == ONLINE:
        offsets[b] = 0
    entries.append([offsets[b], b, -1])
    for k in range(1, n):
        b = ids_sorted[k]
        cand = 0
        if offline[b] == ONLINE:
            prior = None
            while True:
                nxt = None
                j = first_entry if prior is None else entries[prior][2]
                while j != -1:
                    e = entries[j]
                    if not (first[e[1]] > last[b] or first[b] > last[e[1]]):
                        nxt = j
                        break
                    j = e[2]
                if prior is not None:
                    cand = max(cand, entries[prior][0] + sizes[entries[prior][1]])
                if nxt is None or entries[nxt][0] - cand >= sizes[b]:
                    break
                prior = nxt
        else:
            cand = offline[b]
        offsets[b] = cand
        entries.append([cand, b, -1])
        new = len(entries) - 1
        if entries[first_entry][0] > cand:
            entries[new][2] = first_entry
            first_entry = new
        else:
            cur = first_entry
            while True:
                nxt = entries[cur][2]
                if nxt == -1:
                    entries[cur][2] = new
                    break
                if entries[nxt][0] > cand:
                    entries[new][2] = nxt
                    entries[cur][2] = new
                    break
                cur = nxt
    return offsets, max(o + s for o, s in zip(offsets, sizes))


@pytest.mark.parametrize("seed", range(40))
def test_same_offsets_as_a_literal_transcription(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    steps = int(rng.integers(1, 60))
    sizes = [int(v) for v in rng.choice([0, 16, 32, 48, 64, 256, 1024], n)]
    first = [int(v) for v in rng.integers(-1, steps, n)]
    last = [f + int(rng.integers(0, 8)) if rng.random() > 0.1 else f + int(rng.integers(0, steps))
            for f in first]
    offline = [ONLINE] * n
    if seed % 4 == 0:
        for i in rng.choice(n, size=min(n, 5), replace=False).tolist():
            offline[i] = int(rng.integers(0, 20)) * 16
    ours = plan_greedy(sizes, first, last, offline)
    offsets, top = _tflm_reference(sizes, first, last, offline)
    assert ours.offsets == offsets and ours.max_size == top


def test_overlaps_are_found_per_step():
    # buffers 0 and 1 share bytes 8..16 at step 1; buffer 2 shares bytes with 0 but not time
    pairs = overlaps([16, 16, 16], [0, 1, 5], [2, 3, 6], [0, 8, 0])
    assert pairs == [(0, 1)]
