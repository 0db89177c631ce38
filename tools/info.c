/* SPDX-License-Identifier: MIT */
/* nanoclock info: what the library chose, and why (a line per row, or --json). */
#include "commands.h"
#include "args.h"
#include "help.h"
#include "json.h"
#include "report.h"
#include "bench/bench.h"
#include "trace.h"

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

static const char *src_status(int s)
{
	switch (s) {
	case NC_SRC_ADOPTED: return "used";
	case NC_SRC_AGREES: return "agrees";
	case NC_SRC_REJECTED: return "rejected";
	default: return "absent";
	}
}

static const char *cand_status(int s)
{
	return s == NC_CAND_SELECTED ? "selected"
	       : s == NC_CAND_USABLE ? "usable"
	       : s == NC_CAND_SKIPPED ? "skipped"
				      : "rejected";
}

static const char *verdict_word(int v)
{
	return v == NC_SYNC_CONSISTENT     ? "consistent"
	       : v == NC_SYNC_INCONSISTENT ? "inconsistent"
	       : v == NC_SYNC_INCONCLUSIVE ? "inconclusive"
					   : "none";
}

/* LTTNG_UST_CLOCK_PLUGIN, where it is set: LTTng-UST falls back to its own
 * clock without a word when the file cannot be loaded, so the one place a
 * user looks says it.  NULL: not set; else "" when the file is a shared
 * object that can be read, or why not in why[]. */
static const char *lttng_plugin(char *why, size_t len)
{
	const char *p = getenv("LTTNG_UST_CLOCK_PLUGIN");
	if (!p)
		return NULL;
	why[0] = 0;
	unsigned char m[4];
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0)
		snprintf(why, len, "cannot be opened (%s)", strerror(errno));
	else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		snprintf(why, len, "not a regular file");
	else if (read(fd, m, 4) != 4 || memcmp(m, "\177ELF", 4) != 0)
		snprintf(why, len, "not a shared object (no ELF header)");
	if (fd >= 0)
		close(fd);
	return p;
}

/* ---- nanoclock info: one table ----
 * A row is one part of what info shows, one function: given a JSON object
 * it writes its members there, else its text lines; so a field is added
 * in one place.  The text runs in the rows' order; the JSON object keeps
 * the order its readers know (json_at).  A part fetches what it shows
 * beyond struct nc_info (the shared record, the UTC source) as it prints. */
struct info_src {
	const struct nc_info *in;
	const struct tool_costs *c;
	const char *arch;
	const struct nc_sync_report *sync;
	int sync_rc; /* nc_sync_check's: the check could not run */
};

static void info_head(const struct info_src *s, struct jobj *j)
{
	if (j) {
		jstr(j, "version", nc_version());
		jstr(j, "arch", s->arch);
		return;
	}
	printf("nanoclock %s on %s\n\n", nc_version(), s->arch);
}

static void info_counter(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jfmt(j, "init_status", "%d", in->init_status);
		jstr(j, "counter", in->counter);
		return;
	}
	printf("counter        %s%s%s\n", in->counter, in->init_status ? " — nc_init: " : "",
	       in->init_status ? nc_strerror(in->init_status) : "");
}

static void info_policy(const struct info_src *s, struct jobj *j)
{
	if (j)
		jstr(j, "policy", s->in->policy);
	else
		printf("policy         %s\n", s->in->policy);
}

static void info_forced(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jstr(j, "counter_forced", in->counter_forced);
		jstr(j, "counter_error", in->counter_error);
	} else if (in->counter_forced[0]) {
		printf("forced         %s%s%s\n", in->counter_forced, in->counter_error[0] ? " — " : " — used",
		       in->counter_error);
	}
}

