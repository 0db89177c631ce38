/* SPDX-License-Identifier: MIT */
/*
 * Choosing the counter, by measurement, once per process.
 *
 * Candidates, in order: the application's registered counter, the tests'
 * injected ones, this architecture's hardware counter, then the OS clocks
 * CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC and gettimeofday — the last always
 * works, so selection never fails.
 *
 * Each candidate (phase by phase, in evaluate_one):
 *   1. its own availability rule (e.g. the TSC policy in x86_tsc.c), which
 *      asks the system (CPUID, prctl, HWCAP) rather than trying;
 *   2. read 1000 times back to back — with faults trapped only for
 *      counters nothing can vouch for (an application's): it must never
 *      decrease and must advance (a coarse counter gets up to 10 rounds);
 *      the step nine in ten of its steps reach is its resolution (check.c),
 *      the time per read its cost;
 *   3. its rate: exact for OS clocks, else the first stated source, else a
 *      rough measurement over the checks' own span (20 us at least) — only
 *      to express the resolution in ns.
 * Policy (score_and_pick): the lowest resolution_ns + cost_ns + penalty_ns
 * wins.  Penalties say what the two measured numbers cannot: 0 for a
 * hardware counter read inline; 100 ns for CLOCK_MONOTONIC_RAW (a call, and
 * the kernel decides what it reads); 150 ns for CLOCK_MONOTONIC (NTP slews
 * its rate, which nc_now_ns does not track); 1 ms for gettimeofday
 * (realtime: it can be set backwards).  A hardware counter therefore wins
 * unless it is truly coarse (resolution above ~100 ns) or slow to read (a
 * trapping read in a VM costs microseconds).  So it is measured first, and
 * where its score is below every other candidate's penalty the others are
 * not measured at all (they could not win; a cold start saves their reads
 * and the pages their code touches); they are if it is rejected later.
 * The forced choice is decided here and only here: NANOCLOCK_COUNTER, else
 * the application's counter.  The environment wins, because the operator
 * running the program has the last word.  A forced counter that is unknown
 * or fails gives NC_ENOCOUNTER; the clock still runs on the best counter.
 */
#include "counter.h"
#include "base/fmt.h"
#include "base/log.h"
#include "base/refclock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CHECK_READS 1000
/* the counter a shared record names: its writer read it 1000 times during
 * this boot; this process checks that its own reads work, advance and do
 * not go back (a fifth of the reads: 1000 would be most of the short start
 * a record buys) */
#define RECORD_READS 200
/* an OS clock (CLOCK_MONOTONIC_RAW and the like): monotonic by the
 * kernel's contract, exact in rate; its reads only show that it works,
 * how fine it is and what a read costs (1000 of them were a noticeable
 * part of a first start) */
#define OS_CLOCK_READS 200
#define CHECK_ROUNDS 10
#define ROUGH_NS 20000 /* 1e-3 relative: plenty to state a resolution in ns */

/* Selection's state, kept for the whole process: this file owns it,
 * guarded by nc__lib_lock (selection runs in the initialisation, which
 * holds it).  The small parts every start touches first, together. */
static struct {
	/* per candidate: what is read, the selected one (and its extension,
	 * if narrow) for every read */
	const struct nc__counter *uses[NC_MAX_CANDIDATES];
	int ext_used[NC_MAX_CANDIDATES];
	/* each candidate's stated rates, as read by its evaluation (stated_n
	 * is set to -1 when an evaluation starts, to the count once they are
	 * read): the rate decision takes them from here, not from the files
	 * again */
	int stated_n[NC_MAX_CANDIDATES];
	/* for nc__select_next: the candidates left unmeasured */
	const struct nc__machine *machine;
	const struct nc__counter *list[NC_MAX_CANDIDATES];
	struct nc_hz_source stated_src[NC_MAX_CANDIDATES][NC_MAX_HZ_SOURCES];
	/* a narrow candidate's extension; once in use, read through the
	 * counter under the extension's own lock (extend.c) */
	struct nc__ext exts[NC_MAX_CANDIDATES];
} sel_state NC_GUARDED_BY(nc__lib_lock);

static int build_list(const struct nc__machine *m, const struct nc__registered *reg,
		      const struct nc__counter **l)
{
	int n = 0;
	if (reg->app)
		l[n++] = reg->app;
	for (int i = 0; i < reg->ntest; i++)
		l[n++] = reg->test[i];
	const struct nc__counter *hw = nc__hw_counter(m);
	if (hw)
		l[n++] = hw;
	l[n++] = &nc__counter_mono_raw;
	l[n++] = &nc__counter_mono;
	l[n++] = &nc__counter_gettimeofday;
	return n;
}

