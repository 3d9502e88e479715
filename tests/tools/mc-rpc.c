/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mc-rpc - send one request to a master (or node) over the binary protocol
 * and print the response's status name (and the interesting fields).
 *
 *   mc-rpc HOST:PORT hello [PROTO_VERSION]
 *   mc-rpc HOST:PORT ping CLIENT
 *   mc-rpc HOST:PORT mount CLIENT SEGMENT NAME SIZE      (endpoint = HOST:PORT of the segment name)
 *   mc-rpc HOST:PORT unmount CLIENT SEGMENT
 *   mc-rpc HOST:PORT put KEY SIZE CLIENT                 (put_start + put_end)
 *   mc-rpc HOST:PORT put_start KEY SIZE CLIENT [REPLICAS] [TENANT]  (the put stays in progress)
 *   mc-rpc HOST:PORT put_end KEY CLIENT                   PutEnd of a put_start
 *   mc-rpc HOST:PORT put_wt KEY SIZE CLIENT               put_start with write_through
 *                                                         (also prints " ldisk=ENDPOINT,
 *                                                         SEGMENT,DISKKEY,GRANT")
 *   mc-rpc HOST:PORT exist KEY
 *   mc-rpc HOST:PORT get KEY
 *   mc-rpc HOST:PORT where KEY [TENANT]                   (get, and the replicas)
 *   mc-rpc HOST:PORT remove KEY
 *   mc-rpc HOST:PORT op OPCODE                            (an empty body)
 *
 * The node's data plane, raw (HOST:PORT a node's endpoint):
 *
 *   mc-rpc HOST:PORT read SEGMENT OFFSET LENGTH [GRANT]   DATA_READ; prints the
 *                                                         bytes=N hex=FIRST16
 *   mc-rpc HOST:PORT write SEGMENT OFFSET LENGTH [GRANT] [BYTE]   DATA_WRITE of
 *                                                         LENGTH bytes BYTE (0x41)
 *   mc-rpc HOST:PORT stat [GRANT]                          DATA_STAT
 *   mc-rpc HOST:PORT disk_write SEGMENT OFFSET SIZE DISKKEY GRANT DISKGRANT
 *                                                         DATA_DISK_WRITE (hex, "-": none)
 *   mc-rpc HOST:PORT write_end SEGMENT OFFSET LENGTH GRANT CLIENT KEY [BYTE]
 *                                                         DATA_WRITE_END: write and
 *                                                         end the put of KEY by CLIENT
 *
 *   mc-rpc HOST:PORT relay SEGMENT PGRANT CLIENT KEY LENGTH [BYTE] [TENANT]
 *                                                         DATA_PUT: a whole put of
 *                                                         KEY by CLIENT under a PUT grant
 *
 * And the master's side of that, as a node would send it:
 *
 *   mc-rpc HOST:PORT node_start NODE CLIENT KEY SIZE SEGMENT
 *                                                         BATCH_NODE_PUT_START of one
 *                                                         item; prints " item=STATUS"
 *                                                         (and " offset=N")
 *   mc-rpc HOST:PORT pgrant KEY SIZE CLIENT [TENANT]       put_start asking for a PUT
 *                                                         grant: " pgrant=HEX" before
 *                                                         the replicas
 *
 *   mc-rpc HOST:PORT node_end NODE CLIENT KEY SEGMENT OFFSET LENGTH
 *                                                         BATCH_NODE_PUT_END of one
 *                                                         item; prints " item=STATUS"
 *
 * put_start and where print each memory replica as " rep=ENDPOINT,SEGMENT,
 * OFFSET,LENGTH,GRANT" (SEGMENT a 32-digit hex uuid, GRANT hex, "-" when
 * none): what read and write take (GRANT "-" or absent: none).
 *
 * The handshake (proto/handshake.h) is skipped unless the environment asks
 * for it: MC_RPC_HANDSHAKE=1 (no secret), MC_RPC_SECRET_FILE=F (prove the
 * secret in F), MC_RPC_TOKEN_FILE=F (prove a tenant token), MC_RPC_CLIENT=N
 * (bind the connection to client N; default: none).  A refused handshake
 * prints "AUTH_FAILED <reason>" and exits 1.
 *
 * A KEY written hex:6b6579 is those bytes (binary keys, NULs included).
 * CLIENT and SEGMENT are small integers (the uuid's low half).  Exit 0 when
 * every response came back (whatever its status), 1 on a transport error,
 * 2 on a usage error.  Used by tests/integration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/handshake.h"
#include "proto/msg.h"
#include "util/sock.h"

static int fd = -1;
static uint32_t next_id = 1;
static void *bodies[4];		/* response bodies: decoded messages point into them */
static unsigned nbodies;
static const uint8_t *send_attach;	/* the next request's attachment */
static uint64_t send_len;
static uint8_t *recv_attach;		/* the last response's attachment (malloc) */
static uint64_t recv_len;

/* Sends one request, reads one response into *ret (decoded), returns its status. */
static int call(uint16_t op, const void *req, struct mc_arena *a, union mc_msg_any *ret)
{
	struct mc_wbuf w;
	uint8_t hdr[MC_FRAME_HDR_LEN];
	struct mc_frame f;
	uint32_t id = next_id++;
	int r;

	mc_wbuf_init(&w, MC_PROTO_MAX_BODY + MC_FRAME_HDR_LEN);
	if ((r = mc_proto_encode_request(&w, op, id, req, send_len)) < 0) {
		fprintf(stderr, "mc-rpc: cannot encode: %s\n", mc_error_name(r));
		exit(1);
	}
	if (mc_write_full(fd, w.p, w.len) < 0 ||
	    (send_len && mc_write_full(fd, send_attach, send_len) < 0) ||
	    mc_read_full(fd, hdr, sizeof(hdr)) < 0) {
		fprintf(stderr, "mc-rpc: connection closed\n");
		exit(1);
	}
	mc_wbuf_free(&w);
	if ((r = mc_frame_hdr_decode(hdr, &f.hdr)) < 0 || !mc_frame_is_response(&f.hdr) ||
	    f.hdr.req_id != id) {
		fprintf(stderr, "mc-rpc: bad response header\n");
		exit(1);
	}
	uint8_t *body = malloc(f.hdr.body_len ? f.hdr.body_len : 1);
	if (!body || mc_read_full(fd, body, f.hdr.body_len) < 0) {
		fprintf(stderr, "mc-rpc: truncated response\n");
		exit(1);
	}
	f.body = body;
	recv_len = f.hdr.attach_len;
	if (recv_len && (!(recv_attach = malloc(recv_len)) ||
			 mc_read_full(fd, recv_attach, recv_len) < 0)) {
		fprintf(stderr, "mc-rpc: truncated attachment\n");
		exit(1);
	}
	const struct mc_op_info *info;
	if (f.hdr.status == 0 && mc_op_info(op) && (r = mc_proto_decode(&f, a, &info, ret)) < 0) {
		fprintf(stderr, "mc-rpc: cannot decode the response: %s\n", mc_error_name(r));
		exit(1);
	}
	if (nbodies < 4)
		bodies[nbodies++] = body;
	return f.hdr.status;
}

/* A small integer, or a whole id in 32 hex digits (as /api/v1/clients shows it). */
static struct mc_uuid id_of(const char *s)
{
	unsigned long long hi, lo;
	if (strlen(s) == 32 && sscanf(s, "%16llx%16llx", &hi, &lo) == 2)
		return (struct mc_uuid){ .hi = hi, .lo = lo };
	return (struct mc_uuid){ .hi = 0x6d632d727063ull, .lo = strtoull(s, NULL, 0) };
}

/* KEY, or hex:BYTES (decoded into a static buffer: one key per run). */
static struct mc_bytes key_of(const char *s)
{
	static uint8_t buf[8192];
	size_t n = 0;
	if (strncmp(s, "hex:", 4))
		return mc_bytes_str(s);
	for (s += 4; s[0] && s[1] && n < sizeof(buf); s += 2) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			break;
		buf[n++] = (uint8_t)v;
	}
	return MC_BYTES(buf, n);
}

