/* SPDX-License-Identifier: Apache-2.0 */
/* test-rpc-durable.c - the durability of every op proto.def flags
 * MC_OPF_DURABLE, through the binary RPC server with the real master
 * handlers over a real local oplog: answered only once its oplog records
 * are on disk, with the workers blocking and with replies parked (as the
 * master runs it), parked replies under many pipelining threads, a
 * client that half-closes, and one flush per batch. */
#include "rpc-fixture.h"

/* Every op the master serves that changes state is MC_OPF_DURABLE, but
 * the revokes: a write in progress is never logged, so dropping one logs
 * nothing either (meta-oplog.c).  A new mutating op has to choose. */
static void test_durable_flags(void **state)
{
	for (unsigned i = 0; i < MC_OP_COUNT; i++) {
		const struct mc_op_info *oi = mc_op_info_at(i);
		bool revoke = oi->op == MC_OP_PUT_REVOKE || oi->op == MC_OP_BATCH_PUT_REVOKE;
		if (oi->flags & MC_OPF_DATA)
			assert_false(oi->flags & MC_OPF_DURABLE);
		else if (oi->flags & MC_OPF_MUTATING)
			assert_int_equal(!!(oi->flags & MC_OPF_DURABLE), !revoke);
		else
			assert_false(oi->flags & MC_OPF_DURABLE);
	}
}

struct durable_check {
	struct fixture *f;
	int fd;
	bool seen[MC_OP_COUNT];
	uint64_t logged;		/* records appended by the ops so far */
};

/* op answers 0 and, when it appended records, only once they are all on disk. */
static void durable_rpc(struct durable_check *d, uint16_t op, const void *req)
{
	struct mc_oplog_stats st;
	uint64_t before = mc_oplog_last_seq(d->f->oplog);
	assert_int_equal(rpc0(d->fd, op, req), 0);
	uint64_t last = mc_oplog_last_seq(d->f->oplog);
	mc_oplog_get_stats(d->f->oplog, &st);
	assert_true(st.durable_seq >= last);
	d->logged += last - before;
	d->seen[mc_op_info(op)->index] = true;
}