struct eval {
	const struct nc__counter *c;
	const struct nc__machine *m;
	int i;      /* the candidate's place */
	int reads;  /* per round of the monotonic check */
	int rc;
	uint64_t res;
	double cost, hz;
	char hz_src[24];
	char why[160];
};

/* From the start of the checks (t0 at r0): they usually take longer than
 * ROUGH_NS, so the span is there already and costs nothing; a fast check
 * waits out the rest of it. */
static void rough_rate(struct eval *ev, uint64_t t0, int64_t r0)
{
	const struct nc__counter *c = ev->c;
	int64_t r1;
	do
		r1 = nc__mono_raw_ns();
	while (r1 - r0 < ROUGH_NS && r1 >= r0);
	uint64_t t1 = c->read_ordered(c->ctx); /* after its reference, as t0 */
	if (t1 <= t0 || r1 <= r0) {
		ev->rc = NC_ENOCOUNTER;
		nc__fmt(ev->why, sizeof(ev->why), "did not advance over %.0f us of CLOCK_MONOTONIC_RAW",
			 (double)(r1 - r0) / 1e3);
		return;
	}
	ev->hz = (double)(t1 - t0) * 1e9 / (double)(r1 - r0);
	nc__fmt(ev->hz_src, sizeof(ev->hz_src), "rough (%.0f us)", (double)(r1 - r0) / 1e3);
	if (!nc__hz_valid(ev->hz)) {
		ev->rc = NC_ENOCOUNTER;
		snprintf(ev->why, sizeof(ev->why), "rate %.3g Hz outside 1 kHz .. 100 GHz", ev->hz);
	}
}

/* Phase 2 and 3: everything that reads the candidate (under the fault
 * trap when the counter asks for it). */
NC_START static void read_checks(void *arg) NC_REQUIRES(nc__lib_lock)
{
	struct eval *ev = arg;
	const struct nc__counter *c = ev->c;
	for (int i = 0; i < 16; i++) /* first touch: a forbidden read faults here */
		(void)c->read(c->ctx);
	(void)c->read_ordered(c->ctx); /* its code touched too: not inside the span below */
	(void)nc__mono_raw_ns();
	/* the rough rate's start: the counter read just after the reference,
	 * at both ends, so that the two spans line up */
	int64_t r0 = nc__mono_raw_ns();
	uint64_t t0 = c->read_ordered(c->ctx);
	for (int round = 0; round < CHECK_ROUNDS; round++) {
		ev->rc = nc__counter_check(c, ev->reads, &ev->res, &ev->cost, ev->why,
					   sizeof(ev->why));
		if (ev->rc != NC_CHECK_STILL)
			break; /* passed, or went backwards: reading longer cannot help */
	}
	if (ev->rc) {
		ev->rc = NC_ENOCOUNTER;
		return;
	}
	if (c->fixed_hz > 0) {
		ev->hz = c->fixed_hz;
		nc__fmt(ev->hz_src, sizeof(ev->hz_src), "exact");
		return;
	}
	if (c->stated) {
		struct nc_hz_source *s = sel_state.stated_src[ev->i];
		int n = c->stated(ev->m, s, NC_MAX_HZ_SOURCES);
		sel_state.stated_n[ev->i] = n;
		for (int i = 0; i < n; i++)
			if (nc__hz_valid(s[i].hz)) {
				ev->hz = s[i].hz;
				nc__copy(ev->hz_src, sizeof(ev->hz_src), s[i].name);
				return;
			}
	}
	rough_rate(ev, t0, r0);
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case 4: return "SIGILL";
	case 11: return "SIGSEGV";
	case 7: case 10: return "SIGBUS";
	case 8: return "SIGFPE";
	default: return "a signal";
	}
}

/* how many candidate i's evaluation stated (-1: none read) */
NC_START int nc__select_stated_n(int i)
{
	return i < 0 || i >= NC_MAX_CANDIDATES ? -1 : sel_state.stated_n[i];
}

NC_START int nc__select_stated(int i, struct nc_hz_source *out, int max)
{
	if (i < 0 || i >= NC_MAX_CANDIDATES || sel_state.stated_n[i] < 0)
		return -1;
	int n = sel_state.stated_n[i] < max ? sel_state.stated_n[i] : max;
	memcpy(out, sel_state.stated_src[i], sizeof(out[0]) * (size_t)n);
	return n;
}

