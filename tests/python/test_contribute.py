# SPDX-License-Identifier: Apache-2.0
"""Client-contributed segments: setup(..., global_segment_size, ...) serves
that much of the process's memory to the cluster.  Against a master with no
node at all (client_ttl_ms 1 s), so every object lives on a client's
segment: get_hostname() and its port range; two processes, one contributing
(contributor.py), the other putting and getting through it; close() and
kill -9 of the contributor (objects gone); replica_num=2 across two
contributors survives one of them closing."""
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pytest

from mooncake.store import MooncakeDistributedStore, ReplicateConfig

from conftest import Cluster, new_store

HERE = os.path.dirname(os.path.abspath(__file__))
NO_AVAILABLE_HANDLE = -200


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """A master without nodes."""
    c = Cluster(str(tmp_path_factory.mktemp("bare")))
    try:
        c.start(nodes=0, master_args=("--client_ttl_ms=1000",))
        yield c
    finally:
        c.stop()


class Contributor:
    def __init__(self, cluster, size=64 << 20):
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "contributor.py"),
                                   cluster.rpc, str(size)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        line = self.p.stdout.readline().split()
        assert line[:1] == ["ready"], line
        self.hostname = line[1]

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().split()

    def stop(self):
        if self.p.poll() is None:
            try:   # a clean exit removes its segment file
                self.p.stdin.write("exit\n")
                self.p.stdin.flush()
                self.p.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
        self.p.wait()


def endpoint_of(store, key):
    (r,) = store.get_replica_desc(key)
    return r.get_memory_descriptor().buffer_descriptor.transport_endpoint


def wait_gone(store, keys, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if all(store.is_exist(k) == 0 for k in keys):
            return time.time() - t0
        time.sleep(0.1)
    return None


def test_get_hostname_and_port(bare):
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 16 << 20, 16 << 20, "tcp", "", bare.rpc) == 0
    host, port = s.get_hostname().split(":")
    assert host == "localhost" and 12300 <= int(port) <= 14300
    # the port answers (the data plane listens there)
    socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
    assert s.close() == 0
    # a fixed port
    with socket.socket() as t:
        t.bind(("127.0.0.1", 0))
        free = t.getsockname()[1]
    assert s.setup(f"localhost:{free}", "P2PHANDSHAKE", "16MB", "16MB", "tcp", "",
                   bare.rpc) == 0
    assert s.get_hostname() == f"localhost:{free}"
    assert s.close() == 0
    # size 0 contributes nothing: there is no space in this cluster
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", bare.rpc) == 0
    assert s.get_hostname() == "localhost"
    assert s.put("nowhere", b"v") == NO_AVAILABLE_HANDLE
    s.close()
    # a bad port
    with pytest.warns(RuntimeWarning):
        assert s.setup("localhost:http", "P2PHANDSHAKE", 16 << 20, 0, "tcp", "", bare.rpc) != 0


def test_teardown_removes_own_objects(bare):
    s = new_store(bare, global_segment_size=32 << 20)
    other = new_store(bare)
    assert s.put("td", b"hello") == 0
    assert endpoint_of(other, "td") == s.get_hostname()
    assert s.close() == 0
    assert other.get("td") == b"" and other.is_exist("td") == 0
    other.close()


def test_two_processes_close(bare):
    c = Contributor(bare)
    s = new_store(bare)
    try:
        vals = {f"tp-{i}": os.urandom(random.randint(1, 2 << 20)) for i in range(16)}
        for k, v in vals.items():
            assert s.put(k, v) == 0
        for k, v in vals.items():
            assert s.get(k) == v
            assert endpoint_of(s, k) == c.hostname
        assert c.ask("close") == ["closed", "0"]
        # Gone for the cluster.  s itself, which holds read leases on them
        # (its descriptor cache, client.h), may still read the leased bytes
        # from its mapping of the segment until they end, never others.
        fresh = new_store(bare)
        try:
            for k, v in vals.items():
                assert fresh.get(k) == b"" and s.is_exist(k) == 0
                assert s.get(k) in (b"", v)
        finally:
            fresh.close()
        assert s.put("tp-after", b"v") == NO_AVAILABLE_HANDLE
    finally:
        c.stop()
        s.close()


def test_two_processes_kill9(bare):
    c = Contributor(bare)
    s = new_store(bare)
    try:
        keys = [f"k9-{i}" for i in range(8)]
        for k in keys:
            assert s.put(k, os.urandom(4096)) == 0
        os.kill(c.p.pid, signal.SIGKILL)
        c.p.wait()
        waited = wait_gone(s, keys, 15)
        assert waited is not None, "objects of a killed contributor still listed after 15 s"
        assert s.put("k9-after", b"v") == NO_AVAILABLE_HANDLE
    finally:
        c.stop()
        s.close()


def test_replica_num_2_across_contributors(bare):
    c1, c2 = Contributor(bare), Contributor(bare)
    s = new_store(bare)
    try:
        cfg = ReplicateConfig()
        cfg.replica_num = 2
        v = os.urandom(1 << 20)
        assert s.put("r2", v, cfg) == 0
        eps = sorted(r.get_memory_descriptor().buffer_descriptor.transport_endpoint
                     for r in s.get_replica_desc("r2"))
        assert eps == sorted([c1.hostname, c2.hostname])
        assert c1.ask("close") == ["closed", "0"]
        assert s.get("r2") == v
        assert [r.get_memory_descriptor().buffer_descriptor.transport_endpoint
                for r in s.get_replica_desc("r2")] == [c2.hostname]
        assert c2.ask("close") == ["closed", "0"]
        assert s.is_exist("r2") == 0
        assert s.get("r2") in (b"", v)   # s's lease (test_two_processes_close)
        fresh = new_store(bare)
        try:
            assert fresh.get("r2") == b""
        finally:
            fresh.close()
    finally:
        c1.stop()
        c2.stop()
        s.close()


def segment_maps(pid):
    """The contributed segments (memfds "mooncake-<id>") a process maps."""
    with open(f"/proc/{pid}/maps") as f:
        return {ln.split(None, 5)[5].strip() for ln in f
                if len(ln.split(None, 5)) == 6 and "/memfd:mooncake-" in ln}


def memfd_paths(pid):
    """/proc/PID/fd/N of the contributed segments a process holds."""
    d = f"/proc/{pid}/fd"
    return [f"{d}/{n}" for n in os.listdir(d)
            if os.readlink(f"{d}/{n}").startswith("/memfd:mooncake-")]


def test_colocated_reader_maps_the_segment(bare):
    """A contributed segment is a memfd that a reader on the same host maps
    (no TCP), by the path /proc/PID/fd/N the master hands out; it goes with
    close() and with the process."""
    c = Contributor(bare)
    s = new_store(bare)
    try:
        (fdpath,) = memfd_paths(c.p.pid)
        (name,) = segment_maps(c.p.pid)
        v = os.urandom(1 << 20)
        assert s.put("colo", v) == 0 and endpoint_of(s, "colo") == c.hostname
        assert s.get("colo") == v
        assert name in segment_maps(os.getpid())   # read through the mapping
        assert c.ask("close") == ["closed", "0"]
        assert memfd_paths(c.p.pid) == []
    finally:
        c.stop()
        s.close()
    assert not os.path.exists(fdpath)
