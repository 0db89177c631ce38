/* SPDX-License-Identifier: MIT */
/* The shared record adopted: the trust rules (record.c's header states
 * them) checked against the counter chosen, and this process's view of
 * the record, written by initialisation and by refreshes under
 * nc__lib_lock. */
#include "record.h"
#include "../base/log.h"
#include "../base/refclock.h"
#include "../base/safefile.h"
#include "../counter/counter.h"
#include "nanoclock.h"
#include "nanoclock_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>




/* The record against the counter chosen: 1 with its calibration in *out,
 * or 0 with why. */
static int check_line(const struct rec *r, struct nc__calib *out, struct nc__bracket *start,
		      char *why, size_t len)
{
	const struct nc__counter *c = nc__counter();
	if (strcmp(c->name, r->counter) != 0) {
		nc__fmt(why, len, "refused: for counter %.15s, this process uses %s", r->counter, c->name);
		return 0;
	}
	/* the calibration this process takes if the check below passes */
	struct nc__calib k;
	memset(&k, 0, sizeof(k));
	k.hz = r->hz;
	k.ppm = r->ppm;
	k.worst_ppm = r->worst_ppm;
	k.sigma_ns = r->sigma_ns;
	k.anchor_sd_ns = r->anchor_sd_ns;
	k.min_width = r->min_width;
	k.accept_width = r->accept_width;
	k.anchor_tick = r->anchor_tick;
	k.anchor_ns = r->anchor_ns;
	k.window_ns = r->window_ns;
	struct nc__calib_io io = {NULL, nc__counter_io_read, nc__ref_io_raw};
	/* the narrowest of 3 x 16 brackets: its width counts in the allowance
	 * below, so a slow machine (a sanitizer, an emulator) only weakens the
	 * check; beyond 100 us it says too little */
	struct nc__bracket b, t;
	b.width = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		nc__take_bracket(&io, 16, &t);
		if (t.width < b.width)
			b = t;
	}
	if (b.width == UINT64_MAX || (double)b.width * 1e9 / r->hz > 1e5) {
		nc__fmt(why, len, "refused: no narrow bracket of the counter could be taken now");
		return 0;
	}
	if (b.mid <= r->anchor_tick || b.ref <= r->anchor_ns) {
		nc__fmt(why, len, "refused: the counter or CLOCK_MONOTONIC_RAW is behind the record's "
			 "tie (a reset?)");
		return 0;
	}
	/* where the record's line puts the bracket's middle, against where it
	 * is: off by at most the rate's stated error over the baseline, the
	 * tie's (4 standard errors, as the record states its rate) and half
	 * the bracket (the reference read lies inside it), plus the clocks'
	 * 1 ns quantum */
	long double dy = (long double)(b.ref - r->anchor_ns);
	long double pred = (long double)(b.mid - r->anchor_tick) * 1e9L / (long double)r->hz;
	double dev = (double)(dy - pred);
	double allow = r->ppm * 1e-6 * (double)dy +
		       4 * sqrt(r->sigma_ns * r->sigma_ns + r->anchor_sd_ns * r->anchor_sd_ns) +
		       (double)b.width / 2 * 1e9 / r->hz + 1;
	if (!(fabs(dev) <= allow)) {
		nc__fmt(why, len, "refused: the counter now is off its line by %+.0f ns over %.3f s "
			 "(%+.3f ppm; allowed %.0f ns)", dev, (double)dy / 1e9, dev / (double)dy * 1e6,
			 allow);
		return 0;
	}
	/* brackets wider than twice this process's narrowest are not used
	 * for its refinements, as in its own calibration: the writer's
	 * narrowest may be narrower than anything this process can take (a
	 * native writer, a reader under valgrind: it never refined) */
	if (2 * b.width + 1 > k.accept_width)
		k.accept_width = 2 * b.width + 1;
	*out = k;
	*start = b;
	return 1;
}

void nc__shared_status_add(const char *fmt_path, const char *what) NC_REQUIRES(nc__lib_lock)
{
	size_t l = strlen(V.status);
	nc__fmt(V.status + l, sizeof(V.status) - l, "%s%s: %s", l ? "; " : "", fmt_path, what);
}

/* The places, in order: NANOCLOCK_SHARED's path alone, or the system's
 * record then the user's. */