/* Phases 1-3 for candidate i (reads: per round of the monotonic check);
 * fills cands[i]. */
static void evaluate_one_timed(const struct nc__machine *m, const struct nc__counter *c,
			       struct nc_candidate *ci, int i, int reads) NC_REQUIRES(nc__lib_lock);
/* each candidate's evaluation, timed for the debug log (where a slow
 * start went) */
NC_START
static void evaluate_one(const struct nc__machine *m, const struct nc__counter *c,
			 struct nc_candidate *ci, int i, int reads) NC_REQUIRES(nc__lib_lock)
{
	if (!nc__log_wanted(NC_LOG_DEBUG)) { /* a cold start pays no clock reads for it */
		evaluate_one_timed(m, c, ci, i, reads);
		return;
	}
	int64_t t0 = nc__mono_raw_ns();
	evaluate_one_timed(m, c, ci, i, reads);
	nc__log(NC_LOG_DEBUG, "selection: %s evaluated in %.3f ms (%d reads a round)", c->name,
		(double)(nc__mono_raw_ns() - t0) / 1e6, reads);
}

NC_START
static void evaluate_one_timed(const struct nc__machine *m, const struct nc__counter *c,
			       struct nc_candidate *ci, int i, int reads)
{
	nc__copy(ci->name, sizeof(ci->name), c->name);
	nc__copy(ci->what, sizeof(ci->what), c->what ? c->what : "");
	ci->penalty_ns = c->penalty_ns;
	ci->status = NC_CAND_REJECTED;
	sel_state.uses[i] = c;
	sel_state.ext_used[i] = 0;
	sel_state.stated_n[i] = -1;
	char why[160] = "";
	if (c->available && c->available(m, why, sizeof(why)) != 0) {
		nc__copy(ci->reason, sizeof(ci->reason), why[0] ? why : "not available");
		return;
	}
	struct eval ev;
	int attempt;
	/* a narrow counter's check with a gap no rate could count yet (a
	 * thread preempted for longer than a wrap period: a busy machine)
	 * says nothing either way, and its rough rate may be a period short:
	 * checked again from scratch, three times at most */
	for (attempt = 0;; attempt++) {
		if (c->bits < 64) {
			nc__ext_init(&sel_state.exts[i], c);
			sel_state.ext_used[i] = 1;
			sel_state.uses[i] = &sel_state.exts[i].wrapped;
		}
		memset(&ev, 0, sizeof(ev));
		ev.c = sel_state.uses[i];
		ev.m = m;
		ev.i = i;
		ev.reads = reads;
		int sig = 0;
		if (c->trap)
			sig = nc__trap_run(read_checks, &ev);
		else
			read_checks(&ev);
		if (sig) {
			if (sel_state.ext_used[i])
				nc__ext_after_fault(&sel_state.exts[i]);
			nc__fmt(ci->reason, sizeof(ci->reason), "faulted with %s when read",
				 sig_name(sig));
			return;
		}
		/* a gap may also have made the check fail (a still round, no
		 * advance): checked again all the same */
		if (!sel_state.ext_used[i] || sel_state.exts[i].backsteps || !sel_state.exts[i].gaps)
			break;
		if (attempt == 2) {
			ev.rc = NC_ENOCOUNTER;
			nc__fmt(ev.why, sizeof(ev.why),
				 "could not be followed: in 3 checks its reads had gaps longer than a "
				 "wrap period (2^%u) before its rate was known (a busy machine?)",
				 c->bits);
			break;
		}
	}
	if (ev.rc == 0 && sel_state.ext_used[i] && sel_state.exts[i].backsteps) {
		ev.rc = NC_ENOCOUNTER;
		nc__fmt(ev.why, sizeof(ev.why), "went backwards %ld times (modulo 2^%u)",
			 sel_state.exts[i].backsteps, c->bits);
	}
	if (ev.rc) {
		nc__copy(ci->reason, sizeof(ci->reason), ev.why);
		return;
	}
	if (sel_state.ext_used[i])
		nc__ext_set_hz(&sel_state.exts[i], ev.hz);
	ci->status = NC_CAND_USABLE;
	ci->resolution_ticks = ev.res;
	ci->hz = ev.hz;
	nc__copy(ci->hz_source, sizeof(ci->hz_source), ev.hz_src);
	ci->resolution_ns = (double)ev.res * 1e9 / ev.hz;
	ci->cost_ns = ev.cost;
	ci->score = ci->resolution_ns + ci->cost_ns + ci->penalty_ns;
	nc__fmt(ci->reason, sizeof(ci->reason), "monotonic and advancing in %d reads%s%s",
		 reads, c->bits < 64 ? "; extended to 64 bits" : "",
		 attempt == 1   ? " (checked twice: a gap beyond a wrap before its rate)"
		 : attempt == 2 ? " (checked 3 times: gaps beyond a wrap before its rate)"
				: "");
}

