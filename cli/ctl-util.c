/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-util.c - pure helpers of mooncakectl (see ctl-util.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-util.h"

char *ctl_pct_encode(const void *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = s;
	char *out = malloc(len * 3 + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = 0;
	return out;
}

int ctl_parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	uint64_t x = 0;
	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
	}
	if (x > max)
		return -EINVAL;
	*ret = x;
	return 0;
}

int ctl_parse_size(const char *s, uint64_t *ret)
{
	static const char units[] = "KMGT";
	uint64_t x = 0;
	const char *p = s;
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
	}
	unsigned shift = 0;
	if (*p) {
		const char *u = strchr(units, *p & ~0x20);
		if (!u || !(*p & ~0x20))
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
		p++;
		if (*p == 'i' || *p == 'I')
			p++;
		if (*p == 'b' || *p == 'B')
			p++;
		if (*p)
			return -EINVAL;
	}
	if (shift && x > (UINT64_MAX >> shift))
		return -EINVAL;
	*ret = x << shift;
	return 0;
}

int ctl_parse_ratio(const char *s, double *ret)
{
	char *end;
	if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= 0.0 && v <= 1.0))
		return -EINVAL;
	*ret = v;
	return 0;
}

char *ctl_fmt_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const u[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (bytes < 1024) {
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	double v = (double)bytes / 1024.0;
	size_t i = 0;
	/* Switch unit once the rounded value would print as 1024.0. */
	while (v >= 1023.95 && i + 1 < sizeof(u) / sizeof(u[0])) {
		v /= 1024.0;
		i++;
	}
	snprintf(buf, cap, "%.1f %s", v, u[i]);
	return buf;
}

char *ctl_fmt_duration_ms(uint64_t ms, char *buf, size_t cap)
{
	unsigned long long s = ms / 1000;
	if (ms < 1000)
		snprintf(buf, cap, "%llums", (unsigned long long)ms);
	else if (ms < 60000)
		snprintf(buf, cap, "%.1fs", (double)ms / 1000.0);
	else if (s < 3600)
		snprintf(buf, cap, "%llum%02llus", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, cap, "%lluh%02llum", s / 3600, s / 60 % 60);
	else
		snprintf(buf, cap, "%llud%02lluh", s / 86400, s / 3600 % 24);
	return buf;
}

void ctl_trim_right(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
}

int ctl_exit_of_http(long status, const char *code)
{
	if (code && strcmp(code, "OBJECT_NOT_FOUND") == 0)
		return 4;
	if (status == 404 && code && *code && strcmp(code, "NOT_FOUND") != 0)
		return 4;
	return 1;
}

/* ---- tables ------------------------------------------------------------------- */

void ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *header,
		    const bool *right)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->header = header;
	t->right = right;
}

void ctl_table_add(struct ctl_table *t, const char *const *row)
{
	if (t->err)
		return;
	if (t->nrows == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		char **n = realloc(t->cells, nc * t->ncols * sizeof(*n));
		if (!n) {
			t->err = -ENOMEM;
			return;
		}
		t->cells = n;
		t->cap = nc;
	}
	char **c = t->cells + t->nrows * t->ncols;
	for (size_t i = 0; i < t->ncols; i++) {
		c[i] = strdup(row[i] ? row[i] : "-");
		if (!c[i]) {
			while (i--)
				free(c[i]);
			t->err = -ENOMEM;
			return;
		}
	}
	t->nrows++;
}

static void table_row(const struct ctl_table *t, FILE *f, const char *const *row,
		      const size_t *w)
{
	for (size_t i = 0; i < t->ncols; i++) {
		bool last = i + 1 == t->ncols;
		int pad = (int)w[i];
		if (t->right && t->right[i])
			fprintf(f, "%*s", pad, row[i]);
		else if (last)
			fputs(row[i], f);
		else
			fprintf(f, "%-*s", pad, row[i]);
		fputs(last ? "\n" : "  ", f);
	}
}

