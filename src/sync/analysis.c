/* SPDX-License-Identifier: MIT */
/*
 * Do the CPUs' counters agree?  (nc_sync_check) — the analysis: pure
 * functions of the recorded readings, tested on synthetic records; the
 * threads that take the readings are in sync.c.
 *
 * Both methods produce one sequence of readings (cpu, ticks) whose order is
 * the real order in time:
 *  - CAS-ordered probes (cop): one thread pinned to each CPU, all released
 *    together.  A probe loads a shared sequence number, reads the counter,
 *    and claims the number with compare-and-swap; only a successful CAS
 *    records the reading, under the number it loaded.  So reading k
 *    happened before CAS k, which happened before the load that gave k+1,
 *    which happened before reading k+1.  That chain only holds if the read
 *    cannot drift across the atomics: the read must be ordered (LFENCE
 *    before and after RDTSC on x86, ISB on Arm).  An unordered RDTSC can
 *    execute before the load or after the CAS, and then honest counters
 *    look out of order: a false "inconsistent".
 *  - CPU switching: one thread moves itself from CPU to CPU in a fixed
 *    order (base, c1, ..., cn, base, ...) and reads the counter on each.
 *    Deterministic but coarse: a migration takes microseconds.
 *
 * Analysis of a sequence (per round):
 *  - monotonic: each reading >= the one before it.  With agreeing
 *    counters this must hold; a decrease names the two CPUs.
 *  - shift of CPU c against the base CPU b: if b read B1, then c read C,
 *    then b read B2 (in that order), the shift s = counter_c - counter_b
 *    satisfies C - B2 <= s <= C - B1 (if the counters run at the same
 *    pace).  The interval for c is the intersection over all such
 *    triples: hi = min(C - previous B), lo = max(C - next B).  Its width is
 *    at least the sum of the fastest hand-offs b->c and c->b: that is the
 *    resolution limit of the method.
 *  - rounds: every round's interval contains the same true shift, so
 *    rounds are intersected; an empty intersection is a contradiction.
 *  - pace: the same intervals from the first and the second half of each
 *    round must overlap; if they do not, the shift moved during the run.
 *  - advancing: each CPU's counter must move.
 *  - quality: for each CPU, how many of its readings were enclosed by
 *    base readings; below min_enclosed the bound is not trusted.
 * Verdict: inconsistent on any evidence of disagreement: a decrease, an
 * interval that excludes 0 (the counters provably differ by at least its
 * near end), an empty interval, a moved shift, a frozen counter; else
 * inconclusive if quality < 1; else
 * consistent, with max_shift = the width of the hull of [0,0] and all the
 * intervals: an upper bound on the shift between any two CPUs.
 *
 * Cost: cop probes are serialised through one cache line, so a round costs
 * about ncpus * probes * (one cache-line hand-off); `nanoclock bench sync`
 * measures the hand-off and projects the time for 64 and 256 CPUs.
 */
#include "sync_internal.h"
#include "base/fmt.h"
#include "nanoclock_sync.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void iv_reset(struct nc__sync_iv *v) { memset(v, 0, sizeof(*v)); }

/* Shift intervals of every CPU against idx 0 from records [from, to). */
static void intervals(const struct nc__sync_rec *r, size_t from, size_t to, int ncpu, struct nc__sync_iv *out,
		      uint64_t *enclosed)
{
	for (int c = 0; c < ncpu; c++)
		iv_reset(&out[c]);
	/* forward: the base reading before each reading bounds the shift above */
	int have = 0;
	uint64_t prev_b = 0;
	for (size_t k = from; k < to; k++) {
		if (r[k].idx == 0) {
			have = 1;
			prev_b = r[k].t;
		} else if (have) {
			int64_t v = (int64_t)(r[k].t - prev_b);
			struct nc__sync_iv *x = &out[r[k].idx];
			if (!x->has_hi || v < x->hi)
				x->hi = v;
			x->has_hi = 1;
		}
	}
	/* backward: the base reading after bounds it below */
	have = 0;
	uint64_t next_b = 0;
	for (size_t k = to; k-- > from;) {
		if (r[k].idx == 0) {
			have = 1;
			next_b = r[k].t;
		} else if (have) {
			int64_t v = (int64_t)(r[k].t - next_b);
			struct nc__sync_iv *x = &out[r[k].idx];
			if (!x->has_lo || v > x->lo)
				x->lo = v;
			x->has_lo = 1;
		}
	}
	if (enclosed) {
		/* enclosed = has a base reading on both sides */
		size_t first_b = to, last_b = from;
		for (size_t k = from; k < to; k++)
			if (r[k].idx == 0) {
				if (first_b == to)
					first_b = k;
				last_b = k;
			}
		for (size_t k = from; k < to; k++)
			if (r[k].idx != 0 && first_b < k && k < last_b)
				enclosed[r[k].idx]++;
	}
}

