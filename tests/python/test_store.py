# SPDX-License-Identifier: Apache-2.0
"""mooncake.store against a real master and two nodes (conftest.py): every
method with hits, misses, wrong types and bad shapes; ReplicateConfig;
setup's forms and sizes; upsert; batch_query_prefix; threads with the GIL
released; a randomized sequence checked against a dict."""
import ctypes
import os
import random
import threading
import time

import pytest

from mooncake.store import (BufferHandle, MooncakeDistributedStore, ReplicateConfig,
                            SoftPinAction)

from conftest import new_store

INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_HAS_LEASE = -706
BUFFER_OVERFLOW = -10
DFS_SERVICE_UNAVAILABLE = -1601
NOT_SUPPORTED = -1012


def cbuf(size, fill=0):
    b = (ctypes.c_ubyte * size)()
    ctypes.memset(b, fill, size)
    return b, ctypes.addressof(b)


# ---- ReplicateConfig, sizes, setup ------------------------------------------------

def test_replicate_config_defaults_and_types():
    c = ReplicateConfig()
    assert c.replica_num == 1 and c.soft_pin_action == SoftPinAction.PRESERVE
    assert c.soft_pin_ttl_ms is None and c.with_hard_pin is False
    assert c.preferred_segments == [] and c.preferred_segment == ""
    assert c.prefer_alloc_in_same_node is False and c.group_ids == []
    c.soft_pin_ttl_ms = 1000
    assert c.soft_pin_ttl_ms == 1000
    c.soft_pin_ttl_ms = None
    assert c.soft_pin_ttl_ms is None
    for bad in (-1, 1 << 64, "10", 1.5):
        with pytest.raises(TypeError):
            c.soft_pin_ttl_ms = bad
    with pytest.raises(TypeError):
        c.soft_pin_action = 3
    with pytest.raises(TypeError):
        c.preferred_segments = "seg"
    c.replica_num = 3
    c.soft_pin_action = SoftPinAction.ENABLE
    assert "replica_num: 3" in repr(c) and "ENABLE" in str(c)
    with pytest.raises(TypeError):
        ReplicateConfig(1)


def test_setup_forms_and_sizes(cluster):
    s = MooncakeDistributedStore()
    d = {"local_hostname": "localhost", "metadata_server": "http://127.0.0.1:8080/metadata",
         "global_segment_size": "16MB", "local_buffer_size": "16 MB", "protocol": "tcp",
         "rdma_devices": "", "master_server_addr": cluster.rpc}
    assert s.setup(d) == 0          # contributes 16 MB (test_contribute.py)
    host, port = s.get_hostname().split(":")
    assert host == "localhost" and 12300 <= int(port) <= 14300
    assert s.put("dict-form", b"v") == 0 and s.get("dict-form") == b"v"
    assert s.remove("dict-form", force=True) == 0
    assert s.close() == 0
    assert s.health_check() == 1
    with pytest.warns(RuntimeWarning):
        assert s.setup(dict(d, global_segment_size="50%")) != 0
    with pytest.warns(RuntimeWarning):
        assert s.setup(dict(d, metadata_server="etcd://x:2379")) == INVALID_PARAMS
    # rdma: RDMA where a node serves it, else TCP (no device here)
    assert s.setup(dict(d, protocol="rdma", rdma_devices="")) == 0
    assert s.put("rdma-form", b"w") == 0 and s.get("rdma-form") == b"w"
    assert s.remove("rdma-form", force=True) == 0
    assert s.close() == 0
    with pytest.warns(RuntimeWarning):
        assert s.setup(dict(d, protocol="udp")) == INVALID_PARAMS
    with pytest.raises(TypeError):
        s.setup("localhost", "P2PHANDSHAKE")          # the seven are required
    with pytest.raises(TypeError):
        s.setup("localhost", "P2PHANDSHAKE", 0, 0, "tcp", "", cluster.rpc, bogus=1)
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 0, "tcp", "", "127.0.0.1:1") < 0
    # local_buffer_size 0: the copying calls fail, nothing is stored.
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 0, "tcp", "", cluster.rpc) == 0
    assert s.health_check() == 0
    assert s.get_hostname() == "localhost"
    assert s.put("zero-buf", b"value") != 0
    assert s.is_exist("zero-buf") == 0
    s.close()
    assert s.put("after-close", b"v") == INVALID_PARAMS
    assert s.get("after-close") == b""


