/* SPDX-License-Identifier: Apache-2.0 */
/* error.c - lookups over the error table in include/mooncake/error.h, and
 * errno values mapped onto it (util/syserr.h). */
#include <errno.h>
#include <string.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "util/syserr.h"

struct mc_error_info {
	int code;
	int http;
	const char *name;
	const char *desc;
};

static const struct mc_error_info error_table[] = {
#define MC__ERR_ROW(name, value, http, desc) { value, http, #name, desc },
	MC_ERROR_LIST(MC__ERR_ROW)
#undef MC__ERR_ROW
};

static const struct mc_error_info *error_find(int code)
{
	for (size_t i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++)
		if (error_table[i].code == code)
			return &error_table[i];
	return NULL;
}

MC_API const char *mc_error_name(int code)
{
	const struct mc_error_info *e = error_find(code);
	return e ? e->name : "UNKNOWN_ERROR";
}

MC_API const char *mc_strerror(int code)
{
	const struct mc_error_info *e = error_find(code);
	return e ? e->desc : "unknown error";
}

MC_API int mc_error_http_status(int code)
{
	const struct mc_error_info *e = error_find(code);
	return e ? e->http : 500;
}

MC_API int mc_error_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++)
		if (strcmp(error_table[i].name, name) == 0)
			return error_table[i].code;
	return 1;
}

/*
 * What a failed system call means to a caller: X(errno, MC_ERR_ suffix).
 * Files: a missing one is FILE_NOT_FOUND, one that cannot be opened or
 * created FILE_OPEN_FAIL, a failed write or sync FILE_WRITE_FAIL.
 * Sockets: a timeout is RPC_TIMEOUT, a refused, reset or unreachable peer
 * and an address in use RPC_FAIL.
 */
#define MC_ERRNO_LIST(X) \
	X(ENOMEM,       NO_MEMORY) \
	X(ENOBUFS,      NO_MEMORY) \
	X(ENOENT,       FILE_NOT_FOUND) \
	X(EACCES,       FILE_OPEN_FAIL) \
	X(EPERM,        FILE_OPEN_FAIL) \
	X(EROFS,        FILE_OPEN_FAIL) \
	X(EEXIST,       FILE_OPEN_FAIL) \
	X(EISDIR,       FILE_OPEN_FAIL) \
	X(ENOTDIR,      FILE_OPEN_FAIL) \
	X(ELOOP,        FILE_OPEN_FAIL) \
	X(EMFILE,       FILE_OPEN_FAIL) \
	X(ENFILE,       FILE_OPEN_FAIL) \
	X(EIO,          FILE_WRITE_FAIL) \
	X(ENOSPC,       FILE_WRITE_FAIL) \
	X(EDQUOT,       FILE_WRITE_FAIL) \
	X(EFBIG,        FILE_WRITE_FAIL) \
	X(EINVAL,       INVALID_PARAMS) \
	X(ENAMETOOLONG, INVALID_PARAMS) \
	X(ERANGE,       INVALID_PARAMS) \
	X(EOVERFLOW,    INVALID_PARAMS) \
	X(EAGAIN,       RPC_TIMEOUT) \
	X(ETIMEDOUT,    RPC_TIMEOUT) \
	X(ECONNREFUSED, RPC_FAIL) \
	X(ECONNRESET,   RPC_FAIL) \
	X(ECONNABORTED, RPC_FAIL) \
	X(EPIPE,        RPC_FAIL) \
	X(ENOTCONN,     RPC_FAIL) \
	X(EHOSTUNREACH, RPC_FAIL) \
	X(ENETUNREACH,  RPC_FAIL) \
	X(EADDRINUSE,   RPC_FAIL) \
	X(EADDRNOTAVAIL, RPC_FAIL) \
	X(EPROTO,       RPC_FAIL) \
	X(EBUSY,        UNAVAILABLE_IN_CURRENT_STATUS) \
	X(ENOSYS,       NOT_SUPPORTED) \
	X(EOPNOTSUPP,   NOT_SUPPORTED)

int mc_err_from_errno(int e)
{
	switch (e) {
#define MC__ERRNO_CASE(eno, code) case eno: return MC_ERR_##code;
	MC_ERRNO_LIST(MC__ERRNO_CASE)
#undef MC__ERRNO_CASE
	}
	return MC_ERR_INTERNAL_ERROR;
}