static void candidate_json(const struct nc_candidate *cd)
{
	printf("{\"name\": ");
	json_str(cd->name);
	printf(", \"what\": ");
	json_str(cd->what);
	printf(", \"status\": \"%s\", \"reason\": ", cand_status(cd->status));
	json_str(cd->reason);
	if (cd->status == NC_CAND_USABLE || cd->status == NC_CAND_SELECTED) {
		printf(", \"resolution_ticks\": %llu, \"resolution_ns\": %.4f, \"cost_ns\": %.3f, "
		       "\"hz\": %.3f, \"hz_source\": ",
		       (unsigned long long)cd->resolution_ticks, cd->resolution_ns, cd->cost_ns, cd->hz);
		json_str(cd->hz_source);
		printf(", \"penalty_ns\": %.0f, \"score\": %.3f", cd->penalty_ns, cd->score);
	}
	printf("}");
}

static void info_candidates(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jkey(j, "candidates");
		printf("[");
		for (int i = 0; i < in->n_candidates; i++) {
			printf("%s\n    ", i ? "," : "");
			candidate_json(&in->candidates[i]);
		}
		printf("\n  ]");
		return;
	}
	printf("candidates     %-20s %-9s %10s %9s %14s  %s\n", "name", "status", "res (ns)",
	       "cost (ns)", "MHz (source)", "reason");
	for (int i = 0; i < in->n_candidates; i++) {
		const struct nc_candidate *cd = &in->candidates[i];
		if (cd->status == NC_CAND_REJECTED || cd->status == NC_CAND_SKIPPED)
			printf("               %-20s %-9s %10s %9s %14s  %s\n", cd->name,
			       cand_status(cd->status), "-", "-", "-", cd->reason);
		else
			printf("               %-20s %-9s %10.3f %9.2f %9.3f (%s)  %s\n", cd->name,
			       cand_status(cd->status), cd->resolution_ns, cd->cost_ns, cd->hz / 1e6,
			       cd->hz_source, cd->reason);
	}
}

static void info_frequency(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jfmt(j, "hz", "%.6f", in->hz);
		jstr(j, "hz_source", in->hz_source);
		jfmt(j, "hz_uncertainty_ppm", "%.6g", in->hz_uncertainty_ppm);
		return;
	}
	printf("frequency      %.6f MHz ± %.3g ppm (source: %s)\n", in->hz / 1e6,
	       in->hz_uncertainty_ppm, in->hz_source);
}

static void info_measured(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jfmt(j, "hz_measured", "%.6f", in->hz_measured);
		jfmt(j, "hz_measured_ppm", "%.6g", in->hz_measured_ppm);
		jfmt(j, "hz_measured_worst_case_ppm", "%.6g", in->hz_measured_worst_ppm);
		jfmt(j, "calibration_window_ms", "%.4f", in->calib_window_ms);
	} else if (in->hz_measured > 0) {
		printf("  measured     %.6f MHz ± %.3g ppm over %.3f ms (4σ; worst case from bracket "
		       "widths ± %.3g ppm)\n",
		       in->hz_measured / 1e6, in->hz_measured_ppm, in->calib_window_ms,
		       in->hz_measured_worst_ppm);
	}
}

static void info_hz_env(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jkey(j, "hz_env");
		printf("{\"value\": ");
		json_str(in->hz_env);
		printf(", \"status\": ");
		json_str(in->hz_env_status);
		printf("}");
		return;
	}
	printf("  NANOCLOCK_HZ %s%s%s\n", in->hz_env[0] ? in->hz_env : "unset",
	       in->hz_env_status[0] ? " — " : "", in->hz_env_status);
}

static void info_env_ignored(const struct info_src *s, struct jobj *j)
{
	if (j)
		jstr(j, "env_ignored", s->in->env_ignored);
	else if (s->in->env_ignored[0])
		printf("  ignored      %s: the program runs with raised privileges\n", s->in->env_ignored);
}

static void info_hz_sources(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jkey(j, "hz_sources");
		printf("[");
	}
	for (int i = 0; i < in->n_hz_sources; i++) {
		const struct nc_hz_source *h = &in->hz_sources[i];
		if (j) {
			printf("%s\n    {\"name\": ", i ? "," : "");
			json_str(h->name);
			printf(", \"hz\": %.3f, \"status\": \"%s\", \"reason\": ", h->hz,
			       src_status(h->status));
			json_str(h->reason);
			printf("}");
			continue;
		}
		printf("  %-18s %s", h->name, src_status(h->status));
		if (h->hz > 0)
			printf(" %.6f MHz", h->hz / 1e6);
		printf(" (%s)\n", h->reason);
	}
	if (j)
		printf("%s]", in->n_hz_sources ? "\n  " : "");
}

