# SPDX-License-Identifier: Apache-2.0
"""Master round trips of the binding's reads, counted by the master itself
(its /metrics, mooncake_master_rpc_requests_total by op): a get is one
GET_REPLICA_LIST (no size lookup first); get_batch, batch_get_buffer,
batch_get_into_multi_buffers and get_into_ranges are one
BATCH_GET_REPLICA_LIST for the whole batch, whatever it holds (hits,
misses, several buffers), and no per-key request.  Values are checked byte
for byte."""
import ctypes
import time

OBJECT_NOT_FOUND = -704
INVALID_PARAMS = -600
OPS = ("get_replica_list", "batch_get_replica_list", "exist_key")


def counts(cluster):
    return {op: cluster.rpc_count(op) for op in OPS}


def delta(cluster, before, want):
    """The requests by op since before, once the master has counted those of want
    (it counts a request as it answers, maybe just after the reply)."""
    deadline = time.time() + 5
    while True:
        now = counts(cluster)
        d = {op: now[op] - before[op] for op in OPS}
        if all(d[op] >= n for op, n in want.items()) or time.time() > deadline:
            return d
        time.sleep(0.05)


def test_get_is_one_lookup(cluster, store):
    """One GET_REPLICA_LIST for a get (no size lookup first).  With the
    descriptor cache (the default) the gets of the key after it, within its
    lease, ask the master nothing; with MC_CACHE_DESCRIPTORS=0 each asks."""
    v = bytes(range(256)) * 4096   # 1 MiB
    assert store.put("rt-get", v) == 0
    before = counts(cluster)
    for _ in range(5):
        assert store.get("rt-get") == v
    assert store.get("rt-missing") == b""
    h = store.get_buffer("rt-get")
    assert bytes(h) == v and h.size() == len(v)
    assert delta(cluster, before, {"get_replica_list": 2}) == \
        {"get_replica_list": 2, "batch_get_replica_list": 0, "exist_key": 0}

    import os
    from conftest import new_store
    os.environ["MC_CACHE_DESCRIPTORS"] = "0"
    try:
        s = new_store(cluster)
    finally:
        del os.environ["MC_CACHE_DESCRIPTORS"]
    try:
        assert s.put("rt-get-off", v) == 0
        before = counts(cluster)
        for _ in range(5):
            assert s.get("rt-get-off") == v
        assert delta(cluster, before, {"get_replica_list": 5})["get_replica_list"] == 5
        before = counts(cluster)
        h = s.get_buffer("rt-get-off")
        assert bytes(h) == v and h.size() == len(v)
        assert delta(cluster, before, {"get_replica_list": 1})["get_replica_list"] == 1
    finally:
        s.remove_all(force=True)
        s.close()


def test_batch_reads_are_one_request(cluster, store):
    keys = [f"rt-b{i}" for i in range(40)]
    vals = [bytes([i]) * (1000 + 97 * i) for i in range(40)]
    assert store.put_batch(keys, vals) == 0
    ask = keys[:20] + ["rt-nope"] + keys[20:]

    before = counts(cluster)
    got = store.get_batch(ask)
    assert got == vals[:20] + [b""] + vals[20:]
    assert delta(cluster, before, {"batch_get_replica_list": 1}) == \
        {"get_replica_list": 0, "batch_get_replica_list": 1, "exist_key": 0}

    before = counts(cluster)
    hs = store.batch_get_buffer(ask)
    assert hs[20] is None
    assert [bytes(h) for h in hs[:20] + hs[21:]] == vals
    assert delta(cluster, before, {"batch_get_replica_list": 1})["batch_get_replica_list"] == 1
    del hs

    # Two keys scattered over parts of a registered buffer, one miss, one bad shape.
    buf = (ctypes.c_ubyte * (1 << 20))()
    base = ctypes.addressof(buf)
    assert store.register_buffer(base, len(buf)) == 0
    before = counts(cluster)
    res = store.batch_get_into_multi_buffers(
        [keys[3], keys[5], "rt-nope", keys[6]],
        [[base, base + 500], [base + 4096], [base + 8192], [base]],
        [[500, 4096], [4096], [4096]], True)
    assert res == [INVALID_PARAMS] * 4   # 4 keys, 3 size lists: nothing read
    res = store.batch_get_into_multi_buffers(
        [keys[3], keys[5], "rt-nope"],
        [[base, base + 500], [base + 4096], [base + 8192]],
        [[500, 4096], [4096], [4096]])
    assert res == [len(vals[3]), len(vals[5]), OBJECT_NOT_FOUND]
    assert bytes(buf[:len(vals[3])]) == vals[3]
    assert bytes(buf[4096:4096 + len(vals[5])]) == vals[5]
    assert delta(cluster, before, {"batch_get_replica_list": 1}) == \
        {"get_replica_list": 0, "batch_get_replica_list": 1, "exist_key": 0}

    # Ranges of keys over two buffers: one request for all of them.
    buf2 = (ctypes.c_ubyte * 65536)()
    base2 = ctypes.addressof(buf2)
    assert store.register_buffer(base2, len(buf2)) == 0
    before = counts(cluster)
    res = store.get_into_ranges(
        [base, base2],
        [[keys[1], keys[2]], [keys[7], "rt-nope", keys[8]]],
        [[[0, 100], [200]], [[0], [50], [1000]]],
        [[[0, 10], [5]], [[1], [0], [len(vals[8]) - 1]]],
        [[[50, 20], [30]], [[40], [10], [2]]])
    assert res == [[[50, 20], [30]], [[40], [OBJECT_NOT_FOUND], [INVALID_PARAMS]]]
    assert bytes(buf[0:50]) == vals[1][0:50]
    assert bytes(buf[100:120]) == vals[1][10:30]
    assert bytes(buf[200:230]) == vals[2][5:35]
    assert bytes(buf2[0:40]) == vals[7][1:41]
    assert delta(cluster, before, {"batch_get_replica_list": 1}) == \
        {"get_replica_list": 0, "batch_get_replica_list": 1, "exist_key": 0}
    assert store.unregister_buffer(base) == 0
    assert store.unregister_buffer(base2) == 0


def test_get_batch_honours_local_buffer(cluster):
    from conftest import new_store
    s = new_store(cluster, local_buffer_size=3000, tenant="t-rt-small")
    try:
        for k, n in (("a", 1000), ("b", 1500), ("c", 2500)):
            assert s.put(k, k.encode() * n) == 0
        # a and b fit together (2500 of 3000); c then does not.
        assert s.get_batch(["a", "b", "c"]) == [b"a" * 1000, b"b" * 1500, b""]
        # Each get's staging is given back: c alone fits.
        assert s.get("c") == b"c" * 2500
        assert s.get("c") == b"c" * 2500   # from the descriptor cache: staged the same way
        assert s.get_batch(["c"]) == [b"c" * 2500]
        assert s.batch_get_buffer(["a", "c"])[1] is None
    finally:
        s.remove_all(force=True)
        s.close()
