/* SPDX-License-Identifier: Apache-2.0 */
/* rpc-server-park.c - replies parked until their ticket settles, sent in
 * request order per connection (rpc-server.h "durable acknowledgements",
 * rpc-server-internal.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc/rpc-server-internal.h"

static void defer_count(struct worker *w, uint64_t ticket, int delta)
{
	struct mc_rpc_server *s = w->srv;
	__atomic_add_fetch(&w->nparked, (uint64_t)(int64_t)delta, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&s->parked, (uint64_t)(int64_t)delta, __ATOMIC_RELAXED);
	if (s->cfg.defer_count)
		s->cfg.defer_count(s->cfg.defer_ctx, ticket, delta);
}

void rpcs_park(struct worker *w, struct conn *c, size_t start, uint64_t ticket, uint16_t op,
		 uint32_t id, int status)
{
	size_t len = c->out.len - start;
	struct parked *e = malloc(sizeof(*e) + len);
	if (!e) {
		mc_wbuf_truncate(&c->out, start);
		c->closing = true;	/* out of memory: the stream cannot stay in order */
		if (ticket)
			defer_count(w, ticket, -1);
		return;
	}
	*e = (struct parked){ .ticket = ticket, .op = op, .id = id, .status = status,
			      .att = c->att, .att_len = c->att_left, .att_series = c->att_series,
			      .len = len };
	memcpy(e->bytes, c->out.p + start, len);
	mc_wbuf_truncate(&c->out, start);
	if (ticket)
		__atomic_add_fetch(&w->srv->parked_total, 1, __ATOMIC_RELAXED);
	c->att = NULL;
	c->att_left = 0;
	if (c->ptail)
		c->ptail->next = e;
	else
		c->phead = e;
	c->ptail = e;
	if (!c->nparked++) {
		c->pprev = NULL;
		c->pnext = w->plist;
		if (w->plist)
			w->plist->pprev = c;
		w->plist = c;
	}
}

static void parked_pop(struct worker *w, struct conn *c)
{
	struct parked *e = c->phead;
	c->phead = e->next;
	if (!c->phead)
		c->ptail = NULL;
	if (e->ticket)
		defer_count(w, e->ticket, -1);
	free(e);
	if (!--c->nparked) {
		if (c->pprev)
			c->pprev->pnext = c->pnext;
		else
			w->plist = c->pnext;
		if (c->pnext)
			c->pnext->pprev = c->pprev;
		c->pprev = c->pnext = NULL;
	}
}

void rpcs_parked_drop_all(struct worker *w, struct conn *c)
{
	while (c->phead)
		parked_pop(w, c);
}

void rpcs_parked_release(struct worker *w, struct conn *c)
{
	struct mc_rpc_server *s = w->srv;
	while (c->phead && !c->att_left && out_pending(c) < s->cfg.max_out_bytes) {
		struct parked *e = c->phead;
		int st = e->ticket ? s->cfg.defer_poll(s->cfg.defer_ctx, e->ticket) : 0;
		if (st == 1)
			break;
		if (st > 0)
			st = MC_ERR_INTERNAL_ERROR;
		if (st < 0) {
			if (mc_proto_encode_response(&c->out, e->op, e->id, st, NULL, 0) < 0)
				c->closing = true;
		} else {
			uint8_t *d = mc_wbuf_append(&c->out, e->len);
			if (!d) {
				c->closing = true;
			} else {
				memcpy(d, e->bytes, e->len);
				if (e->att_len) {
					c->att = e->att;
					c->att_left = e->att_len;
					c->att_series = e->att_series;
				}
			}
		}
		if (e->ticket)
			rpcs_count_reply(s, c, e->op, st < 0 ? st : e->status);
		parked_pop(w, c);
	}
}

void rpcs_respond_deferred(struct worker *w, struct conn *c, uint16_t op, uint32_t id,
			     int status, const void *resp, uint64_t ticket)
{
	struct mc_rpc_server *s = w->srv;
	defer_count(w, ticket, 1);	/* before the poll: a settlement after it wakes us */
	int st = s->cfg.defer_poll(s->cfg.defer_ctx, ticket);
	if (st != 1) {
		defer_count(w, ticket, -1);
		if (st > 0)
			st = MC_ERR_INTERNAL_ERROR;
		rpcs_respond(w, c, op, id, st < 0 ? st : status, st < 0 || status ? NULL : resp, NULL);
		return;
	}
	size_t start = c->out.len;
	int r = mc_proto_encode_response(&c->out, op, id, status, status ? NULL : resp, 0);
	if (r < 0) {
		mc_wbuf_truncate(&c->out, start);
		defer_count(w, ticket, -1);
		rpcs_respond(w, c, op, id, r, NULL, NULL);	/* says why; the mutation stays pending */
		return;
	}
	rpcs_park(w, c, start, ticket, op, id, status);
}

/* The wake eventfd is edge-triggered (rpc-server.c): every write reports
 * it again, so it is never read (a syscall saved per wake; its counter
 * cannot reach 2^64 - 1). */
void rpcs_worker_wake(struct worker *w)
{
	for (struct conn *c = w->plist, *next; c; c = next) {
		next = c->pnext;
		rpcs_conn_event_parked(w, c, c->nparked >= MC_RPC_MAX_PARKED);
	}
}

void mc_rpc_server_wake(struct mc_rpc_server *s)
{
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->w[i];
		uint64_t one = 1;
		if (__atomic_load_n(&w->nparked, __ATOMIC_SEQ_CST) && w->wfd >= 0 &&
		    write(w->wfd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow here; nothing to do */
		}
	}
}