static void set_selected(struct nc_candidate *cands, int i, struct nc__selection *sel)
	NC_REQUIRES(nc__lib_lock)
{
	cands[i].status = NC_CAND_SELECTED;
	sel->use = sel_state.uses[i];
	sel->index = i;
	sel->ext = sel_state.ext_used[i] ? &sel_state.exts[i] : NULL;
}

/* The lowest score among usable candidates; if none passed (a broken OS
 * clock?), CLOCK_MONOTONIC_RAW anyway: the one fallback rule. */
NC_START static int best_or_fallback(struct nc_candidate *cands, int n) NC_REQUIRES(nc__lib_lock)
{
	int best = -1;
	for (int i = 0; i < n; i++)
		if (cands[i].status == NC_CAND_USABLE &&
		    (best < 0 || cands[i].score < cands[best].score))
			best = i;
	if (best >= 0)
		return best;
	for (int i = 0; i < n; i++)
		if (sel_state.uses[i] == &nc__counter_mono_raw)
			best = i;
	nc__fmt(cands[best].reason, sizeof(cands[best].reason),
		 "used although no candidate passed the checks");
	return best;
}

/* The forced counter, if any: returns its index, or -1 with sel->status
 * and sel->error set when it cannot be used. */
static int pick_forced(const struct nc__registered *reg, const char *env_counter,
		       struct nc_candidate *cands, int n, struct nc__selection *sel)
{
	if (env_counter && *env_counter) {
		sel->forced_by = "NANOCLOCK_COUNTER";
		nc__copy(sel->forced, sizeof(sel->forced), env_counter);
	} else if (reg->app) {
		sel->forced_by = "the application";
		nc__copy(sel->forced, sizeof(sel->forced), reg->app->name);
	} else {
		return -1;
	}
	char q[48];
	nc__quote(sel->forced, q, sizeof(q)); /* the environment's text, for one-line reasons */
	for (int i = 0; i < n; i++) {
		if (strcmp(cands[i].name, sel->forced) != 0)
			continue;
		if (cands[i].status == NC_CAND_USABLE)
			return i;
		nc__fmt(sel->error, sizeof(sel->error), "counter '%s' rejected: %.120s", q,
			 cands[i].reason);
		sel->status = NC_ENOCOUNTER;
		return -1;
	}
	int l = nc__fmt(sel->error, sizeof(sel->error), "unknown counter '%s'; candidates:", q);
	for (int i = 0; i < n && l > 0 && (size_t)l < sizeof(sel->error); i++)
		l += nc__fmt(sel->error + l, sizeof(sel->error) - (size_t)l, " %s", cands[i].name);
	sel->status = NC_ENOCOUNTER;
	return -1;
}

/* Candidate i left unmeasured (its reason is the caller's) */
NC_START
static void skip_candidate(struct nc_candidate *cands, const struct nc__counter *const *list, int i)
	NC_REQUIRES(nc__lib_lock)
{
	nc__copy(cands[i].name, sizeof(cands[i].name), list[i]->name);
	nc__copy(cands[i].what, sizeof(cands[i].what), list[i]->what ? list[i]->what : "");
	cands[i].penalty_ns = list[i]->penalty_ns;
	cands[i].status = NC_CAND_SKIPPED;
	sel_state.uses[i] = list[i];
	sel_state.ext_used[i] = 0;
	sel_state.stated_n[i] = -1;
}

/* The hardware counter a shared record names, checked as any candidate is
 * (RECORD_READS reads) and taken, the others left unmeasured: 1, or 0 with
 * its candidate cleared for the full selection. */
