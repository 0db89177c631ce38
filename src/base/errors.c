/* SPDX-License-Identifier: MIT */
#include "compiler.h"

const char *nc_strerror(int err)
{
	switch (err) {
	case NC_OK: return "success";
	case NC_EINVAL: return "invalid argument";
	case NC_ERANGE: return "value out of range";
	case NC_ENOCOUNTER: return "requested counter unknown or unusable";
	case NC_ECALIB: return "calibration failed";
	case NC_ESYS: return "system call failed";
	case NC_EBUSY: return "too late: nanoclock is already initialised";
	case NC_EOVERRIDE: return "NANOCLOCK_HZ contradicts measurement: refused";
	case NC_ETIMEDOUT: return "the time given passed first";
	case NC_EUNKNOWN: return "no honest bound on UTC here now";
	default: return "unknown error";
	}
}
