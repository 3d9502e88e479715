# SPDX-License-Identifier: Apache-2.0
"""What an inference engine's connector does (vLLM's MooncakeStoreConnector,
SGLang HiCache): block keys chained by hash, the cached prefix found with
batch_query_prefix (and checked against batch_is_exist), the missing
suffix stored with batch_put_from from one registered buffer, the prefix
loaded with batch_get_into into another, compared byte for byte."""
import ctypes
import hashlib
import os

BLOCK = 64 << 10            # bytes of one KV block
TOKENS = 16                 # tokens per block


def chain_keys(tokens, model="llama-test", rank=0):
    """One key per full block: the hash of the previous key and the block's tokens."""
    keys, prev = [], b"root"
    for i in range(len(tokens) // TOKENS):
        h = hashlib.sha256(prev + bytes(str(tokens[i * TOKENS:(i + 1) * TOKENS]), "ascii"))
        prev = h.digest()
        keys.append(f"{model}@tp{rank}@{h.hexdigest()}")
    return keys


def longest_prefix_by_exist(store, keys):
    res = store.batch_is_exist(keys)
    for i, r in enumerate(res):
        if r != 1:
            return i
    return len(keys)


def test_connector_flow(store):
    rng = os.urandom
    prompt_a = list(range(1000, 1000 + 32 * TOKENS))               # 32 blocks
    prompt_b = prompt_a[:20 * TOKENS] + list(range(5, 5 + 12 * TOKENS))  # shares 20 blocks
    keys_a, keys_b = chain_keys(prompt_a), chain_keys(prompt_b)
    assert keys_a[:20] == keys_b[:20] and keys_a[20] != keys_b[20]

    n = len(keys_a)
    src = (ctypes.c_ubyte * (n * BLOCK))()
    dst = (ctypes.c_ubyte * (n * BLOCK))()
    sp, dp = ctypes.addressof(src), ctypes.addressof(dst)
    assert store.register_buffer(sp, n * BLOCK) == 0
    assert store.register_buffer(dp, n * BLOCK) == 0
    try:
        # Request A: nothing cached; store all its blocks.
        assert store.batch_query_prefix(keys_a) == 0
        blocks = [rng(BLOCK) for _ in range(n)]
        for i, b in enumerate(blocks):
            ctypes.memmove(sp + i * BLOCK, b, BLOCK)
        assert store.batch_put_from(keys_a, [sp + i * BLOCK for i in range(n)], [BLOCK] * n) == \
            [0] * n

        # Request B: the shared prefix is cached, its own suffix is not.
        hit = store.batch_query_prefix(keys_b)
        assert hit == 20 == longest_prefix_by_exist(store, keys_b)
        suffix = keys_b[hit:]
        new_blocks = [rng(BLOCK) for _ in suffix]
        for i, b in enumerate(new_blocks):
            ctypes.memmove(sp + i * BLOCK, b, BLOCK)
        assert store.batch_put_from(suffix, [sp + i * BLOCK for i in range(len(suffix))],
                                    [BLOCK] * len(suffix)) == [0] * len(suffix)
        assert store.batch_query_prefix(keys_b) == len(keys_b)

        # Load B's prefix into the other buffer, exactly.
        got = store.batch_get_into(keys_b[:hit], [dp + i * BLOCK for i in range(hit)],
                                   [BLOCK] * hit)
        assert got == [BLOCK] * hit
        assert ctypes.string_at(dp, hit * BLOCK) == b"".join(blocks[:hit])
        got = store.batch_get_into(suffix, [dp + i * BLOCK for i in range(len(suffix))],
                                   [BLOCK] * len(suffix))
        assert ctypes.string_at(dp, len(suffix) * BLOCK) == b"".join(new_blocks)

        # A hole in the middle of A's chain (evicted, removed): the prefix stops there.
        assert store.remove(keys_a[7], force=True) == 0
        assert store.batch_query_prefix(keys_a) == 7 == longest_prefix_by_exist(store, keys_a)
    finally:
        assert store.unregister_buffer(sp) == 0
        assert store.unregister_buffer(dp) == 0
