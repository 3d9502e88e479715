/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-handshake.c - what the cluster secret costs (proto/handshake.h,
 * lib/rpc/rpc-admit.c), in process, so that the figures do not drown
 * in the noise of a shared machine.  Prints "name value unit" lines, each
 * the median of RUNS rounds, the two variants of a pair interleaved:
 *   handshake_cpu              one whole handshake, both sides, no sockets (us)
 *   request_check              the identity check every request gets (ns)
 *   connect_<plain|secret>     connections/s to an RPC server on loopback
 *                              (TCP connect, handshake, HELLO, close)
 *   connect_nohandshake        the same without the handshake (as before it)
 *   ping_<plain|secret>        request round trips/s on one open connection
 *   ping_cost                  their difference in percent (>0: secret slower)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc/rpc-server.h"
#include "proto/msg-ids.h"
#include "rpc/rpc-conn.h"
#include "util/clock.h"
#include "util/sock.h"

#define RUNS 5

static const char SECRET[] = "bench-cluster-secret-0123456789abcdef";

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static void die(const char *what, int r)
{
	fprintf(stderr, "bench-handshake: %s: %s\n", what, mc_error_name(r));
	exit(1);
}

/* One handshake, both sides in this thread. */
static void one_handshake(struct mc_rpc_admit *a)
{
	struct mc_rpc_session s;
	struct mc_hs_hello h = { .flags = MC_HS_F_SECRET, .client_id = { 1, 2 } };
	struct mc_hs_proof p;
	uint8_t c1[MC_HS_HELLO_LEN], s1[MC_HS_CHALLENGE_LEN], c2[MC_HS_PROOF_LEN], s2[MC_HS_VERDICT_LEN];
	uint8_t mac[MC_HS_MAC_LEN];
	const uint8_t *k = (const uint8_t *)SECRET;
	mc_rpc_session_init(&s, a, 0);
	mc_hs_nonce(h.nonce);
	mc_hs_hello_encode(&h, c1);
	if (mc_rpc_session_hello(&s, a, c1, sizeof(c1), s1))
		die("hello", MC_ERR_AUTH_FAILED);
	mc_hs_mac(MC_HS_MAC_SERVER, k, sizeof(SECRET) - 1, c1, s1, 40, mac);
	memset(&p, 0, sizeof(p));
	mc_hs_mac(MC_HS_MAC_CLIENT, k, sizeof(SECRET) - 1, c1, s1, sizeof(s1), p.secret_proof);
	mc_hs_proof_encode(&p, c2);
	if (mc_rpc_session_proof(&s, a, c2, sizeof(c2), s2) || !mc_hs_mac_eq(mac, s1 + 40))
		die("proof", MC_ERR_AUTH_FAILED);
}

static int h_ping(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return 0;
}

static struct mc_rpc_server *server(bool secret, char *addr, size_t len)
{
	struct mc_rpc_handlers h = { 0 };
	struct mc_rpc_server *s;
	h.fn[MC_OPI_HELLO] = mc_rpc_hello;
	h.fn[MC_OPI_PING] = h_ping;
	struct mc_rpc_server_config c = { .address = "127.0.0.1", .workers = 1 };
	if (secret)
		c.admit = (struct mc_rpc_admit_config){ .secret = (const uint8_t *)SECRET,
							.secret_len = sizeof(SECRET) - 1 };
	int r = mc_rpc_server_start(&c, &h, NULL, &s);
	if (r < 0)
		die("server", r);
	snprintf(addr, len, "127.0.0.1:%u", (unsigned)mc_rpc_server_port(s));
	return s;
}

static struct mc_rpc_cred cred(bool secret)
{
	return (struct mc_rpc_cred){ .secret = secret ? (const uint8_t *)SECRET : NULL,
				     .secret_len = secret ? sizeof(SECRET) - 1 : 0,
				     .client_id = { 1, 2 } };
}

static double connects(const char *addr, bool secret, int n)
{
	struct mc_rpc_cred c = cred(secret);
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < n; i++) {
		struct mc_rpc_conn *conn;
		int r = mc_rpc_conn_open_cred(addr, 5000, &c, &conn);
		if (r < 0)
			die("connect", r);
		mc_rpc_conn_close(conn);
	}
	return n / ((double)(mc_now_ns() - t0) / 1e9);
}

