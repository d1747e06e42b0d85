"""Our transcriptions of libstdc++'s std::sort and std::unordered_set<int> against the real
library: a small C++ program built with g++ sorts and iterates the same inputs."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tflite_viewer.memory.libstdcxx import std_sort, unordered_set_order

PROGRAM = r"""
#include <algorithm>
#include <cstdio>
#include <unordered_set>
#include <vector>
int main() {
  int cases; if (scanf("%d", &cases) != 1) return 1;
  for (int c = 0; c < cases; ++c) {
    int n; scanf("%d", &n);
    std::vector<int> keys(n), ids(n), values(n);
    for (int i = 0; i < n; ++i) { scanf("%d", &keys[i]); ids[i] = i; }
    for (int i = 0; i < n; ++i) scanf("%d", &values[i]);
    std::sort(ids.begin(), ids.end(), [&](int a, int b) { return keys[a] < keys[b]; });
    std::unordered_set<int> s;
    for (int v : values) s.insert(v);
    for (int i : ids) printf("%d ", i);
    printf("|");
    for (int v : s) printf(" %d", v);
    printf("\n");
  }
}
"""


@pytest.fixture(scope="module")
def cxx(tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed: cannot compare with libstdc++ itself")
    d = tmp_path_factory.mktemp("cxx")
    (d / "p.cc").write_text(PROGRAM)
    subprocess.run([compiler, "-O1", "-std=c++17", "-o", str(d / "p"), str(d / "p.cc")],
                   check=True, capture_output=True)
    return d / "p"


def test_same_orders_as_libstdcxx(cxx):
    rng = np.random.default_rng(0)
    cases = []
    for k in range(200):
        n = int(rng.integers(0, 200)) if k % 3 else int(rng.integers(0, 40))
        keys = rng.integers(0, max(1, n // 4 if k % 2 else 3), n).tolist()  # many ties
        values = rng.integers(-50, 3000, n).tolist()
        cases.append((keys, values))
    text = f"{len(cases)}\n" + "".join(
        f"{len(k)}\n{' '.join(map(str, k))}\n{' '.join(map(str, v))}\n" for k, v in cases)
    out = subprocess.run([str(cxx)], input=text, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    for (keys, values), line in zip(cases, out):
        sorted_part, set_part = line.split("|")
        ids = list(range(len(keys)))
        std_sort(ids, lambda a, b: keys[a] < keys[b])
        assert ids == [int(v) for v in sorted_part.split()]
        assert unordered_set_order(values) == [int(v) for v in set_part.split()]