# ---- the copying calls ------------------------------------------------------------------

def test_put_get_and_misses(store):
    assert store.put("k", b"Hello, World!") == 0
    assert store.get("k") == b"Hello, World!"
    assert store.get_size("k") == 13
    assert store.is_exist("k") == 1
    assert store.put("k", b"other") == 0          # an existing key: success, unchanged
    assert store.get("k") == b"Hello, World!"
    assert store.put(b"bin\x00key", bytearray(b"\x00\xff")) == 0
    assert store.get(b"bin\x00key") == b"\x00\xff"
    assert store.put("mv", memoryview(b"abcdef")[1:4]) == 0
    assert store.get("mv") == b"bcd"
    assert store.get("missing") == b""
    assert store.get_size("missing") == OBJECT_NOT_FOUND
    assert store.is_exist("missing") == 0
    assert store.remove("missing") == OBJECT_NOT_FOUND
    assert store.remove("k") == OBJECT_HAS_LEASE   # the get leased it
    assert store.remove("k", force=True) == 0
    assert store.put("", b"x") == INVALID_PARAMS
    assert store.put("empty", b"") == INVALID_PARAMS
    for bad in ((1, b"x"), ("k", "str value"), ("k", 5)):
        with pytest.raises(TypeError):
            store.put(*bad)
    with pytest.raises(TypeError):
        store.get(5)
    with pytest.raises(TypeError):
        store.put("k", b"x", config="not a config")


def test_put_parts_batch_and_buffers(store):
    assert store.put_parts("parts", b"ab", bytearray(b"cd"), memoryview(b"ef")) == 0
    assert store.get("parts") == b"abcdef"
    keys = [f"b{i}" for i in range(5)]
    vals = [bytes([i]) * (i + 1) * 100 for i in range(5)]
    assert store.put_batch(keys, vals) == 0
    assert store.get_batch(keys + ["nope"]) == vals + [b""]
    assert store.put_batch(keys[:2], vals[:3]) == INVALID_PARAMS
    assert store.put_batch([], []) == 0
    with pytest.raises(TypeError):
        store.put_batch("b0", [b"x"])
    hs = store.batch_get_buffer([keys[1], "nope"])
    assert isinstance(hs[0], BufferHandle) and hs[1] is None
    assert hs[0].size() == len(vals[1]) == len(hs[0]) == hs[0].len()
    assert bytes(hs[0]) == vals[1] and memoryview(hs[0]).readonly
    assert ctypes.string_at(hs[0].ptr(), hs[0].size()) == vals[1]
    assert store.get_buffer("nope") is None
    assert bytes(store.get_buffer("parts")) == b"abcdef"
    assert store.batch_get_buffer([]) == []


def test_upserts(store):
    assert store.upsert("u", b"first") == 0
    assert store.get("u") == b"first"
    assert store.upsert("u", b"second value, longer") == 0
    assert store.get("u") == b"second value, longer"
    assert store.upsert_parts("u", b"th", b"ird") == 0
    assert store.get("u") == b"third"
    assert store.upsert_batch(["u", "u2"], [b"4", b"new"]) == 0
    assert store.get_batch(["u", "u2"]) == [b"4", b"new"]
    buf, ptr = cbuf(64, ord("z"))
    assert store.register_buffer(ptr, 64) == 0
    assert store.upsert_from("u", ptr, 10) == 0
    assert store.get("u") == b"z" * 10
    assert store.batch_upsert_from(["u", "u3"], [ptr, ptr + 32], [3, 4]) == [0, 0]
    assert store.get_batch(["u", "u3"]) == [b"zzz", b"zzzz"]
    assert store.unregister_buffer(ptr) == 0


