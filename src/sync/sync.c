/* SPDX-License-Identifier: MIT */
/*
 * The cross-CPU check's collection: the threads that take the readings
 * (CAS-ordered probes, or one thread switching CPUs) and the API.  What
 * the readings mean is analysis.c's business.
 */
#include "sync_internal.h"
#include "base/fmt.h"
#include "../base/lock.h"
#include "../base/log.h"
#include "../base/refclock.h"
#include "../counter/counter.h"
#include "../init.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nc__sync_fail_create_at = -1; /* tests: make pthread_create fail here */

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

int nc__pin_self(int cpu)
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
	w->pinned = nc__pin_self(w->cpu) == 0 && sched_getcpu() == w->cpu;
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
	 * short burst, well inside a time slice). */
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

/* Phase 1 of a round: one pinned thread per CPU, each waiting to be
 * released.  Returns 0, or NC_ESYS with why[] (threads created so far are
 * counted in *created either way). */
static int start_workers(const int *cpus, int ncpu, unsigned probes, struct shared *sh,
			 struct worker *w, int *created, char *why, size_t whylen)
{
	sh->seq = 0;
	sh->start = 0;
	sh->abort = 0;
	sh->ready = 0;
	sh->running = 0;
	*created = 0;
	for (int i = 0; i < ncpu; i++) {
		w[i].cpu = cpus[i];
		w[i].idx = i;
		w[i].want = probes;
		w[i].sh = sh;
		w[i].seqs = malloc(sizeof(uint64_t) * probes);
		w[i].ticks = malloc(sizeof(uint64_t) * probes);
		if (!w[i].seqs || !w[i].ticks) {
			nc__fmt(why, whylen, "out of memory");
			return NC_ESYS;
		}
		if (i == nc__sync_fail_create_at ||
		    pthread_create(&w[i].th, NULL, cop_worker, &w[i]) != 0) {
			nc__fmt(why, whylen, "could not create the thread for CPU %d", cpus[i]);
			return NC_ESYS;
		}
		(*created)++;
	}
	return 0;
}

/* Phase 2: wait until all are pinned and waiting (or the time limit: 1,
 * not an error), release them together (or tell them to abort after an
 * earlier error), and join every one. */
static int release_and_join(struct worker *w, int created, int rc, struct shared *sh, char *why,
			    size_t whylen)
{
	while (rc == 0 && __atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < created) {
		if (nc__mono_raw_ns() > sh->deadline_ns) {
			nc__fmt(why, whylen, "threads did not start within the time limit");
			rc = 1;
			break;
		}
		sched_yield();
	}
	if (rc != 0)
		__atomic_store_n(&sh->abort, 1, __ATOMIC_RELEASE);
	sh->nthreads = created;
	__atomic_store_n(&sh->start, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < created; i++)
		pthread_join(w[i].th, NULL);
	for (int i = 0; i < created && rc == 0; i++)
		if (!w[i].pinned) {
			nc__fmt(why, whylen, "could not pin a thread to CPU %d", w[i].cpu);
			rc = NC_ESYS;
		}
	return rc;
}

/* Phase 3: the readings in the order of their sequence numbers.  Every
 * successful CAS recorded its number: 0 .. total-1, once each. */
static int gather(const struct worker *w, int created, struct nc__sync_rec **out, size_t *nout,
		  char *why, size_t whylen)
{
	size_t total = 0;
	for (int i = 0; i < created; i++)
		total += w[i].count;
	struct nc__sync_rec *r = calloc(total ? total : 1, sizeof(*r));
	if (!r) {
		nc__fmt(why, whylen, "out of memory");
		return NC_ESYS;
	}
	for (int i = 0; i < created; i++)
		for (unsigned k = 0; k < w[i].count; k++) {
			if (w[i].seqs[k] >= total) {
				nc__fmt(why, whylen, "sequence numbers are not contiguous");
				free(r);
				return NC_ESYS;
			}
			r[w[i].seqs[k]].idx = (uint32_t)i;
			r[w[i].seqs[k]].t = w[i].ticks[k];
		}
	*out = r;
	*nout = total;
	return 0;
}

