/*
 * Choosing the counter, by measurement, once per process.
 *
 * Candidates, in order: the application's counter (nc_set_counter), the
 * tests' injected ones, this architecture's hardware counter, then the OS
 * clocks CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC and gettimeofday — the last
 * always works, so selection never fails.
 *
 * Each candidate, with faults trapped (trap.c):
 *   1. its own availability rule (e.g. the TSC policy in x86_tsc.c);
 *   2. read 1000 times back to back: it must never decrease and must
 *      advance (a coarse counter gets up to 10 rounds); the smallest
 *      nonzero step is its resolution, the time per read its cost;
 *   3. its rate: exact for OS clocks, else the first stated source, else a
 *      0.2 ms rough measurement — only to express the resolution in ns.
 * Policy: the lowest score = resolution_ns + cost_ns + penalty_ns wins.
 * Penalties say what the two measured numbers cannot: 0 for a hardware
 * counter read inline; 100 ns for CLOCK_MONOTONIC_RAW (a call, and the
 * kernel decides what it reads); 150 ns for CLOCK_MONOTONIC (NTP slews its
 * rate, which nc_now_ns does not track); 1 ms for gettimeofday (realtime:
 * it can be set backwards).  A hardware counter therefore wins unless it
 * is truly coarse (resolution above ~100 ns) or slow to read (a trapping
 * read in a VM costs microseconds).
 * NANOCLOCK_COUNTER=<name> (or an installed application counter) forces the
 * choice; the environment wins over the application, because the operator
 * running the program has the last word.  A forced counter that is unknown
 * or fails gives nc_init() NC_ENOCOUNTER; the clock still runs on the best
 * counter.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_READS 1000
#define CHECK_ROUNDS 10
#define ROUGH_NS 200000

static const struct nc__counter *uses[NC_MAX_CANDIDATES];
static struct nc__ext exts[NC_MAX_CANDIDATES];
static int ext_used[NC_MAX_CANDIDATES];
static double hints[NC_MAX_CANDIDATES];

#if defined(__aarch64__)
NC_HIDDEN extern const struct nc__counter nc__counter_cntvctss;
#endif

static int build_list(const struct nc__counter **l, int max)
{
	int n = 0;
	const struct nc__counter *u = nc__user_counter();
	if (u && n < max)
		l[n++] = u;
	n += nc__test_candidates(l + n, max - n - 4);
#if defined(__x86_64__) || defined(__i386__)
	l[n++] = &nc__counter_tsc;
#elif defined(__aarch64__)
	l[n++] = nc__arm64_has_ecv() ? &nc__counter_cntvctss : &nc__counter_cntvct;
#elif defined(__powerpc64__)
	l[n++] = &nc__counter_timebase;
#elif defined(__riscv) && __riscv_xlen == 64
	l[n++] = &nc__counter_rdtime;
#endif
	l[n++] = &nc__counter_mono_raw;
	l[n++] = &nc__counter_mono;
	l[n++] = &nc__counter_gettimeofday;
	return n;
}

struct eval {
	const struct nc__counter *c;
	int rc;
	uint64_t res;
	double cost, hz;
	char hz_src[24];
	char why[160];
};

static void rough_rate(struct eval *ev)
{
	const struct nc__counter *c = ev->c;
	int64_t r0 = nc__mono_raw_ns(), r1;
	uint64_t t0 = c->read_ordered(c->ctx), t1;
	do {
		r1 = nc__mono_raw_ns();
	} while (r1 - r0 < ROUGH_NS && r1 >= r0);
	t1 = c->read_ordered(c->ctx);
	if (t1 <= t0 || r1 <= r0) {
		ev->rc = NC_ENOCOUNTER;
		snprintf(ev->why, sizeof(ev->why), "did not advance over %d us of CLOCK_MONOTONIC_RAW",
			 ROUGH_NS / 1000);
		return;
	}
	ev->hz = (double)(t1 - t0) * 1e9 / (double)(r1 - r0);
	snprintf(ev->hz_src, sizeof(ev->hz_src), "rough (0.2 ms)");
	if (!(ev->hz >= 1e3 && ev->hz <= 1e11)) {
		ev->rc = NC_ENOCOUNTER;
		snprintf(ev->why, sizeof(ev->why), "rate %.3g Hz outside 1 kHz .. 100 GHz", ev->hz);
	}
}

/* Runs under the fault trap: everything that reads the candidate. */
static void evaluate(void *arg)
{
	struct eval *ev = arg;
	const struct nc__counter *c = ev->c;
	for (int i = 0; i < 16; i++) /* first touch: a forbidden read faults here */
		(void)c->read(c->ctx);
	for (int round = 0; round < CHECK_ROUNDS; round++) {
		ev->rc = nc__counter_check(c, CHECK_READS, &ev->res, &ev->cost, ev->why,
					   sizeof(ev->why));
		if (ev->rc != NC__CHECK_STILL)
			break; /* passed, or went backwards: reading longer cannot help */
	}
	if (ev->rc) {
		ev->rc = NC_ENOCOUNTER;
		return;
	}
	if (c->fixed_hz > 0) {
		ev->hz = c->fixed_hz;
		snprintf(ev->hz_src, sizeof(ev->hz_src), "exact");
		return;
	}
	if (c->stated) {
		struct nc_hz_source s[NC_MAX_HZ_SOURCES];
		int n = c->stated(s, NC_MAX_HZ_SOURCES);
		for (int i = 0; i < n; i++)
			if (s[i].hz >= 1e3 && s[i].hz <= 1e11) {
				ev->hz = s[i].hz;
				snprintf(ev->hz_src, sizeof(ev->hz_src), "%s", s[i].name);
				return;
			}
	}
	rough_rate(ev);
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

static void set_selected(struct nc_candidate *cands, int i, struct nc__selection *sel)
{
	cands[i].status = NC_CAND_SELECTED;
	sel->use = uses[i];
	sel->index = i;
	sel->ext = ext_used[i] ? &exts[i] : NULL;
	sel->hz_hint = hints[i];
}

static int best_usable(const struct nc_candidate *cands, int n)
{
	int best = -1;
	for (int i = 0; i < n; i++)
		if (cands[i].status == NC_CAND_USABLE &&
		    (best < 0 || cands[i].score < cands[best].score))
			best = i;
	return best;
}

void nc__select(const struct nc_kernel_view *kv, struct nc_candidate *cands, int *n_out,
		struct nc__selection *sel)
{
	const struct nc__counter *list[NC_MAX_CANDIDATES];
	int n = build_list(list, NC_MAX_CANDIDATES);
	memset(sel, 0, sizeof(*sel));
	memset(cands, 0, sizeof(*cands) * NC_MAX_CANDIDATES);

	for (int i = 0; i < n; i++) {
		const struct nc__counter *c = list[i];
		struct nc_candidate *ci = &cands[i];
		snprintf(ci->name, sizeof(ci->name), "%s", c->name);
		snprintf(ci->what, sizeof(ci->what), "%s", c->what ? c->what : "");
		ci->penalty_ns = c->penalty_ns;
		ci->status = NC_CAND_REJECTED;
		uses[i] = c;
		ext_used[i] = 0;
		char why[160] = "";
		if (c->available && c->available(kv, why, sizeof(why)) != 0) {
			snprintf(ci->reason, sizeof(ci->reason), "%s", why[0] ? why : "not available");
			continue;
		}
		if (c->bits < 64) {
			nc__ext_init(&exts[i], c);
			ext_used[i] = 1;
			uses[i] = &exts[i].wrapped;
		}
		struct eval ev;
		memset(&ev, 0, sizeof(ev));
		ev.c = uses[i];
		int sig = nc__trap_run(evaluate, &ev);
		if (sig) {
			snprintf(ci->reason, sizeof(ci->reason), "faulted with %s when read", sig_name(sig));
			continue;
		}
		if (ev.rc == 0 && ext_used[i] && exts[i].backsteps) {
			ev.rc = NC_ENOCOUNTER;
			snprintf(ev.why, sizeof(ev.why), "went backwards %ld times (modulo 2^%u)",
				 exts[i].backsteps, c->bits);
		}
		if (ev.rc) {
			snprintf(ci->reason, sizeof(ci->reason), "%s", ev.why);
			continue;
		}
		if (ext_used[i])
			nc__ext_set_hz(&exts[i], ev.hz);
		hints[i] = ev.hz;
		ci->status = NC_CAND_USABLE;
		ci->resolution_ticks = ev.res;
		ci->hz = ev.hz;
		snprintf(ci->hz_source, sizeof(ci->hz_source), "%s", ev.hz_src);
		ci->resolution_ns = (double)ev.res * 1e9 / ev.hz;
		ci->cost_ns = ev.cost;
		ci->score = ci->resolution_ns + ci->cost_ns + ci->penalty_ns;
		snprintf(ci->reason, sizeof(ci->reason), "monotonic and advancing in %d reads%s%s",
			 CHECK_READS, c->bits < 64 ? "; extended to 64 bits" : "",
			 strcmp(c->name, "tsc") == 0 && kv->tsc_unstable == 1
				 ? "; kernel distrusts it, our checks pass" : "");
	}
	*n_out = n;

	const char *forced = getenv("NANOCLOCK_COUNTER");
	const struct nc__counter *u = nc__user_counter();
	if (!(forced && *forced) && u)
		forced = u->name;
	if (forced && *forced) {
		int f = -1;
		for (int i = 0; i < n; i++)
			if (strcmp(cands[i].name, forced) == 0 && f < 0)
				f = i;
		if (f < 0) {
			int l = snprintf(sel->error, sizeof(sel->error),
					 "unknown counter '%.40s'; candidates:", forced);
			for (int i = 0; i < n && l > 0 && (size_t)l < sizeof(sel->error); i++)
				l += snprintf(sel->error + l, sizeof(sel->error) - (size_t)l, " %s",
					      cands[i].name);
			sel->status = NC_ENOCOUNTER;
		} else if (cands[f].status != NC_CAND_USABLE) {
			snprintf(sel->error, sizeof(sel->error), "counter '%.40s' rejected: %.120s",
				 forced, cands[f].reason);
			sel->status = NC_ENOCOUNTER;
		} else {
			set_selected(cands, f, sel);
			snprintf(cands[f].reason + strlen(cands[f].reason),
				 sizeof(cands[f].reason) - strlen(cands[f].reason), "; forced by %s",
				 getenv("NANOCLOCK_COUNTER") && *getenv("NANOCLOCK_COUNTER")
					 ? "NANOCLOCK_COUNTER" : "the application");
			return;
		}
	}
	int b = best_usable(cands, n);
	if (b < 0) {
		/* nothing passed (a broken OS clock?): CLOCK_MONOTONIC_RAW anyway */
		for (int i = 0; i < n; i++)
			if (uses[i] == &nc__counter_mono_raw)
				b = i;
		hints[b] = 1e9;
		snprintf(cands[b].reason, sizeof(cands[b].reason),
			 "used although no candidate passed the checks");
	}
	set_selected(cands, b, sel);
}

void nc__select_next(struct nc_candidate *cands, int n, const char *why, struct nc__selection *sel)
{
	cands[sel->index].status = NC_CAND_REJECTED;
	snprintf(cands[sel->index].reason, sizeof(cands[sel->index].reason), "%s", why);
	int b = best_usable(cands, n);
	if (b < 0)
		for (int i = 0; i < n; i++)
			if (uses[i] == &nc__counter_mono_raw)
				b = i;
	set_selected(cands, b, sel);
}
