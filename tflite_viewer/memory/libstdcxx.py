"""Two orders LiteRT's ArenaPlanner inherits from the C++ standard library, as libstdc++
(the LiteRT wheel's) produces them.

* ``std::sort`` (introsort, then insertion sort; bits/stl_algo.h, stl_heap.h) is not
  stable: tensors its comparison calls equal (same size, same first node) come out in the
  order this algorithm leaves them, and that order decides their offsets.
* ``std::unordered_set<int>`` (bits/hashtable.h) iterates in an order set by its buckets:
  the planner collects each node's tensors in one and walks it to build the list it sorts.

Both are transcribed step for step so that equal elements end up where LiteRT puts them;
tests/memory/test_libstdcxx.py checks them against g++'s own library.
"""
from __future__ import annotations

from collections.abc import Callable

_THRESHOLD = 16

Less = Callable[[int, int], bool]


def std_sort(items: list, less: Less) -> None:
    """Sort ``items`` in place with ``less(a, b)``, exactly as libstdc++'s std::sort."""
    n = len(items)
    if n < 2:
        return
    _introsort_loop(items, 0, n, 2 * (n.bit_length() - 1), less)
    _final_insertion_sort(items, 0, n, less)


def _introsort_loop(a: list, first: int, last: int, depth: int, less: Less) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a: list, first: int, last: int, less: Less) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _move_median_to_first(a: list, result: int, x: int, y: int, z: int, less: Less) -> None:
    if less(a[x], a[y]):
        if less(a[y], a[z]):
            pick = y
        elif less(a[x], a[z]):
            pick = z
        else:
            pick = x
    elif less(a[x], a[z]):
        pick = x
    elif less(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(a: list, first: int, last: int, pivot: int, less: Less) -> int:
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _final_insertion_sort(a: list, first: int, last: int, less: Less) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a: list, first: int, last: int, less: Less) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            value = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            _unguarded_linear_insert(a, i, less)


def _unguarded_linear_insert(a: list, last: int, less: Less) -> None:
    value = a[last]
    nxt = last - 1
    while less(value, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = value


# -- heap sort (std::partial_sort(first, last, last)), the depth-limit fallback ------------

def _heap_sort(a: list, first: int, last: int, less: Less) -> None:
    n = last - first
    if n >= 2:  # make_heap
        parent = (n - 2) // 2
        while True:
            _adjust_heap(a, first, parent, n, a[first + parent], less)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:  # sort_heap: pop_heap repeatedly
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)


def _adjust_heap(a: list, first: int, hole: int, length: int, value, less: Less) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2  # push_heap
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


# -- std::unordered_set<int> iteration order ------------------------------------------------

#: bucket counts an unordered_set<int> grows through, one insert at a time (libstdc++'s
#: _Prime_rehash_policy: it rehashes when the size would pass the bucket count)
BUCKET_COUNTS = (1, 13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229,
                 172933, 351061)


def unordered_set_order(values) -> list[int]:
    """The iteration order of a ``std::unordered_set<int>`` after inserting ``values`` one
    by one (duplicates ignored).

    A node goes at the front of its bucket's run in the node list, or at the front of the
    list when its bucket is empty; a rehash walks the old list and relinks every node by
    the same rule.  std::hash<int> is the identity; the bucket is hash % bucket count.
    """
    order: list[int] = []
    seen: set[int] = set()
    buckets = 1
    for v in values:
        v = int(v)
        if v in seen:
            continue
        if len(order) + 1 > buckets:
            buckets = next(b for b in BUCKET_COUNTS if b >= len(order) + 1)
            order = _relink(order, buckets)
        _insert(order, v, buckets)
        seen.add(v)
    return order


def _bucket(v: int, buckets: int) -> int:
    return (v % (1 << 64)) % buckets  # size_t arithmetic


def _insert(order: list[int], v: int, buckets: int) -> None:
    b = _bucket(v, buckets)
    for i, w in enumerate(order):
        if _bucket(w, buckets) == b:
            order.insert(i, v)
            return
    order.insert(0, v)


def _relink(order: list[int], buckets: int) -> list[int]:
    out: list[int] = []
    for v in order:
        _insert(out, v, buckets)
    return out
