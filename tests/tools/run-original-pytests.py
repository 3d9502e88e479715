#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the original's Python API tests (kvcache-ai/Mooncake
mooncake-wheel/tests/test_distributed_object_store.py, or any test file
written for its mooncake.store) unchanged against this build, as the
original's CI does: one mooncake-master and no node, so that every object
lives on the segments the test's own clients contribute
(setup(global_segment_size)), the master's lease at the 5000 ms the
tests assume (DEFAULT_KV_LEASE_TTL), MASTER_SERVER pointing at it and
PROTOCOL=tcp.

    PYTHONPATH=.output/python tests/tools/run-original-pytests.py FILE [pytest args]

MC_BUILD (default .output) names the build tree.  Exits with pytest's
status.  The original's files are not part of this tree."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from conftest import Cluster  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    test = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        c = Cluster(tmp)
        try:
            c.start(nodes=0, lease_ms=5000)
            env = dict(os.environ, MASTER_SERVER=c.rpc, PROTOCOL="tcp",
                       DEFAULT_KV_LEASE_TTL="5000")
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "-rfE", test, *sys.argv[2:]], env=env,
                               cwd=os.path.dirname(test))
        finally:
            c.stop()
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
