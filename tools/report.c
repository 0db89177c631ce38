/* SPDX-License-Identifier: MIT */
/* What more than one command prints alike (report.h). */
#include "report.h"
#include "json.h"

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

/* ---- Unix time, as info and now show it ---- */
/* tie_error_ns is the bound on |nc_unix_ns() - CLOCK_REALTIME| now (the
 * tie's half-width, its age's drift, a correction being slewed): said as
 * such, apart from the last tie's own half-width (info's next line). */
/* The bound on UTC in one line: the interval and what it rests on, or why
 * there is none. */
void utc_error_text(const struct nc_unix_status *st, char *buf, size_t len)
{
	struct nc_utc_status us;
	nc_get_utc_status(&us);
	if (st->utc_error_ns >= 0)
		snprintf(buf, len,
			 "±%.3f ms from UTC (%s%s%s, %s: its bound %.3f ms, the tie %.0f ns, %.3g ppm "
			 "since its figures %.1f s ago; nc_unix_ns within ±%.0f ns of the system clock)",
			 st->utc_error_ns / 1e6, nc_utc_source_name(us.source), us.source_arg[0] ? " " : "",
			 us.source_arg, nc_utc_status_name(us.status), us.source_bound_ns / 1e6, us.tie_ns,
			 us.drift_ppm, us.age_s, st->tie_error_ns);
	else
		snprintf(buf, len,
			 "error from UTC unknown: %s (nc_unix_ns within ±%.0f ns of the system clock "
			 "now)",
			 st->why, st->tie_error_ns);
}

void unix_status_json(const struct nc_unix_status *st, int depth)
{
	struct jobj o = {depth, 0};
	/* the kernel's word (adjtimex), not the UTC source's: utc_status */
	jfmt(&o, "kernel_synchronised", "%s", jtri(st->synchronised));
	jfmt(&o, "kernel_state", "%d", st->kernel_state);
	jfmt(&o, "leap_pending", "%d", st->leap_pending);
	jfmt(&o, "tai_offset_s", "%d", st->tai_offset_s);
	jfmt(&o, "kernel_max_error_us", "%.0f", st->kernel_max_error_us);
	jfmt(&o, "kernel_est_error_us", "%.0f", st->kernel_est_error_us);
	jfmt(&o, "kernel_freq_ppm", "%.4f", st->kernel_freq_ppm);
	jfmt(&o, "tie_halfwidth_ns", "%.1f", st->tie_halfwidth_ns);
	jfmt(&o, "tie_age_s", "%.3f", st->tie_age_s);
	jfmt(&o, "tie_error_ns", "%.1f", st->tie_error_ns);
	if (st->utc_error_ns >= 0)
		jfmt(&o, "utc_error_ns", "%.0f", st->utc_error_ns);
	else
		jfmt(&o, "utc_error_ns", "null");
	jstr(&o, "why", st->why);
	jfmt(&o, "steps", "%u", st->steps);
	jfmt(&o, "refreshes", "%u", st->refreshes);
	jend(&o);
}

/* ---- the cross-CPU check, as check and info show it ---- */
void sync_json(const struct nc_sync_report *r, int depth)
{
	struct jobj o = {depth, 0};
	jfmt(&o, "verdict", "\"%s\"", nc_sync_verdict_name(r->verdict));
	jfmt(&o, "method", "\"%s\"", r->method == NC_SYNC_SWITCH ? "switch" : "cop");
	jkey(&o, "cpus");
	printf("[");
	for (int i = 0; i < r->ncpus; i++)
		printf("%s%d", i ? ", " : "", r->cpu[i].cpu);
	printf("]");
	jfmt(&o, "base_cpu", "%d", r->base_cpu);
	if (r->bounded) {
		jfmt(&o, "max_shift_ticks", "%llu", (unsigned long long)r->max_shift_ticks);
		jfmt(&o, "max_shift_ns", "%.3f", r->max_shift_ns);
	} else { /* no bound for some CPU: say so rather than print a number */
		jfmt(&o, "max_shift_ticks", "null");
		jfmt(&o, "max_shift_ns", "null");
	}
	jfmt(&o, "monotonic", "%s", r->monotonic ? "true" : "false");
	jfmt(&o, "same_pace", "%s", r->same_pace ? "true" : "false");
	jfmt(&o, "advancing", "%s", r->advancing ? "true" : "false");
	jfmt(&o, "elapsed_ms", "%.3f", r->elapsed_ms);
	jfmt(&o, "quality", "%.3f", r->quality);
	jfmt(&o, "probes", "%llu", (unsigned long long)r->probes);
	jfmt(&o, "decreases", "%llu", (unsigned long long)r->decreases);
	jfmt(&o, "rounds", "%u", r->rounds_done);
	jfmt(&o, "timed_out", "%s", r->timed_out ? "true" : "false");
	jkey(&o, "per_cpu");
	printf("[");
	for (int i = 0; i < r->ncpus; i++) {
		const struct nc_sync_cpu *c = &r->cpu[i];
		printf("%s\n%*s{\"cpu\": %d, \"shift_lo_ticks\": %lld, \"shift_hi_ticks\": %lld, "
		       "\"bounded\": %s, \"probes\": %llu, \"enclosed\": %llu, \"advancing\": %s}",
		       i ? "," : "", 2 * depth + 2, "", c->cpu, (long long)c->shift_lo,
		       (long long)c->shift_hi, c->bounded ? "true" : "false",
		       (unsigned long long)c->probes, (unsigned long long)c->enclosed,
		       c->advancing ? "true" : "false");
	}
	printf("\n%*s]", 2 * depth, "");
	jfmt(&o, "bad_cpu", "%d", r->bad_cpu);
	jstr(&o, "evidence", r->evidence);
	jfmt(&o, "kernel_tsc_unstable", "%s", jtri(r->kernel_tsc_unstable));
	jfmt(&o, "cpuid_invariant_tsc", "%s", jtri(r->cpuid_invariant_tsc));
	jend(&o);
}

/* max_shift is an upper bound: said with "<=" (and not at all when some
 * CPU got no interval) */
void sync_line(const struct nc_sync_report *r)
{
	printf("%s over CPUs", nc_sync_verdict_name(r->verdict));
	for (int i = 0; i < r->ncpus; i++)
		printf("%s%d", i ? "," : " ", r->cpu[i].cpu);
	printf(" (%s): ", r->method == NC_SYNC_SWITCH ? "switch" : "cop");
	if (r->bounded)
		printf("max shift <= %llu ticks (%.1f ns)", (unsigned long long)r->max_shift_ticks,
		       r->max_shift_ns);
	else
		printf("max shift not bounded");
	printf(", %smonotonic, %s pace, %.1f ms, quality %.2f", r->monotonic ? "" : "NOT ",
	       r->same_pace ? "same" : "DIFFERENT", r->elapsed_ms, r->quality);
	if (r->evidence[0])
		printf(" — %s", r->evidence);
	printf("\n");
}
