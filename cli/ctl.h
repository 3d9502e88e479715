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
	CTL_NOT_FOUND = 4,
};

#define CTL_DEFAULT_MASTER "http://127.0.0.1:9003"
#define CTL_DEFAULT_RPC "127.0.0.1:50051"

struct ctl {
	const char *rpc;	/* master binary RPC host:port */
	const char *master;	/* master admin HTTP base URL */
	const char *token_file;	/* bearer token for the REST calls, or NULL */
	const char *tenant;
	long timeout_ms;	/* per request (REST) / per I/O (RPC) */
	bool json;
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

/*
 * Runs the verb argv[1] of group argv[0] from verbs[]; without a verb prints
 * the group's usage (exit 2), an unknown verb is a usage error.
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
 * Splits argv (argv[0] = the verb) into options (anywhere; "--opt V" or
 * "--opt=V"; "--" ends them) and minpos..maxpos positionals.  cmd names the
 * command in messages ("object put"), missing what a missing positional is
 * ("KEY").  Returns 0 or CTL_USAGE (message printed).
 */
int ctl_args(const char *cmd, int argc, char **argv, struct ctl_opt *opts, size_t nopts,
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

/* Whether progress may be drawn: stderr is a terminal and the output is not JSON. */
bool ctl_progress_wanted(const struct ctl *ctl);

#endif
