#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""prefix_bench MASTER: the longest cached prefix of a 256-key chain, asked
as engines' connectors ask it today (batch_is_exist over the chain, then the
first miss found in Python) and in one call (batch_query_prefix), with the
whole chain cached and with only its first 128, 32, 1 and 0 keys cached
(the keys at those positions removed in turn).  Also the floor of either: one
master round trip (is_exist of one key).  Prints "prefix <case> <way> <us>
us", "prefix ratio <case> <x>" (is_exist time over query_prefix time) and
"prefix rtt is_exist1 <us> us"."""
import sys
import time
import warnings

from mooncake.store import MooncakeDistributedStore

N, ROUNDS = 256, 300


def first_miss(res):
    for i, r in enumerate(res):
        if r != 1:
            return i
    return len(res)


def timed(fn):
    fn()
    t0 = time.perf_counter()
    for _ in range(ROUNDS):
        v = fn()
    return (time.perf_counter() - t0) / ROUNDS * 1e6, v


def main():
    warnings.simplefilter("ignore", RuntimeWarning)
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 64 << 20, "tcp", "", sys.argv[1]) == 0
    keys = [f"prefix-bench-{i:04d}-" + "h" * 40 for i in range(N)]
    assert s.put_batch(keys, [b"x"] * N) == 0
    rtt, _ = timed(lambda: s.is_exist(keys[0]))
    print(f"prefix rtt is_exist1 {rtt:.1f} us")
    for case, hole in (("full", None), ("first128", 128), ("first32", 32), ("first1", 1),
                       ("first0", 0)):
        if hole is not None:
            assert s.remove(keys[hole], force=True) == 0
        a, na = timed(lambda: first_miss(s.batch_is_exist(keys)))
        b, nb = timed(lambda: s.batch_query_prefix(keys))
        assert na == nb == (hole if hole is not None else N), (na, nb)
        print(f"prefix {case} batch_is_exist {a:.1f} us")
        print(f"prefix {case} batch_query_prefix {b:.1f} us")
        print(f"prefix ratio {case} {a / b:.2f}")
    s.remove_all(force=True)
    s.close()


if __name__ == "__main__":
    main()
