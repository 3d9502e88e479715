/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.c - lifecycle, options, registered buffers and the metadata calls
 * (exist, remove, stat, list) of include/mooncake/client.h.
 *
 * Test hook: MC_TEST_READ_DELAY_MS=N in the environment when the client is
 * created makes every replica read take N ms longer (a sleep after the
 * transfer, before the lease check), so tests can provoke LEASE_EXPIRED
 * with a master started with a small --lease_ttl_ms.  Unset: no effect.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "client/client-rdma.h"
#include "proto/handshake.h"
#include "segsrv/segsrv.h"
#include "util/hash.h"
#include "util/macro.h"

#define DEFAULT_MASTER "127.0.0.1:50051"
#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_FAILOVER_WAIT_MS 15000		/* client.h: failover_wait_ms */
#define DEFAULT_TCP_STRIPES 2u			/* client.h: tcp_stripes */
/* A stripe costs a thread's wake-up on each side (tens of microseconds,
 * over 100 on an idle VM core): a lone 1 MiB get over one connection was
 * 20% faster than in two stripes of 512 KiB here (2 vCPUs), a hot one 30%;
 * stripes of 1 MiB (a 2 MiB value) gain (cluster.sh (f), bench-baseline
 * loopback_rtt_after_idle). */
#define DEFAULT_TCP_STRIPE_SIZE (1u << 20)
#define MIN_TCP_STRIPE_SIZE (64u << 10)
#define DEFAULT_RPC_SPIN_US 50
#define DEFAULT_LIST_LIMIT 1000u

/* The first published version of each options struct ends at this field. */
#define OPTS_MIN_SZ(T, last) (offsetof(T, last) + sizeof(((T *)0)->last))
#define OPT_HAS(o, T, f) ((o)->sz >= offsetof(T, f) + sizeof(((T *)0)->f))

