/* SPDX-License-Identifier: MIT */
/* libFuzzer: the NANOCLOCK_* configuration reader (nc__config_read) with a
 * fuzzed environment.  The input is split at 0xff bytes into up to six
 * values, one per variable in the order below; a value starting with 0xfe
 * leaves its variable unset (the values are handed to the reader through
 * its lookup hook, nc__config_read_from).  The first two bytes choose the application's
 * calibration target (nc_set_calibration_target) as init would pass it.
 * Invariants: every setting ends in its range (a refused value keeps the
 * default), every reason is one terminated printable line. */
#include "base/config.h"
#include "fuzz_util.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vars[] = {"NANOCLOCK_COUNTER",       "NANOCLOCK_HZ",
				   "NANOCLOCK_HZ_FORCE",      "NANOCLOCK_CALIB_PPM",
				   "NANOCLOCK_CALIB_MAX_MS",  "NANOCLOCK_UNIX_REFRESH_MS",
				   "NANOCLOCK_SHARED",        "NANOCLOCK_UTC_SOURCE",
				   "NANOCLOCK_UTC_DRIFT_PPM", "NANOCLOCK_UTC_HORIZON_S"};
#define NVARS 10

static const char *lookup(const char *name, void *ctx)
{
	char **val = ctx;
	for (int k = 0; k < NVARS; k++)
		if (!strcmp(name, vars[k]))
			return val[k];
	abort(); /* the library asked for a variable nobody documented */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	double app_ppm = 0, app_ms = 0;
	if (size >= 2) {
		/* 0 (not set) or a value in the API's accepted range */
		app_ppm = data[0] ? 0.001 * pow(10, data[0] / 42.5) : 0;
		app_ms = data[1] ? 0.1 * pow(10, data[1] / 51.0) : 0;
		data += 2;
		size -= 2;
	}
	/* the environment: the variables' values, looked up by name (a table,
	 * not setenv: glibc keeps every string setenv was given, forever) */
	char *val[NVARS] = {NULL};
	size_t start = 0;
	for (int k = 0; k < NVARS && start <= size; k++) {
		size_t end = start;
		while (end < size && data[end] != 0xff)
			end++;
		if (!(end > start && data[start] == 0xfe))
			val[k] = fuzz_str(data + start, end - start);
		start = end + 1;
	}
	struct nc__config c;
	nc__config_read_from(&c, app_ppm, app_ms, lookup, val);
	for (int k = 0; k < NVARS; k++)
		free(val[k]);
	if (strnlen(c.counter, sizeof(c.counter)) == sizeof(c.counter))
		abort(); /* the raw name (quoted wherever it is shown) */
	fuzz_check_line(c.counter_why, sizeof(c.counter_why), 0);
	fuzz_check_line(c.hz_why, sizeof(c.hz_why), 0);
	fuzz_check_line(c.force_why, sizeof(c.force_why), 0);
	fuzz_check_line(c.calib_why, sizeof(c.calib_why), 0);
	fuzz_check_line(c.unix_why, sizeof(c.unix_why), 0);
	if (strnlen(c.hz_text, sizeof(c.hz_text)) == sizeof(c.hz_text))
		abort();
	if (c.hz != 0 && !nc__hz_valid(c.hz))
		abort();
	if (c.hz_set && c.hz == 0 && !c.hz_why[0])
		abort(); /* refused without a reason */
	if (c.counter_why[0] && c.counter[0])
		abort(); /* a refused name is not used */
	if (!(c.calib_ppm >= 0.001 && c.calib_ppm <= 1000) ||
	    !(c.calib_max_ms >= 0.1 && c.calib_max_ms <= 10000))
		abort();
	if (c.unix_refresh_ms != 0 && !(c.unix_refresh_ms >= 1 && c.unix_refresh_ms <= 60000))
		abort();
	if (c.hz_force != 0 && c.hz_force != 1)
		abort();
	/* NANOCLOCK_SHARED: off, or an absolute path that fits with ".new";
	 * a refused value turns sharing off and says why */
	fuzz_check_line(c.shared_why, sizeof(c.shared_why), 0);
	size_t pl = strnlen(c.shared_path, sizeof(c.shared_path));
	if (pl == sizeof(c.shared_path) || (pl && (c.shared_path[0] != '/' || pl + 8 >= sizeof(c.shared_path))))
		abort();
	if (c.shared_why[0] && (!c.shared_off || pl))
		abort();
	if (c.shared_off && pl)
		abort();
	return 0;
}