static void test_durable_ops(void **state)
{
	struct fixture *f = *state;
	struct durable_check d = { .f = f, .fd = conn(f) };
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(70), .name = mc_bytes_str("seg-d"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	durable_rpc(&d, MC_OP_MOUNT_SEGMENT, &ms);
	struct mc_msg_segment seg2 = ms.segment;
	seg2.id = uid(71);
	seg2.name = mc_bytes_str("seg-e");
	struct mc_msg_remount_segments_req rms = { .client_id = uid(7), .n_segments = 1,
						   .segments = &seg2 };
	durable_rpc(&d, MC_OP_REMOUNT_SEGMENTS, &rms);

	struct mc_msg_put_start_req ps = { .client_id = uid(7), .key = mc_bytes_str("d1"),
					   .size = 4096, .config = { .replica_num = 1 } };
	durable_rpc(&d, MC_OP_PUT_START, &ps);
	struct mc_msg_put_end_req pe = { .client_id = uid(7), .key = ps.key };
	durable_rpc(&d, MC_OP_PUT_END, &pe);
	struct mc_msg_pin_req pin = { .key = ps.key, .ttl_ms = 60000 };
	durable_rpc(&d, MC_OP_PIN, &pin);
	struct mc_msg_unpin_req unpin = { .key = ps.key };
	durable_rpc(&d, MC_OP_UNPIN, &unpin);
	/* An upsert of d1 logs nothing (the old value stays); its PUT_END logs
	 * the new object, which replaces the old one. */
	struct mc_msg_upsert_start_req us = { .client_id = uid(7), .key = ps.key, .size = 8192,
					      .config = { .replica_num = 1 } };
	uint64_t before = d.logged;
	durable_rpc(&d, MC_OP_UPSERT_START, &us);
	assert_true(d.logged == before);
	durable_rpc(&d, MC_OP_PUT_END, &pe);
	assert_true(d.logged > before);
	struct mc_msg_remove_req rm = { .key = ps.key, .force = true };
	durable_rpc(&d, MC_OP_REMOVE, &rm);

	struct mc_bytes keys[3] = { mc_bytes_str("d2"), mc_bytes_str("d3"), mc_bytes_str("d4") };
	uint64_t sizes[3] = { 100, 200, 300 };
	struct mc_msg_put_end_item items[3] = { { .key = keys[0] }, { .key = keys[1] },
						{ .key = keys[2] } };
	struct mc_msg_batch_put_start_req bps = { .client_id = uid(7), .n_keys = 3, .keys = keys,
						  .n_sizes = 3, .sizes = sizes,
						  .config = { .replica_num = 1 } };
	durable_rpc(&d, MC_OP_BATCH_PUT_START, &bps);
	struct mc_msg_batch_put_end_req bpe = { .client_id = uid(7), .n_items = 3, .items = items };
	durable_rpc(&d, MC_OP_BATCH_PUT_END, &bpe);
	struct mc_msg_batch_upsert_start_req bus = { .client_id = uid(7), .n_keys = 3, .keys = keys,
						     .n_sizes = 3, .sizes = sizes,
						     .config = { .replica_num = 1 } };
	before = d.logged;
	durable_rpc(&d, MC_OP_BATCH_UPSERT_START, &bus);
	assert_true(d.logged == before);       /* nothing until the PUT_END */
	durable_rpc(&d, MC_OP_BATCH_PUT_END, &bpe);
	assert_true(d.logged >= before + 3);   /* three OBJECTs, each replacing the old one */
	struct mc_msg_batch_remove_req brm = { .n_keys = 1, .keys = keys, .force = true };
	durable_rpc(&d, MC_OP_BATCH_REMOVE, &brm);
	struct mc_msg_remove_by_regex_req rr = { .regex = mc_bytes_str("^d3$"), .force = true };
	durable_rpc(&d, MC_OP_REMOVE_BY_REGEX, &rr);
	struct mc_msg_remove_all_req ra = { .force = true };
	durable_rpc(&d, MC_OP_REMOVE_ALL, &ra);
	/* NODE_POLL (the node's commands) logs nothing here: nothing to offload */
	struct mc_msg_node_poll_req np = { .client_id = uid(7), .disk_capacity = 1u << 20 };
	durable_rpc(&d, MC_OP_NODE_POLL, &np);
	struct mc_msg_unmount_segment_req um = { .client_id = uid(7), .segment_id = uid(71) };
	durable_rpc(&d, MC_OP_UNMOUNT_SEGMENT, &um);

	/* A put ended by the node that holds it (BATCH_NODE_PUT_END, from
	 * uid(7), which mounted the segments): its OBJECT record. */
	struct mc_msg_put_start_req ps5 = { .client_id = uid(8), .key = mc_bytes_str("d5"),
					    .size = 4096, .config = { .replica_num = 1 } };
	struct resp r5;
	assert_int_equal(rpc(d.fd, MC_OP_PUT_START, &ps5, &r5), 0);
	assert_int_equal(r5.m.put_start_resp.n_replicas, 1);
	const struct mc_replica_desc *rd = &r5.m.put_start_resp.replicas[0];
	struct mc_msg_node_put_end_item ni = { .client_id = uid(8), .key = ps5.key,
					       .segment_id = rd->mem.segment_id,
					       .offset = rd->mem.offset, .length = 4096 };
	struct mc_msg_batch_node_put_end_req npe = { .client_id = uid(7), .n_items = 1,
						     .items = &ni };
	before = d.logged;
	durable_rpc(&d, MC_OP_BATCH_NODE_PUT_END, &npe);
	assert_true(d.logged == before + 1);
	/* A relayed put's start (BATCH_NODE_PUT_START) on that segment: no record */
	struct mc_msg_node_put_start_item si = { .client_id = uid(8), .key = mc_bytes_str("d6"),
						 .size = 4096, .segment_id = rd->mem.segment_id,
						 .config = { .replica_num = 1 } };
	struct mc_msg_batch_node_put_start_req nps = { .client_id = uid(7), .n_items = 1,
						       .items = &si };
	before = d.logged;
	durable_rpc(&d, MC_OP_BATCH_NODE_PUT_START, &nps);
	assert_true(d.logged == before);
	resp_free(&r5);
	struct mc_msg_exist_key_req ek = { .key = ps5.key };
	struct resp r6;
	assert_int_equal(rpc(d.fd, MC_OP_EXIST_KEY, &ek, &r6), 0);
	assert_true(r6.m.exist_key_resp.exists);
	resp_free(&r6);

	/* 2 mounts, 2 objects, pin, unpin, delete, 6 objects, 3 deletes, 1
	 * object, unmount */
	assert_true(d.logged >= 18);
	for (unsigned i = 0; i < MC_OP_COUNT; i++)
		if (mc_op_info_at(i)->flags & MC_OPF_DURABLE)
			assert_true(d.seen[i]);	/* a new durable op belongs above */
	close(d.fd);
}

/* Parked replies under load: threads pipeline PutStart, PutEnd,
 * GetReplicaList and Remove of their own keys on their own connections
 * while the flusher settles tickets and wakes the workers.  Every response
 * comes back in order, with its id and status 0; a GetReplicaList behind a
 * parked PutEnd sees the object; nothing stays parked; one thread's worker
 * kept serving while replies were parked (parked_total > 0).  Run under
 * TSan by make test-tsan. */
#define PS_THREADS 16
#define PS_ROUNDS 40

struct pstress {
	struct fixture *f;
	int t;
	int bad;
};

static void *pstress_main(void *arg)
{
	struct pstress *p = arg;
	int fd = conn(p->f);
	char key[32];
	uint32_t id = (uint32_t)p->t << 20;
	for (int r = 0; r < PS_ROUNDS && !p->bad; r++) {
		snprintf(key, sizeof(key), "ps-%d-%d", p->t, r);
		struct mc_msg_put_start_req ps = { .client_id = uid(7), .key = mc_bytes_str(key),
						   .size = 4096, .config = { .replica_num = 1 } };
		struct mc_msg_put_end_req pe = { .client_id = uid(7), .key = ps.key };
		struct mc_msg_get_replica_list_req gr = { .key = ps.key };
		struct mc_msg_remove_req rm = { .key = ps.key, .force = true };
		uint16_t ops[4] = { MC_OP_PUT_START, MC_OP_PUT_END, MC_OP_GET_REPLICA_LIST,
				    MC_OP_REMOVE };
		const void *reqs[4] = { &ps, &pe, &gr, &rm };
		for (int i = 0; i < 4; i++)
			send_req(fd, ops[i], id + (uint32_t)i, reqs[i]);
		for (int i = 0; i < 4; i++) {
			struct resp x;
			if (recv_resp(fd, &x) < 0 || x.hdr.req_id != id + (uint32_t)i ||
			    x.hdr.opcode != ops[i] || x.hdr.status != 0)
				p->bad = 1;
			resp_free(&x);
		}
		id += 4;
	}
	close(fd);
	return NULL;
}

static void test_parked_stress(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(80), .name = mc_bytes_str("seg-ps"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 256u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	assert_int_equal(rpc0(fd, MC_OP_MOUNT_SEGMENT, &ms), 0);
	struct pstress p[PS_THREADS];
	pthread_t th[PS_THREADS];
	for (int i = 0; i < PS_THREADS; i++) {
		p[i] = (struct pstress){ .f = f, .t = i };
		assert_int_equal(pthread_create(&th[i], NULL, pstress_main, &p[i]), 0);
	}
	for (int i = 0; i < PS_THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(p[i].bad, 0);
	}
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_true(st.parked_total >= PS_THREADS);
	assert_int_equal(st.parked, 0);
	struct mc_oplog_stats os;
	mc_oplog_get_stats(f->oplog, &os);
	/* group commit across connections: fewer flushes than durable replies */
	assert_true(os.flushes < st.parked_total);
	close(fd);
}

/* A client that half-closes after its requests still gets the parked
 * replies (in order), then the end of the stream. */
static void test_parked_half_close(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(82), .name = mc_bytes_str("seg-hc"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	struct mc_msg_put_start_req ps = { .client_id = uid(7), .key = mc_bytes_str("hc"),
					   .size = 4096, .config = { .replica_num = 1 } };
	struct mc_msg_put_end_req pe = { .client_id = uid(7), .key = ps.key };
	struct mc_msg_ping_req pg = { .client_id = uid(7) };
	send_req(fd, MC_OP_MOUNT_SEGMENT, 1, &ms);
	send_req(fd, MC_OP_PUT_START, 2, &ps);
	send_req(fd, MC_OP_PUT_END, 3, &pe);
	send_req(fd, MC_OP_PING, 4, &pg);
	shutdown(fd, SHUT_WR);
	for (uint32_t i = 1; i <= 4; i++) {
		struct resp r;
		assert_int_equal(recv_resp(fd, &r), 0);
		assert_int_equal(r.hdr.req_id, i);
		assert_int_equal(r.hdr.status, 0);
		resp_free(&r);
	}
	expect_eof(fd);
	close(fd);
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_true(st.parked_total >= 2);	/* the mount and the PutEnd waited */
	assert_int_equal(st.parked, 0);
}

/* A batch of PutEnds costs one flush. */
static void test_batch_one_flush(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(81), .name = mc_bytes_str("seg-b1"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	assert_int_equal(rpc0(fd, MC_OP_MOUNT_SEGMENT, &ms), 0);
	enum { N = 64 };
	struct mc_bytes keys[N];
	uint64_t sizes[N];
	struct mc_msg_put_end_item items[N];
	char names[N][16];
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "b1-%d", i);
		keys[i] = mc_bytes_str(names[i]);
		sizes[i] = 4096;
		items[i] = (struct mc_msg_put_end_item){ .key = keys[i] };
	}
	struct mc_msg_batch_put_start_req bps = { .client_id = uid(7), .n_keys = N, .keys = keys,
						  .n_sizes = N, .sizes = sizes,
						  .config = { .replica_num = 1 } };
	struct mc_oplog_stats a, b;
	mc_oplog_get_stats(f->oplog, &a);
	assert_int_equal(rpc0(fd, MC_OP_BATCH_PUT_START, &bps), 0);
	mc_oplog_get_stats(f->oplog, &b);
	assert_int_equal(b.appended, a.appended);	/* PutStart logs nothing: no fsync */
	assert_int_equal(b.flushes, a.flushes);
	struct mc_msg_batch_put_end_req bpe = { .client_id = uid(7), .n_items = N, .items = items };
	assert_int_equal(rpc0(fd, MC_OP_BATCH_PUT_END, &bpe), 0);
	mc_oplog_get_stats(f->oplog, &b);
	assert_int_equal(b.appended, a.appended + N);
	assert_int_equal(b.flushes, a.flushes + 1);
	assert_true(b.durable_seq >= a.durable_seq + N);	/* answered once durable */
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durable_flags),
		cmocka_unit_test_setup_teardown(test_durable_ops, setup_oplog, teardown),
		cmocka_unit_test_setup_teardown(test_durable_ops, setup_parked, teardown),
		cmocka_unit_test_setup_teardown(test_parked_stress, setup_parked_fast, teardown),
		cmocka_unit_test_setup_teardown(test_batch_one_flush, setup_parked, teardown),
		cmocka_unit_test_setup_teardown(test_parked_half_close, setup_parked, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
