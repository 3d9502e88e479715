# SPDX-License-Identifier: Apache-2.0
"""Mooncake Store in C: the Python client.

mooncake.store        MooncakeDistributedStore, ReplicateConfig, SoftPinAction
                      (a C extension over libmooncake)
mooncake.async_store  MooncakeDistributedStoreAsync (async_* wrappers)
"""
__version__ = "0.1.0"
