/* SPDX-License-Identifier: MIT */
/* nanoclock check: do the CPUs' counters agree? */
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

int cmd_check(const struct tool_check_opts *co)
{
	struct nc_sync_options o;
	nc_sync_default_options(&o);
	int json = co->json;
	o.method = co->method;
	if (o.method == NC_SYNC_SWITCH) {
		o.probes = 0;
		o.min_enclosed = 0;
	}
	if (co->probes > 0)
		o.probes = (unsigned)co->probes;
	if (co->rounds > 0)
		o.rounds = (unsigned)co->rounds;
	static struct nc_sync_report r; /* 20 kB: off the stack */
	int rc = nc_sync_check(&o, &r);
	if (rc != 0 && rc != NC_ESYS) {
		fprintf(stderr, "nanoclock check: %s\n", nc_strerror(rc));
		return 2;
	}
	if (json) {
		sync_json(&r, 1);
		printf("\n");
	} else {
		if (rc != 0)
			printf("check could not run: %s — ", nc_strerror(rc));
		sync_line(&r);
		for (int i = 1; i < r.ncpus; i++) {
			printf("  CPU %d - CPU %d: ", r.cpu[i].cpu, r.base_cpu);
			if (r.cpu[i].bounded)
				printf("shift in [%lld, %lld] ticks", (long long)r.cpu[i].shift_lo,
				       (long long)r.cpu[i].shift_hi);
			else
				printf("shift not bounded");
			printf(", %llu probes, %llu enclosed\n", (unsigned long long)r.cpu[i].probes,
			       (unsigned long long)r.cpu[i].enclosed);
		}
		printf("  kernel: TSC marked unstable %s; CPUID invariant TSC %s (reported, not used "
		       "for the verdict)\n",
		       tri(r.kernel_tsc_unstable), tri(r.cpuid_invariant_tsc));
		if (o.method == NC_SYNC_COP)
			printf("  cop: CAS-ordered probes, one pinned thread per CPU; enclosed: probes with a "
		       "CPU %d probe\n  just before and after, each narrowing the interval; quality: "
		       "the fewest enclosed\n  of any CPU / the %u needed (below 1: inconclusive); "
		       "nanoclock check --help\n",
		       r.base_cpu, o.min_enclosed);
	}
	return r.verdict == NC_SYNC_CONSISTENT ? 0 : r.verdict == NC_SYNC_INCONSISTENT ? 1 : 3;
}
