/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-object.c - mooncakectl object put|get|stat|exist|rm|ls|pin|unpin,
 * through libmooncake.  Options of a verb may come anywhere after the verb;
 * "--" ends them (for keys starting with '-').
 *
 * Progress (on a terminal, not with -o json, 1 MiB and more): a line for
 * the file read (put) or written (get), and one for the transfer itself,
 * fed by libmooncake's per-chunk progress callback (ctl-progress.c).
 *
 * A put never replaces an object: an existing key exits CTL_EXISTS (3)
 * with "exists, unchanged".  An --overwrite needs an atomic replace on the
 * master (an UPSERT op, daemon/master/meta-upsert.c: the old value stays
 * readable until the new one's PutEnd); remove + put would show readers a
 * missing object in between, so there is none.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl-rest.h"
#include "ctl-util.h"

#define CHUNK (1u << 20)

static void subject_of(char *buf, size_t cap, const char *key)
{
	snprintf(buf, cap, "object '%s'", key);
}

/* ---- put / get ------------------------------------------------------------------ */

/* Reads a whole file or stdin ("-") into *ret, in chunks, drawing p. */
static int slurp(const char *path, uint8_t **ret, size_t *ret_len, struct ctl_progress *p,
		 bool progress)
{
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 1 << 16, len = 0;
	uint64_t total = 0;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		cap = (size_t)st.st_size + 1;
		total = (uint64_t)st.st_size;
	}
	/* Unknown sizes (pipes) count bytes once past the threshold. */
	ctl_progress_start(p, progress && (total >= CTL_PROGRESS_MIN || !total),
			   fd == 0 ? "stdin" : path, total);
	uint8_t *b = malloc(cap);
	int err = b ? 0 : -ENOMEM;
	while (!err) {
		if (len == cap) {
			uint8_t *nb = realloc(b, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			b = nb;
			cap *= 2;
		}
		size_t want = cap - len < CHUNK ? cap - len : CHUNK;
		ssize_t n = read(fd, b + len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		else if (n == 0)
			break;
		else
			len += (size_t)n;
		if (total || len >= CTL_PROGRESS_MIN)
			ctl_progress_update(p, len);
	}
	if (!err && !total && p->drawn) { /* a pipe: its size is known now */
		p->total = len;
		ctl_progress_update(p, len);
	}
	if (fd != 0)
		close(fd);
	ctl_progress_end(p);
	if (err) {
		free(b);
		return err;
	}
	*ret = b;
	*ret_len = len;
	return 0;
}

static const char *known(const char *name)
{
	return name ? name : "unknown";
}

/* How a replica is reached: a transport, or "file" (DISK, DFS: endpoint is the path). */
static const char *transport_of(const struct mc_replica_info *ri)
{
	if (ri->type == MC_REPLICA_DISK || ri->type == MC_REPLICA_DFS)
		return "file";
	return known(mc_transport_name(ri->transport));
}

static int obj_put(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_opt o[] = { { "--replicas", true, NULL }, { "--hard-pin", false, NULL }, { "--pin-ttl", true, NULL },
			   { "--group", true, NULL }, { "--overwrite", false, NULL },
			   { "--disk-replicas", true, NULL }, { "--dfs-replicas", true, NULL },
			   { "--write-through", false, NULL } };
	const char *pos[2];
	int np, r;
	uint64_t replicas = 1, ttl = 0, disk = 0, dfs = 0;
	if ((r = ctl_args(ctl, argc, argv, o, 8, pos, 2, 2, &np, "KEY")))
		return r;
	bool wt = o[7].value != NULL;
	if ((o[5].value && (r = ctl_arg_u64("object put", "--disk-replicas", o[5].value, 1, &disk))) ||
	    (o[6].value && (r = ctl_arg_u64("object put", "--dfs-replicas", o[6].value, 1, &dfs))))
		return r;
	if (o[0].value && ((r = ctl_arg_u64("object put", "--replicas", o[0].value, MC_MAX_REPLICAS,
					  &replicas)) || (replicas == 0 && (wt || (!disk && !dfs))) ||
			   replicas + disk + dfs + wt > MC_MAX_REPLICAS))
		return r ? r : ctl_usage("object put: --replicas must be 1..%u (0 with "
					 "--disk-replicas or --dfs-replicas, not with "
					 "--write-through; %u in all)",
					 MC_MAX_REPLICAS, MC_MAX_REPLICAS);
	if (o[2].value && (r = ctl_arg_u64("object put", "--pin-ttl", o[2].value, UINT64_MAX, &ttl)))
		return r;
	if (o[3].value && (!*o[3].value || strlen(o[3].value) > 256))
		return ctl_usage("object put: --group needs 1..256 bytes");
	if (!*pos[0])
		return ctl_usage("object put: empty KEY");
	uint8_t *data = NULL;
	size_t len = 0;
	struct ctl_progress pg;
	bool tty = ctl_progress_wanted(ctl);
	if ((r = slurp(pos[1], &data, &len, &pg, tty)) < 0) {
		fprintf(stderr, "mooncakectl: %s: %s\n", strcmp(pos[1], "-") ? pos[1] : "stdin",
			strerror(-r));
		return CTL_FAILED;
	}
	char subj[MC_MAX_KEY_LEN + 16];
	subject_of(subj, sizeof(subj), pos[0]);
	if (len == 0) {
		free(data);
		fprintf(stderr, "mooncakectl: %s: empty value (objects hold at least one byte)\n",
			subj);
		return CTL_FAILED;
	}
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c))) {
		free(data);
		return r;
	}
	char label[MC_MAX_KEY_LEN + 16];
	snprintf(label, sizeof(label), "storing '%s'", pos[0]);
	ctl_progress_start(&pg, tty, label, 0);
	unsigned placed = 0;
	struct mc_put_opts po = { .sz = sizeof(po), .replicas = (unsigned)replicas,
				  .hard_pin = o[1].value != NULL, .soft_pin_ttl_ms = ttl,
				  .group = o[3].value, .exclusive = true,
				  .progress = ctl_progress_cb, .progress_ctx = &pg, .placed = &placed,
				  .upsert = o[4].value != NULL, .disk_replicas = (unsigned)disk,
				  .dfs_replicas = (unsigned)dfs, .write_through = wt };
	r = mc_put(c, pos[0], strlen(pos[0]), data, len, &po);
	ctl_progress_end(&pg);
	free(data);
	if (r < 0 && (r != MC_ERR_OBJECT_ALREADY_EXISTS || po.upsert))
		return ctl_fail(subj, r);   /* upsert: another write of KEY in progress */
	bool stored = r == 0;
	if (ctl->json) {
		json_t *j = json_object();
		json_object_set_new(j, "key", ctl_json_key(pos[0], strlen(pos[0])));
		json_object_set_new(j, "size", json_integer((json_int_t)len));
		json_object_set_new(j, "replicas", json_integer((json_int_t)replicas));
		json_object_set_new(j, "disk_replicas", json_integer((json_int_t)disk));
		json_object_set_new(j, "dfs_replicas", json_integer((json_int_t)dfs));
		json_object_set_new(j, "write_through", json_boolean(wt));
		json_object_set_new(j, "placed", json_integer((json_int_t)placed));
		json_object_set_new(j, "stored", json_boolean(stored));
		ctl_json_print(j);
	} else if (stored) {
		printf("stored '%s' (%zu bytes)\n", pos[0], len);
	}
	if (stored && placed < replicas + disk + dfs)
		fprintf(stderr, "mooncakectl: %s: only %u of %llu replicas placed (replicas go to "
			"distinct nodes; the cluster has fewer with space)\n", subj, placed,
			(unsigned long long)(replicas + disk + dfs));
	if (stored)
		return CTL_OK;
	/* Immutable objects: say so, and what to do to replace it. */
	fprintf(stderr, "mooncakectl: %s exists, unchanged (objects are immutable; to replace "
		"it: mooncakectl object put --overwrite KEY FILE)\n", subj);
	return CTL_EXISTS;
}

