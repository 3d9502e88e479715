/* SPDX-License-Identifier: Apache-2.0 */
/* msg-ids.c - see msg-ids.h. */
#include "proto/msg-ids.h"

/* Whether a field name is client_id (1), tenant (2) or another (0): the
 * name pasted to MC__IDS_IS_ expands to two arguments only for the two
 * names defined below, which moves the number into second place. */
#define MC__IDS_SECOND(a, b, ...) b
#define MC__IDS_PROBE(...) MC__IDS_SECOND(__VA_ARGS__, 0, ~)
#define MC__IDS_IS_client_id ~, 1
#define MC__IDS_IS_tenant ~, 2
#define MC__IDS_OF(name) MC__IDS_PROBE(MC__IDS_IS_##name)
#define MC__IDS_CAT(a, b) MC__IDS_CAT_(a, b)
#define MC__IDS_CAT_(a, b) a##b
#define MC__IDS_SET_0(n)
#define MC__IDS_SET_1(n) ret->client_id = &q->n;
#define MC__IDS_SET_2(n) ret->tenant = &q->n;
#define MC__IDS_FIELD(KIND, name, ...) MC__IDS_CAT(MC__IDS_SET_, MC__IDS_OF(name))(name)

#define MC_OP(NAME, code, rq, rs, fl) \
	static void ids_##NAME(void *m, struct mc_msg_ids *ret) \
	{ \
		struct mc_msg_##rq *q = m; \
		(void)q; \
		MC_MSG_##rq(MC__IDS_FIELD) \
	}
#include "proto/proto.def"

static void (*const ids_fn[MC_OP_COUNT])(void *, struct mc_msg_ids *) = {
#define MC_OP(NAME, code, rq, rs, fl) [MC_OPI_##NAME] = ids_##NAME,
#include "proto/proto.def"
};

void mc_msg_req_ids(unsigned index, void *req, struct mc_msg_ids *ret)
{
	ret->client_id = NULL;
	ret->tenant = NULL;
	if (index < MC_OP_COUNT)
		ids_fn[index](req, ret);
}
