/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-disk-offset.c - libFuzzer target for the decoders of the disk tier's
 * offset backend (daemon/node/disk-record.c, disk-offset-index.c): the
 * record head read back from the data file, the index.log entries and the
 * index.snap file, all bytes a damaged disk can hold.
 *
 * Input: a selector byte (0: record head, 1: log, 2: snapshot), then the
 * bytes.  Invariants (a violation traps):
 *   - a record head that decodes re-encodes to the same 24 bytes, its key
 *     inside the input;
 *   - log entries decode back to back, each inside the input, never with
 *     op, klen or offset out of range;
 *   - a snapshot either fails without a single callback or calls back
 *     exactly count times, with every key inside the input.
 *
 * Seed corpus (tests/fuzz/corpus/fuzz-disk-offset): a valid log and
 * snapshot, written by this binary:
 *
 *	FUZZ_DISK_SEEDS=tests/fuzz/corpus/fuzz-disk-offset .output/fuzz/fuzz-disk-offset
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk-offset.h"
#include "node/disk-record.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

struct walk {
	const uint8_t *lo, *hi;
	uint64_t calls;
};

static int on_entry(const struct ofs_log_rec *r, void *ctx)
{
	struct walk *w = ctx;
	CHECK(r->key >= w->lo && r->key + r->klen <= w->hi);
	CHECK(r->klen >= 1 && r->klen <= MC_MAX_KEY_LEN && !(r->off & 4095));
	w->calls++;
	return 0;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	switch (data[0] % 3) {
	case 0: {
		struct mc_rec_hdr h;
		const uint8_t *key;
		if (mc_rec_decode(p, n, &h, &key) == 0) {
			uint8_t out[MC_REC_HDR];
			mc_rec_encode(&h, out);
			CHECK(memcmp(out, p, MC_REC_HDR) == 0);
			CHECK(key == p + MC_REC_HDR && key + h.klen <= p + n);
			CHECK(mc_rec_head_len(h.klen) % 4096 == 0);
		}
		break;
	}
	case 1: {
		size_t at = 0, used;
		struct ofs_log_rec r;
		struct walk w = { p, p + n, 0 };
		while (ofs_log_decode(p + at, n - at, &r, &used) == 0) {
			CHECK(used > 0 && used <= n - at);
			CHECK(r.op == OFS_LOG_PUT || r.op == OFS_LOG_DEL);
			on_entry(&r, &w);
			at += used;
		}
		break;
	}
	case 2: {
		struct walk w = { p, p + n, 0 };
		uint64_t seq;
		int r = ofs_snap_decode(p, n, &seq, on_entry, &w);
		if (r == 0)
			CHECK(n >= 24 && w.calls == le64(p + 16));
		else
			CHECK(w.calls == 0);
		break;
	}
	}
	return 0;
}

/* The seeds: a log of a few puts and a delete, and the snapshot of a store. */
static void seeds(const char *dir)
{
	char path[4096];
	struct ofs s;
	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.log_lock, NULL);
	snprintf(path, sizeof(path), "%s/log-raw", dir);
	s.log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (s.log_fd < 0)
		exit(1);
	for (int i = 0; i < 4; i++) {
		struct ofs_entry *e = ofs_entry_new("seed-key-xyz", 8 + (uint32_t)i);
		e->seq = (uint64_t)i + 1;
		e->off = (uint64_t)i * 8192;
		e->vlen = (uint64_t)i * 1000;
		e->crc = 0x12345678u + (uint32_t)i;
		ofs_log_append(&s, i == 3 ? OFS_LOG_DEL : OFS_LOG_PUT, e);
		free(e);
	}
	close(s.log_fd);
	/* prefix the selector byte */
	FILE *in = fopen(path, "rb");
	snprintf(path, sizeof(path), "%s/log", dir);
	FILE *out = fopen(path, "wb");
	fputc(1, out);
	int c;
	while ((c = fgetc(in)) != EOF)
		fputc(c, out);
	fclose(in);
	fclose(out);
	snprintf(path, sizeof(path), "%s/log-raw", dir);
	unlink(path);
	/* a record head */
	struct mc_rec_hdr h = { .klen = 5, .vlen = 4097, .seq = 9, .crc = 1 };
	uint8_t rec[1 + MC_REC_HDR + 5] = { 0 };
	mc_rec_encode(&h, rec + 1);
	memcpy(rec + 1 + MC_REC_HDR, "hello", 5);
	snprintf(path, sizeof(path), "%s/record", dir);
	out = fopen(path, "wb");
	fwrite(rec, 1, sizeof(rec), out);
	fclose(out);
	/* the snapshot of a real store */
	char tmp[] = "/tmp/fuzz-disk-XXXXXX";
	if (!mkdtemp(tmp))
		exit(1);
	struct mc_disk_config cfg = { .dir = tmp, .size = 1 << 20 };
	struct mc_disk *d;
	if (mc_disk_open("offset", &cfg, &d))
		exit(1);
	for (int i = 0; i < 3; i++) {
		char key[16];
		snprintf(key, sizeof(key), "snap-%d", i);
		struct mc_disk_put pp = { .key = key, .klen = (uint32_t)strlen(key), .val = key,
					  .len = strlen(key) };
		mc_disk_put(d, &pp, 1);
	}
	mc_disk_close(d);
	snprintf(path, sizeof(path), "%s/index.snap", tmp);
	in = fopen(path, "rb");
	snprintf(path, sizeof(path), "%s/snapshot", dir);
	out = fopen(path, "wb");
	fputc(2, out);
	while ((c = fgetc(in)) != EOF)
		fputc(c, out);
	fclose(in);
	fclose(out);
	const char *names[] = { "index.snap", "index.log", "index.log.old", "data" };
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, names[i]);
		unlink(path);
	}
	rmdir(tmp);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *d = getenv("FUZZ_DISK_SEEDS");
	if (d) {
		seeds(d);
		exit(0);
	}
	return 0;
}
