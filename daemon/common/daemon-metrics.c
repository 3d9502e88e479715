/* SPDX-License-Identifier: Apache-2.0 */
/* daemon-metrics.c - see daemon-metrics.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/daemon-metrics.h"
#include "common/log.h"
#include "common/process-metrics.h"
#include "mc-commit.h"
#include "mooncake/error.h"
#include "util/clock.h"

struct mc_daemon_metrics {
	struct mc_metrics *reg;
	pthread_mutex_t lock;
	const struct mc_daemon_metrics_def *def;
	void *state;
	uint64_t started_ns;
};

int mc_daemon_metrics_new(const struct mc_daemon_metrics_def *def, const void *init,
			  struct mc_daemon_metrics **ret)
{
	static const char *const version[] = { MC_VERSION_STRING }, *const commit[] = { MC_GIT_COMMIT };
	const struct mc_metric_desc bid = {
		.type = MC_METRIC_GAUGE, .name = "mooncake_build_info",
		.help = "Build information (version, commit: the git commit built, or unknown); "
			"the value is 1.",
		.label = { "version", "commit" }, .values = { version, commit }, .nvalues = { 1, 1 },
	};
	struct mc_daemon_metrics *dm = calloc(1, sizeof(*dm));
	if (!dm)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_init(&dm->lock, NULL);
	dm->def = def;
	dm->started_ns = mc_now_ns();
	struct mc_metric *bi = NULL;
	if ((dm->state = malloc(def->size)) && (dm->reg = mc_metrics_new()) &&
	    (bi = mc_metrics_add_desc(dm->reg, &bid)) && mc_process_metrics_add(dm->reg) < 0)
		bi = NULL;
	if (!bi) {
		mc_daemon_metrics_free(dm);
		return MC_ERR_NO_MEMORY;
	}
	mc_metric_set(bi, 0, 1);
	memcpy(dm->state, init, def->size);
	int r = def->add(dm, dm->state);
	if (r < 0) {
		mc_daemon_metrics_free(dm);
		return r;
	}
	*ret = dm;
	return 0;
}

struct mc_daemon_metrics *mc_daemon_metrics_free(struct mc_daemon_metrics *dm)
{
	if (!dm)
		return NULL;
	mc_metrics_free(dm->reg);
	pthread_mutex_destroy(&dm->lock);
	free(dm->state);
	free(dm);
	return NULL;
}

struct mc_metrics *mc_daemon_metrics_registry(struct mc_daemon_metrics *dm)
{
	return dm->reg;
}

void *mc_daemon_metrics_state(struct mc_daemon_metrics *dm)
{
	return dm->state;
}

static double read_double(void *ctx, unsigned idx)
{
	(void)idx;
	return *(const double *)ctx;
}

int mc_daemon_metrics_add_scalars(struct mc_daemon_metrics *dm, const struct mc_scalar_family *f,
				  unsigned n, const double *values)
{
	for (unsigned i = 0; i < n; i++)
		if (!mc_metrics_add_fn(dm->reg, f[i].type, f[i].name, f[i].help, NULL, NULL, 0,
				       read_double, (void *)&values[i]))
			return MC_ERR_NO_MEMORY;
	return 0;
}

double mc_daemon_metrics_uptime(const struct mc_daemon_metrics *dm)
{
	return (double)(mc_now_ns() - dm->started_ns) / 1e9;
}

void mc_daemon_metrics_lock(struct mc_daemon_metrics *dm)
{
	pthread_mutex_lock(&dm->lock);
}

void mc_daemon_metrics_unlock(struct mc_daemon_metrics *dm)
{
	pthread_mutex_unlock(&dm->lock);
}

char *mc_daemon_metrics_render(struct mc_daemon_metrics *dm, size_t *len)
{
	pthread_mutex_lock(&dm->lock);
	if (dm->def->take)
		dm->def->take(dm, dm->state);
	char *text = mc_metrics_render_string(dm->reg, len);
	pthread_mutex_unlock(&dm->lock);
	return text;
}

void mc_daemon_metrics_http(void *ctx, const struct mc_http_request *req,
			    struct mc_http_response *resp)
{
	(void)req;
	resp->body = mc_daemon_metrics_render(ctx, &resp->body_len);
	if (!resp->body)
		return mc_http_error(resp, 500, "INTERNAL_ERROR", "cannot render the metrics");
	resp->status = 200;
	resp->content_type = MC_METRICS_CONTENT_TYPE;
}

int mc_daemon_metrics_serve(struct mc_daemon_metrics *dm, const char *address, uint64_t port,
			    struct mc_http_server **ret)
{
	const struct mc_http_route rt[] = {
		{ "GET", "/health", mc_http_health, NULL },
		{ "GET", "/metrics", mc_daemon_metrics_http, dm },
	};
	const struct mc_http_server_config c = {
		.address = address, .port = (uint16_t)port,
		.routes = rt, .nroutes = sizeof(rt) / sizeof(rt[0]), .log = mc_log_cb,
	};
	int r = mc_http_server_start(&c, ret);
	if (r < 0)
		log_error("cannot serve http on %s:%llu: %s", address, (unsigned long long)port,
			  mc_strerror(r));
	return r;
}

int mc_daemon_metrics_add_ops(struct mc_daemon_metrics *dm, const struct mc_op_families *f,
			      struct mc_op_metrics *ret)
{
	const char *ops[MC_OP_COUNT], *const *codes;
	unsigned nops = 0, ncodes = mc_rpc_error_codes(&codes);
	char name[3][96], help[2][160];

	for (unsigned i = 0; i < MC_OP_COUNT; i++) {
		const struct mc_op_info *oi = mc_op_info_at(i);
		ret->series[i] = -1;
		if (f->want(oi)) {
			ret->series[i] = (int16_t)nops;
			ops[nops++] = oi->name;
		}
	}
	snprintf(name[0], sizeof(name[0]), "%s_requests_total", f->prefix);
	snprintf(name[1], sizeof(name[1]), "%s_errors_total", f->prefix);
	snprintf(name[2], sizeof(name[2]), "%s_duration_seconds", f->prefix);
	snprintf(help[0], sizeof(help[0]), "%s answered, by op.", f->requests);
	snprintf(help[1], sizeof(help[1]), "%s answered with a non-zero status, by op and code "
		 "(the known codes at zero, other codes once they counted).", f->requests);
	ret->transfer = f->transfer;
	ret->requests = mc_metrics_add(dm->reg, MC_METRIC_COUNTER, name[0], help[0], "op", ops,
				       nops);
	/* op x code is a large matrix: only the series that counted something. */
	const struct mc_metric_desc ed = {
		.type = MC_METRIC_COUNTER, .name = name[1], .help = help[1],
		.label = { "op", "code" }, .values = { ops, codes }, .nvalues = { nops, ncodes },
		.flags = MC_METRIC_SPARSE,
	};
	ret->errors = mc_metrics_add_desc(dm->reg, &ed);
	/* The known codes are there at zero: a dashboard has a series before
	 * the first error. */
	for (const char *const *k = f->known_codes; ret->errors && k && *k; k++)
		for (unsigned c = 0; c < ncodes; c++)
			for (unsigned o = 0; !strcmp(codes[c], *k) && o < nops; o++)
				if (mc_metric_keep(ret->errors, mc_metric_index2(ret->errors, o, c)) < 0)
					return MC_ERR_NO_MEMORY;
	ret->duration = mc_metrics_add(dm->reg, MC_METRIC_HISTOGRAM, name[2], f->duration_help,
				       "op", ops, nops);
	return ret->requests && ret->errors && ret->duration ? 0 : MC_ERR_NO_MEMORY;
}

