/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-segment.h - the memory segments a node contributes, and the node's
 * persistent identity.
 *
 * Each segment is a file /dev/shm/mooncake-<segment uuid hex> (created with
 * O_EXCL, sized with ftruncate and, where the filesystem supports it,
 * fallocate so that a full tmpfs fails at start rather than with SIGBUS
 * later), mapped MAP_SHARED: a co-located client can open and map the same
 * file (its path is in MOUNT_SEGMENT's shm_path, and the master repeats it
 * in every replica descriptor) and memcpy.
 *
 * The files are mode 0660 (MC_NODE_SHM_MODE, set with fchmod whatever the
 * umask, and again on a reused file), owned by the node's user and group.
 * This is the one exception to granted data ranges (util/grant.h): a
 * process that can open a segment file can read and write all of it,
 * grants or not, because a mapping cannot be limited to a range by
 * permissions.  Co-located clients must therefore run in the node's group
 * (the packaged unit runs the node as user and group mooncake; add the
 * client's user to that group), and that group is trusted with every
 * tenant's bytes on the node.  Everyone else reads and writes through the
 * data plane, where each access needs a grant.
 *
 * state_dir/node.id (text, written atomically: tmp file, fsync, rename):
 *
 *	mooncake-node 1
 *	client <32 hex>
 *	segment <32 hex> <size in bytes>
 *	...
 *
 * At start the node reuses its client id and, for segment i < segments,
 * the i-th listed segment when its shm file exists and has the configured
 * size (same segment id, the data is kept); otherwise a new segment (new
 * id, new file).  Listed segments that are no longer used (fewer
 * --segments, another --segment_size, the wrong size) have their shm file
 * deleted.  A fresh state_dir makes a new identity and new files.  The shm
 * files are NOT removed on a clean shutdown (data is meant to outlive a
 * node restart); `mooncakectl node release` (cli/ctl-node.c, which reads
 * node.id) deletes them when a node is retired, once the master no longer
 * counts on them.
 */
#ifndef MC_NODE_SEGMENT_H
#define MC_NODE_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/uuid.h"

#define MC_NODE_SHM_DIR "/dev/shm"
#define MC_NODE_SHM_MODE 0660		/* the node's user and group only */

struct mc_node_segment {
	struct mc_uuid id;
	uint64_t size;
	uint8_t *base;			/* mmap address */
	bool reused;			/* the shm file existed (data kept) */
	char name[128];			/* "<node name>-<index>" */
	char shm_path[256];
	bool client_file;		/* a contributed segment's memfd (below), held open
					   in fd while mapped */
	int fd;
};

struct mc_node_segments {
	struct mc_uuid client_id;
	unsigned n;
	unsigned nprivate;		/* the last nprivate of seg[] are the node's own
					 * (staging space): served like the others,
					 * never mounted with the master */
	struct mc_node_segment *seg;
};

/* The segments mounted with the master: seg[0 .. n - nprivate). */
static inline unsigned mc_node_segments_mounted(const struct mc_node_segments *s)
{
	return s->n - s->nprivate;
}

/*
 * Loads or creates the identity in state_dir (NULL: no state, always new)
 * and opens/creates n segments of size bytes named "<name>-<i>".  0 or
 * MC_ERR_* with a message in err.
 */
int mc_node_segments_open(const char *state_dir, const char *name, unsigned n, uint64_t size,
			  struct mc_node_segments *ret, char *err, size_t errlen);

/*
 * One segment of size bytes of private anonymous memory named name, with a
 * new random client id and segment id and no shm file (shm_path ""): a
 * client's contributed segment when shm_dir has no room (below).  It lives as long as
 * the mapping, so it vanishes with the process, however it ends.  0 or
 * MC_ERR_* with a message in err.
 */
int mc_node_segments_open_anon(const char *name, uint64_t size, struct mc_node_segments *ret,
			       char *err, size_t errlen);

/*
 * The segment a client process contributes (segsrv.h): size bytes named
 * name, with a new random client id and segment id, in a memfd named
 * "mooncake-<segment id hex>" mapped MAP_SHARED, so that co-located
 * clients map it as they map a node's file (client/shm.c), by the path
 * "/proc/<pid>/fd/<fd>" (shm_path).  Opening that path takes what
 * /proc/<pid>/fd takes: the contributor's user (or CAP_SYS_PTRACE);
 * anyone else reads through the data plane, where every access is
 * granted.  The memfd is sparse (a client may ask for gigabytes and use
 * little) and outside /dev/shm (its size limit does not apply); it goes
 * with the process however it ends, as private memory does: nothing is
 * left behind.  Without memfd_create (or on any failure) the segment is
 * private anonymous memory as mc_node_segments_open_anon (readers then use
 * TCP).
 */
int mc_node_segments_open_client(const char *name, uint64_t size, struct mc_node_segments *ret,
				 char *err, size_t errlen);

/*
 * Appends a node-private segment of size bytes named name (a new random
 * segment id, in a memfd as a client's segment below, so co-located
 * readers of the node's user map it by its /proc path; else private
 * anonymous memory): the staging space of BatchGetOffloadObject.  Before
 * the grants, the transport and the master link see s.  0 or MC_ERR_*
 * with a message in err.
 */
int mc_node_segments_add_private(struct mc_node_segments *s, const char *name, uint64_t size,
				 char *err, size_t errlen);

/* Unmaps (the files stay; a client's memfd is closed).  unlink_files: also
 * remove them (tests). */
void mc_node_segments_close(struct mc_node_segments *s, bool unlink_files);

/* The segment with this id, NULL if none. */
const struct mc_node_segment *mc_node_segment_find(const struct mc_node_segments *s,
						   struct mc_uuid id);

/*
 * Huge pages without a huge tmpfs.  On these VMs the first access of a
 * process to each 4 KiB page of a mapping costs 15-20 us, populated or not
 * (the hypervisor's shadow page tables; the guest counts no fault):
 * 0.17 GB/s through a fresh mapping of a populated /dev/shm file, against
 * 10 GB/s when the file's pages are 2 MiB folios, which a fresh mapping
 * takes one per 2 MiB.  /dev/shm is not mounted with huge=, and
 * shmem_enabled is usually "never", but MADV_COLLAPSE (Linux 6.1) folds a
 * file's pages into 2 MiB folios whatever those say, bytes unchanged,
 * also while others map and write them.
 */
#define MC_SEGMENT_HUGE (2ull << 20)

/* mmap of size bytes of fd, MAP_SHARED read-write, at a MC_SEGMENT_HUGE
 * boundary (huge folios are mapped whole only there); MAP_POPULATE with
 * populate.  MAP_FAILED (errno set) on failure; munmap(p, size) undoes it. */
void *mc_segment_map(int fd, uint64_t size, bool populate);

/* Folds [off, off + MC_SEGMENT_HUGE) of g (off a multiple of it, g mapped
 * by mc_segment_map) into one huge folio: 1 done (or already so), 0 not
 * now (pages pinned or busy, no huge page free), or a negative MC_ERR_*
 * when it cannot be done at all (kernel without MADV_COLLAPSE, memory
 * that is not a file's or a hole): the caller stops trying. */
int mc_node_segment_collapse(const struct mc_node_segment *g, uint64_t off);

/* "<shm_dir>/mooncake-<hex>"; shm_dir is MC_NODE_SHM_DIR unless set. */
void mc_node_shm_path(struct mc_uuid id, char *buf, size_t len);
/* Where segment files go (the node's shm_dir option); NULL/"": the default. */
void mc_node_set_shm_dir(const char *dir);
/* Whether shm_dir is on a tmpfs mounted with huge=always|within_size.
 * Without huge pages every 4 KiB page a process first touches costs a
 * fault; on some VMs that is ~15 us, i.e. < 0.5 GB/s on fresh memory. */
bool mc_node_shm_dir_has_huge_pages(void);

#endif