static uint8_t *key_file(const char *env, size_t *len)
{
	const char *path = getenv(env);
	uint8_t *k = NULL;
	char err[512];
	*len = 0;
	if (path && *path && mc_hs_key_read(env, path, 1, &k, len, err, sizeof(err)) < 0) {
		fprintf(stderr, "mc-rpc: %s\n", err);
		exit(2);
	}
	return k;
}

static void refused(const char *why)
{
	printf("AUTH_FAILED %s\n", why);
	exit(1);
}

/* The client side of the handshake, written out here (not rpc-conn's) so
 * that a test can play a peer that lies about its secret. */
static void handshake(void)
{
	const char *hs = getenv("MC_RPC_HANDSHAKE"), *cl = getenv("MC_RPC_CLIENT");
	size_t slen, tlen;
	uint8_t *secret = key_file("MC_RPC_SECRET_FILE", &slen);
	uint8_t *token = key_file("MC_RPC_TOKEN_FILE", &tlen);
	if (!(hs && *hs && strcmp(hs, "0")) && !secret && !token && !(cl && *cl))
		return;
	struct mc_hs_hello h = { .flags = (secret ? MC_HS_F_SECRET : 0) | (token ? MC_HS_F_TOKEN : 0) };
	struct mc_hs_challenge ch;
	struct mc_hs_proof pr;
	struct mc_hs_verdict v;
	uint8_t c1[MC_HS_HELLO_LEN], s1[MC_HS_CHALLENGE_LEN], c2[MC_HS_PROOF_LEN];
	uint8_t s2[MC_HS_VERDICT_LEN], mac[MC_HS_MAC_LEN];
	memset(&pr, 0, sizeof(pr));
	if (cl && *cl)
		h.client_id = id_of(cl);
	if (token)
		mc_hs_token_id(token, tlen, h.token_id);
	if (mc_hs_nonce(h.nonce) < 0)
		exit(1);
	mc_hs_hello_encode(&h, c1);
	if (mc_write_full(fd, c1, sizeof(c1)) < 0 || mc_read_full(fd, s1, sizeof(s1)) < 0)
		refused("connection closed");
	if (mc_hs_challenge_decode(s1, sizeof(s1), &ch) < 0)
		refused("bad challenge");
	if (ch.status)
		refused(mc_hs_status_str(ch.status));
	mc_hs_mac(MC_HS_MAC_SERVER, secret, slen, c1, s1, 40, mac);
	if (!mc_hs_mac_eq(mac, ch.proof))
		refused("the server did not prove the secret");
	mc_hs_mac(MC_HS_MAC_CLIENT, secret, slen, c1, s1, sizeof(s1), pr.secret_proof);
	if (token)
		mc_hs_mac(MC_HS_MAC_TOKEN, token, tlen, c1, s1, sizeof(s1), pr.token_proof);
	mc_hs_proof_encode(&pr, c2);
	if (mc_write_full(fd, c2, sizeof(c2)) < 0 || mc_read_full(fd, s2, sizeof(s2)) < 0)
		refused("connection closed");
	if (mc_hs_verdict_decode(s2, sizeof(s2), &v) < 0)
		refused("bad verdict");
	if (v.status)
		refused(mc_hs_status_str(v.status));
	mc_hs_key_free(secret, slen);
	mc_hs_key_free(token, tlen);
}