static void info_resolution(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j) {
		jfmt(j, "resolution_ticks", "%llu", (unsigned long long)in->resolution_ticks);
		jfmt(j, "resolution_ns", "%.4f", in->resolution_ns);
		return;
	}
	printf("resolution     %llu tick%s = %.3f ns\n", (unsigned long long)in->resolution_ticks,
	       in->resolution_ticks == 1 ? "" : "s", in->resolution_ns);
}

static void info_wrap(const struct info_src *s, struct jobj *j)
{
	unsigned long long w = s->in->seconds_before_wrap;
	if (j)
		jfmt(j, "seconds_before_wrap", "%llu", w);
	else
		printf("wraps in       %.3g years (%llu s)\n", w / 31557600.0, w);
}

/* the text line shows the calibration's settings too (info_calibration) */
static void info_init(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (j)
		jfmt(j, "init_ms", "%.4f", in->init_ms);
	else if (in->calib_early && strcmp(in->hz_source, "measured") == 0)
		/* the first statement comes after 0.25 ms (src/init.c's
		 * CALIB_MIN_NS), or at the cap where that is shorter */
		printf("init           %.3f ms (first statement after %.3g ms; goal ±%.3g ppm reached by "
		       "the refreshes)%s%s\n", in->init_ms,
		       in->calib_max_ms < 0.25 ? in->calib_max_ms : 0.25, in->calib_target_ppm,
		       in->calib_status[0] ? " — " : "", in->calib_status);
	else
		printf("init           %.3f ms (calibration goal ±%.3g ppm, at most %.3g ms)%s%s\n",
		       in->init_ms, in->calib_target_ppm, in->calib_max_ms,
		       in->calib_status[0] ? " — " : "", in->calib_status);
}

static void info_calibration(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	if (!j)
		return; /* on info_init's line */
	jfmt(j, "calibration_target_ppm", "%.6g", in->calib_target_ppm);
	jfmt(j, "calibration_max_ms", "%.6g", in->calib_max_ms);
	jfmt(j, "calibration_early", "%s", in->calib_early ? "true" : "false");
	jstr(j, "calibration_setting_status", in->calib_status);
}

static void shared_json(const struct nc_shared_status *st)
{
	printf("{\"adopted\": %d, \"published\": %d, \"path\": ", st->adopted, st->published);
	json_str(st->path);
	printf(", \"status\": ");
	json_str(st->status);
	printf(", \"writer\": ");
	json_str(st->writer);
	printf(", \"writer_pid\": %u, \"writer_uid\": %u, \"generation\": %llu, \"age_s\": %.3f, "
	       "\"baseline_s\": %.6f, \"hz\": %.6f, \"ppm\": %.6g, \"sync_verdict\": ",
	       st->writer_pid, st->writer_uid, (unsigned long long)st->generation, st->age_s,
	       st->baseline_s, st->hz, st->ppm);
	json_str(st->sync_verdict >= 0 ? verdict_word(st->sync_verdict) : "none");
	/* infinite where the check bounded no shift: JSON has no such number */
	if (isfinite(st->sync_max_shift_ns))
		printf(", \"sync_max_shift_ns\": %.3f", st->sync_max_shift_ns);
	else
		printf(", \"sync_max_shift_ns\": null");
	printf(", \"sync_ncpus\": %u}", st->sync_ncpus);
}