def test_soft_pin_forwarding(store):
    en = ReplicateConfig()
    en.soft_pin_action = SoftPinAction.ENABLE
    en.soft_pin_ttl_ms = 1000
    assert store.put("pin", b"v", en) == 0
    keep = ReplicateConfig()
    keep.soft_pin_ttl_ms = 1000                  # a TTL without ENABLE
    assert store.upsert("pin", b"v", keep) == INVALID_PARAMS
    dis = ReplicateConfig()
    dis.soft_pin_action = SoftPinAction.DISABLE
    dis.soft_pin_ttl_ms = 1000
    assert store.upsert("pin", b"v", dis) == INVALID_PARAMS
    dis.soft_pin_ttl_ms = None
    assert store.upsert("pin", b"v", dis) == 0
    assert store.upsert("pin", b"w") == 0
    two = ReplicateConfig()
    two.group_ids = ["a", "b"]
    assert store.put("g", b"v", two) == INVALID_PARAMS
    two.group_ids = ["a"]
    two.replica_num = 2
    two.with_hard_pin = True
    assert store.put("g", b"v", two) == 0
    assert len(store.get_replica_desc("g")) == 2    # two nodes
    bad = ReplicateConfig()
    bad.replica_num = 0
    assert store.put("g0", b"v", bad) == INVALID_PARAMS
    bad.dfs_replica_num = 2                       # one DFS replica at most
    assert store.put("g0", b"v", bad) == INVALID_PARAMS
    bad.dfs_replica_num = 1                       # this master has no shared_root
    assert store.put("g0", b"v", bad) == DFS_SERVICE_UNAVAILABLE
    wt = ReplicateConfig()                        # write_through: not the original's
    assert wt.write_through is False
    wt.write_through = True
    wt.replica_num = 0                            # needs a memory replica
    wt.dfs_replica_num = 1
    assert store.put("wt", b"v", wt) == INVALID_PARAMS
    wt.replica_num, wt.dfs_replica_num = 1, 0     # these nodes have no disk tier
    assert store.put("wt", b"v", wt) == NOT_SUPPORTED
    assert store.get("wt") == b""                 # nothing stored


def test_dfs_replica(tmp_path):
    """dfs_replica_num=1 on a master with a shared_root: a DFS replica,
    with or without memory ones, read back by another store."""
    from conftest import Cluster
    c = Cluster(str(tmp_path))
    try:
        c.start(nodes=1, segment_size="64M",
                master_args=[f"--shared_root={tmp_path}/shared", "--dfs_file_size=4M"])
        a, b = new_store(c, local_buffer_size=16 << 20), new_store(c, local_buffer_size=16 << 20)
        only = ReplicateConfig()
        only.replica_num = 0
        only.dfs_replica_num = 1
        both = ReplicateConfig()
        both.dfs_replica_num = 1
        v1, v2 = os.urandom(100000), os.urandom(5000)
        assert a.put("dfs-only", v1, only) == 0
        assert a.put("dfs-and-mem", v2, both) == 0
        assert b.get("dfs-only") == v1
        assert b.get("dfs-and-mem") == v2
        assert len(b.get_replica_desc("dfs-and-mem")) == 2
        keys, vals = [f"bd{i}" for i in range(5)], [os.urandom(3000 + i) for i in range(5)]
        assert a.put_batch(keys, vals, only) == 0     # BATCH_PUT_START places them too
        assert b.get_batch(keys) == vals
        assert os.path.getsize(tmp_path / "shared" / "dfs" / "00000.dfs") >= 100000
        a.close()
        b.close()
    finally:
        c.stop()