static int write_all(int fd, const uint8_t *p, size_t n, struct ctl_progress *pg)
{
	size_t done = 0;
	while (n) {
		ssize_t w = write(fd, p, n < CHUNK ? n : CHUNK);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
		done += (size_t)w;
		ctl_progress_update(pg, done);
	}
	return 0;
}

static int obj_get(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[2];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 2, &np, "KEY")))
		return r;
	const char *out = np == 2 ? pos[1] : "-";
	bool to_stdout = strcmp(out, "-") == 0;
	char subj[MC_MAX_KEY_LEN + 16];
	subject_of(subj, sizeof(subj), pos[0]);
	if (!*pos[0])
		return ctl_usage("object get: empty KEY");
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c)))
		return r;
	void *buf;
	size_t len = 0;
	/* The network phase draws once the size is known (the first chunk). */
	bool tty = ctl_progress_wanted(ctl);
	char label[MC_MAX_KEY_LEN + 16];
	snprintf(label, sizeof(label), "fetching '%s'", pos[0]);
	struct ctl_progress pg;
	ctl_progress_start(&pg, tty, label, 0);
	struct mc_get_opts go = { .sz = sizeof(go), .progress = ctl_progress_cb,
				  .progress_ctx = &pg };
	r = mc_get_with(c, pos[0], strlen(pos[0]), &go, &buf, &len);
	ctl_progress_end(&pg);
	if (r < 0)
		return ctl_fail(subj, r);
	ctl_progress_start(&pg, tty && len >= CTL_PROGRESS_MIN, to_stdout ? "stdout" : out, len);
	int fd = to_stdout ? 1 : open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int e = fd < 0 ? -errno : write_all(fd, buf, len, &pg);
	if (fd > 1 && close(fd) < 0 && !e)
		e = -errno;
	ctl_progress_end(&pg);
	mc_buf_free(buf);
	if (e) {
		fprintf(stderr, "mooncakectl: %s: %s\n", to_stdout ? "stdout" : out, strerror(-e));
		return CTL_FAILED;
	}
	/* With the value on stdout, stdout holds only the value. */
	if (!to_stdout && ctl->json) {
		json_t *j = json_object();
		json_object_set_new(j, "key", ctl_json_key(pos[0], strlen(pos[0])));
		json_object_set_new(j, "size", json_integer((json_int_t)len));
		json_object_set_new(j, "file", json_string(out));
		ctl_json_print(j);
	} else if (!to_stdout) {
		printf("wrote '%s' (%zu bytes) to %s\n", pos[0], len, out);
	}
	return CTL_OK;
}

