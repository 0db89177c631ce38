/*
 * Do the CPUs' counters agree?  (nc_sync_check)
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
#include "internal.h"
#include "nanoclock_sync.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nc__sync_fail_create_at = -1; /* tests: make pthread_create fail here */

struct rec {
	uint32_t idx; /* index into the CPU list; 0 is the base */
	uint64_t t;
};

/* ---- analysis ---- */
struct iv {
	int64_t lo, hi;
	int has_lo, has_hi;
};

static void iv_reset(struct iv *v) { memset(v, 0, sizeof(*v)); }

/* Shift intervals of every CPU against idx 0 from records [from, to). */
static void intervals(const struct rec *r, size_t from, size_t to, int ncpu, struct iv *out,
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
			struct iv *x = &out[r[k].idx];
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
			struct iv *x = &out[r[k].idx];
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

struct acc {
	int ncpu;
	struct iv iv[NC_SYNC_MAX_CPUS];
	int iv_started[NC_SYNC_MAX_CPUS];
	uint64_t enclosed[NC_SYNC_MAX_CPUS], probes[NC_SYNC_MAX_CPUS];
	int advanced[NC_SYNC_MAX_CPUS];
	uint64_t decreases, total;
	int pace_ok, empty, shifted, bad_idx;
	char evidence[256];
};

static void note(struct acc *a, int idx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(struct acc *a, int idx, const char *fmt, ...)
{
	if (a->evidence[0])
		return; /* the first piece of evidence is kept */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->evidence, sizeof(a->evidence), fmt, ap);
	va_end(ap);
	a->bad_idx = idx;
}

static void analyse_round(struct acc *a, const struct rec *r, size_t n, const int *cpus)
{
	int ncpu = a->ncpu;
	uint64_t first[NC_SYNC_MAX_CPUS], last[NC_SYNC_MAX_CPUS];
	int seen[NC_SYNC_MAX_CPUS];
	memset(seen, 0, sizeof(seen[0]) * (size_t)ncpu);
	a->total += n;
	for (size_t k = 0; k < n; k++) {
		uint32_t i = r[k].idx;
		a->probes[i]++;
		if (!seen[i]) {
			seen[i] = 1;
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
	for (int i = 0; i < ncpu; i++)
		if (seen[i] && last[i] > first[i])
			a->advanced[i] = 1;

	struct iv round[NC_SYNC_MAX_CPUS], h1[NC_SYNC_MAX_CPUS], h2[NC_SYNC_MAX_CPUS];
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
		struct iv *x = &a->iv[c];
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

static int enough_evidence(const struct acc *a, int ncpu, unsigned min_enclosed)
{
	for (int c = 1; c < ncpu; c++)
		if (a->enclosed[c] < min_enclosed || !a->iv[c].has_lo || !a->iv[c].has_hi)
			return 0;
	return 1;
}

/* ---- collection ---- */
struct shared {
	uint64_t seq __attribute__((aligned(64)));
	int start __attribute__((aligned(64)));
	int abort;
	int ready;
	int running;  /* threads on their CPU and spinning, about to probe */
	int nthreads;
	int64_t deadline_ns;
	uint64_t (*read)(void *);
	void *ctx;
};

struct worker {
	pthread_t th;
	int cpu, idx, pinned;
	unsigned want, count;
	uint64_t *seqs, *ticks;
	struct shared *sh;
};

static int pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *cop_worker(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	w->pinned = pin_self(w->cpu) == 0 && sched_getcpu() == w->cpu;
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&sh->start, __ATOMIC_ACQUIRE))
		sched_yield(); /* the main thread releases us within microseconds */
	if (!w->pinned) /* the round is void: do not keep the others waiting */
		__atomic_store_n(&sh->abort, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&sh->abort, __ATOMIC_ACQUIRE))
		return NULL;
	/* Probes only interleave while every thread runs at once.  On a busy
	 * machine a thread that yields may wait a whole time slice for its CPU
	 * while the others finish alone: no evidence.  So the threads meet
	 * spinning, which means each is on its CPU, and only then probe (a
	 * burst of ~0.1 ms, well inside a time slice). */
	__atomic_fetch_add(&sh->running, 1, __ATOMIC_ACQ_REL);
	for (unsigned spin = 1; __atomic_load_n(&sh->running, __ATOMIC_ACQUIRE) < sh->nthreads;
	     spin++)
		if ((spin & 1023) == 0 && (__atomic_load_n(&sh->abort, __ATOMIC_ACQUIRE) ||
					   nc__mono_raw_ns() > sh->deadline_ns))
			return NULL;
	for (unsigned i = 0; i < w->want; i++) {
		if ((i & 255) == 0 && nc__mono_raw_ns() > sh->deadline_ns)
			break;
		uint64_t s, t;
		do {
			s = __atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE);
			t = sh->read(sh->ctx); /* ordered: after the load, before the CAS */
		} while (!__atomic_compare_exchange_n(&sh->seq, &s, s + 1, 0, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE));
		w->seqs[i] = s;
		w->ticks[i] = t;
		w->count = i + 1;
	}
	return NULL;
}

