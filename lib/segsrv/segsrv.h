/* SPDX-License-Identifier: Apache-2.0 */
/*
 * segsrv.h - a segment server: one memory segment contributed to the
 * cluster and served from this process, with the node's own pieces
 * (node-segment.h: the memory, node-grant.h: the grant checks,
 * node-data.h behind node-tcp.c: the TCP data plane, node-master.h: mount,
 * heartbeat, remount, unmount).  The client library runs one when
 * mc_client_opts.segment_size is set (the original's model, where every
 * client is also a storage node); mooncake-node composes the same pieces
 * itself, with more segments, shm files, RDMA and metrics.
 *
 * The segment is a memfd (node-segment.h, mc_node_segments_open_client)
 * that co-located clients map through /proc/<pid>/fd/<fd>, as they map a
 * node's shm files; it goes with the process, however it ends (without
 * memfd_create: private anonymous memory, read over TCP only).  A process
 * that dies stops heartbeating: the master drops the segment client_ttl_ms
 * after the last heartbeat, and its objects with it.
 *
 * Security is the node's: the data plane admits connections as
 * rpc-admit.h says (with the cluster secret: a handshake; without: loopback
 * peers only), and every DATA_READ / DATA_WRITE / DATA_STAT needs a grant
 * the master signed for that range with the segment's current key
 * (node-grant.h); until the first mount there is no key and nothing is
 * served.  The master link proves the same secret and binds the segment's
 * own client id.
 *
 * Threads: the data plane's workers (rpc-server.c) and the master link's
 * thread (node-master.c).  Locks: those of node-grant.h and
 * node-master.h (leaves); the segment table does not change while the
 * server runs.
 */
#ifndef MC_SEGSRV_H
#define MC_SEGSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/logfn.h"

/* The original's range for a client's data-plane port (its
 * TransferEngine picks a free one there when local_hostname has none). */
#define MC_SEGSRV_PORT_MIN 12300
#define MC_SEGSRV_PORT_MAX 14300

struct mc_segsrv;

struct mc_segsrv_config {
	const char *master;		/* host:port[,host:port...] */
	const uint8_t *secret;		/* the cluster secret, or NULL (copied) */
	size_t secret_len;
	uint64_t size;			/* bytes of the segment, > 0 */
	const char *name;		/* segment name; NULL: "<host>:<port>" */
	const char *host;		/* advertised host; NULL/"": the host name */
	const char *bind;		/* listen address; NULL/"": "0.0.0.0" */
	uint16_t port_min, port_max;	/* the first free one from a random start;
					   both 0: MC_SEGSRV_PORT_MIN..MAX */
	unsigned workers;		/* data plane threads; 0: 1 */
	mc_log_fn log;			/* reports (mounts, refusals); NULL: none */
	void *log_ctx;
};

/*
 * Maps the segment, starts the data plane on a port of the range and the
 * master link, and waits up to wait_ms for the first mount (0: does not
 * wait).  0, or MC_ERR_INVALID_PARAMS (size 0, a bad range or name),
 * MC_ERR_NO_MEMORY, MC_ERR_RPC_FAIL (no free port in the range, a bad
 * bind address), MC_ERR_RPC_TIMEOUT (not mounted within wait_ms: the
 * master's own refusal, if it gave one).
 */
int mc_segsrv_start(const struct mc_segsrv_config *cfg, int wait_ms, struct mc_segsrv **ret);

/* "host:port", the endpoint the master hands out for the segment. */
const char *mc_segsrv_endpoint(const struct mc_segsrv *s);

/* Stops the master link (unmount: tells the master the segment is gone,
 * and with it its objects; best effort, about a second at most), then the
 * data plane; unmaps the memory.  NULL is fine. */
void mc_segsrv_stop(struct mc_segsrv *s, bool unmount);

#endif
