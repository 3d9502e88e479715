/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-node.c - mooncakectl node release: frees the shared-memory segment
 * files a stopped mooncake-node left on purpose (their bytes outlive the
 * node, so that a restarted node keeps its objects), once the master no
 * longer counts on them.
 *
 * The node's segments are the "segment <32 hex> <bytes>" lines of its
 * state_dir/node.id (daemon/segsrv/node-segment.h specifies the file); each
 * one's file is <shm_dir>/mooncake-<hex>.  The master counts on a segment
 * while GET /api/v1/segments lists it, whatever its status: mounted,
 * draining, or restored from the master's state and waiting for the node
 * to come back.  Then nothing is deleted: the message says which segment
 * and how to give it up.  The node itself unmounts its segments on SIGTERM,
 * so `systemctl stop mooncake-node && mooncakectl node release` works;
 * after a kill -9 the master keeps them until client_ttl_ms has passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl-rest.h"
#include "ctl-util.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_SEGS 256

struct seg {
	char id[33];
	uint64_t size;
};

/* The segments node.id lists: their count, or -1 (message printed). */
static int read_node_id(const char *state_dir, struct seg *v)
{
	char line[256], *path;
	if (asprintf(&path, "%s/node.id", state_dir) < 0)
		return ctl_error("out of memory"), -1;
	FILE *f = fopen(path, "re");
	if (!f) {
		ctl_error("node release: cannot read %s: %s (is --state-dir the node's state_dir?)",
			  path, strerror(errno));
		free(path);
		return -1;
	}
	int n = 0;
	bool magic = false;
	while (fgets(line, sizeof(line), f)) {
		char hex[64];
		unsigned long long size;
		if (!strncmp(line, "mooncake-node ", 14))
			magic = true;
		else if (sscanf(line, "segment %63s %llu", hex, &size) == 2 && n < MAX_SEGS &&
			 ctl_is_segment_id(hex)) {
			snprintf(v[n].id, sizeof(v[n].id), "%.32s", hex);
			v[n++].size = size;
		}
	}
	fclose(f);
	if (!magic)
		ctl_error("node release: %s is not a mooncake-node identity file", path);
	free(path);
	return magic ? n : -1;
}

static int node_release(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_opt o[] = { { "--state-dir", true, NULL }, { "--shm-dir", true, NULL },
			       { "--force", false, NULL } };
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, o, N(o), NULL, 0, 0, &np, NULL)))
		return r;
	const char *state_dir = o[0].value ? o[0].value : "/var/lib/mooncake/node";
	const char *shm_dir = o[1].value ? o[1].value : "/dev/shm";
	bool force = o[2].value != NULL;
	struct seg segs[MAX_SEGS];
	int n = read_node_id(state_dir, segs);
	if (n < 0)
		return CTL_FAILED;

	json_t *list;
	if ((r = ctl_rest(ctl, "GET", "/api/v1/segments", NULL, "node release", &list))) {
		if (!force) {
			fprintf(stderr, "mooncakectl: node release: the master was not asked whether "
				"it still counts on the node's segments; nothing released (--force "
				"releases them anyway)\n");
			return r;
		}
		list = NULL;
	}
	int held = 0;
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(list, "segments"), i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));
		for (int k = 0; id && k < n; k++) {
			if (strcmp(id, segs[k].id))
				continue;
			const char *name = json_string_value(json_object_get(s, "name"));
			const char *st = json_string_value(json_object_get(s, "status"));
			json_int_t used = json_integer_value(json_object_get(s, "used"));
			ctl_error("node release: segment %s (%s) is still known to the master (status "
				  "%s, %" PRId64 " bytes in use): it counts on those bytes", id,
				  name ? name : "-", st ? st : "?", (int64_t)used);
			held++;
		}
	}
	json_decref(list);
	if (held && !force) {
		fprintf(stderr, "mooncakectl: node release: nothing released.  Stop the node (it "
			"unmounts its segments on SIGTERM), or wait for the master to drop a "
			"killed node (client_ttl_ms), or give the objects up with `mooncakectl "
			"segment unmount ID`; then run this again\n");
		return CTL_FAILED;
	}
	uint64_t freed = 0;
	int released = 0, failed = 0;
	for (int k = 0; k < n; k++) {
		char *path;
		struct stat st;
		if (asprintf(&path, "%s/mooncake-%s", shm_dir, segs[k].id) < 0)
			return ctl_error("out of memory");
		if (stat(path, &st) < 0 && errno == ENOENT) {
			free(path);
			continue;
		}
		if (unlink(path) < 0) {
			ctl_error("node release: %s: %s", path, strerror(errno));
			free(path);
			failed++;
			continue;
		}
		char sz[32];
		printf("released segment %s: %s (%s)\n", segs[k].id, path,
		       ctl_fmt_size((uint64_t)st.st_size, sz, sizeof(sz)));
		free(path);
		freed += (uint64_t)st.st_size;
		released++;
	}
	if (!released && !failed)
		printf("nothing to release: no segment file of %s/node.id is in %s\n", state_dir,
		       shm_dir);
	else if (released)
		printf("released %d segment(s), %" PRIu64 " bytes; the node makes new ones at its "
		       "next start\n", released, freed);
	return failed ? CTL_FAILED : CTL_OK;
}

static const struct ctl_verb node_verbs[] = {
	{ "release", "[--state-dir DIR] [--shm-dir DIR] [--force]",
	  "Delete the shm segment files of a stopped node, once the master no longer needs them.\n"
	  "A stopped node leaves them on purpose: a restarted node keeps its objects.\n"
	  "  --state-dir DIR  the node's state_dir (default /var/lib/mooncake/node)\n"
	  "  --shm-dir DIR    the node's shm_dir (default /dev/shm)\n"
	  "  --force          release even when the master cannot be asked, or still lists them",
	  node_release },
};

int ctl_node(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "node", node_verbs, N(node_verbs), argc, argv);
}
