/* error.c - lookups over the error table in include/mooncake/error.h. */
#include <string.h>

#include "mooncake/common.h"
#include "mooncake/error.h"

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
	if (e)
		return e->desc;
	/* Not in the table: a negative errno (the daemons' internals still
	 * return some), described as strerror() would. */
	const char *d = code < 0 && code > -4096 ? strerrordesc_np(-code) : NULL;
	return d ? d : "unknown error";
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