int ctl_table_print(struct ctl_table *t, FILE *f)
{
	size_t *w = calloc(t->ncols, sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < t->ncols && t->header; i++)
		w[i] = strlen(t->header[i]);
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t i = 0; i < t->ncols; i++) {
			size_t l = strlen(t->cells[r * t->ncols + i]);
			if (l > w[i])
				w[i] = l;
		}
	if (t->header)
		table_row(t, f, t->header, w);
	for (size_t r = 0; r < t->nrows; r++)
		table_row(t, f, (const char *const *)t->cells + r * t->ncols, w);
	free(w);
	return t->err;
}

void ctl_table_free(struct ctl_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/* ---- progress ----------------------------------------------------------------- */

/* "0:00:03", "12:34:56" (h:mm:ss, as rsync prints its ETA). */
static void fmt_hms(uint64_t s, char *buf, size_t cap)
{
	snprintf(buf, cap, "%llu:%02u:%02u", (unsigned long long)(s / 3600),
		 (unsigned)(s / 60 % 60), (unsigned)(s % 60));
}

char *ctl_progress_line(char *buf, size_t cap, const char *label, uint64_t done,
			uint64_t total, uint64_t elapsed_ms, unsigned width)
{
	char d[32], tt[32], rate[40] = "--", eta[40] = "--:--:--";
	if (total && done > total)
		done = total;
	ctl_fmt_size(done, d, sizeof(d));
	double bps = 0;
	if (elapsed_ms && done) {
		bps = (double)done * 1000.0 / (double)elapsed_ms;
		ctl_fmt_size((uint64_t)bps, rate, sizeof(rate));
	}
	if (!total) {
		snprintf(buf, cap, "%s  %s  %s/s", label, d, rate);
		return buf;
	}
	if (done == total) {
		snprintf(eta, sizeof(eta), "in ");
		ctl_fmt_duration_ms(elapsed_ms, eta + 3, sizeof(eta) - 3);
	} else if (bps > 0) {
		char hms[32];
		fmt_hms((uint64_t)((double)(total - done) / bps + 0.5), hms, sizeof(hms));
		snprintf(eta, sizeof(eta), "ETA %s", hms);
	} else {
		snprintf(eta, sizeof(eta), "ETA --:--:--");
	}
	if (width < 4)
		width = 4;
	if (width > 200)
		width = 200;
	char bar[201];
	unsigned fill = (unsigned)((long double)done * width / total);
	memset(bar, '#', fill);
	memset(bar + fill, '.', width - fill);
	bar[width] = 0;
	unsigned pct = (unsigned)((long double)done * 100 / total);
	snprintf(buf, cap, "%s  [%s] %3u%%  %s / %s  %s/s  %s", label, bar, pct, d,
		 ctl_fmt_size(total, tt, sizeof(tt)), rate, eta);
	return buf;
}

/* ---- segment names ------------------------------------------------------------- */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool ctl_is_segment_id(const char *s)
{
	size_t n = 0;
	while (s[n] && is_hex(s[n]))
		n++;
	return n == 32 && !s[n];
}

size_t ctl_match_segment(const char *arg, const char *const *ids, const char *const *names,
			 size_t n, size_t *out, size_t cap)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], arg) == 0) {
			if (m < cap)
				out[m] = i;
			m++;
		}
	size_t len = strlen(arg);
	if (m || len < 4 || len > 32)
		return m;
	for (size_t k = 0; k < len; k++)
		if (!is_hex(arg[k]))
			return 0;
	for (size_t i = 0; i < n; i++) {
		if (!ids[i] || strlen(ids[i]) < len)
			continue;
		size_t k = 0;
		while (k < len && (arg[k] | 0x20) == (ids[i][k] | 0x20))
			k++;
		if (k == len) {
			if (m < cap)
				out[m] = i;
			m++;
		}
	}
	return m;
}