/* One cop round.  Returns 0 and the records in sequence order, or an error
 * with why[] filled. */
static int cop_round(const int *cpus, int ncpu, unsigned probes, struct shared *sh,
		     struct rec **out, size_t *nout, char *why, size_t whylen)
{
	struct worker *w = calloc((size_t)ncpu, sizeof(*w));
	if (!w) {
		snprintf(why, whylen, "out of memory");
		return NC_ESYS;
	}
	int rc = 0, created = 0;
	sh->seq = 0;
	sh->start = 0;
	sh->abort = 0;
	sh->ready = 0;
	sh->running = 0;
	for (int i = 0; i < ncpu && rc == 0; i++) {
		w[i].cpu = cpus[i];
		w[i].idx = i;
		w[i].want = probes;
		w[i].sh = sh;
		w[i].seqs = malloc(sizeof(uint64_t) * probes);
		w[i].ticks = malloc(sizeof(uint64_t) * probes);
		if (!w[i].seqs || !w[i].ticks) {
			snprintf(why, whylen, "out of memory");
			rc = NC_ESYS;
		} else if (i == nc__sync_fail_create_at ||
			   pthread_create(&w[i].th, NULL, cop_worker, &w[i]) != 0) {
			snprintf(why, whylen, "could not create the thread for CPU %d", cpus[i]);
			rc = NC_ESYS;
		} else {
			created++;
		}
	}
	if (rc == 0) {
		/* all pinned and waiting, then all released together */
		while (__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < created) {
			if (nc__mono_raw_ns() > sh->deadline_ns) {
				snprintf(why, whylen, "threads did not start within the time limit");
				rc = 1; /* timed out: not an error */
				break;
			}
			sched_yield();
		}
	}
	if (rc != 0)
		__atomic_store_n(&sh->abort, 1, __ATOMIC_RELEASE);
	sh->nthreads = created;
	__atomic_store_n(&sh->start, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < created; i++)
		pthread_join(w[i].th, NULL);
	for (int i = 0; i < created && rc == 0; i++)
		if (!w[i].pinned) {
			snprintf(why, whylen, "could not pin a thread to CPU %d", cpus[i]);
			rc = NC_ESYS;
		}

	size_t total = 0;
	for (int i = 0; i < created; i++)
		total += w[i].count;
	struct rec *r = NULL;
	if (rc == 0) {
		r = calloc(total ? total : 1, sizeof(*r));
		if (!r) {
			snprintf(why, whylen, "out of memory");
			rc = NC_ESYS;
		}
	}
	/* every successful CAS recorded its number: 0 .. total-1, once each */
	for (int i = 0; i < created && rc == 0; i++)
		for (unsigned k = 0; k < w[i].count; k++) {
			if (w[i].seqs[k] >= total) {
				snprintf(why, whylen, "sequence numbers are not contiguous");
				rc = NC_ESYS;
				break;
			}
			r[w[i].seqs[k]].idx = (uint32_t)i;
			r[w[i].seqs[k]].t = w[i].ticks[k];
		}
	for (int i = 0; i < ncpu; i++) {
		free(w[i].seqs);
		free(w[i].ticks);
	}
	free(w);
	if (rc != 0) {
		free(r);
		return rc;
	}
	*out = r;
	*nout = total;
	return 0;
}

struct hop_arg {
	const int *cpus;
	int ncpu;
	unsigned visits;
	struct shared *sh;
	struct rec *r;
	size_t n;
	int rc;
	char why[128];
};

static void *hop_worker(void *arg)
{
	struct hop_arg *h = arg;
	for (unsigned v = 0; v < h->visits; v++) {
		for (int i = 0; i <= h->ncpu; i++) {
			int idx = i == h->ncpu ? 0 : i; /* ... cn, then the base again */
			if (i == h->ncpu && v + 1 < h->visits)
				break; /* the next visit starts at the base anyway */
			if (nc__mono_raw_ns() > h->sh->deadline_ns)
				return NULL;
			if (pin_self(h->cpus[idx]) != 0 || sched_getcpu() != h->cpus[idx]) {
				h->rc = NC_ESYS;
				snprintf(h->why, sizeof(h->why), "could not move to CPU %d", h->cpus[idx]);
				return NULL;
			}
			h->r[h->n].idx = (uint32_t)idx;
			h->r[h->n].t = h->sh->read(h->sh->ctx);
			h->n++;
		}
	}
	return NULL;
}