static void usage(void)
{
	fprintf(stderr, "usage: mc-rpc HOST:PORT hello|ping|mount|unmount|put|put_start|put_wt|put_end|exist|get|"
			"where|remove|op|read|write|stat|disk_write|write_end|node_end ARGS...\n");
	exit(2);
}

static struct mc_uuid uuid_hex(const char *s)
{
	char hi[17] = "", lo[17] = "";
	if (strlen(s) != 32 || strspn(s, "0123456789abcdef") != 32) {
		fprintf(stderr, "mc-rpc: SEGMENT must be 32 hex digits\n");
		exit(2);
	}
	memcpy(hi, s, 16);
	memcpy(lo, s + 16, 16);
	return (struct mc_uuid){ strtoull(hi, NULL, 16), strtoull(lo, NULL, 16) };
}

/* GRANT (or a disk key) in hex, "-" or absent: none.  Three calls' bytes
 * live at once (a request with two grants and a disk key). */
static struct mc_bytes grant_hex(int argc, char **argv, int i)
{
	static uint8_t bufs[3][MC_PROTO_MAX_DISK_KEY + MC_PROTO_MAX_GRANT + 64];
	static unsigned next;
	uint8_t *buf = bufs[next++ % 3];
	size_t n = 0;
	const char *s = i < argc ? argv[i] : "-";
	if (!strcmp(s, "-"))
		return (struct mc_bytes){ 0 };
	for (; s[0] && s[1] && n < sizeof(bufs[0]); s += 2) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			break;
		buf[n++] = (uint8_t)v;
	}
	return MC_BYTES(buf, n);
}