int mc_check_key(const void *key, size_t klen)
{
	if (!key || klen == 0 || klen > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	return 0;
}

/* A decimal number from the environment, optionally negative ("-N":
 * -(N) where *neg is allowed); 0 when unset or not a number. */
static uint64_t env_num(const char *name, bool *neg)
{
	const char *v = getenv(name);
	*neg = v && *v == '-';
	if (!v || !*(v += *neg))
		return 0;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	return (errno || *end) ? 0 : (uint64_t)x;
}

static uint64_t env_u64(const char *name)
{
	bool neg;
	uint64_t x = env_num(name, &neg);
	return neg ? 0 : x;
}

/* An int of at most 10^9 ms either way (more: 0). */
static int env_int(const char *name)
{
	bool neg;
	uint64_t x = env_num(name, &neg);
	return x > 1000000000u ? 0 : neg ? -(int)x : (int)x;
}

/* A secret or token file: opts' path, else the environment's, else none. */
static int read_key(const char *path, const char *env, size_t min_len, uint8_t **ret,
		    size_t *ret_len)
{
	char err[8];
	if (!path)
		path = getenv(env);
	if (!path || !*path)
		return 0;
	return mc_hs_key_read(env, path, min_len, ret, ret_len, err, sizeof(err));
}

/* The contributed segment (client.h), mounted before mc_client_new returns. */
static int contribute(struct mc_client *c, const struct mc_client_opts *o)
{
	struct mc_segsrv_config sc = {
		.master = c->master, .secret = c->secret, .secret_len = c->secret_len,
		.size = o->segment_size, .host = o->segment_host, .bind = o->segment_bind,
		.port_min = o->segment_port_min, .port_max = o->segment_port_max,
	};
	return mc_segsrv_start(&sc, c->timeout_ms ? c->timeout_ms : DEFAULT_TIMEOUT_MS,
			       &c->segsrv);
}

MC_API int mc_client_segment_endpoint(const struct mc_client *c, char *buf, size_t len)
{
	if (!c || !buf)
		return MC_ERR_INVALID_PARAMS;
	if (!c->segsrv)
		return MC_ERR_SEGMENT_NOT_FOUND;
	const char *ep = mc_segsrv_endpoint(c->segsrv);
	if (strlen(ep) >= len)
		return MC_ERR_BUFFER_OVERFLOW;
	memcpy(buf, ep, strlen(ep) + 1);
	return 0;
}

MC_API int mc_client_new(const struct mc_client_opts *opts, struct mc_client **ret)
{
	struct mc_client_opts o = { .sz = sizeof(o) };
	if (!ret)
		return MC_ERR_INVALID_PARAMS;
	if (opts) {
		if (opts->sz < OPTS_MIN_SZ(struct mc_client_opts, client_id))
			return MC_ERR_INVALID_PARAMS;
		memcpy(&o, opts, MC_MIN(opts->sz, sizeof(o)));
		o.sz = sizeof(o);
		if (!OPT_HAS(opts, struct mc_client_opts, disable_shm))
			o.disable_shm = false;
		if (!OPT_HAS(opts, struct mc_client_opts, token_file))
			o.cluster_secret_file = o.token_file = NULL;
	}
	const char *master = o.master && *o.master ? o.master : DEFAULT_MASTER;
	const char *tenant = o.tenant ? o.tenant : "";
	if (strlen(master) >= sizeof(((struct mc_client *)0)->master) ||
	    strlen(tenant) > MC_MAX_TENANT_LEN)
		return MC_ERR_INVALID_PARAMS;

	struct mc_client *c = calloc(1, sizeof(*c));
	if (!c)
		return MC_ERR_NO_MEMORY;
	mc_workers_init(&c->workers);
	snprintf(c->master, sizeof(c->master), "%s", master);
	snprintf(c->tenant, sizeof(c->tenant), "%s", tenant);
	c->timeout_ms = o.timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : o.timeout_ms < 0 ? 0 : o.timeout_ms;
	if (o.client_id) {
		uint64_t hi = 0, lo = 0;
		for (int i = 0; i < 8; i++) {
			hi = hi << 8 | o.client_id[i];
			lo = lo << 8 | o.client_id[8 + i];
		}
		c->id = (struct mc_uuid){ hi, lo };
	} else if (mc_uuid_random(&c->id) < 0) {
		free(c);
		return MC_ERR_INTERNAL_ERROR;
	}
	int r;
	if ((r = read_key(o.cluster_secret_file, "MOONCAKE_CLUSTER_SECRET_FILE", MC_HS_MIN_SECRET,
			  &c->secret, &c->secret_len)) < 0 ||
	    (r = read_key(o.token_file, "MOONCAKE_TOKEN_FILE", 1, &c->token, &c->token_len)) < 0) {
		mc_hs_key_free(c->secret, c->secret_len);
		free(c);
		return r;
	}
	c->cred = (struct mc_rpc_cred){ .secret = c->secret, .secret_len = c->secret_len,
					.token = c->token, .token_len = c->token_len,
					.client_id = c->id };
	const char *ds = getenv("MC_DISABLE_SHM");
	c->use_shm = !o.disable_shm && !(ds && *ds && strcmp(ds, "0") != 0);
	const char *ne = getenv("MC_PUT_NODE_END");
	c->node_end = !ne || !*ne || !strcmp(ne, "auto") ? MC_NODE_END_AUTO :
		      !strcmp(ne, "0") ? MC_NODE_END_NEVER : MC_NODE_END_ALWAYS;
	const char *rl = getenv("MC_PUT_RELAY");
	c->relay = !rl || !*rl || !strcmp(rl, "auto") ? MC_NODE_END_AUTO :
		   !strcmp(rl, "0") ? MC_NODE_END_NEVER : MC_NODE_END_ALWAYS;
	const char *dst = getenv("MC_DISK_STAGE");
	c->disk_stage = !(dst && !strcmp(dst, "0"));
	c->test_read_delay_ms = env_u64("MC_TEST_READ_DELAY_MS");
	c->test_write_delay_ms = env_u64("MC_TEST_FS_WRITE_DELAY_MS");
	c->tcp_stripes = o.tcp_stripes ? o.tcp_stripes : (unsigned)env_u64("MC_TCP_STRIPES");
	c->tcp_stripe_size = o.tcp_stripe_size ? o.tcp_stripe_size : env_u64("MC_TCP_STRIPE_SIZE");
	if (!c->tcp_stripes)
		c->tcp_stripes = DEFAULT_TCP_STRIPES;
	if (!c->tcp_stripe_size)
		c->tcp_stripe_size = DEFAULT_TCP_STRIPE_SIZE;
	const char *se = getenv("MC_RPC_SPIN_US");
	int spin = o.rpc_spin_us ? o.rpc_spin_us :
		   se && *se ? env_int("MC_RPC_SPIN_US") : DEFAULT_RPC_SPIN_US;
	c->rpc_spin_us = spin > 0 ? (unsigned)spin : 0;
	const char *ts = getenv("MC_TCP_SPLICE");
	c->tcp_splice = o.tcp_splice > 0 || (o.tcp_splice == 0 && !(ts && !strcmp(ts, "0")));
	const char *dc = getenv("MC_CACHE_DESCRIPTORS");
	bool cache = o.descriptor_cache > 0 || (o.descriptor_cache == 0 &&
		     (o.cache_descriptors || !(dc && strcmp(dc, "0") == 0)));
	uint64_t entries = o.descriptor_cache_entries ? o.descriptor_cache_entries
						      : env_u64("MC_CACHE_ENTRIES");
	if (c->tcp_stripes > MC_CREW_MAX || c->tcp_stripe_size < MIN_TCP_STRIPE_SIZE ||
	    c->rpc_spin_us > MC_RPC_SPIN_MAX_US ||
	    entries > MC_DCACHE_MAX_ENTRIES) {
		mc_hs_key_free(c->secret, c->secret_len);
		mc_hs_key_free(c->token, c->token_len);
		free(c);
		return MC_ERR_INVALID_PARAMS;
	}
	if (cache && (r = mc_dcache_new(c, (unsigned)entries, &c->dcache)) < 0) {
		mc_hs_key_free(c->secret, c->secret_len);
		mc_hs_key_free(c->token, c->token_len);
		free(c);
		return r;
	}
	if ((r = mc_rdma_new(&o, &c->rdma)) < 0) {
		mc_dcache_free(c->dcache);
		free(c);
		return r;
	}
	pthread_mutex_init(&c->nodes_mu, NULL);
	pthread_mutex_init(&c->bufs_mu, NULL);
	pthread_mutex_init(&c->relay_mu, NULL);
	int fw = o.failover_wait_ms ? o.failover_wait_ms : env_int("MC_FAILOVER_WAIT_MS");
	mc_pool_init(&c->mpool, c->master, strlen(c->master), c->timeout_ms,
		     fw == 0 ? DEFAULT_FAILOVER_WAIT_MS : fw);
	c->mpool.cred = &c->cred;
	c->mpool.spin_us = c->rpc_spin_us;

	/* Reach the master once now: a wrong address fails here, not later. */
	struct mc_conn *cn = NULL;
	r = mc_pool_get_wait(&c->mpool, &cn);
	if (r < 0) {
		mc_client_free(c);
		return r;
	}
	mc_pool_put(&c->mpool, cn);
	if (o.segment_size && (r = contribute(c, &o)) < 0) {
		mc_client_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

MC_API void mc_client_free(struct mc_client *c)
{
	if (!c)
		return;
	mc_segsrv_stop(c->segsrv, true);
	mc_workers_destroy(&c->workers);
	mc_client_nodes_free(c);
	mc_rdma_free(c->rdma);
	mc_dcache_free(c->dcache);
	mc_pool_destroy(&c->mpool);
	pthread_mutex_destroy(&c->nodes_mu);
	pthread_mutex_destroy(&c->bufs_mu);
	pthread_mutex_destroy(&c->relay_mu);
	free(c->bufs);
	mc_hs_key_free(c->secret, c->secret_len);
	mc_hs_key_free(c->token, c->token_len);
	free(c);
}

MC_API void mc_buf_free(void *buf)
{
	free(buf);
}

/* ---- nodes ------------------------------------------------------------------ */

static struct mc_node *node_find(struct mc_node *n, struct mc_bytes ep)
{
	for (; n; n = n->next)
		if (strlen(n->endpoint) == ep.len && memcmp(n->endpoint, ep.p, ep.len) == 0)
			return n;
	return NULL;
}

int mc_client_node(struct mc_client *c, struct mc_bytes ep, struct mc_node **ret)
{
	if (ep.len == 0 || ep.len > MC_MAX_SEGMENT_NAME || memchr(ep.p, 0, ep.len))
		return MC_ERR_INVALID_REPLICA;
	struct mc_node *n = node_find(__atomic_load_n(&c->nodes, __ATOMIC_ACQUIRE), ep);
	if (n) {
		*ret = n;
		return 0;
	}
	pthread_mutex_lock(&c->nodes_mu);
	n = node_find(c->nodes, ep);	/* added since */
	if (!n && (n = calloc(1, sizeof(*n)))) {
		memcpy(n->endpoint, ep.p, ep.len);
		mc_pool_init(&n->pool, n->endpoint, ep.len, c->timeout_ms, 0);
		n->pool.cred = &c->cred;
		n->pool.spin_us = c->rpc_spin_us;
		pthread_mutex_init(&n->shm_mu, NULL);
		n->next = c->nodes;
		__atomic_store_n(&c->nodes, n, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&c->nodes_mu);
	if (!n)
		return MC_ERR_NO_MEMORY;
	*ret = n;
	return 0;
}

void mc_client_nodes_free(struct mc_client *c)
{
	struct mc_node *n, *nx;
	for (n = c->nodes; n; n = nx) {
		nx = n->next;
		mc_shm_unmap_all(n);
		mc_rdma_peer_free(n->rdma);
		mc_pool_destroy(&n->pool);
		pthread_mutex_destroy(&n->shm_mu);
		free(n);
	}
	c->nodes = NULL;
}

/* ---- registered buffers ----------------------------------------------------- */

MC_API int mc_register_buffer(struct mc_client *c, void *ptr, size_t len)
{
	if (!c || !ptr || len == 0 || (uintptr_t)ptr + len < (uintptr_t)ptr)
		return MC_ERR_INVALID_PARAMS;
	uintptr_t s = (uintptr_t)ptr;
	int r = 0;
	pthread_mutex_lock(&c->bufs_mu);
	for (size_t i = 0; i < c->nbufs; i++)
		if (s < c->bufs[i].start + c->bufs[i].len && c->bufs[i].start < s + len) {
			r = MC_ERR_INVALID_PARAMS;
			goto out;
		}
	if (c->nbufs == c->bufs_cap) {
		size_t nc = c->bufs_cap ? 2 * c->bufs_cap : 8;
		struct mc_regbuf *nb = realloc(c->bufs, nc * sizeof(*nb));
		if (!nb) {
			r = MC_ERR_NO_MEMORY;
			goto out;
		}
		c->bufs = nb;
		c->bufs_cap = nc;
	}
	c->bufs[c->nbufs++] = (struct mc_regbuf){ s, len };
out:
	pthread_mutex_unlock(&c->bufs_mu);
	return r;
}

MC_API int mc_unregister_buffer(struct mc_client *c, void *ptr)
{
	if (!c || !ptr)
		return MC_ERR_INVALID_PARAMS;
	int r = MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(&c->bufs_mu);
	for (size_t i = 0; i < c->nbufs; i++)
		if (c->bufs[i].start == (uintptr_t)ptr) {
			mc_rdma_forget_buffer(c->rdma, ptr);
			c->bufs[i] = c->bufs[--c->nbufs];
			r = 0;
			break;
		}
	pthread_mutex_unlock(&c->bufs_mu);
	return r;
}

bool mc_client_is_registered(struct mc_client *c, const void *ptr, size_t len)
{
	uintptr_t s = (uintptr_t)ptr;
	bool ok = false;
	pthread_mutex_lock(&c->bufs_mu);
	for (size_t i = 0; i < c->nbufs && !ok; i++)
		ok = s >= c->bufs[i].start && s - c->bufs[i].start <= c->bufs[i].len &&
		     len <= c->bufs[i].len - (s - c->bufs[i].start);
	pthread_mutex_unlock(&c->bufs_mu);
	return ok;
}

/* ---- exist / remove / stat -------------------------------------------------- */

MC_API int mc_exist(struct mc_client *c, const void *key, size_t klen, bool *exists)
{
	int r;
	if (!c || !exists || (r = mc_check_key(key, klen)) < 0)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_exist_key_req q = { .tenant = mc_client_tenant(c), .key = MC_BYTES(key, klen) };
	struct mc_msg_exist_key_resp p;
	struct mc_conn *cn = NULL;
	r = mc_pool_call(&c->mpool, &cn, MC_OP_EXIST_KEY, &q, &p, NULL);
	if (r == 0)
		*exists = p.exists;
	mc_pool_put(&c->mpool, cn);
	return r;
}

MC_API int mc_remove(struct mc_client *c, const void *key, size_t klen, bool force)
{
	if (!c || mc_check_key(key, klen) < 0)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_remove_req q = { .tenant = mc_client_tenant(c), .key = MC_BYTES(key, klen),
				       .force = force };
	struct mc_msg_remove_resp p;
	struct mc_conn *cn = NULL;
	mc_dcache_drop(c->dcache, key, klen);
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_REMOVE, &q, &p, NULL);
	mc_pool_put(&c->mpool, cn);
	return r;
}

MC_API int mc_remove_by_regex(struct mc_client *c, const char *regex, bool force,
				uint64_t *removed)
{
	if (!c || !regex || !*regex || strlen(regex) > MC_PROTO_MAX_REGEX)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_remove_by_regex_req q = { .tenant = mc_client_tenant(c),
						.regex = mc_bytes_str(regex), .force = force };
	struct mc_msg_remove_by_regex_resp p;
	struct mc_conn *cn = NULL;
	mc_dcache_clear(c->dcache);   /* our own gets see our removes */
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_REMOVE_BY_REGEX, &q, &p, NULL);
	if (r == 0 && removed)
		*removed = p.removed;
	mc_pool_put(&c->mpool, cn);
	return r;
}

MC_API int mc_remove_all(struct mc_client *c, bool force, uint64_t *removed)
{
	if (!c)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_remove_all_req q = { .tenant = mc_client_tenant(c), .force = force };
	struct mc_msg_remove_all_resp p;
	struct mc_conn *cn = NULL;
	mc_dcache_clear(c->dcache);   /* our own gets see our removes */
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_REMOVE_ALL, &q, &p, NULL);
	if (r == 0 && removed)
		*removed = p.removed;
	mc_pool_put(&c->mpool, cn);
	return r;
}

MC_API int mc_pin(struct mc_client *c, const void *key, size_t klen, uint64_t ttl_ms)
{
	if (!c || mc_check_key(key, klen) < 0 || ttl_ms == 0)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_pin_req q = { .tenant = mc_client_tenant(c), .key = MC_BYTES(key, klen),
				    .ttl_ms = ttl_ms };
	struct mc_msg_pin_resp p;
	struct mc_conn *cn = NULL;
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_PIN, &q, &p, NULL);
	mc_pool_put(&c->mpool, cn);
	return r;
}

