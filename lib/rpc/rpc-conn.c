/* SPDX-License-Identifier: Apache-2.0 */
/* rpc-conn.c - see rpc-conn.h. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "proto/handshake.h"
#include "rpc/rpc-conn.h"
#include "rpc/rpc-splice.h"
#include "util/clock.h"
#include "util/sock.h"
#include "util/syserr.h"

/* Responses are read through a small buffer: header and body (and the head
 * of an attachment) usually arrive in one recv(), one syscall per call
 * instead of two or three.  Large pieces bypass it and go straight to
 * their destination. */
#define RBUF_SIZE (64u << 10)
/* A connection idle for longer than this is checked before reuse. */
#define IDLE_CHECK_MS 200u

struct mc_rpc_conn {
	int fd;
	bool broken;
	uint32_t next_id;
	uint64_t last_ms;        /* end of the last call */
	unsigned spin_us;        /* see rpc-conn.h "Waiting for a reply" */
	uint64_t wait_ns;        /* how long the last reply took to start coming */
	struct mc_rpc_conn_stats st;
	struct mc_wbuf out;
	uint8_t *body;
	size_t body_cap;
	uint8_t rbuf[RBUF_SIZE];
	size_t rpos, rlen;
};

/* Exactly n bytes into dst (dst NULL: drop them). */
static int conn_read(struct mc_rpc_conn *c, void *dst, uint64_t n)
{
	uint8_t *d = dst;
	while (n) {
		if (c->rpos < c->rlen) {
			size_t k = c->rlen - c->rpos < n ? c->rlen - c->rpos : (size_t)n;
			if (d) {
				memcpy(d, c->rbuf + c->rpos, k);
				d += k;
			}
			c->rpos += k;
			n -= k;
			continue;
		}
		if (d && n >= RBUF_SIZE / 2) {
			int r = mc_read_full(c->fd, d, (size_t)n);
			return r;
		}
		ssize_t got;
		do
			got = recv(c->fd, c->rbuf, RBUF_SIZE, 0);
		while (got < 0 && errno == EINTR);
		if (got < 0)
			return mc_err_from_errno(errno);
		if (got == 0)
			return MC_ERR_RPC_FAIL;	/* EOF */
		c->rpos = 0;
		c->rlen = (size_t)got;
	}
	return 0;
}

/* The threads of the process polling for a reply now, and how many may. */
static unsigned spinners;
static unsigned spin_limit(void)
{
	static unsigned limit;
	unsigned l = __atomic_load_n(&limit, __ATOMIC_RELAXED);
	if (!l) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		l = n >= 8 ? (unsigned)(n / 4) : 1;
		__atomic_store_n(&limit, l, __ATOMIC_RELAXED);
	}
	return l;
}

/* Polls (spin_us set) for the reply to a request sent at t0, into the read
 * buffer (see rpc-conn.h).  Whatever it does not take (EOF, an error, a reply later
 * than spin_us) the blocking read that follows meets. */
static void conn_spin(struct mc_rpc_conn *c, uint64_t t0)
{
	uint64_t budget = (uint64_t)c->spin_us * 1000u;
	if (c->rpos < c->rlen || c->wait_ns > budget)
		return;
	if (__atomic_add_fetch(&spinners, 1, __ATOMIC_RELAXED) > spin_limit()) {
		__atomic_sub_fetch(&spinners, 1, __ATOMIC_RELAXED);
		return;
	}
	c->st.spins++;
	for (;;) {
		ssize_t got = recv(c->fd, c->rbuf, RBUF_SIZE, MSG_DONTWAIT);
		if (got > 0) {
			c->rpos = 0;
			c->rlen = (size_t)got;
			c->st.spin_hits++;
			break;
		}
		if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
		    mc_now_ns() - t0 >= budget)
			break;
		sched_yield();
	}
	__atomic_sub_fetch(&spinners, 1, __ATOMIC_RELAXED);
}

void mc_rpc_conn_set_spin(struct mc_rpc_conn *c, unsigned spin_us)
{
	c->spin_us = spin_us < MC_RPC_SPIN_MAX_US ? spin_us : MC_RPC_SPIN_MAX_US;
	c->wait_ns = 0;
}

void mc_rpc_conn_get_stats(const struct mc_rpc_conn *c, struct mc_rpc_conn_stats *ret)
{
	*ret = c->st;
}

bool mc_rpc_conn_ok(const struct mc_rpc_conn *c)
{
	return c && !c->broken;
}