/* The shared record: adopted, written, or why not. */
static void info_shared(const struct info_src *s, struct jobj *j)
{
	(void)s;
	struct nc_shared_status st;
	nc_get_shared_status(&st);
	if (j) {
		jkey(j, "shared");
		shared_json(&st);
		return;
	}
	printf("shared record  %s\n", st.status[0] ? st.status : "(none looked at)");
	if (st.adopted || st.published)
		printf("               %s %s: written by %s %u (uid %u), generation %llu, %.1f s ago; "
		       "%.6f MHz ± %.3g ppm over %.3f %s\n",
		       st.adopted ? "adopted" : "written", st.path, st.writer, st.writer_pid,
		       st.writer_uid, (unsigned long long)st.generation, st.age_s, st.hz / 1e6, st.ppm,
		       st.baseline_s < 1 ? st.baseline_s * 1e3 : st.baseline_s,
		       st.baseline_s < 1 ? "ms" : "s");
	if (st.sync_verdict >= 0) {
		char shift[48] = "not bounded";
		if (isfinite(st.sync_max_shift_ns))
			snprintf(shift, sizeof(shift), "%.1f ns", st.sync_max_shift_ns);
		printf("               cross-CPU in the record: %s over %u CPUs, max shift %s, %.0f s "
		       "ago\n", verdict_word(st.sync_verdict), st.sync_ncpus, shift, st.sync_age_s);
	}
}

static void info_cost(const struct info_src *s, struct jobj *j)
{
	const struct tool_costs *c = s->c;
	if (j) {
		jfmt(j, "cost_ns",
		     "{\"nc_ticks\": %.3f, \"nc_ticks_begin\": %.3f, \"nc_ticks_end\": %.3f, "
		     "\"nc_now_ns\": %.3f, \"nc_ticks_to_ns\": %.3f, \"clock_gettime\": %.3f, "
		     "\"clock_gettime_raw\": %.3f, \"counter_raw\": %.3f, \"counter_ordered\": %.3f}",
		     c->ticks, c->ticks_begin, c->ticks_end, c->now_ns, c->ticks_to_ns, c->cgt_mono,
		     c->cgt_raw, c->raw, c->ordered);
		return;
	}
	printf("cost (ns/call) nc_ticks %.2f | nc_ticks_begin %.2f | nc_ticks_end %.2f | "
	       "nc_now_ns %.2f | nc_ticks_to_ns %.2f\n",
	       c->ticks, c->ticks_begin, c->ticks_end, c->now_ns, c->ticks_to_ns);
	printf("               clock_gettime MONOTONIC %.2f | MONOTONIC_RAW %.2f", c->cgt_mono,
	       c->cgt_raw);
	if (c->raw > 0)
		printf(" | bare %s %.2f | %s %.2f", c->raw_name, c->raw, c->ordered_name, c->ordered);
	printf("\n");
}

static void info_kernel(const struct info_src *s, struct jobj *j)
{
	const struct nc_kernel_view *k = &s->in->kernel;
	if (j) {
		struct jobj ko = {j->depth + 1, 0};
		jkey(j, "kernel");
		jstr(&ko, "clocksource", k->clocksource);
		jstr(&ko, "available_clocksources", k->available_clocksources);
		jfmt(&ko, "tsc_unstable", "%s", jtri(k->tsc_unstable));
		jstr(&ko, "tsc_unstable_why", k->tsc_unstable_why);
		jfmt(&ko, "cpuid",
		     "{\"tsc\": %s, \"rdtscp\": %s, \"invariant_tsc\": %s, \"hypervisor\": %s, "
		     "\"hypervisor_signature\": ",
		     jtri(k->cpuid_tsc), jtri(k->cpuid_rdtscp), jtri(k->cpuid_invariant_tsc),
		     jtri(k->cpuid_hypervisor));
		json_str(k->hypervisor);
		printf("}");
		jstr(&ko, "cpuinfo_tsc_flags", k->cpuinfo_tsc_flags);
		jend(&ko);
		return;
	}
	printf("kernel         clocksource %s (available: %s)\n", k->clocksource[0] ? k->clocksource : "?",
	       k->available_clocksources[0] ? k->available_clocksources : "?");
	printf("               TSC marked unstable: %s%s%s%s\n", tri(k->tsc_unstable),
	       k->tsc_unstable_why[0] ? " (" : "", k->tsc_unstable_why,
	       k->tsc_unstable_why[0] ? ")" : "");
	if (k->cpuid_tsc >= 0)
		printf("cpuid          tsc %s, rdtscp %s, invariant tsc %s, hypervisor %s%s%s\n",
		       tri(k->cpuid_tsc), tri(k->cpuid_rdtscp), tri(k->cpuid_invariant_tsc),
		       tri(k->cpuid_hypervisor), k->hypervisor[0] ? " " : "", k->hypervisor);
	printf("cpuinfo flags  %s\n", k->cpuinfo_tsc_flags[0] ? k->cpuinfo_tsc_flags : "(none)");
}