static int take_recorded(const struct nc__machine *m, const struct nc__counter *hw,
			 const struct nc__counter *const *list, int n, struct nc_candidate *cands,
			 struct nc__selection *sel) NC_REQUIRES(nc__lib_lock)
{
	int h = -1;
	for (int i = 0; i < n; i++)
		if (list[i] == hw)
			h = i;
	if (h < 0)
		return 0;
	evaluate_one(m, list[h], &cands[h], h, RECORD_READS);
	if (cands[h].status != NC_CAND_USABLE) {
		memset(&cands[h], 0, sizeof(cands[h]));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (i == h)
			continue;
		skip_candidate(cands, list, i);
		nc__fmt(cands[i].reason, sizeof(cands[i].reason),
			 "not measured: the shared record's counter (%s) was taken", hw->name);
	}
	set_selected(cands, h, sel);
	return 1;
}

NC_START
void nc__select(const struct nc__machine *m, const struct nc__registered *reg,
		const char *env_counter, const char *prefer, struct nc_candidate *cands, int *n_out,
		struct nc__selection *sel)
{
	const struct nc__counter *list[NC_MAX_CANDIDATES];
	int n = build_list(m, reg, list);
	memset(sel, 0, sizeof(*sel));
	memset(cands, 0, sizeof(*cands) * NC_MAX_CANDIDATES);
	*n_out = n;
	sel_state.machine = m;
	memcpy(sel_state.list, list, sizeof(list));
	/* A shared record names the counter its writer chose by measuring them
	 * all on this machine during this boot: with nothing forced and no
	 * counter of the application's, that one is checked as any candidate
	 * is and taken; the OS clocks are then left unmeasured (a cold start's
	 * largest cost after the calibration the record also saves). */
	const struct nc__counter *hw = nc__hw_counter(m);
	if (prefer && hw && !reg->app && reg->ntest == 0 && !(env_counter && *env_counter) &&
	    strcmp(prefer, hw->name) == 0 && take_recorded(m, hw, list, n, cands, sel))
		return;
	/* Nothing forced, no counter of the application's or the tests': the
	 * hardware counter first, and if its score is below every other
	 * candidate's penalty, those cannot win whatever they measure (a score
	 * is resolution + cost + penalty): left unmeasured, as with a record,
	 * and measured only if the counter is rejected later
	 * (nc__select_next). */
	if (hw && !reg->app && reg->ntest == 0 && !(env_counter && *env_counter)) {
		int h = -1;
		double floor_ns = INFINITY;
		for (int i = 0; i < n; i++) {
			if (list[i] == hw)
				h = i;
			else if (list[i]->penalty_ns < floor_ns)
				floor_ns = list[i]->penalty_ns;
		}
		if (h >= 0) {
			evaluate_one(m, list[h], &cands[h], h, CHECK_READS);
			if (cands[h].status == NC_CAND_USABLE && cands[h].score < floor_ns) {
				for (int i = 0; i < n; i++) {
					if (i == h)
						continue;
					skip_candidate(cands, list, i);
					nc__fmt(cands[i].reason, sizeof(cands[i].reason),
						 "not measured: %s scores %.1f ns, below this one's "
						 "penalty alone (%.0f ns)",
						 list[h]->name, cands[h].score, list[i]->penalty_ns);
				}
				set_selected(cands, h, sel);
				return;
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (cands[i].name[0] == 0)
			evaluate_one(m, list[i], &cands[i], i,
				     list[i]->fixed_hz > 0 ? OS_CLOCK_READS : CHECK_READS);

	int f = pick_forced(reg, env_counter, cands, n, sel);
	if (f >= 0) {
		size_t l = strlen(cands[f].reason);
		nc__fmt(cands[f].reason + l, sizeof(cands[f].reason) - l, "; forced by %s",
			 sel->forced_by);
		set_selected(cands, f, sel);
		return;
	}
	set_selected(cands, best_or_fallback(cands, n), sel);
}

NC_START
void nc__select_next(struct nc_candidate *cands, int n, const char *why, struct nc__selection *sel)
{
	cands[sel->index].status = NC_CAND_REJECTED;
	nc__copy(cands[sel->index].reason, sizeof(cands[sel->index].reason), why);
	for (int i = 0; i < n; i++) /* those a shared record let us skip: measured now */
		if (cands[i].status == NC_CAND_SKIPPED)
			evaluate_one(sel_state.machine, sel_state.list[i], &cands[i], i,
				     sel_state.list[i]->fixed_hz > 0 ? OS_CLOCK_READS : CHECK_READS);
	set_selected(cands, best_or_fallback(cands, n), sel);
}