/* ---- stat / exist / rm ------------------------------------------------------------ */

/* The name of a value of mooncake/types.h, "unknown" when not in its table. */

static int obj_stat(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[1];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 1, &np, "KEY")))
		return r;
	if (!*pos[0])
		return ctl_usage("object stat: empty KEY");
	char subj[MC_MAX_KEY_LEN + 16];
	subject_of(subj, sizeof(subj), pos[0]);
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c)))
		return r;
	struct mc_object_stat st = { .sz = sizeof(st) };
	if ((r = mc_stat(c, pos[0], strlen(pos[0]), &st)) < 0)
		return ctl_fail(subj, r);
	char sum[19] = "";
	if (st.has_checksum)
		snprintf(sum, sizeof(sum), "%016" PRIx64, st.checksum);
	if (ctl->json) {
		json_t *j = json_object(), *reps = json_array();
		json_object_set_new(j, "key", ctl_json_key(pos[0], strlen(pos[0])));
		json_object_set_new(j, "size", json_integer((json_int_t)st.size));
		json_object_set_new(j, "checksum", st.has_checksum ? json_string(sum) : json_null());
		json_object_set_new(j, "lease_ttl_ms", json_integer((json_int_t)st.lease_ttl_ms));
		for (unsigned i = 0; i < st.n_replicas; i++) {
			const struct mc_replica_info *ri = &st.replicas[i];
			json_t *o = json_object();
			json_object_set_new(o, "type", json_string(known(mc_replica_type_name(ri->type))));
			json_object_set_new(o, "status", json_string(known(mc_replica_status_name(ri->status))));
			json_object_set_new(o, "endpoint", json_string(ri->endpoint));
			json_object_set_new(o, "segment_id", json_string(ri->segment_id));
			json_object_set_new(o, "offset", json_integer((json_int_t)ri->offset));
			json_object_set_new(o, "size", json_integer((json_int_t)ri->size));
			json_object_set_new(o, "transport", json_string(transport_of(ri)));
			json_array_append_new(reps, o);
		}
		json_object_set_new(j, "replicas", reps);
		ctl_json_print(j);
	} else {
		printf("key:       %s\nsize:      %" PRIu64 "\nchecksum:  %s\nreplicas:  %u\n",
		       pos[0], st.size, st.has_checksum ? sum : "-", st.n_replicas);
		printf("\n%-3s %-8s %-9s %-22s %-32s %12s %12s %s\n", "#", "TYPE", "STATUS",
		       "ENDPOINT", "SEGMENT", "OFFSET", "SIZE", "TRANSPORT");
		for (unsigned i = 0; i < st.n_replicas; i++) {
			const struct mc_replica_info *ri = &st.replicas[i];
			printf("%-3u %-8s %-9s %-22s %-32s %12" PRIu64 " %12" PRIu64 " %s\n", i,
			       known(mc_replica_type_name(ri->type)),
			       known(mc_replica_status_name(ri->status)), ri->endpoint, ri->segment_id,
			       ri->offset, ri->size, transport_of(ri));
		}
	}
	return CTL_OK;
}