/* One switching round, in a thread of its own: the caller's affinity is
 * never touched. */
static int switch_round(const int *cpus, int ncpu, unsigned visits, struct shared *sh,
			struct rec **out, size_t *nout, char *why, size_t whylen)
{
	struct hop_arg h;
	memset(&h, 0, sizeof(h));
	h.cpus = cpus;
	h.ncpu = ncpu;
	h.visits = visits;
	h.sh = sh;
	h.r = calloc((size_t)visits * (size_t)(ncpu + 1), sizeof(*h.r));
	if (!h.r) {
		snprintf(why, whylen, "out of memory");
		return NC_ESYS;
	}
	pthread_t th;
	if (nc__sync_fail_create_at == 0 || pthread_create(&th, NULL, hop_worker, &h) != 0) {
		free(h.r);
		snprintf(why, whylen, "could not create the switching thread");
		return NC_ESYS;
	}
	pthread_join(th, NULL);
	if (h.rc != 0) {
		free(h.r);
		snprintf(why, whylen, "%s", h.why);
		return h.rc;
	}
	*out = h.r;
	*nout = h.n;
	return 0;
}

/* ---- the API ---- */
static uint64_t library_read(void *ctx)
{
	(void)ctx;
	return nc_ticks_begin(); /* ordered before and after */
}

void nc_sync_default_options(struct nc_sync_options *o)
{
	memset(o, 0, sizeof(*o));
	o->method = NC_SYNC_COP;
	o->probes = 0; /* auto: see nc_sync_check */
	o->rounds = 3;
	o->min_enclosed = 50;
	o->time_limit_ms = 2000;
}

const char *nc_sync_verdict_name(int v)
{
	return v == NC_SYNC_CONSISTENT ? "consistent"
	       : v == NC_SYNC_INCONSISTENT ? "inconsistent"
	       : v == NC_SYNC_INCONCLUSIVE ? "inconclusive" : "unknown";
}

