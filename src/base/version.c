/* SPDX-License-Identifier: MIT */
/* The version of the library actually linked (the header's macros give
 * the one compiled against). */
#include "compiler.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char *nc_version(void)
{
	return STR(NC_VERSION_MAJOR) "." STR(NC_VERSION_MINOR) "." STR(NC_VERSION_PATCH);
}
