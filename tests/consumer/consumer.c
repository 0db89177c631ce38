/* SPDX-License-Identifier: MIT */
/* A program that uses nanoclock as an installed library would be used:
 * built by scripts/check-consumers with pkg-config, find_package and
 * add_subdirectory (static and shared), and against the Debian packages by
 * scripts/check-deb.  Includes every public C header, calls the inline
 * reads and a few exported functions, and checks that the library linked is
 * the one the headers describe (nc_version() against NC_VERSION_*).
 * Prints "nanoclock <version> ok (<counter>)". */
#include <nanoclock.h>
#include <nanoclock_info.h>
#include <nanoclock_sync.h>

#include <stdio.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

int main(void)
{
	const char *want = STR(NC_VERSION_MAJOR) "." STR(NC_VERSION_MINOR) "." STR(NC_VERSION_PATCH);
	if (strcmp(nc_version(), want) != 0) {
		fprintf(stderr, "consumer: library %s, headers %s\n", nc_version(), want);
		return 1;
	}
	int rc = nc_init();
	uint64_t t0 = nc_ticks_begin();
	uint64_t a = nc_now_ns();
	int64_t u = nc_unix_ns();
	uint64_t b = nc_now_ns();
	uint64_t t1 = nc_ticks_end();
	struct nc_sync_options o;
	nc_sync_default_options(&o);
	static struct nc_info info;
	nc_get_info(&info);
	if (b < a || t1 < t0 || u < 1500000000LL * 1000000000LL || info.init_status != rc) {
		fprintf(stderr, "consumer: clocks do not work (%llu %llu %lld)\n", (unsigned long long)a,
			(unsigned long long)b, (long long)u);
		return 1;
	}
	printf("nanoclock %s ok (%s, %s)\n", nc_version(), nc_counter_name(),
	       nc_sync_verdict_name(NC_SYNC_CONSISTENT));
	return 0;
}