static void info_unix(const struct info_src *s, struct jobj *j)
{
	const struct nc_info *in = s->in;
	const struct nc_unix_status *st = &in->unix_status;
	if (j) {
		jkey(j, "unix");
		unix_status_json(st, j->depth + 1);
		jfmt(j, "unix_refresh_ms", "%.3f", in->unix_refresh_ms);
		jfmt(j, "upkeep_running", "%s", in->upkeep_running ? "true" : "false");
		jstr(j, "upkeep_note", in->upkeep_note);
		return;
	}
	char err[512];
	utc_error_text(st, err, sizeof(err));
	printf("unix time      %s\n", err);
	printf("               last tie to CLOCK_REALTIME: ±%.0f ns (half its bracket), %.3f s old; "
	       "re-tied every %.0f ms%s; %u steps followed, %u ties\n",
	       st->tie_halfwidth_ns, st->tie_age_s, in->unix_refresh_ms,
	       in->upkeep_running ? " (upkeep thread)" : " (by readers)", st->steps, st->refreshes);
	if (in->upkeep_note[0])
		printf("               upkeep thread: %s\n", in->upkeep_note);
	if (st->synchronised >= 0)
		printf("               kernel: %s, max error %.0f us, est. %.0f us, TAI-UTC %d s%s, "
		       "freq %+.3f ppm\n",
		       st->synchronised ? "synchronised" : "NOT synchronised", st->kernel_max_error_us,
		       st->kernel_est_error_us, st->tai_offset_s,
		       st->leap_pending > 0 ? ", leap second to insert"
		       : st->leap_pending < 0 ? ", leap second to delete" : "",
		       st->kernel_freq_ppm);
}

static void utc_status_json(const struct nc_utc_status *us)
{
	printf("{\"source\": \"%s\", \"status\": \"%s\", \"where\": ", nc_utc_source_name(us->source),
	       nc_utc_status_name(us->status));
	json_str(us->source_arg);
	if (us->half_width_ns >= 0)
		printf(", \"half_width_ns\": %.0f", us->half_width_ns);
	else
		printf(", \"half_width_ns\": null");
	printf(", \"source_bound_ns\": %.0f, \"tie_ns\": %.0f, \"drift_ppm\": %.4g, \"age_s\": %.3f, "
	       "\"as_of_ns\": %lld, \"fresh_s\": %.0f, \"horizon_s\": %.0f, \"why\": ",
	       us->source_bound_ns, us->tie_ns, us->drift_ppm, us->age_s, (long long)us->as_of_ns,
	       us->fresh_s, us->horizon_s);
	json_str(us->why);
	printf(", \"chosen\": ");
	json_str(us->chosen);
	printf("}");
}

static void info_utc(const struct info_src *s, struct jobj *j)
{
	(void)s;
	struct nc_utc_status us;
	nc_get_utc_status(&us);
	if (j) {
		jkey(j, "utc");
		utc_status_json(&us);
		return;
	}
	printf("utc source     %s%s%s: %s; fresh for %.0f s, unknown after %.0f s\n",
	       nc_utc_source_name(us.source), us.source_arg[0] ? " " : "", us.source_arg,
	       nc_utc_status_name(us.status), us.fresh_s, us.horizon_s);
	if (us.why[0])
		printf("               %s %s\n", us.status == NC_UTC_SYNCHRONISED ? "figures:" : "why:",
		       us.why);
	printf("               chosen: %s\n", us.chosen);
}

