/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syserr.h - a failed system call as an MC_ERR_* code.
 *
 * Everything in the tree returns 0 or a negative MC_ERR_* code (the table
 * in include/mooncake/error.h), never a negative errno: the two number
 * spaces overlap (-1 is both -EPERM and MC_ERR_INTERNAL_ERROR).  A caller
 * converts errno where the system call fails, and puts what the code
 * cannot say (strerror(errno), the path) in its error buffer or log line.
 */
#ifndef MC_UTIL_SYSERR_H
#define MC_UTIL_SYSERR_H

/* The code for errno value e (positive, as errno holds it); the mapping is
 * the table in lib/util/error.c, MC_ERR_INTERNAL_ERROR for the rest. */
int mc_err_from_errno(int e);

#endif