static void note(struct nc__sync_acc *a, int idx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(struct nc__sync_acc *a, int idx, const char *fmt, ...)
{
	if (a->evidence[0])
		return; /* the first piece of evidence is kept */
	va_list ap;
	va_start(ap, fmt);
	nc__vfmt(a->evidence, sizeof(a->evidence), fmt, ap);
	va_end(ap);
	a->bad_idx = idx;
}

void nc__sync_analyse_round(struct nc__sync_acc *a, const struct nc__sync_rec *r, size_t n)
{
	int ncpu = a->ncpu;
	const int *cpus = a->cpus;
	uint64_t first[NC_SYNC_MAX_CPUS], last[NC_SYNC_MAX_CPUS];
	int seen[NC_SYNC_MAX_CPUS];
	memset(seen, 0, sizeof(seen[0]) * (size_t)ncpu);
	a->total += n;
	for (size_t k = 0; k < n; k++) {
		uint32_t i = r[k].idx;
		a->probes[i]++;
		if (seen[i]++ == 0) {
			first[i] = r[k].t;
		}
		last[i] = r[k].t;
		if (k > 0 && r[k].t < r[k - 1].t) {
			a->decreases++;
			uint32_t j = r[k - 1].idx;
			note(a, i != 0 ? (int)i : (int)j,
			     "reading on CPU %d came %llu ticks below the one before it (CPU %d)",
			     cpus[i], (unsigned long long)(r[k - 1].t - r[k].t), cpus[j]);
		}
	}
	/* whether a counter advances shows only between two of its readings
	 * in one round; one reading a round says nothing either way */
	for (int i = 0; i < ncpu; i++) {
		if (seen[i] >= 2)
			a->watched[i] = 1;
		if (seen[i] && last[i] > first[i])
			a->advanced[i] = 1;
	}

	struct nc__sync_iv round[NC_SYNC_MAX_CPUS], h1[NC_SYNC_MAX_CPUS], h2[NC_SYNC_MAX_CPUS];
	intervals(r, 0, n, ncpu, round, a->enclosed);
	intervals(r, 0, n / 2, ncpu, h1, NULL);
	intervals(r, n / 2, n, ncpu, h2, NULL);
	for (int c = 1; c < ncpu; c++) {
		/* pace: the halves' intervals must overlap */
		if (h1[c].has_lo && h1[c].has_hi && h2[c].has_lo && h2[c].has_hi &&
		    (h1[c].hi < h2[c].lo || h2[c].hi < h1[c].lo)) {
			a->pace_ok = 0;
			note(a, c,
			     "shift of CPU %d moved from [%lld, %lld] to [%lld, %lld] ticks within a "
			     "round: not the same pace",
			     cpus[c], (long long)h1[c].lo, (long long)h1[c].hi, (long long)h2[c].lo,
			     (long long)h2[c].hi);
		}
		/* intersect with earlier rounds */
		struct nc__sync_iv *x = &a->iv[c];
		if (round[c].has_lo && (!x->has_lo || round[c].lo > x->lo)) {
			x->lo = round[c].lo;
			x->has_lo = 1;
		}
		if (round[c].has_hi && (!x->has_hi || round[c].hi < x->hi)) {
			x->hi = round[c].hi;
			x->has_hi = 1;
		}
		if (x->has_lo && x->lo > 0 && !a->shifted) {
			a->shifted = 1;
			note(a, c, "CPU %d's counter is ahead of CPU %d's by at least %lld ticks", cpus[c],
			     cpus[0], (long long)x->lo);
		} else if (x->has_hi && x->hi < 0 && !a->shifted) {
			a->shifted = 1;
			note(a, c, "CPU %d's counter is behind CPU %d's by at least %lld ticks", cpus[c],
			     cpus[0], (long long)-x->hi);
		}
		if (x->has_lo && x->has_hi && x->lo > x->hi && !a->empty) {
			a->empty = 1;
			note(a, c, "no constant shift fits CPU %d: readings bound it both above %lld and "
				   "below %lld ticks",
			     cpus[c], (long long)x->lo, (long long)x->hi);
		}
	}
}

int nc__sync_enough(const struct nc__sync_acc *a, unsigned min_enclosed)
{
	for (int c = 1; c < a->ncpu; c++)
		if (a->enclosed[c] < min_enclosed || !a->iv[c].has_lo || !a->iv[c].has_hi)
			return 0;
	return 1;
}

void nc__sync_acc_init(struct nc__sync_acc *a, const int *cpus, int ncpu)
{
	memset(a, 0, sizeof(*a));
	a->ncpu = ncpu;
	a->cpus = cpus;
	a->pace_ok = 1;
	a->bad_idx = -1;
}

/* The report: per-CPU intervals, the hull of all shifts (the base's own
 * [0, 0] included) as the bound, quality, and, if judge, the verdict:
 * inconsistent on any evidence, inconclusive without enough, else
 * consistent.  rep->rounds_done and timed_out are the caller's. */
void nc__sync_report(struct nc__sync_acc *a, unsigned min_enclosed, double hz, int judge,
		     struct nc_sync_report *rep)
{
	rep->probes = a->total;
	rep->decreases = a->decreases;
	rep->monotonic = a->decreases == 0;
	rep->same_pace = a->pace_ok;
	rep->advancing = 1;
	int64_t lo = 0, hi = 0; /* hull, the base's own [0, 0] included */
	double quality = 1;
	for (int i = 0; i < a->ncpu; i++) {
		struct nc_sync_cpu *c = &rep->cpu[i];
		c->cpu = a->cpus[i];
		c->probes = a->probes[i];
		c->enclosed = i == 0 ? a->probes[i] : a->enclosed[i];
		c->advancing = a->advanced[i] || !a->watched[i];
		if (!c->advancing && rep->rounds_done > 0) {
			rep->advancing = 0;
			note(a, i, "the counter on CPU %d did not advance", a->cpus[i]);
		}
		if (i == 0) {
			c->bounded = 1;
			continue;
		}
		const struct nc__sync_iv *x = &a->iv[i];
		c->bounded = x->has_lo && x->has_hi;
		c->shift_lo = x->lo;
		c->shift_hi = x->hi;
		if (c->bounded) {
			if (x->lo < lo)
				lo = x->lo;
			if (x->hi > hi)
				hi = x->hi;
		}
		double q = (double)c->enclosed / min_enclosed;
		if (!c->bounded)
			q = 0;
		if (q < quality)
			quality = q;
	}
	if (rep->rounds_done == 0)
		quality = 0;
	rep->quality = quality;
	rep->bounded = quality > 0 || a->ncpu == 1;
	for (int i = 1; i < a->ncpu; i++)
		if (!rep->cpu[i].bounded)
			rep->bounded = 0;
	rep->max_shift_ticks = (uint64_t)(hi - lo);
	rep->max_shift_ns = hz > 0 ? (double)rep->max_shift_ticks * 1e9 / hz : 0;

	if (judge) {
		if (a->decreases || a->empty || a->shifted || !a->pace_ok || !rep->advancing) {
			rep->verdict = NC_SYNC_INCONSISTENT;
		} else if (quality < 1) {
			rep->verdict = NC_SYNC_INCONCLUSIVE;
			note(a, -1, "too little evidence: quality %.2f (%u enclosed probes per CPU wanted)%s",
			     quality, min_enclosed, rep->timed_out ? "; time limit reached" : "");
		} else {
			rep->verdict = NC_SYNC_CONSISTENT;
		}
		nc__copy(rep->evidence, sizeof(rep->evidence), a->evidence);
		rep->bad_cpu = a->bad_idx >= 0 && rep->verdict == NC_SYNC_INCONSISTENT
				       ? a->cpus[a->bad_idx] : -1;
	}
}