bool mc_rpc_conn_check_idle(struct mc_rpc_conn *c)
{
	if (!c || c->broken)
		return false;
	/* Recently used: a close by the peer shows up as a failed call, which
	 * the pool retries on a fresh connection where that is safe. */
	if (c->rpos != c->rlen) {   /* bytes nobody asked for: the stream is off */
		c->broken = true;
		return false;
	}
	if (mc_coarse_ms() - c->last_ms < IDLE_CHECK_MS)
		return true;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	int n = poll(&pfd, 1, 0);
	if (n != 0) {	/* readable (EOF, stray bytes), an error, or poll failed */
		c->broken = true;
		return false;
	}
	return true;
}

/* The connection is unusable after error e: a timeout stays one, anything
 * else is RPC_FAIL. */
static int fail(struct mc_rpc_conn *c, int e)
{
	c->broken = true;
	return e == MC_ERR_RPC_TIMEOUT ? MC_ERR_RPC_TIMEOUT : MC_ERR_RPC_FAIL;
}

/* flags: MSG_MORE when an attachment follows by splice. */
static int send_iov(int fd, struct iovec *iov, int n, int flags)
{
	while (n > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return mc_err_from_errno(errno);
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int mc_rpc_call(struct mc_rpc_conn *c, uint16_t op, const void *req, void *resp,
		struct mc_arena *arena, struct mc_rpc_attach *at)
{
	uint64_t send_len = 0;
	uint8_t hdr[MC_FRAME_HDR_LEN];
	struct mc_frame f;
	struct iovec iov[1 + 8];
	int r;

	if (!c || c->broken)
		return MC_ERR_RPC_FAIL;
	if (at && at->nsend > 8)
		return MC_ERR_INVALID_PARAMS;
	for (int i = 0; at && i < at->nsend; i++)
		send_len += at->send[i].iov_len;
	uint32_t id = c->next_id++;
	mc_wbuf_reset(&c->out);
	if ((r = mc_proto_encode_request(&c->out, op, id, req, send_len)) < 0)
		return r;
	iov[0] = (struct iovec){ c->out.p, c->out.len };
	for (int i = 0; at && i < at->nsend; i++)
		iov[1 + i] = at->send[i];
	if (at && at->splice && send_len >= MC_SPLICE_MIN) {
		/* the frame by sendmsg, the attachment by splice (or sendmsg after all) */
		if ((r = send_iov(c->fd, iov, 1, MSG_MORE)) < 0)
			return fail(c, r);
		r = mc_splice_send(c->fd, iov + 1, at->nsend);
		if (r == MC_ERR_NOT_SUPPORTED)
			r = send_iov(c->fd, iov + 1, at->nsend, 0);
	} else {
		r = send_iov(c->fd, iov, 1 + (at ? at->nsend : 0), 0);
	}
	if (r < 0)
		return fail(c, r);

	uint64_t t0 = 0;	/* polling: when the request went */
	if (c->spin_us) {
		t0 = mc_now_ns();
		conn_spin(c, t0);
	}
	if ((r = conn_read(c, hdr, sizeof(hdr))) < 0)
		return fail(c, r);
	if (t0)
		c->wait_ns = mc_now_ns() - t0;
	if (mc_frame_hdr_decode(hdr, &f.hdr) < 0 || !mc_frame_is_response(&f.hdr) ||
	    f.hdr.req_id != id || f.hdr.opcode != op)
		return fail(c, MC_ERR_DESERIALIZE_FAIL);
	if (f.hdr.body_len > c->body_cap) {
		uint8_t *nb = realloc(c->body, f.hdr.body_len);
		if (!nb)
			return fail(c, MC_ERR_NO_MEMORY);
		c->body = nb;
		c->body_cap = f.hdr.body_len;
	}
	if ((r = conn_read(c, c->body, f.hdr.body_len)) < 0)
		return fail(c, r);
	f.body = c->body;
	if (f.hdr.attach_len) {
		if (!at || !at->recv || f.hdr.attach_len > at->recv_cap) {
			if ((r = conn_read(c, NULL, f.hdr.attach_len)) < 0)
				return fail(c, r);
			return MC_ERR_BUFFER_OVERFLOW;
		}
		if ((r = conn_read(c, at->recv, f.hdr.attach_len)) < 0)
			return fail(c, r);
	}
	c->last_ms = mc_coarse_ms();
	if (at)
		at->recv_len = f.hdr.attach_len;
	if (f.hdr.status)
		return f.hdr.status;
	const struct mc_op_info *info;
	if (resp && (r = mc_proto_decode(&f, arena, &info, resp)) < 0)
		return fail(c, MC_ERR_DESERIALIZE_FAIL);
	return 0;
}

/* The client side of proto/handshake.h: C1, check S1, C2, S2. */
static int conn_handshake(struct mc_rpc_conn *c, const struct mc_rpc_cred *cred)
{
	static const struct mc_rpc_cred none;
	uint8_t c1[MC_HS_HELLO_LEN], s1[MC_HS_CHALLENGE_LEN], c2[MC_HS_PROOF_LEN];
	uint8_t s2[MC_HS_VERDICT_LEN], mac[MC_HS_MAC_LEN];
	struct mc_hs_hello h = { 0 };
	struct mc_hs_challenge ch;
	struct mc_hs_proof pr;
	struct mc_hs_verdict v;
	int r;
	if (!cred)
		cred = &none;
	memset(&pr, 0, sizeof(pr));
	if (mc_hs_nonce(h.nonce) < 0)
		return MC_ERR_INTERNAL_ERROR;
	h.flags = (cred->secret_len ? MC_HS_F_SECRET : 0) | (cred->token_len ? MC_HS_F_TOKEN : 0);
	h.client_id = cred->client_id;
	if (cred->token_len)
		mc_hs_token_id(cred->token, cred->token_len, h.token_id);
	mc_hs_hello_encode(&h, c1);
	struct iovec iov = { c1, sizeof(c1) };
	if ((r = send_iov(c->fd, &iov, 1, 0)) < 0 || (r = conn_read(c, s1, sizeof(s1))) < 0)
		return fail(c, r);
	if (mc_hs_challenge_decode(s1, sizeof(s1), &ch) < 0)
		return fail(c, MC_ERR_DESERIALIZE_FAIL);
	if (ch.status) {
		c->broken = true;
		return MC_ERR_AUTH_FAILED;
	}
	/* The server proves the secret first. */
	mc_hs_mac(MC_HS_MAC_SERVER, cred->secret, cred->secret_len, c1, s1, 40, mac);
	if (!mc_hs_mac_eq(mac, ch.proof)) {
		c->broken = true;
		return MC_ERR_AUTH_FAILED;
	}
	mc_hs_mac(MC_HS_MAC_CLIENT, cred->secret, cred->secret_len, c1, s1, sizeof(s1),
		  pr.secret_proof);
	if (cred->token_len)
		mc_hs_mac(MC_HS_MAC_TOKEN, cred->token, cred->token_len, c1, s1, sizeof(s1),
			  pr.token_proof);
	mc_hs_proof_encode(&pr, c2);
	iov = (struct iovec){ c2, sizeof(c2) };
	if ((r = send_iov(c->fd, &iov, 1, 0)) < 0 || (r = conn_read(c, s2, sizeof(s2))) < 0)
		return fail(c, r);
	if (mc_hs_verdict_decode(s2, sizeof(s2), &v) < 0)
		return fail(c, MC_ERR_DESERIALIZE_FAIL);
	if (v.status) {
		c->broken = true;
		return MC_ERR_AUTH_FAILED;
	}
	return 0;
}

int mc_rpc_conn_open(const char *addr, int timeout_ms, struct mc_rpc_conn **ret)
{
	return mc_rpc_conn_open_cred(addr, timeout_ms, NULL, ret);
}

static int open_one(const char *addr, int timeout_ms, const struct mc_rpc_cred *cred,
		    struct mc_rpc_conn **ret, char *leader, size_t leader_len);

/* The index of one in the comma-separated list (UINT_MAX: not there). */
static unsigned list_index(const char *addrs, const char *one)
{
	size_t len = strlen(one);
	unsigned j = 0;
	for (const char *q = addrs;; j++) {
		if (!strncmp(q, one, len) && (q[len] == ',' || !q[len]))
			return j;
		if (!(q = strchr(q, ',')))
			return UINT_MAX;
		q++;
	}
}

int mc_rpc_conn_open_list(const char *addrs, int timeout_ms, const struct mc_rpc_cred *cred,
			  unsigned *cur, struct mc_rpc_conn **ret)
{
	return mc_rpc_conn_open_list_why(addrs, timeout_ms, cred, cur, ret, NULL);
}

int mc_rpc_conn_open_list_why(const char *addrs, int timeout_ms, const struct mc_rpc_cred *cred,
			      unsigned *cur, struct mc_rpc_conn **ret, bool *no_leader_can)
{
	unsigned n = 1, start = __atomic_load_n(cur, __ATOMIC_RELAXED);
	unsigned cut_off = 0, unsure = 0;	/* answers "?etcd", "?" */
	int r = MC_ERR_INVALID_PARAMS;
	for (const char *p = addrs; *p; p++)
		n += *p == ',';
	for (unsigned k = 0; k < n; k++) {
		unsigned i = (start + k) % n;
		const char *p = addrs;
		for (unsigned j = 0; j < i; j++)
			p = strchr(p, ',') + 1;
		size_t len = strcspn(p, ",");
		char one[256];
		if (!len || len >= sizeof(one))
			continue;
		memcpy(one, p, len);
		one[len] = 0;
		char leader[MC_MAX_SEGMENT_NAME + 1] = "";
		if ((r = open_one(one, timeout_ms, cred, ret, leader, sizeof(leader))) == 0) {
			__atomic_store_n(cur, i, __ATOMIC_RELAXED);
			return 0;
		}
		/* "?etcd" may name the last leader the standby knew: tried too */
		const char *to = leader;
		size_t ne = strlen(MC_HELLO_NO_ETCD);
		if (r == MC_ERR_NOT_LEADER && !strncmp(leader, MC_HELLO_NO_ETCD, ne) &&
		    (!leader[ne] || leader[ne] == ' ')) {
			cut_off++;
			to = leader[ne] ? leader + ne + 1 : "";
		} else if (r == MC_ERR_NOT_LEADER && !strcmp(leader, "?")) {
			unsure++;
		}
		if (r == MC_ERR_NOT_LEADER && to[0] && to[0] != '?' && strcmp(to, one)) {
			int r2 = open_one(to, timeout_ms, cred, ret, NULL, 0);
			if (r2 == 0) {	/* next time from the leader's index, if listed */
				unsigned j = list_index(addrs, to);
				if (j < n)
					__atomic_store_n(cur, j, __ATOMIC_RELAXED);
				return 0;
			}
		}
		if (r == MC_ERR_AUTH_FAILED || r == MC_ERR_NO_MEMORY)
			return r;
	}
	/* (a second unsure leader cannot be: a standby from before "?etcd") */
	if (no_leader_can)
		*no_leader_can = cut_off && unsure <= 1 && cut_off + unsure == n;
	return r;
}

int mc_rpc_conn_open_cred(const char *addr, int timeout_ms, const struct mc_rpc_cred *cred,
			  struct mc_rpc_conn **ret)
{
	return open_one(addr, timeout_ms, cred, ret, NULL, 0);
}

/* leader (may be NULL): a standby's leader address. */
static int open_one(const char *addr, int timeout_ms, const struct mc_rpc_cred *cred,
		    struct mc_rpc_conn **ret, char *leader, size_t leader_len)
{
	struct sockaddr_storage sa;
	socklen_t len;

	if (mc_sock_parse(addr, &sa, &len) < 0)
		return MC_ERR_INVALID_PARAMS;
	int fd = mc_sock_connect(&sa, len, timeout_ms);
	if (fd < 0)
		return fd == MC_ERR_RPC_TIMEOUT ? MC_ERR_RPC_TIMEOUT : MC_ERR_RPC_FAIL;
	if (timeout_ms > 0) {
		struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	struct mc_rpc_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return MC_ERR_NO_MEMORY;
	}
	c->fd = fd;
	c->next_id = 1;
	mc_wbuf_init(&c->out, MC_PROTO_MAX_BODY + MC_FRAME_HDR_LEN);

	int r = conn_handshake(c, cred);
	if (r < 0) {
		mc_rpc_conn_close(c);
		return r;
	}
	struct mc_arena a;
	struct mc_msg_hello_req q = { .proto_version = MC_PROTO_VERSION,
				      .client_version = mc_bytes_str(MC_VERSION_STRING) };
	struct mc_msg_hello_resp p;
	mc_arena_init(&a);
	r = mc_rpc_call(c, MC_OP_HELLO, &q, &p, &a, NULL);
	if (r == 0 && p.leader.len) {	/* a standby */
		if (leader && p.leader.len < leader_len) {
			memcpy(leader, p.leader.p, p.leader.len);
			leader[p.leader.len] = 0;
		}
		r = MC_ERR_NOT_LEADER;
	}
	mc_arena_free(&a);
	if (r < 0) {
		mc_rpc_conn_close(c);
		return r;
	}
	*ret = c;
	return 0;
}

struct mc_rpc_conn *mc_rpc_conn_close(struct mc_rpc_conn *c)
{
	if (!c)
		return NULL;
	if (c->fd >= 0)
		close(c->fd);
	mc_wbuf_free(&c->out);
	free(c->body);
	free(c);
	return NULL;
}
