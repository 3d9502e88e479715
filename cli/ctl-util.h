/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-util.h - the pure helpers of mooncakectl (no I/O to the cluster, no
 * libcurl, no jansson): percent-encoding, sizes, durations, aligned tables,
 * the progress line, segment name matching and the HTTP status -> exit
 * code mapping.  Unit-tested
 * by tests/unit/test-ctl-util.c.
 */
#ifndef MC_CLI_CTL_UTIL_H
#define MC_CLI_CTL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Percent-encodes len bytes: every byte outside A-Za-z0-9-._~ becomes %XX
 * (uppercase hex).  Returns a malloc'd NUL-terminated string, NULL on ENOMEM.
 */
char *ctl_pct_encode(const void *s, size_t len);

/*
 * Parses a byte count: decimal digits with an optional binary suffix
 * K, M, G, T (also Ki/KiB/KB, any case; 1K = 1024).  No sign, no spaces,
 * no fraction.  Returns 0 or -EINVAL (also on overflow).
 */
int ctl_parse_size(const char *s, uint64_t *ret);

/* Parses a decimal unsigned integer <= max.  0 or -EINVAL. */
int ctl_parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* Parses a ratio: a decimal number in [0, 1].  0 or -EINVAL. */
int ctl_parse_ratio(const char *s, double *ret);

/* "512 B", "1.0 KiB", "1.5 GiB" (binary units, one decimal).  Returns buf. */
char *ctl_fmt_size(uint64_t bytes, char *buf, size_t cap);

/* "850ms", "12.5s", "3m20s", "2h05m", "3d04h".  Returns buf. */
char *ctl_fmt_duration_ms(uint64_t ms, char *buf, size_t cap);

/* Removes trailing whitespace (newline, CR, spaces, tabs) in place. */
void ctl_trim_right(char *s);

/*
 * Exit code for an HTTP error reply: 404 with an object/segment/tenant/...
 * not-found code is 4 (CTL_NOT_FOUND); everything else is 1.  A 404 whose
 * code is the route-level "NOT_FOUND" (the master has no such endpoint) is 1.
 */
int ctl_exit_of_http(long status, const char *code);

/* ---- tables ------------------------------------------------------------------- */

/*
 * A table of strings printed with aligned columns: the header, then the
 * rows; columns marked right-aligned are padded on the left.  Cells are
 * copied.  Columns are separated by two spaces; the last column is not
 * padded.
 */
struct ctl_table {
	size_t ncols;
	const char *const *header;
	const bool *right;	/* per column, or NULL: all left-aligned */
	size_t nrows, cap;
	char **cells;		/* nrows * ncols */
	int err;		/* -ENOMEM once a cell could not be stored */
};

void ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *header,
		    const bool *right);
/* Appends a row of ncols strings (NULL cells print as "-"). */
void ctl_table_add(struct ctl_table *t, const char *const *row);
/* Prints (header first, unless header is NULL) and returns t->err or 0. */
int ctl_table_print(struct ctl_table *t, FILE *f);
void ctl_table_free(struct ctl_table *t);

/* ---- progress ----------------------------------------------------------------- */

/*
 * One progress line (no newline) into buf, elapsed_ms after the start:
 *   "data.bin  [#########.......]  45%  12.0 MiB / 26.5 MiB  8.0 MiB/s  ETA 0:00:02"
 * and once done reaches total "...  100%  26.5 MiB / 26.5 MiB  8.0 MiB/s  in 3.3s".
 * The rate is the average since the start ("--" before 1 ms or a byte);
 * the ETA is what is left at that rate ("--:--:--" while unknown).  total 0
 * means unknown: "stdin  12.0 MiB  8.0 MiB/s".  width is the bar's width in
 * characters (4..200).  Returns buf.
 */
char *ctl_progress_line(char *buf, size_t cap, const char *label, uint64_t done,
			uint64_t total, uint64_t elapsed_ms, unsigned width);

/* ---- segment names --------------------------------------------------------- */

/* Whether s is a whole segment id: 32 hex digits. */
bool ctl_is_segment_id(const char *s);

/*
 * Which of n segments arg designates, as git resolves an abbreviated
 * object name: those named arg (names[i], NULL for none), else, when arg
 * is 4 to 32 hex digits (any case), those whose id (ids[i], lowercase hex)
 * starts with it.  Stores the first cap matching indexes in out and
 * returns how many segments matched (0: none; more than 1: ambiguous).
 */
size_t ctl_match_segment(const char *arg, const char *const *ids, const char *const *names,
			 size_t n, size_t *out, size_t cap);

#endif