static void print_hex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static void print_replicas(const struct mc_replica_desc *d, uint32_t n)
{
	char hex[MC_UUID_STR_LEN];
	for (uint32_t i = 0; i < n; i++) {
		if (d[i].type == MC_REPLICA_LOCAL_DISK) {
			printf(" ldisk=%.*s,%s,", (int)d[i].local_disk.endpoint.len,
			       d[i].local_disk.endpoint.p, mc_uuid_fmt(d[i].local_disk.segment_id, hex));
			print_hex(d[i].local_disk.disk_key.p, d[i].local_disk.disk_key.len);
			printf(",");
			if (d[i].local_disk.grant.len)
				print_hex(d[i].local_disk.grant.p, d[i].local_disk.grant.len);
			else
				printf("-");
		}
		if (d[i].type != MC_REPLICA_MEMORY)
			continue;
		printf(" rep=%.*s,%s,%llu,%llu,", (int)d[i].mem.endpoint.len, d[i].mem.endpoint.p,
		       mc_uuid_fmt(d[i].mem.segment_id, hex), (unsigned long long)d[i].mem.offset,
		       (unsigned long long)d[i].mem.size);
		if (d[i].mem.grant.len)
			print_hex(d[i].mem.grant.p, d[i].mem.grant.len);
		else
			printf("-");
	}
}

/* A request whose attachment is len bytes BYTE (NULL: 0x41); exits on a
 * usage error (over 64 MiB) or without memory. */
static int call_write(uint16_t op, const void *q, uint64_t len, const char *byte,
		      struct mc_arena *a, union mc_msg_any *resp)
{
	if (len > (64u << 20)) {
		fprintf(stderr, "mc-rpc: write at most 64 MiB\n");
		exit(2);
	}
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		exit(1);
	memset(buf, byte ? (int)strtoul(byte, NULL, 0) : 0x41, len);
	send_attach = buf;
	send_len = len;
	int st = call(op, q, a, resp);
	send_len = 0;
	free(buf);
	return st;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage sa;
	socklen_t len;
	struct mc_arena a;
	union mc_msg_any resp;
	int st;

