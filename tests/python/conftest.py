# SPDX-License-Identifier: Apache-2.0
"""pytest fixtures of the Python binding's tests: a real mooncake-master and
two mooncake-node processes from the build tree (MC_BUILD, default
.output), on free ports, state in a temporary directory; stopped (SIGTERM)
at the end of the session.  The binding is imported from PYTHONPATH (the
make target points it at python/ after an in-place build, or at an
installed package)."""
import os
import re
import signal
import subprocess
import time

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("MC_BUILD") or os.path.join(TOP, ".output")


class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.rpc = None
        self.http = None

    def _start(self, name, argv, pattern, timeout=60.0):
        log = open(os.path.join(self.tmp, name + ".log"), "w+b")
        p = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        self.procs.append((name, p, log))
        deadline = time.time() + timeout
        while time.time() < deadline:
            log.seek(0)
            m = re.search(pattern, log.read().decode(errors="replace"))
            if m:
                return m
            if p.poll() is not None:
                break
            time.sleep(0.05)
        log.seek(0)
        raise RuntimeError(f"{name} did not start:\n{log.read().decode(errors='replace')}")

    def start(self, nodes=2, segment_size="1G", lease_ms=None, master_args=()):
        argv = [os.path.join(BUILD, "bin", "mooncake-master"), "--rpc_address=127.0.0.1",
                "--rpc_port=0", "--http_port=0", f"--state_dir={self.tmp}/master",
                *master_args]
        if lease_ms:
            argv.append(f"--lease_ttl_ms={lease_ms}")
        m = self._start("master", argv, r"ready: rpc on 127\.0\.0\.1:(\d+), http on [^,]*:(\d+),")
        self.rpc = f"127.0.0.1:{m.group(1)}"
        self.http = f"127.0.0.1:{m.group(2)}"
        for i in range(nodes):
            self._start(f"node{i}", [
                os.path.join(BUILD, "bin", "mooncake-node"), f"--master={self.rpc}",
                "--data_address=127.0.0.1", "--data_port=0", "--http_port=0",
                f"--segment_size={segment_size}", "--segments=1",
                f"--state_dir={self.tmp}/node{i}", f"--name=py{i}"], r"mounted")

    def rpc_count(self, op):
        """The master's count of requests of op answered (its /metrics)."""
        import urllib.request
        with urllib.request.urlopen(f"http://{self.http}/metrics", timeout=10) as r:
            text = r.read().decode()
        m = re.search(r'^mooncake_master_rpc_requests_total\{op="%s"\} (\d+)' % op, text, re.M)
        return int(m.group(1)) if m else 0

    def stop(self):
        for name, p, log in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()
        # The nodes' segment files (listed in node.id; kept on a clean stop).
        for name in os.listdir(self.tmp):
            try:
                with open(os.path.join(self.tmp, name, "node.id")) as f:
                    ids = [ln.split()[1] for ln in f if ln.startswith("segment ")]
            except OSError:
                continue
            for i in ids:
                try:
                    os.unlink(f"/dev/shm/mooncake-{i}")
                except OSError:
                    pass
        self.procs = []


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    if not os.access(os.path.join(BUILD, "bin", "mooncake-node"), os.X_OK):
        pytest.skip(f"daemons not built in {BUILD}")
    c = Cluster(str(tmp_path_factory.mktemp("cluster")))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def new_store(cluster, local_buffer_size=512 << 20, global_segment_size=0, tenant=None):
    from mooncake.store import MooncakeDistributedStore
    s = MooncakeDistributedStore()
    kw = {"tenant_id": tenant} if tenant else {}
    rc = s.setup("localhost", "P2PHANDSHAKE", global_segment_size, local_buffer_size, "tcp", "",
                 cluster.rpc, **kw)
    assert rc == 0, rc
    return s


@pytest.fixture
def store(cluster, request):
    """A store on a tenant of its own: each test starts empty."""
    s = new_store(cluster, tenant="t-" + re.sub(r"\W", "_", request.node.name)[:100])
    yield s
    s.remove_all(force=True)
    s.close()
