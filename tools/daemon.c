/* SPDX-License-Identifier: MIT */
/* `nanoclock daemon`: keeps a shared calibration record fresh for every
 * process of the machine (docs/shared-clock.md), and with --clockbound an
 * AWS ClockBound segment stating the bound on UTC every second
 * (docs/time-across-machines.md).
 *
 * It reads the record it keeps (NANOCLOCK_SHARED=its path), so that a
 * restart continues the same tie and its ever longer baseline; runs the
 * cross-CPU check once per boot (or carries the verdict the record has);
 * then every interval reads the clock — a refresh measures the rate over
 * the baseline from the tie to now — and rewrites the record.  SIGTERM
 * and SIGINT end it with status 0, SIGHUP rewrites at once.  The signals
 * are blocked and taken with sigtimedwait: no handler, nothing
 * interrupted. */
#include "opts.h"

#include <nanoclock.h>
#include <nanoclock_shared.h>
#include <nanoclock_sync.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The record's directory, one level (/run/nanoclock), made if missing,
 * and checked: not a symbolic link, owned by this user or root, writable
 * by no one else — else another user could replace the record (readers
 * would refuse theirs: slower, never wrong, but no longer shared). */
static int make_dir(const char *path)
{
	char d[256];
	snprintf(d, sizeof(d), "%s", path);
	char *slash = strrchr(d, '/');
	if (!slash)
		return 0;
	if (slash == d)
		slash[1] = 0; /* "/record": the root directory */
	else
		*slash = 0;
	struct stat st;
	if (lstat(d, &st) != 0) {
		if (mkdir(d, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "nanoclock daemon: cannot make %s: %s\n", d, strerror(errno));
			return -1;
		}
		if (lstat(d, &st) != 0) {
			fprintf(stderr, "nanoclock daemon: %s: %s\n", d, strerror(errno));
			return -1;
		}
	}
	const char *bad = S_ISLNK(st.st_mode)				   ? "a symbolic link"
			  : !S_ISDIR(st.st_mode)			   ? "not a directory"
			  : st.st_uid != 0 && st.st_uid != geteuid()	   ? "owned by another user"
			  : (st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX) ? "writable by others"
										   : NULL;
	if (bad) {
		fprintf(stderr, "nanoclock daemon: the record's directory %s is %s: choose another\n", d,
			bad);
		return -1;
	}
	return 0;
}

/* Waits s seconds for SIGTERM, SIGINT or SIGHUP: 1 when told to stop
 * (said so), 2 on SIGHUP, else 0. */
