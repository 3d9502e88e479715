// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tcp.bpf.c - what the daemons cannot see of their data connections: TCP
 * retransmissions (tracepoint tcp:tcp_retransmit_skb, BTF-typed, no
 * kprobes needed), counted per IPv4 connection.  The tracer exports the
 * connections whose local or remote port belongs to a traced process. */
#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct mc_tcp_key);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} tcp_retrans SEC(".maps");

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
	struct mc_tcp_key k = { 0 };
	if (BPF_CORE_READ(sk, __sk_common.skc_family) == 2 /* AF_INET */) {
		k.saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		k.daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	}
	k.sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	k.dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	__u64 one = 1, *n = bpf_map_lookup_elem(&tcp_retrans, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&tcp_retrans, &k, &one, BPF_NOEXIST);
	return 0;
}