static int obj_exist(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[1];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 1, &np, "KEY")))
		return r;
	if (!*pos[0])
		return ctl_usage("object exist: empty KEY");
	char subj[MC_MAX_KEY_LEN + 16];
	subject_of(subj, sizeof(subj), pos[0]);
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c)))
		return r;
	bool ex;
	if ((r = mc_exist(c, pos[0], strlen(pos[0]), &ex)) < 0)
		return ctl_fail(subj, r);
	if (ctl->json) {
		json_t *j = json_object();
		json_object_set_new(j, "key", ctl_json_key(pos[0], strlen(pos[0])));
		json_object_set_new(j, "exists", json_boolean(ex));
		ctl_json_print(j);
	} else {
		printf("%s\n", ex ? "exists" : "not found");
	}
	return ex ? CTL_OK : CTL_NOT_FOUND;
}

static int obj_prefix(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[MC_MAX_BATCH];
	size_t klens[MC_MAX_BATCH];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, MC_MAX_BATCH, &np, "KEY")))
		return r;
	for (int i = 0; i < np; i++) {
		if (!*pos[i])
			return ctl_usage("object prefix: empty KEY");
		klens[i] = strlen(pos[i]);
	}
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c)))
		return r;
	size_t n;
	if ((r = mc_batch_query_prefix(c, (size_t)np, (const void *const *)pos, klens, &n)) < 0)
		return ctl_fail("object prefix", r);
	if (ctl->json) {
		json_t *j = json_object();
		json_object_set_new(j, "keys", json_integer(np));
		json_object_set_new(j, "prefix", json_integer((json_int_t)n));
		ctl_json_print(j);
	} else {
		printf("%zu\n", n);
	}
	return CTL_OK;
}

/*
 * The refusal of a remove under a read lease, saying when the lease ends:
 * the binary RPC's error carries no deadline, the REST object record
 * (lease_deadline_ms, a read that grants no lease) does; without the REST
 * API (not reachable in 2 s) the message gives the lease's length instead.
 */
static int rm_leased(struct ctl *ctl, const char *key, const char *subj)
{
	char *k = ctl_pct_encode(key, strlen(key));
	const char *t = ctl->tenant ? ctl->tenant : "";
	char *te = ctl_pct_encode(t, strlen(t)), *path = NULL;
	if (k && te && asprintf(&path, "/api/v1/objects/%s%s%s", k, *t ? "?tenant=" : "", te) < 0)
		path = NULL;
	free(k);
	free(te);
	struct ctl_rest_reply rep = { 0 };
	long tmo = ctl->timeout_ms > 0 && ctl->timeout_ms < 2000 ? ctl->timeout_ms : 2000;
	int r = path ? ctl_rest_request(ctl, "GET", path, NULL, tmo, &rep) : -1;
	free(path);
	const json_t *dl = r == 0 && rep.status == 200 ? json_object_get(rep.body, "lease_deadline_ms")
						       : NULL;
	fprintf(stderr, "mooncakectl: %s: OBJECT_HAS_LEASE (", subj);
	if (json_is_integer(dl)) {
		int64_t ms = (int64_t)json_integer_value(dl);
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		int64_t left = ms - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
		time_t at = (time_t)(ms / 1000);
		struct tm tm;
		char when[32] = "?", in[32];
		if (localtime_r(&at, &tm))
			strftime(when, sizeof(when), "%H:%M:%S", &tm);
		ctl_fmt_duration_ms(left > 0 ? (uint64_t)left : 0, in, sizeof(in));
		fprintf(stderr, "a reader's lease runs until %s, %s from now", when, in);
	} else if (dl && json_is_null(dl)) {
		fprintf(stderr, "the read lease has just ended: retry");
	} else {
		fprintf(stderr, "a reader holds a read lease: every get, stat or exist grants one "
			"for the master's lease_ttl_ms, 10 s by default");
	}
	fprintf(stderr, "); --force removes it anyway\n");
	if (r == 0)
		ctl_rest_reply_free(&rep);
	return CTL_FAILED;
}