int nc_sync_check(const struct nc_sync_options *opt, struct nc_sync_report *rep)
{
	struct nc_sync_options o;
	nc_sync_default_options(&o);
	if (opt) {
		o = *opt;
		struct nc_sync_options d;
		nc_sync_default_options(&d);
		if (o.probes == 0)
			o.probes = o.method == NC_SYNC_SWITCH ? 200 : 0;
		if (o.rounds == 0)
			o.rounds = d.rounds;
		if (o.min_enclosed == 0)
			o.min_enclosed = o.method == NC_SYNC_SWITCH ? 20 : d.min_enclosed;
		if (!(o.time_limit_ms > 0))
			o.time_limit_ms = d.time_limit_ms;
	}
	if (!rep || (o.method != NC_SYNC_COP && o.method != NC_SYNC_SWITCH) || o.probes > 100000000u ||
	    !(o.time_limit_ms <= 3600e3) || !(o.hz >= 0))
		return NC_EINVAL;

	memset(rep, 0, sizeof(*rep));
	rep->method = o.method;
	rep->bad_cpu = -1;
	rep->verdict = NC_SYNC_INCONCLUSIVE;
	struct nc_info info;
	nc_get_info(&info);
	rep->kernel_tsc_unstable = info.kernel.tsc_unstable;
	rep->cpuid_invariant_tsc = info.kernel.cpuid_invariant_tsc;
	double hz = o.hz > 0 ? o.hz : info.hz;

	cpu_set_t mask;
	if (pthread_getaffinity_np(pthread_self(), sizeof(mask), &mask) != 0) {
		snprintf(rep->evidence, sizeof(rep->evidence), "cannot read the thread's affinity");
		return NC_ESYS;
	}
	int cpus[NC_SYNC_MAX_CPUS], ncpu = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mask)) {
			if (ncpu == NC_SYNC_MAX_CPUS) {
				rep->truncated = 1;
				break;
			}
			cpus[ncpu++] = c;
		}
	rep->ncpus = ncpu;
	rep->base_cpu = cpus[0];
	/* auto: 20000 probes per CPU on small machines, fewer on wide ones so
	 * that the serialised probing stays near 40000 per round (each probe
	 * is a cache-line hand-off); never below 2000 per CPU */
	if (o.probes == 0 && o.method == NC_SYNC_COP)
		o.probes = ncpu <= 2 ? 20000 : 40000 / (unsigned)ncpu > 2000 ? 40000 / (unsigned)ncpu : 2000;

	struct shared *sh = aligned_alloc(64, (sizeof(struct shared) + 63) / 64 * 64);
	struct acc *a = calloc(1, sizeof(*a));
	if (!sh || !a) {
		free(sh);
		free(a);
		snprintf(rep->evidence, sizeof(rep->evidence), "out of memory");
		return NC_ESYS;
	}
	memset(sh, 0, sizeof(*sh));
	sh->read = o.read ? o.read : library_read;
	sh->ctx = o.read ? o.ctx : NULL;
	a->ncpu = ncpu;
	a->pace_ok = 1;
	a->bad_idx = -1;

	int64_t t0 = nc__mono_raw_ns();
	sh->deadline_ns = t0 + (int64_t)(o.time_limit_ms * 1e6);
	int rc = 0;
	/* The requested rounds, then more (up to 4x) while the evidence is
	 * short: a thread descheduled for a few ms leaves a round with few
	 * interleavings, which a later round usually makes up. */
	for (unsigned round = 0; round < 4 * o.rounds; round++) {
		if (round >= o.rounds && enough_evidence(a, ncpu, o.min_enclosed))
			break;
		if (nc__mono_raw_ns() > sh->deadline_ns) {
			rep->timed_out = 1;
			break;
		}
		struct rec *r = NULL;
		size_t n = 0;
		char why[160] = "";
		rc = o.method == NC_SYNC_COP
			     ? cop_round(cpus, ncpu, o.probes, sh, &r, &n, why, sizeof(why))
			     : switch_round(cpus, ncpu, o.probes, sh, &r, &n, why, sizeof(why));
		if (rc == 1) {
			rc = 0;
			rep->timed_out = 1;
			break;
		}
		if (rc != 0) {
			snprintf(rep->evidence, sizeof(rep->evidence), "%s", why);
			break;
		}
		analyse_round(a, r, n, cpus);
		free(r);
		rep->rounds_done++;
	}
	if (nc__mono_raw_ns() > sh->deadline_ns)
		rep->timed_out = 1;
	rep->elapsed_ms = (nc__mono_raw_ns() - t0) / 1e6;

	/* the report */
	rep->probes = a->total;
	rep->decreases = a->decreases;
	rep->monotonic = a->decreases == 0;
	rep->same_pace = a->pace_ok;
	rep->advancing = 1;
	int64_t lo = 0, hi = 0; /* hull, the base's own [0, 0] included */
	double quality = 1;
	for (int i = 0; i < ncpu; i++) {
		struct nc_sync_cpu *c = &rep->cpu[i];
		c->cpu = cpus[i];
		c->probes = a->probes[i];
		c->enclosed = i == 0 ? a->probes[i] : a->enclosed[i];
		c->advancing = a->advanced[i];
		if (!c->advancing && rep->rounds_done > 0) {
			rep->advancing = 0;
			note(a, i, "the counter on CPU %d did not advance", cpus[i]);
		}
		if (i == 0) {
			c->bounded = 1;
			continue;
		}
		const struct iv *x = &a->iv[i];
		c->bounded = x->has_lo && x->has_hi;
		c->shift_lo = x->lo;
		c->shift_hi = x->hi;
		if (c->bounded) {
			if (x->lo < lo)
				lo = x->lo;
			if (x->hi > hi)
				hi = x->hi;
		}
		double q = (double)c->enclosed / o.min_enclosed;
		if (!c->bounded)
			q = 0;
		if (q < quality)
			quality = q;
	}
	if (rep->rounds_done == 0)
		quality = 0;
	rep->quality = quality;
	rep->bounded = quality > 0 || ncpu == 1;
	for (int i = 1; i < ncpu; i++)
		if (!rep->cpu[i].bounded)
			rep->bounded = 0;
	rep->max_shift_ticks = (uint64_t)(hi - lo);
	rep->max_shift_ns = hz > 0 ? (double)rep->max_shift_ticks * 1e9 / hz : 0;

	if (rc == 0) {
		if (a->decreases || a->empty || a->shifted || !a->pace_ok || !rep->advancing) {
			rep->verdict = NC_SYNC_INCONSISTENT;
		} else if (quality < 1) {
			rep->verdict = NC_SYNC_INCONCLUSIVE;
			note(a, -1, "too little evidence: quality %.2f (%u enclosed probes per CPU wanted)%s",
			     quality, o.min_enclosed, rep->timed_out ? "; time limit reached" : "");
		} else {
			rep->verdict = NC_SYNC_CONSISTENT;
		}
		snprintf(rep->evidence, sizeof(rep->evidence), "%s", a->evidence);
		rep->bad_cpu = a->bad_idx >= 0 && rep->verdict == NC_SYNC_INCONSISTENT
				       ? cpus[a->bad_idx] : -1;
	}
	free(sh);
	free(a);
	return rc;
}
