/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl.h - shared pieces of mooncakectl: the global state, the command
 * tables, the argument parser of verbs and the output helpers
 * (cli/mooncakectl.c, cli/ctl-object.c, cli/ctl-admin.c, cli/ctl-rest.c).
 */
#ifndef MC_CLI_CTL_H
#define MC_CLI_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "mooncake/client.h"

/* Exit codes (mooncakectl(1), EXIT STATUS). */
enum {
	CTL_OK = 0,
	CTL_FAILED = 1,
	CTL_USAGE = 2,
	CTL_EXISTS = 3,		/* object put: the key exists, nothing was written */
	CTL_NOT_FOUND = 4,
	CTL_DONE = 256,		/* not an exit code: help or version printed, exit 0 */
};

#define CTL_DEFAULT_MASTER "http://127.0.0.1:9003"
#define CTL_DEFAULT_RPC "127.0.0.1:50051"

struct ctl_verb;

struct ctl {
	const char *rpc;	/* master binary RPC host:port */
	const char *master;	/* master admin HTTP base URL */
	const char *token_file;	/* bearer token for the REST calls (and the RPC handshake), or NULL */
	const char *secret_file; /* the cluster secret for the RPC handshake, or NULL */
	const char *tenant;
	long timeout_ms;	/* per request (REST) / per I/O (RPC) */
	const char *rdma_device; /* libmooncake's rdma_device, or NULL: its default */
	unsigned rdma_qps, rdma_lanes;	/* likewise, 0: its default */
	bool json;
	const char *cmd;	/* the command running, for messages ("object put") */
	const struct ctl_verb *verb; /* its table entry, for --help */
	char cmdbuf[64];
	struct mc_client *client; /* connected on first use */
	/* REST client state (ctl-rest.c) */
	void *curl;
	char *token;
	char *base;
};

/* A verb of a group (or a group of its own): argv[0] is the verb itself. */
struct ctl_verb {
	const char *name;
	const char *usage;	/* arguments, for the usage text */
	const char *help;	/* what it does (first line: the summary) and its options */
	int (*run)(struct ctl *ctl, int argc, char **argv);
};

/* Groups (argv[0] is the group name). */
int ctl_object(struct ctl *ctl, int argc, char **argv);
int ctl_status(struct ctl *ctl, int argc, char **argv);
int ctl_segment(struct ctl *ctl, int argc, char **argv);
int ctl_client(struct ctl *ctl, int argc, char **argv);
int ctl_tenant(struct ctl *ctl, int argc, char **argv);
int ctl_evict(struct ctl *ctl, int argc, char **argv);
int ctl_snapshot(struct ctl *ctl, int argc, char **argv);
int ctl_trace(struct ctl *ctl, int argc, char **argv); /* cli/ctl-trace.c (BPF tracer) */
int ctl_node(struct ctl *ctl, int argc, char **argv);  /* cli/ctl-node.c */
int ctl_metadata(struct ctl *ctl, int argc, char **argv);  /* cli/ctl-metadata.c */

/*
 * Runs the verb of group argv[0] from verbs[] (global options may come
 * before it); without a verb prints the group's usage (exit 2), with -h the
 * same on stdout (CTL_DONE); an unknown verb is a usage error.
 */
int ctl_dispatch(struct ctl *ctl, const char *group, const struct ctl_verb *verbs, size_t n,
		 int argc, char **argv);

/* ---- verb arguments ---------------------------------------------------------------- */

struct ctl_opt {
	const char *name;	/* "--replicas" */
	bool has_value;
	const char *value;	/* set when seen ("" for flags) */
};

/*
 * Splits argv (argv[0] = the verb) with getopt_long into the verb's options
 * and the global options (anywhere; "--opt V" or "--opt=V", unambiguous
 * abbreviations; "--" ends them) and minpos..maxpos positionals; global
 * options are applied to ctl.  ctl->cmd names the command in messages
 * ("object put"), missing what a missing positional is ("KEY").  Returns 0,
 * CTL_USAGE (message printed) or CTL_DONE (-h/--help or --version printed).
 */
int ctl_args(struct ctl *ctl, int argc, char **argv, struct ctl_opt *opts, size_t nopts,
	     const char **pos, int minpos, int maxpos, int *npos, const char *missing);
/* An unsigned decimal option value <= max; CTL_USAGE (message printed) if bad. */
int ctl_arg_u64(const char *cmd, const char *name, const char *v, uint64_t max, uint64_t *ret);

/* ---- output ------------------------------------------------------------------------ */

/* Connects (once); prints the error and returns an exit code on failure. */
int ctl_connect(struct ctl *ctl, struct mc_client **ret);
/* "mooncakectl: SUBJECT: NAME (description)" on stderr; the exit code of code. */
int ctl_fail(const char *subject, int code);
/* "mooncakectl: MESSAGE" on stderr; returns CTL_USAGE. */
int ctl_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "mooncakectl: MESSAGE" on stderr; returns CTL_FAILED. */
int ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a JSON value on stdout (and frees it). */
void ctl_json_print(json_t *v);
/* A key as JSON: a string when it is valid UTF-8, else its bytes escaped. */
json_t *ctl_json_key(const void *key, size_t len);
/* A key for people: printable bytes as is, others as \xNN. */
void ctl_print_key(FILE *f, const void *key, size_t len);

/* ---- progress on stderr (ctl-progress.c) ------------------------------------------- */

/*
 * One progress line redrawn in place on stderr, as curl and rsync draw
 * theirs: a bar, bytes, rate and ETA (ctl_progress_line), at most 10
 * times a second, and only on a terminal without -o json.  Transfers under
 * CTL_PROGRESS_MIN bytes draw nothing.
 */
#define CTL_PROGRESS_MIN (1u << 20)

struct ctl_progress {
	bool on;		/* drawing allowed */
	bool drawn;		/* the line holds a bar (ended by ctl_progress_end) */
	const char *label;
	uint64_t total;		/* 0: unknown */
	uint64_t start_ns, last_ns;
};

/* Starts a line labelled label (kept, not copied); on: whether to draw. */
void ctl_progress_start(struct ctl_progress *p, bool on, const char *label, uint64_t total);
/* done of p->total bytes (redrawn when due; always at the end). */
void ctl_progress_update(struct ctl_progress *p, uint64_t done);
/* An mc_progress_fn: ctx is a struct ctl_progress; small totals draw nothing. */
void ctl_progress_cb(void *ctx, uint64_t done, uint64_t total);
/* Ends the line (a newline if something was drawn). */
void ctl_progress_end(struct ctl_progress *p);
/* Whether progress may be drawn: stderr is a terminal and the output is not JSON. */
bool ctl_progress_wanted(const struct ctl *ctl);

#endif
