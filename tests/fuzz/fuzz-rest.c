/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-rest.c - libFuzzer target for the master's REST API: the routing and
 * percent-decoding of common/http-server.c, the query arguments and JSON
 * bodies the handlers of master-http*.c parse, and the handlers themselves,
 * against a real store (two segments, objects in two tenants, a pinned
 * one), served by the real libmicrohttpd server on 127.0.0.1 (a port the
 * kernel picks) and reached over a real TCP connection per input.
 *
 * Input: a method byte, then the request target (path and query) up to the
 * first '\n', then the body.
 *   method byte   methods[b % 6] (GET HEAD POST PUT DELETE PATCH); bit 7:
 *                 send the admin token (the master is configured with one)
 *   target        sent as it is, except the bytes an HTTP request line
 *                 cannot carry (controls, space, DEL, non-ASCII), which go
 *                 percent-encoded; a target not starting with '/' gets one
 *   body          sent with its Content-Length
 * Invariants (a violation traps):
 *   - every request gets a complete HTTP response, status 100..599, within
 *     5 s, and the server stays up;
 *   - a body sent as application/json parses, and with a 4xx/5xx status it
 *     is {"error":{"code":"...",...}} (but a 200 of GET /metadata: the bytes
 *     someone PUT, as the original serves them);
 *   - the store passes mc_meta_check after each request;
 *   - (ASan, UBSan, LSan) no memory error, undefined behaviour or leak.
 * After a request that may have changed the store (not GET or HEAD), the
 * segments, quotas, objects, the pin and a metadata key are put back, so
 * that every input meets the same store (other metadata keys stay, within
 * small limits).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/daemon-metrics.h"
#include "master/master-clients.h"
#include "master/master-http.h"
#include "master/master-metrics.h"
#include "master/meta.h"
#include "mooncake/error.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct mc_meta *g_meta;
static struct mc_master_clients *g_clients;
static struct mc_daemon_metrics *g_metrics;
static struct mc_master_http *g_http;
static uint16_t g_port;

static const struct mc_uuid g_client = { 0xc11e47c11e47ull, 1 };

static struct mc_ref ref(const char *s)
{
	return (struct mc_ref){ .p = s, .len = (uint32_t)strlen(s) };
}

