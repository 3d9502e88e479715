# SPDX-License-Identifier: Apache-2.0
"""A client process that contributes a segment (test_contribute.py runs it):
setup(local_hostname, ..., global_segment_size, ...) against the master
argv[1] with argv[2] bytes, prints "ready <get_hostname()>", then obeys
lines on stdin: "close" (close(), prints "closed <rc>"), "put KEY SIZE"
(prints "put <rc>"), "exit"."""
import sys

from mooncake.store import MooncakeDistributedStore


def main():
    s = MooncakeDistributedStore()
    rc = s.setup("localhost", "P2PHANDSHAKE", int(sys.argv[2]), 16 << 20, "tcp", "", sys.argv[1])
    print(f"ready {s.get_hostname()}" if rc == 0 else f"failed {rc}", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[:1] == ["close"]:
            print(f"closed {s.close()}", flush=True)
        elif cmd[:1] == ["put"]:
            print(f"put {s.put(cmd[1], bytes(int(cmd[2])))}", flush=True)
        elif cmd[:1] == ["exit"]:
            break


if __name__ == "__main__":
    main()