	if (argc < 3)
		usage();
	if (mc_sock_parse(argv[1], &sa, &len) < 0) {
		fprintf(stderr, "mc-rpc: bad address '%s'\n", argv[1]);
		return 2;
	}
	if ((fd = mc_sock_connect(&sa, len, 5000)) < 0) {
		fprintf(stderr, "mc-rpc: cannot connect to %s\n", argv[1]);
		return 1;
	}
	handshake();
	mc_arena_init(&a);
	const char *op = argv[2];
	memset(&resp, 0, sizeof(resp));
	if (!strcmp(op, "hello")) {
		struct mc_msg_hello_req q = { .proto_version = argc > 3 ? (uint32_t)atoi(argv[3]) :
								       MC_PROTO_VERSION,
					      .client_version = mc_bytes_str("mc-rpc") };
		st = call(MC_OP_HELLO, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st)
			printf(" proto_version=%u server_version=%.*s%s%.*s",
			       resp.hello_resp.proto_version,
			       (int)resp.hello_resp.server_version.len, resp.hello_resp.server_version.p,
			       resp.hello_resp.leader.len ? " leader=" : "",
			       (int)resp.hello_resp.leader.len, resp.hello_resp.leader.p);
	} else if (!strcmp(op, "ping") && argc == 4) {
		struct mc_msg_ping_req q = { .client_id = id_of(argv[3]) };
		st = call(MC_OP_PING, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st)
			printf(" client_status=%s view_version=%llu",
			       resp.ping_resp.client_status == MC_CLIENT_OK ? "OK" : "NEED_REMOUNT",
			       (unsigned long long)resp.ping_resp.view_version);
	} else if (!strcmp(op, "mount") && argc == 7) {
		struct mc_msg_mount_segment_req q = {
			.client_id = id_of(argv[3]),
			.segment = { .id = id_of(argv[4]), .name = mc_bytes_str(argv[5]),
				     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
				     .size = strtoull(argv[6], NULL, 0),
				     .endpoint = mc_bytes_str("127.0.0.1:50061") },
		};
		st = call(MC_OP_MOUNT_SEGMENT, &q, &a, &resp);
		printf("%s", mc_error_name(st));
	} else if (!strcmp(op, "unmount") && argc == 5) {
		struct mc_msg_unmount_segment_req q = { .client_id = id_of(argv[3]),
							.segment_id = id_of(argv[4]) };
		st = call(MC_OP_UNMOUNT_SEGMENT, &q, &a, &resp);
		printf("%s", mc_error_name(st));
	} else if ((!strcmp(op, "put") && argc == 6) ||
		   (!strcmp(op, "put_start") && argc >= 6 && argc <= 8) ||
		   (!strcmp(op, "put_wt") && argc == 6)) {
		struct mc_msg_put_start_req q = { .client_id = id_of(argv[5]),
						  .key = key_of(argv[3]),
						  .size = strtoull(argv[4], NULL, 0),
						  .config = { .replica_num = argc > 6 ? (uint8_t)atoi(argv[6]) : 1,
							      .write_through = !strcmp(op, "put_wt") },
						  .tenant = mc_bytes_str(argc > 7 ? argv[7] : "") };
		st = call(MC_OP_PUT_START, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st)
			printf(" replicas=%u", resp.put_start_resp.n_replicas);
		if (!st && strcmp(op, "put"))
			print_replicas(resp.put_start_resp.replicas, resp.put_start_resp.n_replicas);
		if (!st && !strcmp(op, "put")) {
			struct mc_msg_put_end_req e = { .client_id = q.client_id, .key = q.key };
			st = call(MC_OP_PUT_END, &e, &a, &resp);
			printf(" put_end=%s", mc_error_name(st));
		}
	} else if (!strcmp(op, "pgrant") && (argc == 6 || argc == 7)) {
		struct mc_msg_put_start_req q = { .client_id = id_of(argv[5]),
						  .key = key_of(argv[3]),
						  .size = strtoull(argv[4], NULL, 0),
						  .config = { .replica_num = 1 },
						  .tenant = mc_bytes_str(argc > 6 ? argv[6] : ""),
						  .want_put_grant = true };
		st = call(MC_OP_PUT_START, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st) {
			printf(" pgrant=");
			print_hex(resp.put_start_resp.put_grant.p, resp.put_start_resp.put_grant.len);
			print_replicas(resp.put_start_resp.replicas, resp.put_start_resp.n_replicas);
		}
	} else if (!strcmp(op, "put_end") && argc == 5) {
		struct mc_msg_put_end_req q = { .client_id = id_of(argv[4]), .key = key_of(argv[3]) };
		st = call(MC_OP_PUT_END, &q, &a, &resp);
		printf("%s", mc_error_name(st));
	} else if (!strcmp(op, "exist") && argc == 4) {
		struct mc_msg_exist_key_req q = { .key = key_of(argv[3]) };
		st = call(MC_OP_EXIST_KEY, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st)
			printf(" exists=%d", resp.exist_key_resp.exists);
	} else if ((!strcmp(op, "get") && argc == 4) ||
		   (!strcmp(op, "where") && (argc == 4 || argc == 5))) {
		struct mc_msg_get_replica_list_req q = { .key = key_of(argv[3]),
							 .tenant = mc_bytes_str(argc > 4 ? argv[4] : "") };
		st = call(MC_OP_GET_REPLICA_LIST, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st) {
			const struct mc_msg_get_replica_list_resp *p = &resp.get_replica_list_resp;
			printf(" size=%llu replicas=%u", (unsigned long long)p->size, p->n_replicas);
			if (p->n_replicas && p->replicas[0].type == MC_REPLICA_MEMORY)
				printf(" endpoint=%.*s", (int)p->replicas[0].mem.endpoint.len,
				       p->replicas[0].mem.endpoint.p);
			if (!strcmp(op, "where"))
				print_replicas(p->replicas, p->n_replicas);
		}
	} else if (!strcmp(op, "read") && (argc == 6 || argc == 7)) {
		struct mc_msg_data_read_req q = { .segment_id = uuid_hex(argv[3]),
						  .offset = strtoull(argv[4], NULL, 0),
						  .length = strtoull(argv[5], NULL, 0),
						  .grant = grant_hex(argc, argv, 6) };
		st = call(MC_OP_DATA_READ, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st) {
			printf(" bytes=%llu hex=", (unsigned long long)recv_len);
			print_hex(recv_attach, recv_len < 16 ? recv_len : 16);
		}
	} else if (!strcmp(op, "write") && argc >= 6 && argc <= 8) {
		struct mc_msg_data_write_req q = { .segment_id = uuid_hex(argv[3]),
						   .offset = strtoull(argv[4], NULL, 0),
						   .length = strtoull(argv[5], NULL, 0),
						   .grant = grant_hex(argc, argv, 6) };
		st = call_write(MC_OP_DATA_WRITE, &q, q.length, argc > 7 ? argv[7] : NULL, &a, &resp);
		printf("%s", mc_error_name(st));
	} else if (!strcmp(op, "disk_write") && argc == 9) {
		struct mc_msg_data_disk_write_req q = { .segment_id = uuid_hex(argv[3]),
							.offset = strtoull(argv[4], NULL, 0),
							.size = strtoull(argv[5], NULL, 0),
							.disk_key = grant_hex(argc, argv, 6),
							.grant = grant_hex(argc, argv, 7),
							.disk_grant = grant_hex(argc, argv, 8) };
		st = call(MC_OP_DATA_DISK_WRITE, &q, &a, &resp);
		printf("%s", mc_error_name(st));
	} else if (!strcmp(op, "write_end") && (argc == 9 || argc == 10)) {
		struct mc_msg_data_write_end_req q = { .segment_id = uuid_hex(argv[3]),
						       .offset = strtoull(argv[4], NULL, 0),
						       .length = strtoull(argv[5], NULL, 0),
						       .grant = grant_hex(argc, argv, 6),
						       .client_id = id_of(argv[7]),
						       .key = key_of(argv[8]) };
		st = call_write(MC_OP_DATA_WRITE_END, &q, q.length, argc > 9 ? argv[9] : NULL, &a,
				&resp);
		printf("%s", mc_error_name(st));
	} else if (!strcmp(op, "node_end") && argc == 9) {
		struct mc_msg_node_put_end_item it = { .client_id = id_of(argv[4]),
						       .key = key_of(argv[5]),
						       .segment_id = uuid_hex(argv[6]),
						       .offset = strtoull(argv[7], NULL, 0),
						       .length = strtoull(argv[8], NULL, 0) };
		struct mc_msg_batch_node_put_end_req q = { .client_id = id_of(argv[3]),
							   .n_items = 1, .items = &it };
		st = call(MC_OP_BATCH_NODE_PUT_END, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st && resp.batch_node_put_end_resp.n_status == 1)
			printf(" item=%s", mc_error_name(resp.batch_node_put_end_resp.status[0]));
	} else if (!strcmp(op, "relay") && argc >= 8 && argc <= 10) {
		struct mc_msg_data_put_req q = { .segment_id = uuid_hex(argv[3]),
						 .grant = grant_hex(argc, argv, 4),
						 .client_id = id_of(argv[5]),
						 .key = key_of(argv[6]),
						 .config = { .replica_num = 1 },
						 .tenant = mc_bytes_str(argc > 9 ? argv[9] : "") };
		st = call_write(MC_OP_DATA_PUT, &q, strtoull(argv[7], NULL, 0),
				argc > 8 ? argv[8] : NULL, &a, &resp);
		printf("%s", mc_error_name(st));
	} else if (!strcmp(op, "node_start") && argc == 8) {
		struct mc_msg_node_put_start_item it = { .client_id = id_of(argv[4]),
							 .key = key_of(argv[5]),
							 .size = strtoull(argv[6], NULL, 0),
							 .segment_id = uuid_hex(argv[7]),
							 .config = { .replica_num = 1 } };
		struct mc_msg_batch_node_put_start_req q = { .client_id = id_of(argv[3]),
							     .n_items = 1, .items = &it };
		st = call(MC_OP_BATCH_NODE_PUT_START, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		const struct mc_msg_batch_node_put_start_resp *p = &resp.batch_node_put_start_resp;
		if (!st && p->n_items == 1) {
			printf(" item=%s", mc_error_name(p->items[0].status));
			if (!p->items[0].status)
				printf(" offset=%llu", (unsigned long long)p->items[0].offset);
		}
	} else if (!strcmp(op, "stat") && (argc == 3 || argc == 4)) {
		struct mc_msg_data_stat_req q = { .grant = grant_hex(argc, argv, 3) };
		st = call(MC_OP_DATA_STAT, &q, &a, &resp);
		printf("%s", mc_error_name(st));
		if (!st)
			printf(" segments=%u", resp.data_stat_resp.n_segments);
	} else if (!strcmp(op, "remove") && argc == 4) {
		struct mc_msg_remove_req q = { .key = key_of(argv[3]) };
		st = call(MC_OP_REMOVE, &q, &a, &resp);
		printf("%s", mc_error_name(st));
	} else if (!strcmp(op, "op") && argc == 4) {
		/* A raw frame with an empty body, for unknown or malformed requests. */
		uint8_t hdr[MC_FRAME_HDR_LEN];
		struct mc_frame_hdr h = { .opcode = (uint16_t)strtoul(argv[3], NULL, 0), .req_id = 7 };
		mc_frame_hdr_encode(&h, hdr);
		if (mc_write_full(fd, hdr, sizeof(hdr)) < 0 || mc_read_full(fd, hdr, sizeof(hdr)) < 0 ||
		    mc_frame_hdr_decode(hdr, &h) < 0) {
			fprintf(stderr, "mc-rpc: connection closed\n");
			return 1;
		}
		printf("%s", mc_error_name(h.status));
	} else {
		usage();
	}
	printf("\n");
	mc_arena_free(&a);
	while (nbodies)
		free(bodies[--nbodies]);
	free(recv_attach);
	close(fd);
	return 0;
}