static void info_events(const struct info_src *s, struct jobj *j)
{
	const struct nc_events *ev = &s->in->events;
	if (j)
		jfmt(j, "events",
		     "{\"suspends\": %u, \"suspended_s\": %.3f, \"counter_jumps\": %u, "
		     "\"rate_changes\": %u, \"counter_stops\": %u}",
		     ev->suspends, ev->suspended_s, ev->counter_jumps, ev->rate_changes,
		     ev->counter_stops);
	else
		printf("events         %u suspends (%.3f s), %u counter jumps, %u rate changes, %u "
		       "counter stops\n",
		       ev->suspends, ev->suspended_s, ev->counter_jumps, ev->rate_changes,
		       ev->counter_stops);
}

static void info_lttng(const struct info_src *s, struct jobj *j)
{
	(void)s;
	char why[160];
	const char *p = lttng_plugin(why, sizeof(why));
	if (!p)
		return;
	if (j) {
		jkey(j, "lttng_plugin");
		printf("{\"path\": ");
		json_str(p);
		printf(", \"loadable\": %s, \"why\": ", why[0] ? "false" : "true");
		json_str(why);
		printf("}");
		return;
	}
	printf("lttng plugin   LTTNG_UST_CLOCK_PLUGIN=%s: %s%s\n", p, why[0] ? why : "a shared object",
	       why[0] ? " — LTTng-UST stamps events with its own clock instead, without a word"
		      : " (LTTng-UST loads it in each traced process)");
}

static void info_sync(const struct info_src *s, struct jobj *j)
{
	if (j) {
		jkey(j, "sync");
		sync_json(s->sync, j->depth + 1);
		return;
	}
	printf("cross-CPU      %s", s->sync_rc ? "check could not run — " : "");
	sync_line(s->sync);
}

static const struct info_row {
	void (*part)(const struct info_src *, struct jobj *);
	int json_at; /* its place among the JSON object's members */
} info_rows[] = {
	{info_head, 0},
	{info_counter, 1},
	{info_policy, 13},
	{info_forced, 11},
	{info_candidates, 12},
	{info_frequency, 2},
	{info_measured, 3},
	{info_hz_env, 4},
	{info_env_ignored, 17},
	{info_hz_sources, 5},
	{info_resolution, 6},
	{info_wrap, 7},
	{info_init, 8},
	{info_calibration, 10},
	{info_shared, 19},
	{info_cost, 9},
	{info_kernel, 14},
	{info_unix, 15},
	{info_utc, 16},
	{info_events, 18},
	{info_lttng, 20},
	{info_sync, 21},
};

#define INFO_ROWS (int)(sizeof(info_rows) / sizeof(info_rows[0]))

static void info_print(const struct info_src *s, int json)
{
	if (!json) {
		for (int i = 0; i < INFO_ROWS; i++)
			info_rows[i].part(s, NULL);
		return;
	}
	struct jobj o = {1, 0};
	for (int at = 0; at < INFO_ROWS; at++)
		for (int i = 0; i < INFO_ROWS; i++)
			if (info_rows[i].json_at == at)
				info_rows[i].part(s, &o);
	jend(&o);
	printf("\n");
}

int cmd_info(const struct tool_info_opts *io)
{
	int json = io->json;
	struct utsname u;
	const char *arch = uname(&u) == 0 ? u.machine : "?";
	static struct nc_info in;
	nc_get_info(&in);
	struct tool_costs c;
	tool_measure_costs(&c, 200000, 3);
	/* a quick cross-CPU check for the one-line verdict */
	struct nc_sync_options so;
	nc_sync_default_options(&so);
	so.probes = 5000;
	so.rounds = 2;
	static struct nc_sync_report sr;
	int src = nc_sync_check(&so, &sr);
	struct info_src s = {&in, &c, arch, &sr, src};
	info_print(&s, json);
	return 0;
}