def test_replica_desc(store):
    assert store.put("d", b"0123456789") == 0
    (r,) = store.get_replica_desc("d")
    assert r.is_memory_replica() and not r.is_disk_replica()
    d = r.get_memory_descriptor().buffer_descriptor
    assert d.size == 10 and ":" in d.transport_endpoint
    assert store.get_replica_desc("nope") == []
    m = store.batch_get_replica_desc(["d", "nope"])
    assert list(m) == ["d"] and len(m["d"]) == 1


def test_exist_prefix_remove(store):
    keys = [f"e{i}" for i in range(20)]
    for k in keys[:10]:
        assert store.put(k, b"x") == 0
    assert store.batch_is_exist(keys) == [1] * 10 + [0] * 10
    assert store.batch_is_exist([]) == []
    assert store.batch_query_prefix(keys) == 10
    assert store.batch_query_prefix(keys[10:] + keys[:10]) == 0
    assert store.batch_query_prefix([]) == 0
    assert store.put("e15", b"x") == 0
    assert store.batch_query_prefix(keys) == 10
    with pytest.raises(TypeError):
        store.batch_query_prefix([1, 2])
    assert store.batch_remove(["e0", "nope"], force=True) == [0, OBJECT_NOT_FOUND]
    assert store.remove_by_regex("^e1[0-9]$", force=True) == 1     # e15
    assert store.remove_by_regex("(", force=True) == INVALID_PARAMS
    assert store.remove_all(force=True) == 9
    assert store.batch_is_exist(keys) == [0] * 20


# ---- the zero-copy calls --------------------------------------------------------------------