/* The store every input meets (what is there already stays). */
static void populate(void)
{
	static const char *const tenants[] = { "default", "t1" };
	static const char *const names[] = { "node-a", "node-b" };
	struct mc_put_config one = { .replica_num = 1 };
	char key[16];

	for (uint64_t n = 1; n <= 2; n++) {
		struct mc_segment_spec spec = {
			.id = { 0x5e65e65e6ull, n }, .name = names[n - 1], .host = "h",
			.endpoint = "127.0.0.1:1", .shm_path = "",
			.base = 0x100000000ull + n * (UINT64_C(1) << 41), .size = 4u << 20,
		};
		int rc = mc_meta_mount_segment(g_meta, g_client, &spec);
		CHECK(rc == 0 || rc == MC_ERR_SEGMENT_ALREADY_EXISTS);
		if (rc == 0)
			CHECK(mc_master_clients_mounted(g_clients, g_client, spec.id) == 0);
	}
	for (int t = 0; t < 2; t++) {
		CHECK(mc_meta_set_quota(g_meta, ref(tenants[t]), t ? 1u << 20 : 0) == 0);
		for (int i = 0; i < 4; i++) {
			snprintf(key, sizeof(key), i == 3 ? "dir/k %d" : "k%d", i);
			int rc = mc_meta_put_start(g_meta, g_client, ref(tenants[t]), ref(key),
						   1000 + 1000 * (uint64_t)i, &one, NULL, NULL);
			if (rc == 0)
				CHECK(mc_meta_put_end(g_meta, g_client, ref(tenants[t]), ref(key),
						      false, 0) == 0);
		}
	}
	mc_meta_pin(g_meta, ref("default"), ref("k1"), 3600000);
	static const char seg[] = "{\"name\":\"node-a\",\"protocol\":\"tcp\"}";
	int rc = mc_meta_md_put(g_meta, "mooncake/ram/node-a", 19, seg, sizeof(seg) - 1, 0);
	CHECK(rc == 0 || rc == MC_ERR_METADATA_KV_FULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct mc_meta_config mc;

	mc_meta_config_defaults(&mc);
	mc.eviction_high_watermark = 1.0;	/* only POST /evict evicts */
	mc.mdkv_max_keys = 64;			/* the metadata KV's limits are met */
	mc.mdkv_max_bytes = 4u << 20;
	CHECK(mc_meta_new(&mc, &g_meta) == 0);
	CHECK(mc_master_clients_new(g_meta, 3600000, &g_clients) == 0);
	CHECK(mc_master_metrics_new(g_meta, g_clients, &g_metrics) == 0);
	populate();
	struct mc_master_http_config hc = {
		.address = "127.0.0.1", .meta = g_meta, .clients = g_clients,
		.metrics = g_metrics, .admin_token = "fuzz-token",
	};
	CHECK(mc_master_http_start(&hc, &g_http) == 0);
	g_port = mc_master_http_port(g_http);
	return 0;
}

static void put(char **p, size_t *len, size_t *cap, const void *s, size_t n)
{
	if (*len + n > *cap) {
		*cap = 2 * (*len + n);
		*p = realloc(*p, *cap);
		CHECK(*p);
	}
	memcpy(*p + *len, s, n);
	*len += n;
}

/* Sends req, reads the whole response (the server closes: Connection: close). */
static char *exchange(const char *req, size_t n, size_t *ret_len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(g_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = 0, cap = 4096;
	char *out = malloc(cap);

	CHECK(fd >= 0 && out);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	for (size_t off = 0; off < n;) {
		ssize_t k = send(fd, req + off, n - off, MSG_NOSIGNAL);
		if (k < 0 && (errno == EPIPE || errno == ECONNRESET))
			break;	/* answered (e.g. 413) and closed before the end */
		CHECK(k > 0);
		off += (size_t)k;
	}
	for (;;) {
		char buf[65536];
		/* ACK at once: the server's second write would wait for it (Nagle) */
		setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &(int){ 1 }, sizeof(int));
		ssize_t k = recv(fd, buf, sizeof(buf), 0);
		if (k < 0 && errno == ECONNRESET)
			break;
		CHECK(k >= 0);	/* (a timeout: a hang) */
		if (!k)
			break;
		put(&out, &len, &cap, buf, (size_t)k);
	}
	close(fd);
	put(&out, &len, &cap, "", 1);
	*ret_len = len - 1;
	return out;
}

/* Checks one response (see the top). */
static void check_response(const char *r, size_t n, bool head, bool metadata)
{
	unsigned status = 0;

	CHECK(n >= 12 && !memcmp(r, "HTTP/1.", 7));
	CHECK(sscanf(r + 9, "%3u", &status) == 1 && status >= 100 && status <= 599);
	const char *end = memmem(r, n, "\r\n\r\n", 4);
	CHECK(end);
	const char *body = end + 4;
	size_t blen = n - (size_t)(body - r);
	bool json = false;
	for (const char *h = strstr(r, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n"))
		if (!strncasecmp(h + 2, "Content-Type: application/json", 30))
			json = true;
	if (!json || head || (!blen && status == 204) || (metadata && status == 200))
		return;
	json_error_t e;
	json_t *j = json_loadb(body, blen, JSON_DECODE_ANY, &e);
	CHECK(j);
	if (status >= 400) {
		json_t *err = json_object_get(j, "error");
		CHECK(json_is_object(err) && json_is_string(json_object_get(err, "code")));
	}
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH" };
	char *req = NULL;
	size_t len = 0, cap = 0, pos = 1;

	if (size < 1)
		return 0;
	const char *method = methods[data[0] % 6];
	put(&req, &len, &cap, method, strlen(method));
	put(&req, &len, &cap, " ", 1);
	if (size < 2 || data[1] != '/')
		put(&req, &len, &cap, "/", 1);
	for (; pos < size && data[pos] != '\n'; pos++) {
		uint8_t c = data[pos];
		if (c <= 0x20 || c >= 0x7f) {
			char esc[4];
			snprintf(esc, sizeof(esc), "%%%02X", c);
			put(&req, &len, &cap, esc, 3);
		} else {
			put(&req, &len, &cap, &c, 1);
		}
	}
	size_t body = pos < size ? pos + 1 : size;
	char hdr[200];
	int k = snprintf(hdr, sizeof(hdr), " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
			 "Content-Length: %zu\r\n%s\r\n", size - body,
			 data[0] & 0x80 ? "Authorization: Bearer fuzz-token\r\n" : "");
	put(&req, &len, &cap, hdr, (size_t)k);
	put(&req, &len, &cap, data + body, size - body);

	size_t rlen;
	char *resp = exchange(req, len, &rlen);
	bool metadata = size > 9 && !memcmp(data + 1, "/metadata", 9);
	check_response(resp, rlen, !strcmp(method, "HEAD"), metadata);
	free(resp);
	free(req);
	CHECK(mc_meta_check(g_meta) == 0);
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		populate();
	return 0;
}
