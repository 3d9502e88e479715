/* ctl.h - shared pieces of mooncakectl (cli/mooncakectl.c, cli/ctl-object.c). */
#ifndef MC_CLI_CTL_H
#define MC_CLI_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "mooncake/client.h"

/* Exit codes (DESIGN §6). */
enum {
	CTL_OK = 0,
	CTL_FAILED = 1,
	CTL_USAGE = 2,
	CTL_NOT_FOUND = 4,
};

struct ctl {
	const char *rpc;	/* master binary RPC host:port */
	const char *tenant;
	bool json;
	struct mc_client *client; /* connected on first use */
};

/* A verb of a group: argv[0] is the verb itself. */
struct ctl_verb {
	const char *name;
	const char *usage;	/* arguments, for the usage text */
	int (*run)(struct ctl *ctl, int argc, char **argv);
};

int ctl_object(struct ctl *ctl, int argc, char **argv);
int ctl_trace(struct ctl *ctl, int argc, char **argv);

/* Connects (once); prints the error and returns an exit code on failure. */
int ctl_connect(struct ctl *ctl, struct mc_client **ret);
/* "mooncakectl: SUBJECT: NAME (description)" on stderr; the exit code of code. */
int ctl_fail(const char *subject, int code);
/* "mooncakectl: MESSAGE" on stderr; returns CTL_USAGE. */
int ctl_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a JSON value on stdout (and frees it). */
void ctl_json_print(json_t *v);
/* A key as JSON: a string when it is valid UTF-8, else its bytes escaped. */
json_t *ctl_json_key(const void *key, size_t len);
/* A key for people: printable bytes as is, others as \xNN. */
void ctl_print_key(FILE *f, const void *key, size_t len);

#endif
