/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-repair.h - `mooncake-master --repair [--yes]`: checks the local
 * oplog of a stopped master, says what a cut at its first bad byte drops
 * (every record, decoded), and with --yes cuts it (oplog.h:
 * mc_oplog_repair_local, which copies what goes aside first).
 */
#ifndef MC_MASTER_MASTER_REPAIR_H
#define MC_MASTER_MASTER_REPAIR_H

#include <stdbool.h>
#include <stdio.h>

/* Writes the report to out.  0 (also when there is nothing to repair) or
 * MC_ERR_* (the reason written to out). */
int mc_master_repair(const char *state_dir, bool apply, FILE *out);

#endif