MC_API int mc_unpin(struct mc_client *c, const void *key, size_t klen)
{
	if (!c || mc_check_key(key, klen) < 0)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_unpin_req q = { .tenant = mc_client_tenant(c), .key = MC_BYTES(key, klen) };
	struct mc_msg_unpin_resp p;
	struct mc_conn *cn = NULL;
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_UNPIN, &q, &p, NULL);
	mc_pool_put(&c->mpool, cn);
	return r;
}

static void copy_str(char *dst, size_t cap, struct mc_bytes b)
{
	size_t n = b.len < cap - 1 ? b.len : cap - 1;
	memcpy(dst, b.p, n);
	dst[n] = 0;
}

static void replica_info(const struct mc_replica_desc *d, struct mc_replica_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->type = d->type;
	ri->status = d->status;
	switch (d->type) {
	case MC_REPLICA_MEMORY:
	case MC_REPLICA_NOF_SSD:
		ri->transport = d->mem.transport;
		mc_uuid_fmt(d->mem.segment_id, ri->segment_id);
		copy_str(ri->endpoint, sizeof(ri->endpoint), d->mem.endpoint);
		ri->offset = d->mem.offset;
		ri->size = d->mem.size;
		break;
	case MC_REPLICA_DISK:
		copy_str(ri->endpoint, sizeof(ri->endpoint), d->disk.file_path);
		ri->size = d->disk.object_size;
		break;
	case MC_REPLICA_LOCAL_DISK:	/* the node's disk tier, read through its data plane */
		ri->transport = MC_TRANSPORT_TCP;
		mc_uuid_fmt(d->local_disk.segment_id, ri->segment_id);
		copy_str(ri->endpoint, sizeof(ri->endpoint), d->local_disk.endpoint);
		ri->size = d->local_disk.object_size;
		break;
	case MC_REPLICA_DFS:
		copy_str(ri->endpoint, sizeof(ri->endpoint), d->dfs.file_path);
		ri->offset = d->dfs.offset;
		ri->size = d->dfs.object_size;
		break;
	}
}