static int stopped(const sigset_t *set, double s)
{
	struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	int sig = sigtimedwait(set, NULL, &ts);
	if (sig == SIGHUP)
		return 2;
	if (sig != SIGTERM && sig != SIGINT)
		return 0;
	printf("nanoclock daemon: stopped by %s\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	return 1;
}

/* What the loop carries from one write to the next */
struct keeper {
	const struct tool_daemon_opts *o;
	sigset_t set;       /* the signals taken with sigtimedwait */
	int verdict;        /* the cross-CPU verdict the record carries (-1: none) */
	double shift_ns;
	uint32_t ncpus;
	double said_ppm;    /* the uncertainty last said */
	int failing, cb_failing; /* the record's, the segment's failure said */
	int settle;         /* tries left before a failure is said (continuing a record) */
	int retrying, hup;
};

/* Signals blocked, the record's directory made and the library started on
 * the record: 0, or 1 (said) */
static int start(struct keeper *k)
{
	sigemptyset(&k->set);
	sigaddset(&k->set, SIGTERM);
	sigaddset(&k->set, SIGINT);
	sigaddset(&k->set, SIGHUP);
	/* before nc_init: threads the library starts inherit the mask */
	pthread_sigmask(SIG_BLOCK, &k->set, NULL);
	if (make_dir(k->o->record) != 0)
		return 1;
	setenv("NANOCLOCK_SHARED", k->o->record, 1);
	/* the record is what other processes take instead of calibrating: the
	 * first calibration runs to the goal (the defaults, asked for) rather
	 * than stating early (the environment still overrides) */
	(void)nc_set_calibration_target(1, 20);
	int rc = nc_init();
	if (rc != 0)
		fprintf(stderr, "nanoclock daemon: nc_init: %s (continuing on the defaults)\n",
			nc_strerror(rc));
	return 0;
}

/* The cross-CPU verdict: the record's where it is continued, else checked
 * now (once per start) */
static void cross_cpu(struct keeper *k, const struct nc_shared_status *st)
{
	k->verdict = -1;
	k->shift_ns = 0;
	k->ncpus = 0;
	if (st->adopted && st->sync_verdict >= 0) {
		k->verdict = st->sync_verdict;
		k->shift_ns = st->sync_max_shift_ns;
		k->ncpus = st->sync_ncpus;
	} else {
		static struct nc_sync_report r; /* large */
		if (nc_sync_check(NULL, &r) == 0) {
			k->verdict = r.verdict;
			k->shift_ns = r.bounded ? r.max_shift_ns : INFINITY;
			k->ncpus = (uint32_t)r.ncpus;
		}
	}
}

/* The ClockBound segment written: 0, or its failure (said once, or each
 * time with --once) */
static int keep_clockbound(struct keeper *k)
{
	const struct tool_daemon_opts *o = k->o;
	char why[256];
	int crc = nc_utc_publish_clockbound(o->clockbound, why, sizeof(why));
	if (crc != 0 && (!k->cb_failing || o->once))
		fprintf(stderr, "nanoclock daemon: ClockBound segment not written: %s\n", why);
	if (crc == 0 && (k->cb_failing || o->once)) {
		struct nc_utc_status us;
		nc_get_utc_status(&us);
		printf("nanoclock daemon: wrote ClockBound segment %s: %s, source %s\n", o->clockbound,
		       nc_utc_status_name(us.status), nc_utc_source_name(us.source));
		fflush(stdout);
	}
	k->cb_failing = crc != 0;
	return crc;
}

#define RECORD_WRITTEN 0
#define RECORD_FAILED 1 /* said once, or each time with --once */
#define RECORD_RETRY 2  /* settling: to be tried again shortly, without a word */

static int keep_record(struct keeper *k)
{
	const struct tool_daemon_opts *o = k->o;
	char why[192];
	int prc = nc_shared_publish(o->record, k->verdict, k->shift_ns, k->ncpus, why, sizeof(why));
	if (prc != 0) {
		int e = prc == NC_ESYS ? errno : 0; /* errno is set for NC_ESYS only */
		if (k->settle-- > 0)
			return RECORD_RETRY;
		if (!k->failing || o->once)
			fprintf(stderr, "nanoclock daemon: record not written: %s%s%s\n", why, e ? ": " : "",
				e ? strerror(e) : "");
		k->failing = 1;
		return RECORD_FAILED;
	}
	k->failing = k->settle = 0;
	double ppm = nc_ticks_per_second_uncertainty_ppm();
	struct nc_shared_status st;
	nc_get_shared_status(&st);
	/* a line when the uncertainty has halved (a handful a day) and for
	 * each SIGHUP (the library may also rewrite its record when its own
	 * measurement is four times as certain: the line tells which write
	 * the signal made) */
	if (o->once || k->hup || st.ppm <= k->said_ppm / 2) {
		printf("nanoclock daemon: %swrote %s generation %llu: %.6f MHz +-%.3g ppm "
		       "(baseline %.3g s, measured here); in use here +-%.3g ppm\n",
		       k->hup ? "SIGHUP: " : "", o->record, (unsigned long long)st.generation,
		       st.hz / 1e6, st.ppm, st.baseline_s, ppm);
		fflush(stdout);
		k->said_ppm = st.ppm;
	}
	return RECORD_WRITTEN;
}

static int run(const struct tool_daemon_opts *o)
{
	struct keeper k = {.o = o, .said_ppm = INFINITY};
	if (start(&k) != 0)
		return 1;
	struct nc_shared_status st;
	nc_get_shared_status(&st);
	cross_cpu(&k, &st);
	/* starting anew: what was there, and why it was not continued */
	char was[sizeof(st.status) + 4] = "";
	if (!st.adopted)
		snprintf(was, sizeof(was), " (%s)", st.status);
	printf("nanoclock daemon: %s %s%s; cross-CPU %s\n", st.adopted ? "continuing" : "starting",
	       o->record, was,
	       k.verdict == NC_SYNC_CONSISTENT     ? "consistent"
	       : k.verdict == NC_SYNC_INCONSISTENT ? "inconsistent"
	       : k.verdict == NC_SYNC_INCONCLUSIVE ? "inconclusive"
						   : "not checked");
	fflush(stdout);
	/* an exact rate (an OS clock: a machine without a usable hardware
	 * counter, an emulator) needs no record: with a ClockBound segment to
	 * keep, that is said once and the segment kept; alone, the record's
	 * failure is said as any other */
	int no_record = o->clockbound && strncmp(nc_ticks_per_second_source(), "exact", 5) == 0;
	if (no_record) {
		printf("nanoclock daemon: no record kept: the counter (%s) is an OS clock, its rate "
		       "exact: nothing to share; the ClockBound segment only\n", nc_counter_name());
		fflush(stdout);
	}
	/* the ClockBound segment: every second (its clients read a bound that
	 * grows from its as-of time); the record every interval */
	double step_s = o->clockbound && o->interval_s > 1 ? 1 : o->interval_s;
	double since_record = INFINITY;
	/* continuing a record, the rate is its claim until the library's first
	 * refresh (80 ms after the start) measures it here: the record is
	 * written from then on, never the claim read back.  Until then (2 s at
	 * most) a failure is tried again every 50 ms without a word. */
	k.settle = st.adopted ? 40 : 0;
	for (;;) {
		(void)nc_now_ns(); /* a due refresh refines the rate first */
		if (o->clockbound && !k.retrying && keep_clockbound(&k) != 0 && o->once)
			return 1;
		if (no_record && o->once)
			return 0;
		since_record += step_s;
		if (k.hup)
			since_record = INFINITY; /* the record too, whatever the step */
		if (!no_record && since_record >= o->interval_s) {
			since_record = 0;
			int w = keep_record(&k);
			if (w == RECORD_RETRY) {
				if (stopped(&k.set, 0.05) == 1)
					return 0;
				k.retrying = 1;
				since_record = INFINITY;
				continue;
			}
			k.retrying = k.hup = 0;
			if (o->once)
				return w;
		}
		int w = stopped(&k.set, step_s);
		if (w == 1)
			return 0;
		k.hup = w == 2;
	}
}

int tool_daemon_main(const struct tool_daemon_opts *o)
{
	int rc = run(o);
	nc_utc_stop(); /* the UTC source's socket or segment closed, as everything else */
	return rc;
}
