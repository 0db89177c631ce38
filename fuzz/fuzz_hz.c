/* SPDX-License-Identifier: MIT */
/* libFuzzer: the NANOCLOCK_HZ parser (nc__parse_hz) and the parser of the
 * other numeric settings (nc__parse_positive, with the three ranges the
 * library uses).  Invariants: the result is 0 or NC_EINVAL/NC_ERANGE; an
 * accepted value is finite and in range, a refused one leaves the output
 * untouched and says why on one line. */
#include "base/config.h"
#include "fuzz_util.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_positive(const char *s, double lo, double hi)
{
	char why[96];
	double v = -12345;
	int rc = nc__parse_positive(s, lo, hi, &v, why, sizeof(why));
	if (rc == 0) {
		if (!(v >= lo && v <= hi))
			abort();
	} else {
		if ((rc != NC_EINVAL && rc != NC_ERANGE) || v != -12345)
			abort();
		fuzz_check_line(why, sizeof(why), 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	char why[128];
	double hz = -1;
	int rc = nc__parse_hz(s, &hz, why, sizeof(why));
	if (rc == 0) {
		if (!isfinite(hz) || !nc__hz_valid(hz))
			abort();
	} else {
		if ((rc != NC_EINVAL && rc != NC_ERANGE) || hz != -1)
			abort();
		fuzz_check_line(why, sizeof(why), 1);
	}
	/* a small reason buffer truncates, never overruns */
	char tiny[8] = "";
	(void)nc__parse_hz(s, &hz, tiny, sizeof(tiny));
	fuzz_check_line(tiny, sizeof(tiny), 0);
	one_positive(s, 0.001, 1000);  /* NANOCLOCK_CALIB_PPM */
	one_positive(s, 0.1, 10000);   /* NANOCLOCK_CALIB_MAX_MS */
	one_positive(s, 1, 60000);     /* NANOCLOCK_UNIX_REFRESH_MS */
	free(s);
	return 0;
}
