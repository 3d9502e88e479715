#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""prefix_bench MASTER: the longest cached prefix of a 256-key chain, asked
as engines' connectors ask it today (batch_is_exist over the chain, then the
first miss found in Python) and in one call (batch_query_prefix), with the
whole chain cached and with only its first 128, 32, 1 and 0 keys cached
(the keys at those positions removed in turn).  batch_query_prefix is timed
two ways: cold, the first query of a chain this client has never asked
about (the median over CHAINS fresh chains: one master round trip from the
first key; the cache's memory already touched, as in a long-running
engine), and warm, the same chain asked again and again as a scheduler
does (the leading keys this client holds leases on come from the hit
prefixes it keeps, or its descriptor cache; the master is asked from the
first other key only).  Also the floor:
one master round trip (is_exist of one key).  Prints "prefix <case> <way>
<us> us", "prefix ratio <case>_cold|_warm <x>" (batch_is_exist time over
batch_query_prefix time, each the same way: a cold query against
batch_is_exist on fresh chains just put, a warm one against batch_is_exist
asked again) and "prefix rtt is_exist1 <us> us"."""
import statistics
import sys
import time
import warnings

from mooncake.store import MooncakeDistributedStore

N, ROUNDS, CHAINS = 256, 300, 20
CASES = (("full", None), ("first128", 128), ("first32", 32), ("first1", 1), ("first0", 0))


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


def chain(name):
    return [f"prefix-bench-{name}-{i:04d}-" + "h" * 40 for i in range(N)]


def cold(s, case, hole, tag="", query=None):
    """The median time of the first query of CHAINS fresh chains, each put
    just before (batch_query_prefix, or query: the same for the baseline)."""
    query = query or (lambda keys: s.batch_query_prefix(keys))
    times = []
    for c in range(CHAINS):
        keys = chain(f"{tag}{case}{c}")
        assert s.put_batch(keys, [b"x"] * N) == 0
        if hole is not None:
            assert s.remove(keys[hole], force=True) == 0
        t0 = time.perf_counter()
        n = query(keys)
        times.append((time.perf_counter() - t0) * 1e6)
        assert n == (hole if hole is not None else N), n
    return statistics.median(times)


def main():
    warnings.simplefilter("ignore", RuntimeWarning)
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 64 << 20, "tcp", "", sys.argv[1]) == 0
    # The cache's memory is touched once per process (page faults: about
    # 2800 at the default 4096 entries, on this VM some ms): a long-running
    # engine has paid that before; so do the cold chains, once, untimed.
    for case, hole in CASES:
        cold(s, case, hole, "touch")
    keys = chain("warm")
    assert s.put_batch(keys, [b"x"] * N) == 0
    rtt, _ = timed(lambda: s.is_exist(keys[0]))
    print(f"prefix rtt is_exist1 {rtt:.1f} us")
    for case, hole in CASES:
        if hole is not None:
            assert s.remove(keys[hole], force=True) == 0
        a, na = timed(lambda: first_miss(s.batch_is_exist(keys)))
        b, nb = timed(lambda: s.batch_query_prefix(keys))
        assert na == nb == (hole if hole is not None else N), (na, nb)
        c = cold(s, case, hole)
        # the baseline of a cold query is batch_is_exist on fresh chains
        # too (the first look at keys just put: the same master state)
        ac = cold(s, case, hole, "exist",
                  lambda keys: first_miss(s.batch_is_exist(keys)))
        print(f"prefix {case} batch_is_exist {a:.1f} us")
        print(f"prefix {case} batch_is_exist_cold {ac:.1f} us")
        print(f"prefix {case} batch_query_prefix_cold {c:.1f} us")
        print(f"prefix {case} batch_query_prefix_warm {b:.1f} us")
        print(f"prefix ratio {case}_cold {ac / c:.2f}")
        print(f"prefix ratio {case}_warm {a / b:.2f}")
    s.remove_all(force=True)
    s.close()


if __name__ == "__main__":
    main()