static int obj_rm(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_opt o[] = { { "--force", false, NULL } };
	const char *pos[1];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, o, 1, pos, 1, 1, &np, "KEY")))
		return r;
	if (!*pos[0])
		return ctl_usage("object rm: empty KEY");
	char subj[MC_MAX_KEY_LEN + 16];
	subject_of(subj, sizeof(subj), pos[0]);
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c)))
		return r;
	r = mc_remove(c, pos[0], strlen(pos[0]), o[0].value != NULL);
	if (r == MC_ERR_OBJECT_HAS_LEASE)
		return rm_leased(ctl, pos[0], subj);
	if (r < 0)
		return ctl_fail(subj, r);
	if (ctl->json) {
		json_t *j = json_object();
		json_object_set_new(j, "key", ctl_json_key(pos[0], strlen(pos[0])));
		json_object_set_new(j, "removed", json_true());
		ctl_json_print(j);
	} else {
		printf("removed '%s'\n", pos[0]);
	}
	return CTL_OK;
}

/* ---- pin / unpin ------------------------------------------------------------------ */

static int obj_pin_common(struct ctl *ctl, int argc, char **argv, bool pin)
{
	struct ctl_opt o[] = { { "--ttl", true, NULL } };
	const char *pos[1];
	const char *verb = pin ? "pin" : "unpin";
	uint64_t ttl = 0;
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, o, pin ? 1 : 0, pos, 1, 1, &np, "KEY")))
		return r;
	if (!*pos[0])
		return ctl_usage("object %s: empty KEY", verb);
	if (pin && !o[0].value)
		return ctl_usage("object pin: --ttl MS is required");
	if (pin && ((r = ctl_arg_u64("object pin", "--ttl", o[0].value, UINT64_MAX, &ttl)) || ttl == 0))
		return r ? r : ctl_usage("object pin: --ttl must be at least 1");
	char subj[MC_MAX_KEY_LEN + 16];
	subject_of(subj, sizeof(subj), pos[0]);
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c)))
		return r;
	r = pin ? mc_pin(c, pos[0], strlen(pos[0]), ttl) : mc_unpin(c, pos[0], strlen(pos[0]));
	if (r < 0)
		return ctl_fail(subj, r);
	if (ctl->json) {
		json_t *j = json_object();
		json_object_set_new(j, "key", ctl_json_key(pos[0], strlen(pos[0])));
		json_object_set_new(j, "pinned", json_boolean(pin));
		if (pin)
			json_object_set_new(j, "ttl_ms", json_integer((json_int_t)ttl));
		ctl_json_print(j);
	} else {
		printf(pin ? "pinned '%s' for %llu ms\n" : "unpinned '%s'\n", pos[0],
		       (unsigned long long)ttl);
	}
	return CTL_OK;
}

static int obj_pin(struct ctl *ctl, int argc, char **argv)
{
	return obj_pin_common(ctl, argc, argv, true);
}

static int obj_unpin(struct ctl *ctl, int argc, char **argv)
{
	return obj_pin_common(ctl, argc, argv, false);
}

/* ---- ls --------------------------------------------------------------------------- */

static int obj_ls(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_opt o[] = { { "--prefix", true, NULL }, { "--regex", true, NULL }, { "--limit", true, NULL } };
	const char *pos[1];
	int np, r;
	uint64_t limit = 0;
	if ((r = ctl_args(ctl, argc, argv, o, 3, pos, 0, 0, &np, "KEY")))
		return r;
	if (o[0].value && o[1].value)
		return ctl_usage("object ls: --prefix and --regex exclude each other");
	if (o[2].value && ((r = ctl_arg_u64("object ls", "--limit", o[2].value, UINT32_MAX, &limit)) ||
			   limit == 0))
		return r ? r : ctl_usage("object ls: --limit must be at least 1");
	struct mc_client *c;
	if ((r = ctl_connect(ctl, &c)))
		return r;
	json_t *keys = ctl->json ? json_array() : NULL;
	uint8_t cursor[64];
	size_t cursor_len = 0, count = 0;
	bool more = false;
	do {
		uint64_t want = limit ? limit - count : 1000;
		struct mc_list_opts lo = { .sz = sizeof(lo), .prefix = o[0].value,
					   .prefix_len = o[0].value ? strlen(o[0].value) : 0,
					   .regex = o[1].value,
					   .limit = (uint32_t)(want < 1000 ? want : 1000),
					   .cursor = cursor_len ? cursor : NULL,
					   .cursor_len = cursor_len };
		struct mc_key_list *l;
		if ((r = mc_list(c, &lo, &l)) < 0) {
			json_decref(keys);
			if (r == MC_ERR_INVALID_PARAMS && o[1].value)
				return ctl_usage("object ls: bad regex '%s'", o[1].value);
			return ctl_fail("object ls", r);
		}
		for (size_t i = 0; i < l->n; i++) {
			if (keys) {
				json_array_append_new(keys, ctl_json_key(l->keys[i].key, l->keys[i].len));
			} else {
				ctl_print_key(stdout, l->keys[i].key, l->keys[i].len);
				putchar('\n');
			}
		}
		count += l->n;
		cursor_len = l->next_cursor_len <= sizeof(cursor) ? l->next_cursor_len : 0;
		if (cursor_len)
			memcpy(cursor, l->next_cursor, cursor_len);
		mc_key_list_free(l);
		more = cursor_len != 0;
	} while (more && (!limit || count < limit));
	if (keys) {
		json_t *j = json_object();
		json_object_set_new(j, "keys", keys);
		json_object_set_new(j, "count", json_integer((json_int_t)count));
		json_object_set_new(j, "truncated", json_boolean(more));
		ctl_json_print(j);
	}
	return CTL_OK;
}