/* One cop round.  Returns 0 and the records in sequence order, 1 on the
 * time limit, or an error with why[] filled. */
static int cop_round(const int *cpus, int ncpu, unsigned probes, struct shared *sh,
		     struct nc__sync_rec **out, size_t *nout, char *why, size_t whylen)
{
	struct worker *w = calloc((size_t)ncpu, sizeof(*w));
	if (!w) {
		nc__fmt(why, whylen, "out of memory");
		return NC_ESYS;
	}
	int created;
	int rc = start_workers(cpus, ncpu, probes, sh, w, &created, why, whylen);
	rc = release_and_join(w, created, rc, sh, why, whylen);
	if (rc == 0)
		rc = gather(w, created, out, nout, why, whylen);
	for (int i = 0; i < ncpu; i++) {
		free(w[i].seqs);
		free(w[i].ticks);
	}
	free(w);
	return rc;
}

struct hop_arg {
	const int *cpus;
	int ncpu;
	unsigned visits;
	struct shared *sh;
	struct nc__sync_rec *r;
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
			if (nc__pin_self(h->cpus[idx]) != 0 || sched_getcpu() != h->cpus[idx]) {
				h->rc = NC_ESYS;
				nc__fmt(h->why, sizeof(h->why), "could not move to CPU %d", h->cpus[idx]);
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
			struct nc__sync_rec **out, size_t *nout, char *why, size_t whylen)
{
	struct hop_arg h;
	memset(&h, 0, sizeof(h));
	h.cpus = cpus;
	h.ncpu = ncpu;
	h.visits = visits;
	h.sh = sh;
	h.r = calloc((size_t)visits * (size_t)(ncpu + 1), sizeof(*h.r));
	if (!h.r) {
		nc__fmt(why, whylen, "out of memory");
		return NC_ESYS;
	}
	pthread_t th;
	if (nc__sync_fail_create_at == 0 || pthread_create(&th, NULL, hop_worker, &h) != 0) {
		free(h.r);
		nc__fmt(why, whylen, "could not create the switching thread");
		return NC_ESYS;
	}
	pthread_join(th, NULL);
	if (h.rc != 0) {
		free(h.r);
		nc__copy(why, whylen, h.why);
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

/* Phase 1: options with defaults filled in; NC_EINVAL if unusable. */
static int resolve_options(const struct nc_sync_options *opt, struct nc_sync_options *o)
{
	struct nc_sync_options d;
	nc_sync_default_options(&d);
	*o = d;
	if (opt) {
		*o = *opt;
		if (o->probes == 0)
			o->probes = o->method == NC_SYNC_SWITCH ? 200 : 0;
		if (o->rounds == 0)
			o->rounds = d.rounds;
		if (o->min_enclosed == 0)
			o->min_enclosed = o->method == NC_SYNC_SWITCH ? 20 : d.min_enclosed;
		if (!(o->time_limit_ms > 0))
			o->time_limit_ms = d.time_limit_ms;
	}
	if ((o->method != NC_SYNC_COP && o->method != NC_SYNC_SWITCH) || o->probes > 100000000u ||
	    o->rounds > 1000 || !(o->time_limit_ms <= 3600e3) || !(o->hz >= 0) || !(o->hz < 1e12))
		return NC_EINVAL;
	return 0;
}

/* Phase 2: the CPUs of the calling thread's affinity mask. */
static int cpu_list(int *cpus, struct nc_sync_report *rep)
{
	cpu_set_t mask;
	if (pthread_getaffinity_np(pthread_self(), sizeof(mask), &mask) != 0) {
		nc__fmt(rep->evidence, sizeof(rep->evidence), "cannot read the thread's affinity");
		return -1;
	}
	int ncpu = 0;
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
	return ncpu;
}

/* Phase 3: the requested rounds, then more (up to 4x) while the evidence
 * is short: a thread descheduled for a few ms leaves a round with few
 * interleavings, which a later round usually makes up.  Returns 0 or
 * NC_ESYS (evidence says why). */
static int run_rounds(const struct nc_sync_options *o, const int *cpus, int ncpu,
		      struct shared *sh, struct nc__sync_acc *a, struct nc_sync_report *rep)
{
	for (unsigned round = 0; round < 4 * o->rounds; round++) {
		if (round >= o->rounds && nc__sync_enough(a, o->min_enclosed))
			break;
		if (nc__mono_raw_ns() > sh->deadline_ns) {
			rep->timed_out = 1;
			break;
		}
		struct nc__sync_rec *r = NULL;
		size_t n = 0;
		char why[160] = "";
		int rc = o->method == NC_SYNC_COP
				 ? cop_round(cpus, ncpu, o->probes, sh, &r, &n, why, sizeof(why))
				 : switch_round(cpus, ncpu, o->probes, sh, &r, &n, why, sizeof(why));
		if (rc == 1) { /* timed out: not an error */
			rep->timed_out = 1;
			break;
		}
		if (rc != 0) {
			nc__copy(rep->evidence, sizeof(rep->evidence), why);
			return rc;
		}
		nc__sync_analyse_round(a, r, n);
		free(r);
		rep->rounds_done++;
	}
	return 0;
}

int nc_sync_check(const struct nc_sync_options *opt, struct nc_sync_report *rep)
{
	struct nc_sync_options o;
	if (!rep || resolve_options(opt, &o) != 0)
		return NC_EINVAL;
	memset(rep, 0, sizeof(*rep));
	rep->method = o.method;
	rep->bad_cpu = -1;
	rep->verdict = NC_SYNC_INCONCLUSIVE;
	nc__enter();
	nc__counter_complete(); /* the kernel's verdict is read after the start */
	nc__lock();
	rep->kernel_tsc_unstable = nc__counter_machine()->kv.tsc_unstable;
	rep->cpuid_invariant_tsc = nc__counter_machine()->kv.cpuid_invariant_tsc;
	nc__unlock();
	double hz = o.hz > 0 ? o.hz : nc_ticks_per_second();

	int cpus[NC_SYNC_MAX_CPUS];
	int ncpu = cpu_list(cpus, rep);
	if (ncpu < 0) {
		nc__leave(); /* every nc__enter has its nc__leave, failures too */
		return NC_ESYS;
	}
	/* auto: 20000 probes per CPU on small machines, fewer on wide ones so
	 * that the serialised probing stays near 40000 per round (each probe
	 * is a cache-line hand-off); never below 2000 per CPU */
	if (o.probes == 0 && o.method == NC_SYNC_COP)
		o.probes = ncpu <= 2 ? 20000 : 40000 / (unsigned)ncpu > 2000 ? 40000 / (unsigned)ncpu : 2000;

	struct shared *sh = aligned_alloc(64, (sizeof(struct shared) + 63) / 64 * 64);
	struct nc__sync_acc *a = malloc(sizeof(*a));
	if (!sh || !a) {
		free(sh);
		free(a);
		nc__fmt(rep->evidence, sizeof(rep->evidence), "out of memory");
		nc__leave();
		return NC_ESYS;
	}
	memset(sh, 0, sizeof(*sh));
	sh->read = o.read ? o.read : library_read;
	sh->ctx = o.read ? o.ctx : NULL;
	nc__sync_acc_init(a, cpus, ncpu);

	int64_t t0 = nc__mono_raw_ns();
	sh->deadline_ns = t0 + (int64_t)(o.time_limit_ms * 1e6);
	int rc = run_rounds(&o, cpus, ncpu, sh, a, rep);
	if (nc__mono_raw_ns() > sh->deadline_ns)
		rep->timed_out = 1;
	rep->elapsed_ms = (double)(nc__mono_raw_ns() - t0) / 1e6;
	nc__sync_report(a, o.min_enclosed, hz, rc == 0, rep);
	nc__lock();
	nc__log(rep->verdict == NC_SYNC_CONSISTENT ? NC_LOG_INFO : NC_LOG_WARN,
		"cross-CPU check over %d CPUs: %s, max shift %llu ticks (%.1f ns)%s%s", ncpu,
		nc_sync_verdict_name(rep->verdict), (unsigned long long)rep->max_shift_ticks,
		rep->max_shift_ns, rep->evidence[0] ? ": " : "", rep->evidence);
	nc__unlock();
	nc__leave();
	free(sh);
	free(a);
	return rc;
}