/* As before the handshake: connect, HELLO as the first frame, close. */
static double connects_raw(const char *addr, int n)
{
	struct sockaddr_storage sa;
	socklen_t len;
	struct mc_wbuf w;
	uint8_t hdr[MC_FRAME_HDR_LEN], body[256];
	struct mc_frame_hdr h;
	struct mc_msg_hello_req q = { .proto_version = MC_PROTO_VERSION,
				      .client_version = mc_bytes_str(MC_VERSION_STRING) };
	if (mc_sock_parse(addr, &sa, &len) < 0)
		die("address", MC_ERR_INVALID_PARAMS);
	mc_wbuf_init(&w, 4096);
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < n; i++) {
		int fd = mc_sock_connect(&sa, len, 5000);
		mc_wbuf_reset(&w);
		if (fd < 0 || mc_proto_encode_request(&w, MC_OP_HELLO, 1, &q, 0) < 0 ||
		    mc_write_full(fd, w.p, w.len) < 0 || mc_read_full(fd, hdr, sizeof(hdr)) < 0 ||
		    mc_frame_hdr_decode(hdr, &h) < 0 || h.status || h.body_len > sizeof(body) ||
		    mc_read_full(fd, body, h.body_len) < 0)
			die("raw connect", MC_ERR_RPC_FAIL);
		close(fd);
	}
	mc_wbuf_free(&w);
	return n / ((double)(mc_now_ns() - t0) / 1e9);
}

static double pings(struct mc_rpc_conn *conn, int n)
{
	struct mc_arena a;
	union mc_msg_any p;
	struct mc_msg_ping_req q = { .client_id = { 1, 2 } };
	mc_arena_init(&a);
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < n; i++) {
		int r = mc_rpc_call(conn, MC_OP_PING, &q, &p, &a, NULL);
		if (r < 0)
			die("ping", r);
		mc_arena_reset(&a);
	}
	double rate = n / ((double)(mc_now_ns() - t0) / 1e9);
	mc_arena_free(&a);
	return rate;
}

int main(void)
{
	struct mc_rpc_admit *a;
	struct mc_rpc_admit_config ac = { .secret = (const uint8_t *)SECRET,
					  .secret_len = sizeof(SECRET) - 1 };
	double v[RUNS], w[RUNS];
	if (mc_rpc_admit_new(&ac, NULL, NULL, &a) < 0)
		die("admit", MC_ERR_NO_MEMORY);

	for (int r = 0; r < RUNS; r++) {
		const int n = 5000;
		uint64_t t0 = mc_now_ns();
		for (int i = 0; i < n; i++)
			one_handshake(a);
		v[r] = (double)(mc_now_ns() - t0) / 1e3 / n;
	}
	printf("handshake_cpu %.1f us\n", median(v, RUNS));

	/* the per-request check of a bound connection (PUT_START: client id and tenant) */
	struct mc_rpc_session s = { .bound = true, .client_id = { 1, 2 } };
	union mc_msg_any req;
	memset(&req, 0, sizeof(req));
	req.put_start_req.client_id = s.client_id;
	const struct mc_op_info *put = mc_op_info(MC_OP_PUT_START);
	for (int r = 0; r < RUNS; r++) {
		const int n = 2000000;
		uint64_t t0 = mc_now_ns();
		for (int i = 0; i < n; i++)
			if (mc_rpc_session_check(&s, a, put, &req))
				die("check", MC_ERR_ILLEGAL_CLIENT);
		v[r] = (double)(mc_now_ns() - t0) / n;
	}
	printf("request_check %.1f ns\n", median(v, RUNS));

	char pa[64], sa[64];
	struct mc_rpc_server *plain = server(false, pa, sizeof(pa));
	struct mc_rpc_server *sec = server(true, sa, sizeof(sa));
	double x[RUNS];
	for (int r = 0; r < RUNS; r++) {
		x[r] = connects_raw(pa, 500);
		v[r] = connects(pa, false, 500);
		w[r] = connects(sa, true, 500);
	}
	printf("connect_nohandshake %.0f conn/s\n", median(x, RUNS));
	printf("connect_plain %.0f conn/s\n", median(v, RUNS));
	printf("connect_secret %.0f conn/s\n", median(w, RUNS));

	struct mc_rpc_conn *cp, *cs;
	struct mc_rpc_cred c0 = cred(false), c1 = cred(true);
	int rc;
	if ((rc = mc_rpc_conn_open_cred(pa, 5000, &c0, &cp)) < 0 ||
	    (rc = mc_rpc_conn_open_cred(sa, 5000, &c1, &cs)) < 0)
		die("open", rc);
	for (int r = 0; r < RUNS; r++) {
		v[r] = pings(cp, 20000);
		w[r] = pings(cs, 20000);
	}
	double mp = median(v, RUNS), ms = median(w, RUNS);
	printf("ping_plain %.0f ops/s\n", mp);
	printf("ping_secret %.0f ops/s\n", ms);
	printf("ping_cost %.1f %%\n", (mp - ms) * 100 / mp);
	mc_rpc_conn_close(cp);
	mc_rpc_conn_close(cs);
	mc_rpc_server_stop(plain);
	mc_rpc_server_stop(sec);
	mc_rpc_admit_free(a);
	return 0;
}
