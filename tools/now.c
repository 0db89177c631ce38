/* SPDX-License-Identifier: MIT */
/* nanoclock now: the time, and how far from UTC it may be. */
#include "commands.h"
#include "args.h"
#include "help.h"
#include "json.h"
#include "report.h"

#include <nanoclock.h>
#include <nanoclock_info.h>
#include <nanoclock_shared.h>
#include <nanoclock_sync.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

int cmd_now(const struct tool_now_opts *o)
{
	int mode = o->mode;
	int rc = nc_init();
	struct nc_utc b;
	nc_utc_now(&b);
	int64_t u = b.unix_ns;
	uint64_t mono = nc_now_ns();
	struct nc_unix_status st;
	nc_get_unix_status(&st);
	time_t secs = (time_t)(u / 1000000000);
	long ns = (long)(u % 1000000000);
	if (ns < 0) {
		ns += 1000000000;
		secs--;
	}
	struct tm tm;
	char iso[64] = "?";
	if (gmtime_r(&secs, &tm)) {
		size_t l = strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(iso + l, sizeof(iso) - l, ".%09ldZ", ns);
	}
	char err[512];
	utc_error_text(&st, err, sizeof(err));
	if (mode == 1) {
		printf("%lld.%09ld\n", (long long)secs, ns);
	} else if (mode == 2) {
		printf("%s\n", iso);
	} else if (mode == 3) {
		struct jobj j = {1, 0};
		jfmt(&j, "unix_ns", "%lld", (long long)u);
		jstr(&j, "iso", iso);
		jfmt(&j, "monotonic_ns", "%llu", (unsigned long long)mono);
		jstr(&j, "counter", nc_counter_name());
		if (b.status == NC_UTC_SYNCHRONISED || b.status == NC_UTC_FREE_RUNNING) {
			jfmt(&j, "earliest_ns", "%lld", (long long)b.earliest_ns);
			jfmt(&j, "latest_ns", "%lld", (long long)b.latest_ns);
		} else {
			jfmt(&j, "earliest_ns", "null");
			jfmt(&j, "latest_ns", "null");
		}
		jstr(&j, "utc_source", nc_utc_source_name(b.source));
		jstr(&j, "utc_status", nc_utc_status_name(b.status));
		if (b.as_of_ns)
			jfmt(&j, "utc_as_of", "%lld", (long long)b.as_of_ns);
		else
			jfmt(&j, "utc_as_of", "null");
		jfmt(&j, "init_status", "%d", rc);
		jkey(&j, "status");
		unix_status_json(&st, 2);
		jend(&j);
		printf("\n");
	} else {
		printf("%s  (%lld.%09ld)\n%s\n", iso, (long long)secs, ns, err);
	}
	return 0;
}