static const struct ctl_verb verbs[] = {
	{ "put", "KEY FILE|- [--replicas N] [--disk-replicas 0|1] [--dfs-replicas 0|1] "
		 "[--write-through] [--pin-ttl MS] [--hard-pin] [--group G] [--overwrite]",
	  "Store FILE (or standard input) under KEY, unless KEY exists (exit 3).\n"
	  "Objects are immutable: an existing object is left unchanged (\"exists,\n"
	  "unchanged\"); to replace it, use --overwrite.\n"
	  "  --overwrite    replace the value of an existing KEY, atomically: readers\n"
	  "                 get the old value until the new one is written, never\n"
	  "                 neither; a failed overwrite keeps the old value\n"
	  "  --replicas N   up to N replicas on distinct segments (default 1; 0 with\n"
	  "                 a DISK or DFS replica: none in memory)\n"
	  "  --disk-replicas 1  one DISK replica: a file under the master's shared_root\n"
	  "  --dfs-replicas 1   one DFS replica: a range of a shard file there\n"
	  "  --write-through  also a copy on the disk tier of a node holding a memory\n"
	  "                 replica (one with a disk tier), synced before the put returns (it\n"
	  "                 survives that node's memory; the put fails if it cannot\n"
	  "                 be written)\n"
	  "  --pin-ttl MS   soft-pin the object for MS milliseconds\n"
	  "  --hard-pin     never evict it\n"
	  "  --group G      member of group G (evicted together, one read lease)",
	  obj_put },
	{ "get", "KEY [FILE|-]",
	  "Read the object into FILE (default: standard output).", obj_get },
	{ "stat", "KEY", "Size, checksum and replicas of the object (takes a read lease).",
	  obj_stat },
	{ "exist", "KEY", "Exit 0 if the object exists, 4 if not (takes a read lease).",
	  obj_exist },
	{ "prefix", "KEY...",
	  "How many of the KEYs, from the first on, exist: the longest cached prefix of a\n"
	  "chain (the master stops at the first miss; only the prefix gets a read lease).",
	  obj_prefix },
	{ "rm", "KEY [--force]",
	  "Remove the object (refused under a read lease, unless --force).\n"
	  "Every get, stat or exist grants a read lease, for the master's lease_ttl_ms\n"
	  "(10 s by default); the refusal says when it ends.\n"
	  "  --force        remove it even under a read lease",
	  obj_rm },
	{ "ls", "[--prefix P | --regex R] [--limit N]",
	  "List keys.\n"
	  "  --prefix P     only keys starting with P\n"
	  "  --regex R      only keys matching the POSIX extended regular expression R\n"
	  "  --limit N      at most N keys",
	  obj_ls },
	{ "pin", "KEY --ttl MS",
	  "Soft-pin the object: evicted only after unpinned objects, for MS milliseconds.\n"
	  "  --ttl MS       how long (1 .. the master's maximum, 24 h by default)",
	  obj_pin },
	{ "unpin", "KEY", "Drop the object's soft pin.", obj_unpin },
};

int ctl_object(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "object", verbs, sizeof(verbs) / sizeof(verbs[0]), argc, argv);
}
