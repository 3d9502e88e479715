/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-etcd-txn.c - what one etcd does for one writer alone: the etcd
 * oplog's transaction (etcd-txn.h: compare the leader key's and the batch
 * key's create_revision, put the batch key, range both on failure), sent
 * back to back by one thread over one kept gRPC connection, as the
 * master's flusher sends them at pipeline 1 with a single client.  No
 * master, no node, no client: the ceiling of a lone client's put rate
 * with oplog=etcd, since each of its puts waits for one such transaction.
 *
 *   bench-etcd-txn ENDPOINT [SECONDS [VALUE_BYTES]]
 *
 * ENDPOINT is etcd's client URL, or $MC_BENCH_ETCD; without either the
 * program says it was skipped (`make bench` runs every bench-* without
 * arguments; tests/bench/etcd.sh runs this one against its etcd).
 * VALUE_BYTES (default 160: one PutEnd record and a batch header) is the
 * batch's size.  Prints
 *   etcdtxn txn_per_s <n> txn/s
 *   etcdtxn txn_p50_us <n> us
 *   etcdtxn txn_p99_us <n> us
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "master/etcd-txn.h"
#include "master/etcd.h"
#include "mooncake/error.h"
#include "util/clock.h"

#define MAX_TXN (1u << 20)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void die(const char *what, struct mc_etcd *e)
{
	fprintf(stderr, "bench-etcd-txn: %s: %s\n", what, e ? mc_etcd_error(e) : "");
	exit(1);
}

int main(int argc, char **argv)
{
	const char *ep = argc > 1 ? argv[1] : getenv("MC_BENCH_ETCD");
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	size_t vlen = argc > 3 ? strtoul(argv[3], NULL, 10) : 160;
	char lk[96], bk[96], lv[32], bprefix[64];
	struct mc_etcd *e;
	json_t *req, *ans;
	uint64_t *lat, t0, end;
	uint8_t *val, *pb = NULL;
	size_t n = 0, pbn = 0;
	int64_t leader_rev;

	if (!ep || !*ep) {
		printf("etcdtxn skipped: no etcd endpoint (argument or MC_BENCH_ETCD)\n");
		return 0;
	}
	if (secs <= 0 || vlen == 0 || vlen > (1u << 20)) {
		fprintf(stderr, "usage: bench-etcd-txn ENDPOINT [SECONDS>0 [VALUE_BYTES 1..1048576]]\n");
		return 2;
	}
	if (mc_etcd_new(ep, 5000, &e))
		die("mc_etcd_new", NULL);
	/* the leader key the transactions are fenced on, as a leader's */
	snprintf(bprefix, sizeof(bprefix), "/bench-etcd-txn/%d/", (int)getpid());
	snprintf(lk, sizeof(lk), "%sleader", bprefix);
	snprintf(lv, sizeof(lv), "bench");
	req = json_pack("{s:o, s:o}", "key", mc_etcd_b64(lk, strlen(lk)),
			"value", mc_etcd_b64(lv, strlen(lv)));
	if (!req || mc_etcd_call(e, "/v3/kv/put", req, &ans))
		die("put the leader key", e);
	leader_rev = mc_etcd_int(json_object_get(ans, "header"), "revision");
	json_decref(req);
	json_decref(ans);
	if (leader_rev <= 0)
		die("put the leader key: no revision in the answer", NULL);

	val = malloc(vlen);
	lat = malloc(MAX_TXN * sizeof(*lat));
	if (!val || !lat)
		die("out of memory", NULL);
	memset(val, 0x5a, vlen);
	end = mc_now_ns() + (uint64_t)(secs * 1e9);
	t0 = mc_now_ns();
	while (n < MAX_TXN && mc_now_ns() < end) {
		struct mc_etcd_txn t = { .ncmp = 2, .nrange = 2 };
		struct mc_etcd_txn_ans a;
		const uint8_t *msg;
		size_t mn;
		uint64_t s = mc_now_ns();

		snprintf(bk, sizeof(bk), "%soplog/%020zu", bprefix, n);
		t.cmp[0] = (struct mc_etcd_cmp){ lk, strlen(lk), leader_rev };
		t.cmp[1] = (struct mc_etcd_cmp){ bk, strlen(bk), 0 };
		t.put_key = bk, t.put_klen = strlen(bk), t.put_val = val, t.put_vlen = vlen;
		t.range_key[0] = lk, t.range_klen[0] = strlen(lk);
		t.range_key[1] = bk, t.range_klen[1] = strlen(bk);
		if (!pb) {	/* every request has the same size: fixed-width keys */
			pbn = mc_etcd_txn_size(&t);
			if (!(pb = malloc(pbn)))
				die("out of memory", NULL);
		}
		mc_etcd_txn_encode(&t, pb);
		if (mc_etcd_grpc(e, "/etcdserverpb.KV/Txn", pb, pbn, &msg, &mn))
			die("txn", e);
		if (mc_etcd_txn_decode(msg, mn, &a) || !a.succeeded)
			die("txn: not succeeded", NULL);
		lat[n++] = mc_now_ns() - s;
	}
	t0 = mc_now_ns() - t0;
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("etcdtxn txn_per_s %.0f txn/s\n", n / (t0 / 1e9));
	printf("etcdtxn txn_p50_us %.0f us\n", lat[n / 2] / 1e3);
	printf("etcdtxn txn_p99_us %.0f us\n", lat[n * 99 / 100] / 1e3);
	free(pb);
	free(lat);
	free(val);
	mc_etcd_free(e);
	return 0;
}