MC_API int mc_stat(struct mc_client *c, const void *key, size_t klen, struct mc_object_stat *st)
{
	if (!c || !st || st->sz < sizeof(*st) || mc_check_key(key, klen) < 0)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_get_replica_list_req q = { .tenant = mc_client_tenant(c),
						 .key = MC_BYTES(key, klen), .stat = true };
	struct mc_msg_get_replica_list_resp p;
	struct mc_conn *cn = NULL;
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_GET_REPLICA_LIST, &q, &p, NULL);
	if (r == 0) {
		struct mc_object_stat s = { .sz = sizeof(s), .size = p.size,
					    .has_checksum = p.has_checksum, .checksum = p.checksum,
					    .lease_ttl_ms = p.lease_ttl_ms };
		for (uint32_t i = 0; i < p.n_replicas && i < MC_MAX_REPLICAS; i++)
			replica_info(&p.replicas[i], &s.replicas[s.n_replicas++]);
		*st = s;
	}
	mc_pool_put(&c->mpool, cn);
	return r;
}

/* ---- list ------------------------------------------------------------------- */

MC_API int mc_list(struct mc_client *c, const struct mc_list_opts *opts, struct mc_key_list **ret)
{
	struct mc_list_opts o = { .sz = sizeof(o) };
	regex_t re;
	bool have_re = false;
	int r = 0;

	if (!c || !ret)
		return MC_ERR_INVALID_PARAMS;
	if (opts) {
		if (opts->sz < OPTS_MIN_SZ(struct mc_list_opts, cursor_len))
			return MC_ERR_INVALID_PARAMS;
		memcpy(&o, opts, MC_MIN(opts->sz, sizeof(o)));
	}
	if ((o.prefix_len && !o.prefix) || (o.prefix_len && o.regex) ||
	    (o.cursor_len && !o.cursor) || o.cursor_len > MC_PROTO_MAX_CURSOR ||
	    o.prefix_len > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	if (o.regex) {
		if (strlen(o.regex) > MC_PROTO_MAX_REGEX ||
		    regcomp(&re, o.regex, REG_EXTENDED | REG_NOSUB) != 0)
			return MC_ERR_INVALID_PARAMS;
		have_re = true;
	}
	uint32_t limit = o.limit ? o.limit : DEFAULT_LIST_LIMIT;
	if (limit > MC_PROTO_MAX_LIST)
		limit = MC_PROTO_MAX_LIST;

	struct mc_wbuf kb;		/* the keys taken, each as BYTES: u32 length, bytes */
	size_t nkeys = 0;
	uint8_t cursor[MC_PROTO_MAX_CURSOR];
	size_t cursor_len = o.cursor_len;
	if (cursor_len)
		memcpy(cursor, o.cursor, cursor_len);
	bool first = true;
	mc_wbuf_init(&kb, SIZE_MAX);
	/*
	 * Each page asks for at most the keys still missing, so that every key
	 * of a page can be taken and the server's cursor stays exact (it cannot
	 * resume in the middle of a page).
	 */
	while (nkeys < limit && (first || cursor_len)) {
		first = false;
		struct mc_msg_get_all_keys_req q = { .tenant = mc_client_tenant(c),
						     .cursor = MC_BYTES(cursor, cursor_len),
						     .limit = (uint32_t)(limit - nkeys) };
		struct mc_msg_get_all_keys_resp p;
		struct mc_conn *cn = NULL;
		r = mc_pool_call(&c->mpool, &cn, MC_OP_GET_ALL_KEYS, &q, &p, NULL);
		for (uint32_t i = 0; r == 0 && i < p.n_keys; i++) {
			struct mc_bytes k = p.keys[i];
			if (o.prefix_len && (k.len < o.prefix_len || memcmp(k.p, o.prefix, o.prefix_len)))
				continue;
			if (have_re) {
				regmatch_t m = { .rm_so = 0, .rm_eo = (regoff_t)k.len };
				if (regexec(&re, k.len ? (const char *)k.p : "", 0, &m, REG_STARTEND))
					continue;
			}
			if ((r = mc_wbuf_put_bytes(&kb, k, MC_MAX_KEY_LEN)) == 0)
				nkeys++;
		}
		if (r == 0) {
			cursor_len = p.next_cursor.len <= sizeof(cursor) ? p.next_cursor.len : 0;
			if (cursor_len)
				memcpy(cursor, p.next_cursor.p, cursor_len);
		}
		mc_pool_put(&c->mpool, cn);
		if (r < 0)
			break;
	}
	if (have_re)
		regfree(&re);
	if (r == 0) {
		/* One allocation: the list, the key array, the cursor, the key bytes. */
		size_t blen = kb.len - 4 * nkeys;
		size_t sz = sizeof(struct mc_key_list) + nkeys * sizeof(struct mc_key) + cursor_len +
			    blen + 1;
		struct mc_key_list *l = malloc(sz);
		if (!l) {
			r = MC_ERR_NO_MEMORY;
		} else {
			struct mc_key *keys = (struct mc_key *)(l + 1);
			uint8_t *cur = (uint8_t *)(keys + nkeys);
			uint8_t *bytes = cur + cursor_len;
			struct mc_rbuf rb;
			if (cursor_len)
				memcpy(cur, cursor, cursor_len);
			mc_rbuf_init(&rb, kb.p, kb.len);
			for (size_t i = 0; i < nkeys; i++) {
				struct mc_bytes k = { NULL, 0 };
				mc_rbuf_get_bytes(&rb, MC_MAX_KEY_LEN, &k);
				if (k.len)
					memcpy(bytes, k.p, k.len);
				keys[i] = (struct mc_key){ bytes, k.len };
				bytes += k.len;
			}
			*l = (struct mc_key_list){ .n = nkeys, .keys = keys, .next_cursor = cur,
						   .next_cursor_len = cursor_len };
			*ret = l;
		}
	}
	mc_wbuf_free(&kb);
	return r;
}

MC_API void mc_key_list_free(struct mc_key_list *l)
{
	free(l);
}