static int places(const struct nc__config *cfg, const char *out[2]) NC_REQUIRES(nc__lib_lock)
{
	if (cfg->shared_path[0]) {
		out[0] = cfg->shared_path;
		return 1;
	}
	out[0] = SYSTEM_RECORD;
	out[1] = V.own_path;
	return 2;
}

NC_START
const struct nc__machine_facts *nc__shared_look(const struct nc__config *cfg, char counter[16])
{
	NC_LOCK_HELD();
	char why[192];
	counter[0] = 0;
	V.looked = 1;
	V.cand_i = -1;
	if (cfg->shared_off) {
		nc__fmt(V.status, sizeof(V.status), "off (%s)",
			 cfg->shared_why[0] ? cfg->shared_why : "NANOCLOCK_SHARED=off");
		return NULL;
	}
	if (nc__ref_simulated()) {
		nc__fmt(V.status, sizeof(V.status), "not used: the reference clocks are simulated");
		return NULL;
	}
	if (cfg->shared_path[0])
		nc__copy(V.own_path, sizeof(V.own_path), cfg->shared_path);
	else
		nc__shared_user_path(V.own_path, sizeof(V.own_path));
	const char *p[2];
	int n = places(cfg, p);
	for (int i = 0; i < n; i++) {
		nc__copy(V.path, sizeof(V.path), p[i]);
		if (nc__shared_load(p[i], cfg, &V.cand, why, sizeof(why))) {
			V.cand_i = i;
			memcpy(counter, V.cand.counter, 16);
			return &V.cand.facts;
		}
		nc__shared_status_add(p[i], why);
		if (strncmp(why, "refused", 7) == 0)
			nc__log(NC_LOG_INFO, "shared record %s %s", p[i], why);
	}
	return NULL;
}

NC_START
int nc__shared_adopt(const struct nc__config *cfg, struct nc__calib *out, struct nc__bracket *start)
{
	NC_LOCK_HELD();
	char why[192];
	if (V.cand_i < 0)
		return 0;
	if (!nc__shared_shareable(why, sizeof(why))) {
		nc__shared_status_add(V.path, "not used");
		size_t l = strlen(V.status);
		nc__fmt(V.status + l, sizeof(V.status) - l, " (%s)", why);
		return 0;
	}
	const char *p[2];
	int n = places(cfg, p);
	for (int i = V.cand_i; i < n; i++) {
		struct rec r;
		nc__copy(V.path, sizeof(V.path), p[i]);
		int ok = i == V.cand_i ? (r = V.cand, 1) : nc__shared_load(p[i], cfg, &r, why, sizeof(why));
		if (ok && check_line(&r, out, start, why, sizeof(why))) {
			V.adopted = V.have_r = 1;
			V.r = r;
			memcpy(V.cpu_text, r.cpu, sizeof(V.cpu_text));
			nc__shared_status_add(p[i], "adopted");
			return 1;
		}
		nc__shared_status_add(p[i], why);
		if (strncmp(why, "refused", 7) == 0)
			nc__log(NC_LOG_INFO, "shared record %s %s", p[i], why);
	}
	return 0;
}

void nc__shared_status(struct nc_shared_status *st)
{
	NC_LOCK_HELD();
	memset(st, 0, sizeof(*st));
	st->adopted = V.adopted;
	st->published = V.published;
	nc__copy(st->path, sizeof(st->path), V.looked ? V.path : "");
	nc__copy(st->status, sizeof(st->status), V.status);
	st->sync_verdict = -1;
	if (!V.have_r)
		return;
	const struct rec *r = &V.r;
	nc__copy(st->writer, sizeof(st->writer), r->writer);
	st->writer_uid = r->writer_uid;
	st->writer_pid = r->writer_pid;
	st->generation = r->generation;
	int64_t now = nc__mono_raw_ns();
	st->age_s = (double)(now - r->written_raw_ns) / 1e9;
	st->baseline_s = (double)r->window_ns / 1e9;
	st->hz = r->hz;
	st->ppm = r->ppm;
	st->sync_verdict = r->sync_verdict;
	st->sync_ncpus = r->sync_ncpus;
	st->sync_max_shift_ns = r->sync_max_shift_ns;
	st->sync_age_s = r->sync_verdict >= 0 ? (double)(now - r->sync_raw_ns) / 1e9 : 0;
}

