#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""store_kv_bench: a key-value benchmark of a MooncakeDistributedStore in the
shape of the original's mooncake-store/benchmarks/store_kv_bench.py
(scenarios write_perf, read_perf, mixed_rw; --io-api plain|zcopy; kv/s,
MiB/s, latency percentiles), for this binding or any module with the same
API: MOONCAKE_STORE_MODULE (default mooncake.store).

Prints one line per phase:
  store_kv_bench <scenario> <phase> io_api=.. value_size=.. errors=.. kv/s=.. MiB/s=.. p50_ms=.. p99_ms=..
with codes=CODE:N,... after a phase that saw errors (-704: a miss, e.g. an
object evicted while the keys were put).  Errors of any phase, the untimed
ones included, make the exit status 1.
"""
import argparse
import ctypes
import importlib
import os
import random
import sys
import threading
import time
import warnings

store_module = importlib.import_module(os.environ.get("MOONCAKE_STORE_MODULE", "mooncake.store"))


def percentile(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


class Lane:
    """One thread's store calls, with its own registered slot for zcopy."""

    def __init__(self, store, args, lane):
        self.store, self.args, self.lane = store, args, lane
        self.value = random.Random(args.rand_seed + lane).randbytes(args.value_size)
        self.buf = self.ptr = None
        if args.io_api == "zcopy":
            self.buf = (ctypes.c_ubyte * args.value_size)()
            self.ptr = ctypes.addressof(self.buf)
            ctypes.memmove(self.ptr, self.value, args.value_size)
            rc = store.register_buffer(self.ptr, args.value_size)
            if rc != 0:
                raise RuntimeError(f"register_buffer: {rc}")

    def close(self):
        if self.ptr:
            self.store.unregister_buffer(self.ptr)

    def put(self, key):
        if self.ptr:
            return self.store.put_from(key, self.ptr, self.args.value_size)
        return self.store.put(key, self.value)

    def get(self, key):
        """0, or the error code (a short read: -1; a miss of get(): OBJECT_NOT_FOUND)."""
        if self.ptr:
            n = self.store.get_into(key, self.ptr, self.args.value_size)
            return 0 if n == self.args.value_size else (n if n < 0 else -1)
        n = len(self.store.get(key))
        return 0 if n == self.args.value_size else (-704 if n == 0 else -1)


def run_phase(store, args, lanes, name, op_of):
    """op_of(lane, i) -> (kind, key); each lane does nr_objects / numjobs ops."""
    per = max(1, args.nr_objects // len(lanes))
    lat = [[] for _ in lanes]
    errors = [0] * len(lanes)
    codes = [{} for _ in lanes]
    start = threading.Barrier(len(lanes) + 1)

    def work(li):
        lane = lanes[li]
        start.wait()
        for i in range(per):
            kind, key = op_of(li, i)
            t0 = time.perf_counter()
            rc = lane.put(key) if kind == "put" else lane.get(key)
            lat[li].append(time.perf_counter() - t0)
            if rc != 0:
                errors[li] += 1
                codes[li][rc] = codes[li].get(rc, 0) + 1

    ths = [threading.Thread(target=work, args=(li,)) for li in range(len(lanes))]
    for t in ths:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in ths:
        t.join()
    dur = time.perf_counter() - t0
    all_lat = [x for v in lat for x in v]
    n = len(all_lat)
    by_code = {}
    for c in codes:
        for k, v in c.items():
            by_code[k] = by_code.get(k, 0) + v
    # errors by code, e.g. "codes=-704:2" (a miss: the object was evicted)
    code_txt = " codes=" + ",".join(f"{k}:{v}" for k, v in sorted(by_code.items())) if by_code else ""
    print(f"store_kv_bench {args.scenario} {name} io_api={args.io_api} value_size={args.value_size} "
          f"numjobs={args.numjobs} ops={n} errors={sum(errors)} kv/s={n / dur:.1f} "
          f"MiB/s={n * args.value_size / dur / (1 << 20):.1f} "
          f"p50_ms={percentile(all_lat, 0.5) * 1e3:.3f} p99_ms={percentile(all_lat, 0.99) * 1e3:.3f}"
          f"{code_txt}",
          flush=True)
    return sum(errors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", choices=["write_perf", "read_perf", "mixed_rw"], required=True)
    ap.add_argument("--local-hostname", default="localhost")
    ap.add_argument("--metadata-server", default="P2PHANDSHAKE")
    ap.add_argument("--master-server", default="127.0.0.1:50051")
    ap.add_argument("--protocol", default="tcp")
    ap.add_argument("--device-name", default="")
    ap.add_argument("--global-segment-size", default=0)
    ap.add_argument("--local-buffer-size", default=1 << 30)
    ap.add_argument("--io-api", choices=["plain", "zcopy"], default="plain")
    ap.add_argument("--numjobs", type=int, default=1)
    ap.add_argument("--nr-objects", type=int, default=128)
    ap.add_argument("--value-size", type=int, default=4096)
    ap.add_argument("--key-prefix", default="kvbench")
    ap.add_argument("--rand-seed", type=int, default=1)
    ap.add_argument("--rwmixread", type=int, default=70)
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes over the keys first")
    ap.add_argument("--repeat", type=int, default=1, help="run the measured phase this many times")
    args = ap.parse_args()

    warnings.simplefilter("ignore", RuntimeWarning)
    store = store_module.MooncakeDistributedStore()
    rc = store.setup(args.local_hostname, args.metadata_server, args.global_segment_size,
                     args.local_buffer_size, args.protocol, args.device_name, args.master_server)
    if rc != 0:
        sys.exit(f"store_kv_bench: setup failed: {rc}")
    lanes = [Lane(store, args, i) for i in range(args.numjobs)]
    key = lambda li, i: f"{args.key_prefix}-{li}-{i}"   # noqa: E731
    errors = 0
    try:
        # The keys read, written and read once untimed (for write_perf too: the
        # first touch of fresh segment pages is not what is measured).
        errors += run_phase(store, args, lanes, "prepare", lambda li, i: ("put", key(li, i)))
        for _ in range(args.warmup):
            errors += run_phase(store, args, lanes, "warmup", lambda li, i: ("get", key(li, i)))
        if args.scenario == "write_perf":
            store.remove_all(force=True)
        for rep in range(args.repeat):
            if args.scenario == "write_perf":
                errors += run_phase(store, args, lanes, "write",
                                    lambda li, i: ("put", f"{key(li, i)}-w{rep}"))
                store.remove_all(force=True)
            elif args.scenario == "read_perf":
                errors += run_phase(store, args, lanes, "read", lambda li, i: ("get", key(li, i)))
            else:
                rng = random.Random(args.rand_seed + rep)
                per = max(1, args.nr_objects // args.numjobs)
                ops = [("get", rng.randrange(per)) if rng.randrange(100) < args.rwmixread else
                       ("put", None) for _ in range(per)]
                errors += run_phase(store, args, lanes, "mixed",
                                    lambda li, i: ("get", key(li, ops[i][1]))
                                    if ops[i][0] == "get" else ("put", f"{key(li, i)}-m{rep}"))
    finally:
        for lane in lanes:
            lane.close()
        store.remove_all(force=True)
        store.close()
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
