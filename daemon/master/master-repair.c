/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-repair.c - `mooncake-master --repair [--yes]` (see master-repair.h).
 *
 * The report, on stdout: what was found (nothing, a torn tail, or damage:
 * file, byte offset, why, the seqs that a cut drops), then each record a
 * cut drops, decoded (seq, type, tenant/key or segment), the first
 * LIST_MAX of them and a count by type, then what was done or what to run.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "master/master-repair.h"
#include "master/oplog.h"
#include "master/record.h"
#include "mooncake/error.h"

#define LIST_MAX 200u
#define TYPE_SLOTS 10u	/* record types 1..8, 0 and 9: others */

struct listing {
	FILE *out;
	uint64_t n, by_type[TYPE_SLOTS];
};

static void put_str(FILE *out, struct mc_bytes b)
{
	for (uint32_t i = 0; i < b.len && i < 200; i++)
		fputc(b.p[i] >= 0x20 && b.p[i] < 0x7f ? b.p[i] : '?', out);
	if (b.len > 200)
		fputs("...", out);
}

static int list_one(void *ctx, uint64_t seq, uint16_t type, const void *p, uint32_t len)
{
	struct listing *ls = ctx;
	struct mc_record r;

	ls->by_type[type < TYPE_SLOTS - 1 ? type : 0]++;
	if (ls->n++ >= LIST_MAX)
		return 0;
	const char *name = mc_record_type_name(type);
	fprintf(ls->out, "  seq %-10" PRIu64 " %-8s ", seq, name ? name : "?");
	if (mc_record_decode(type, p, len, &r)) {
		fprintf(ls->out, "(%" PRIu32 " bytes that do not decode)\n", len);
		return 0;
	}
	switch (type) {
	case MC_REC_OBJECT:
		put_str(ls->out, r.object.tenant);
		fputc('/', ls->out);
		put_str(ls->out, r.object.key);
		fprintf(ls->out, " (%" PRIu64 " bytes)", r.object.size);
		break;
	case MC_REC_DELETE:
		put_str(ls->out, r.key.tenant);
		fputc('/', ls->out);
		put_str(ls->out, r.key.key);
		break;
	case MC_REC_PIN:
		put_str(ls->out, r.pin.tenant);
		fputc('/', ls->out);
		put_str(ls->out, r.pin.key);
		break;
	case MC_REC_MOUNT:
		fputs("segment ", ls->out);
		put_str(ls->out, r.mount.name);
		break;
	case MC_REC_UNMOUNT:
		fprintf(ls->out, "segment %016" PRIx64 "%016" PRIx64, r.unmount.segment.hi,
			r.unmount.segment.lo);
		break;
	case MC_REC_QUOTA:
		fputs("tenant ", ls->out);
		put_str(ls->out, r.quota.tenant);
		break;
	case MC_REC_MDPUT:
		fputs("metadata ", ls->out);
		put_str(ls->out, r.mdput.key);
		fprintf(ls->out, " (%" PRIu32 " bytes)", r.mdput.value.len);
		break;
	case MC_REC_MDDEL:
		fputs("metadata ", ls->out);
		put_str(ls->out, r.mddel.key);
		break;
	}
	fputc('\n', ls->out);
	return 0;
}

static void by_type(const struct listing *ls)
{
	fprintf(ls->out, "  %" PRIu64 " records in all:", ls->n);
	for (unsigned t = 1; t < TYPE_SLOTS - 1; t++)
		if (ls->by_type[t])
			fprintf(ls->out, " %s %" PRIu64, mc_record_type_name((uint16_t)t),
				ls->by_type[t]);
	if (ls->by_type[0])
		fprintf(ls->out, " unknown %" PRIu64, ls->by_type[0]);
	fputc('\n', ls->out);
	if (ls->n > LIST_MAX)
		fprintf(ls->out, "  (the first %u listed)\n", LIST_MAX);
}

int mc_master_repair(const char *state_dir, bool apply, FILE *out)
{
	char dir[4096];
	struct mc_oplog_recovery r;
	struct listing ls = { .out = out };

	snprintf(dir, sizeof(dir), "%s/oplog", state_dir);
	fprintf(out, "Checking the oplog in %s\n", dir);
	/* a dry run first, always: the listing comes before anything is cut */
	int rc = mc_oplog_repair_local(dir, false, NULL, NULL, &r);
	if (!rc && r.damaged) {
		fprintf(out, "DAMAGED: %s\n", r.detail);
		fprintf(out, "  the first bad byte: %s, byte offset %" PRIu64 " (where record seq %"
			PRIu64 " should start)\n", r.bad_file, r.bad_offset, r.bad_seq);
		if (r.records)
			fprintf(out, "  kept: %" PRIu64 " valid records before it, seq %" PRIu64
				"..%" PRIu64 "\n", r.records, r.first_seq, r.last_seq);
		else
			fprintf(out, "  kept: no record (nothing valid before it)\n");
		fprintf(out, "  dropped by a cut there: seq %" PRIu64 " onwards, %" PRIu64
			" bytes, %" PRIu64 " later files; these valid records among them:\n",
			r.bad_seq, r.cut_bytes, r.later_files);
		rc = mc_oplog_repair_local(dir, false, list_one, &ls, &r);
		if (!rc)
			by_type(&ls);
		if (!rc)
			fprintf(out, "  (what the newest snapshot in %s/snapshots covers is not lost:"
				" the master loads it before the oplog)\n", state_dir);
	}
	if (rc) {
		fprintf(out, "cannot check the oplog: %s\n", r.detail[0] ? r.detail : mc_strerror(rc));
		return rc;
	}
	if (!r.damaged && !r.truncated_bytes && !r.dropped_files) {
		fprintf(out, "No damage: %" PRIu64 " valid records", r.records);
		if (r.records)
			fprintf(out, ", seq %" PRIu64 "..%" PRIu64, r.first_seq, r.last_seq);
		fprintf(out, ". Nothing to repair.\n");
		return 0;
	}
	if (!r.damaged)
		fprintf(out, "TORN TAIL: %s (%" PRIu64 " bytes, %" PRIu64 " later files).\n",
			r.detail, r.truncated_bytes, r.dropped_files);
	if (!apply) {
		fprintf(out, "Nothing was changed (a dry run).  To cut the oplog there, stop the "
			"master and run:\n  mooncake-master --repair --yes [the master's options]\n"
			"(what is cut is copied into %s/damaged-<time>/ first).\n", dir);
		return 0;
	}
	rc = mc_oplog_repair_local(dir, true, NULL, NULL, &r);
	if (rc) {
		fprintf(out, "REPAIR FAILED: %s\n", r.detail[0] ? r.detail : mc_strerror(rc));
		return rc;
	}
	fprintf(out, "REPAIRED: %s.\nThe master starts with %" PRIu64 " records of the oplog",
		r.detail, r.records);
	if (r.records)
		fprintf(out, " (seq %" PRIu64 "..%" PRIu64 ")", r.first_seq, r.last_seq);
	fprintf(out, " after its newest snapshot.\n");
	return 0;
}