def test_zero_copy(store):
    data = b"Hello, Zero-Copy World! " * 1000
    buf, ptr = cbuf(len(data) + 1024)
    assert store.register_buffer(ptr, len(buf)) == 0
    assert store.register_buffer(ptr, len(buf)) == INVALID_PARAMS   # overlaps
    ctypes.memmove(ptr, data, len(data))
    assert store.put_from("z", ptr, len(data)) == 0
    assert store.get("z") == data
    ctypes.memset(ptr, 0, len(buf))
    assert store.get_into("z", ptr, len(buf)) == len(data)
    assert bytes(buf[:len(data)]) == data
    small, sptr = cbuf(len(data) // 2)
    assert store.register_buffer(sptr, len(small)) == 0
    assert store.get_into("z", sptr, len(small)) == BUFFER_OVERFLOW
    assert store.get_into("nope", ptr, len(buf)) == OBJECT_NOT_FOUND
    other, optr = cbuf(128)
    assert store.put_from("unreg", optr, 16) == INVALID_PARAMS      # not registered
    with pytest.raises(TypeError):
        store.get_into("z", "ptr", 10)
    with pytest.raises((TypeError, OverflowError)):
        store.put_from("z", -1, 10)
    assert store.unregister_buffer(ptr) == 0
    assert store.unregister_buffer(ptr) == INVALID_PARAMS
    assert store.unregister_buffer(sptr) == 0


def test_batch_zero_copy(store):
    sp = 1 << 20
    buf, base = cbuf(3 * sp)
    assert store.register_buffer(base, 3 * sp) == 0
    data = [b"Batch Put Data %d! " % i * (100 * (i + 1)) for i in range(3)]
    keys = [f"bz{i}" for i in range(3)]
    for i, d in enumerate(data):
        ctypes.memmove(base + i * sp, d, len(d))
    assert store.batch_put_from(keys, [base + i * sp for i in range(3)],
                                [len(d) for d in data]) == [0, 0, 0]
    assert store.get_batch(keys) == data
    assert store.batch_put_from(keys[:2], [base] * 3, [1] * 3) == [INVALID_PARAMS] * 2
    assert store.batch_put_from([], [], []) == []
    ctypes.memset(base, 0, 3 * sp)
    res = store.batch_get_into(keys + ["nope"], [base + i * sp for i in range(4)][:3] + [base],
                               [sp] * 4)
    assert res == [len(d) for d in data] + [OBJECT_NOT_FOUND]
    for i, d in enumerate(data):
        assert ctypes.string_at(base + i * sp, len(d)) == d
    assert store.batch_get_into(keys, [base], [sp]) == [INVALID_PARAMS] * 3
    # Multi-buffer forms: a value gathered from, and scattered into, pieces.
    ctypes.memmove(base, b"AAAA", 4)
    ctypes.memmove(base + 100, b"BBB", 3)
    assert store.batch_put_from_multi_buffers(["mb"], [[base, base + 100]], [[4, 3]]) == [0]
    assert store.get("mb") == b"AAAABBB"
    assert store.batch_put_from_multi_buffers(["mb2"], [[base]], [[4, 3]]) == [INVALID_PARAMS]
    res = store.batch_get_into_multi_buffers(["mb", "nope"], [[base + 200, base + 300], [base]],
                                             [[2, 5], [8]])
    assert res == [7, OBJECT_NOT_FOUND]
    assert ctypes.string_at(base + 200, 2) == b"AA" and ctypes.string_at(base + 300, 5) == b"AABBB"
    assert store.batch_get_into_multi_buffers(["mb"], [[base]], [[3]]) == [BUFFER_OVERFLOW]
    assert store.unregister_buffer(base) == 0


def test_get_into_ranges(store):
    d1 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    d2 = b"abcdefghijklmnopqrstuvwxyz0123456789"
    assert store.put("r1", d1) == 0 and store.put("r2", d2) == 0
    b0, p0 = cbuf(32, ord("_"))
    b1, p1 = cbuf(32, ord("_"))
    assert store.register_buffer(p0, 32) == 0 and store.register_buffer(p1, 32) == 0
    res = store.get_into_ranges([p0, p1], [["r1", "r2"], ["r2", "r1"]],
                                [[[0, 20], [8]], [[4], [16]]],
                                [[[1, 30], [2]], [[0], [10]]],
                                [[[4, 3], [5]], [[6], [4]]])
    assert res == [[[4, 3], [5]], [[6], [4]]]
    assert bytes(b0[0:4]) == d1[1:5] and bytes(b0[8:13]) == d2[2:7]
    assert bytes(b0[20:23]) == d1[30:33]
    assert bytes(b1[4:10]) == d2[0:6] and bytes(b1[16:20]) == d1[10:14]
    mis = store.get_into_ranges([p0], [["r1", "r2"]], [[[0], []]], [[[0, 1], []]], [[[], []]])
    assert len(mis) == 1 and len(mis[0]) == 2 and mis[0][0][0] < 0 and mis[0][1] == []
    assert store.get_into_ranges([p0], [["r1"]], [[[0]]], [[[len(d1) - 1]]], [[[4]]])[0][0][0] < 0
    assert store.get_into_ranges([p0], [["r1"]], [[[31]]], [[[0]]], [[[4]]])[0][0][0] < 0
    miss = store.get_into_ranges([p0], [["missing", "r1"]], [[[0], [8]]], [[[0], [0]]],
                                 [[[4], [4]]])
    assert miss[0][0][0] < 0 and miss[0][1][0] == 4
    assert store.get_into_ranges([p0, p1], [["r1"]], [[[0]]], [[[0]]], [[[1]]]) == \
        [[[INVALID_PARAMS]], [[INVALID_PARAMS]]]
    assert store.unregister_buffer(p0) == 0 and store.unregister_buffer(p1) == 0


# ---- threads and the GIL -------------------------------------------------------------------------

def test_threads_run_in_parallel(store):
    """8 threads x 100 x 1 MiB put / get / remove; the calls of different
    threads overlap in time, which they cannot while one holds the GIL."""
    n_threads, per, size = 8, 100, 1 << 20
    spans, errors = [], []
    lock = threading.Lock()
    start = threading.Barrier(n_threads)

    def worker(t):
        try:
            data = os.urandom(size)
            keys = [f"thr_{t}_{i}" for i in range(per)]
            start.wait()
            for k in keys:
                t0 = time.perf_counter()
                assert store.put(k, data) == 0
                t1 = time.perf_counter()
                with lock:
                    spans.append((t0, t1))
            for k in keys:
                assert store.get(k) == data
            for k in keys:
                assert store.remove(k, force=True) == 0
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {t}: {e!r}")

    ths = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not errors, errors
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    cur = peak = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    assert peak >= 2, "no two puts ever overlapped: the GIL is held during the network wait"


def test_gil_released_during_a_long_put(store):
    data = os.urandom(32 << 20)
    ticks = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = ticks[0]
        assert store.put("long", data) == 0
        during = ticks[0] - before
    finally:
        done.set()
        t.join()
    assert during > 1000, during


# ---- a randomized sequence against a dict ------------------------------------------------------------

def test_random_ops_against_dict(store):
    rng = random.Random(int(os.environ.get("MC_PY_SEED", "1")))
    model, pool = {}, [f"rk{i}" for i in range(40)]
    for step in range(300):
        op, k = rng.choice(["put", "upsert", "get", "remove", "exist"]), rng.choice(pool)
        if op in ("put", "upsert"):
            size = int(2 ** rng.uniform(0, 26))            # 1 B .. 64 MiB
            v = rng.randbytes(size)
            rc = store.put(k, v) if op == "put" else store.upsert(k, v)
            if rc == -200:      # no space: refused; an upsert leaves the old value (or eviction took it)
                continue
            assert rc == 0, (step, op, k, rc)
            if op == "upsert" or k not in model:
                model[k] = v
        elif op == "get":
            got = store.get(k)
            assert got == model.get(k, b"") or (got == b"" and k in model), (step, k)
        elif op == "remove":
            rc = store.remove(k, force=True)
            assert rc == (0 if k in model else OBJECT_NOT_FOUND) or rc == OBJECT_NOT_FOUND, \
                (step, k, rc)
            model.pop(k, None)
        else:
            assert store.is_exist(k) in ((1 if k in model else 0), 0)


# ---- async -----------------------------------------------------------------------------------------

def test_async_store(cluster):
    import asyncio
    from mooncake.async_store import MooncakeDistributedStoreAsync

    async def main():
        a = MooncakeDistributedStoreAsync()
        rc = await a.async_setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                                 cluster.rpc, tenant_id="t-async")
        assert rc == 0
        rcs = await asyncio.gather(*(a.async_put(f"a{i}", b"v%d" % i) for i in range(16)))
        assert rcs == [0] * 16
        got = await asyncio.gather(*(a.async_get(f"a{i}") for i in range(16)))
        assert got == [b"v%d" % i for i in range(16)]
        assert await a.async_batch_query_prefix([f"a{i}" for i in range(16)] + ["zz"]) == 16
        assert a.get_hostname() == "localhost"
        assert await a.async_remove_all(force=True) == 16
        assert await a.async_close() == 0
        with pytest.raises(AttributeError):
            a.async_nonexistent

    asyncio.run(main())


def test_buffer_pool(store):
    from mooncake.store import BufferPool
    pool = BufferPool(store, max_bytes=1 << 20, max_regions=2, min_size_class=4096)
    with pool.acquire(5000) as lease:
        assert lease.size == 8192 and lease.ptr
        lease.buffer[:5] = b"hello"
        assert store.put_from("pooled", lease.ptr, 5) == 0
        other = pool.acquire(4096, block=False)
        with pytest.raises(RuntimeError):
            pool.acquire(4096, block=False)              # max_regions
        other.release()
    assert store.get("pooled") == b"hello"
    lease = pool.acquire(100)                            # a released region again
    assert store.get_into("pooled", lease.ptr, lease.size) == 5
    assert bytes(lease.buffer[:5]) == b"hello"
    lease.release()
    with pytest.raises(RuntimeError):
        pool.acquire(2 << 20, block=False)               # over max_bytes
    pool.close()
    with pytest.raises(RuntimeError):
        pool.acquire(10)
