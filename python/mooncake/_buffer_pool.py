# SPDX-License-Identifier: Apache-2.0
"""BufferPool: registered buffers for the zero-copy calls, leased and given
back (the original's mooncake.store.BufferPool, as its store_kv_bench.py
uses it).  Each lease is a region of anonymous memory (mmap) registered
with the store; a released region is kept for the next lease of a size it
fits, until close().  Capacity: max_bytes in all (0: no limit) and
max_regions regions (None: no limit); past it, acquire() waits
(block_on_exhaustion, up to timeout seconds) or raises RuntimeError."""
import ctypes
import mmap
import threading
import time


class BufferLease:
    def __init__(self, pool, region):
        self._pool, self._region = pool, region

    @property
    def ptr(self):
        return self._region.ptr

    @property
    def size(self):
        return self._region.size

    @property
    def buffer(self):
        return memoryview(self._region.mm)[: self._region.size]

    def release(self):
        if self._region is not None:
            self._pool._give_back(self._region)
            self._region = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False


class _Region:
    def __init__(self, size):
        self.size = size
        self.mm = mmap.mmap(-1, size)
        self._c = ctypes.c_char.from_buffer(self.mm)
        self.ptr = ctypes.addressof(self._c)

    def free(self):
        del self._c
        self.mm.close()


class BufferPool:
    def __init__(self, store, max_bytes=0, min_size_class=64 * 1024, max_size_class=None,
                 alignment=8 * 1024 * 1024, block_on_exhaustion=True, default_timeout=None,
                 max_regions=None, prewarm_size=None, prewarm_count=0):
        self._store = store
        self._max_bytes = int(max_bytes)
        self._min = max(1, int(min_size_class))
        self._max_regions = max_regions
        self._block = block_on_exhaustion
        self._timeout = default_timeout
        self._cv = threading.Condition()
        self._free = []          # released regions
        self._regions = {}       # ptr -> region
        self._in_use = 0
        self._closed = False
        if prewarm_size is not None and prewarm_count:
            self.prewarm(prewarm_size, prewarm_count)

    def _class(self, size):
        size = max(1, int(size))
        return -(-size // self._min) * self._min

    def _total(self):
        return sum(r.size for r in self._regions.values())

    def _room_for(self, size):
        if self._max_regions is not None and len(self._regions) >= self._max_regions:
            return False
        return not self._max_bytes or self._total() + size <= self._max_bytes

    def _new_region(self, size):
        r = _Region(size)
        rc = self._store.register_buffer(r.ptr, size)
        if rc != 0:
            r.free()
            raise RuntimeError(f"register_buffer failed: {rc}")
        self._regions[r.ptr] = r
        return r

    def acquire(self, size, block=None, timeout=None):
        want = self._class(size)
        block = self._block if block is None else block
        timeout = self._timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while True:
                if self._closed:
                    raise RuntimeError("buffer pool is closed")
                fit = [r for r in self._free if r.size >= want]
                if fit:
                    r = min(fit, key=lambda x: x.size)
                    self._free.remove(r)
                    break
                if self._room_for(want):
                    r = self._new_region(want)
                    break
                if self._free and (not self._max_bytes or
                                   self._total() - sum(f.size for f in self._free) + want
                                   <= self._max_bytes):
                    for f in self._free:   # too small: make room
                        self._store.unregister_buffer(f.ptr)
                        del self._regions[f.ptr]
                        f.free()
                    self._free = []
                    continue
                if not block:
                    raise RuntimeError("buffer pool capacity exceeded")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("buffer pool: no buffer within the timeout")
                self._cv.wait(left)
            self._in_use += 1
            return BufferLease(self, r)

    def buffer(self, size, block=None, timeout=None):
        return self.acquire(size, block, timeout)

    def prewarm(self, size, count):
        leases = [self.acquire(size, block=False) for _ in range(count)]
        for lease in leases:
            lease.release()

    def _give_back(self, r):
        with self._cv:
            self._in_use -= 1
            if self._closed:
                self._store.unregister_buffer(r.ptr)
                self._regions.pop(r.ptr, None)
                r.free()
            else:
                self._free.append(r)
            self._cv.notify_all()

    def close(self):
        with self._cv:
            self._closed = True
            for r in self._free:
                self._store.unregister_buffer(r.ptr)
                self._regions.pop(r.ptr, None)
                r.free()
            self._free = []
            self._cv.notify_all()


RegisteredBufferPool = BufferPool
RegisteredBufferLease = BufferLease
