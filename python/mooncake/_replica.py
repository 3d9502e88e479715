# SPDX-License-Identifier: Apache-2.0
"""Replica descriptors as get_replica_desc returns them (the original's
ReplicaDescriptor / MemoryDescriptor / Descriptor attribute names)."""
import enum


class ReplicaStatus(enum.IntEnum):
    UNDEFINED = 0
    INITIALIZED = 1
    PROCESSING = 2
    COMPLETE = 3
    REMOVED = 4
    FAILED = 5


class Descriptor:
    """Where a memory replica's bytes are: size, buffer_address (the offset
    in its segment here), transport_endpoint (the node's host:port)."""

    def __init__(self, size, buffer_address, transport_endpoint, segment_id):
        self.size = size
        self.buffer_address = buffer_address
        self.transport_endpoint = transport_endpoint
        self.segment_id = segment_id

    def __repr__(self):
        return (f"<Descriptor size={self.size} buffer_address={self.buffer_address} "
                f"transport_endpoint={self.transport_endpoint}>")


class MemoryDescriptor:
    def __init__(self, buffer_descriptor):
        self.buffer_descriptor = buffer_descriptor


class ReplicaDescriptor:
    def __init__(self, rtype, status, mem):
        self._type = rtype
        self.status = status
        self._mem = mem

    def is_memory_replica(self):
        return self._type == 0

    def is_disk_replica(self):
        return self._type == 1

    def is_local_disk_replica(self):
        return self._type == 2

    def get_memory_descriptor(self):
        if self._mem is None:
            raise RuntimeError("not a memory replica")
        return self._mem

    def __repr__(self):
        return f"<ReplicaDescriptor status={self.status!r} {self._mem!r}>"


def _make(rtype, status, endpoint, offset, size, segment_id):
    try:
        st = ReplicaStatus(status)
    except ValueError:
        st = status
    mem = MemoryDescriptor(Descriptor(size, offset, endpoint, segment_id)) if rtype == 0 else None
    return ReplicaDescriptor(rtype, st, mem)
