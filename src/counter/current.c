/* SPDX-License-Identifier: MIT */
/* The counter in use: chosen at initialisation among the candidates
 * (select.c), moved to the next best if its calibration fails, and changed
 * once at most afterwards — to CLOCK_MONOTONIC_RAW, if it stops.  This
 * file owns that state. */
#include "counter.h"
#include "base/fmt.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Written during initialisation (which holds nc__lib_lock) and at a
 * fall-back (nc__lib_lock held); `ctr` and `kind` are also read without
 * the lock, by acquire loads, on the reading paths. */
static struct {
	struct nc__machine m;
	struct nc_candidate cands[NC_MAX_CANDIDATES];
	int ncand;
	struct nc__selection sel;
	int status;                   /* 0, or NC_ENOCOUNTER: a forced counter was unusable */
	const struct nc__counter *ctr;
	uint64_t kind;                /* how the fast path reads it */
	int inline_ok;
	uint64_t resolution;          /* ticks */
	char policy[384];
	int stated_late;              /* the machine's stated rates: 1 owed, 2 handed over */
} current NC_GUARDED_BY(nc__lib_lock);

NC_START
void nc__counter_choose(const struct nc__registered *reg, const char *env_counter,
			const char *env_why, const char *prefer)
{
	NC_LOCK_HELD();
	nc__select(&current.m, reg, env_counter, prefer, current.cands, &current.ncand, &current.sel);
	if (env_why[0] && !current.sel.status) {
		/* an unusable NANOCLOCK_COUNTER value forces nothing, and says so */
		current.sel.status = NC_ENOCOUNTER;
		current.sel.forced_by = "NANOCLOCK_COUNTER";
		nc__fmt(current.sel.forced, sizeof(current.sel.forced), "(invalid)");
		nc__fmt(current.sel.error, sizeof(current.sel.error), "%.180s", env_why);
	}
	current.status = current.sel.status;
	current.resolution = current.cands[current.sel.index].resolution_ticks;
	__atomic_store_n(&current.ctr, current.sel.use, __ATOMIC_RELEASE);
}

NC_START int nc__counter_stated(struct nc_hz_source *out, int max)
{
	int n = nc__select_stated(current.sel.index, out, max);
	if (n >= 0)
		return n;
	/* not read by the evaluation (an OS clock has none): the counter's own */
	const struct nc__counter *c = current.sel.use;
	return c && c->stated ? c->stated(&current.m, out, max) : 0;
}

NC_START void nc__counter_machine_read(int full) { nc__machine_read(&current.m, full); }

/* the record's CPUID, when its facts are used (nc__lib_lock, as current) */
static struct nc__cpuid facts_cpuid NC_GUARDED_BY(nc__lib_lock);

NC_START void nc__counter_machine_from(const struct nc__machine_facts *f)
{
	memcpy(&current.m, &f->m, sizeof(current.m)); /* padding too: a record is written whole */
	facts_cpuid = f->cpuid;
	current.m.cpuid = &facts_cpuid;
	nc__machine_process(&current.m);
}

void nc__counter_machine_facts(struct nc__machine_facts *f)
{
	memset(f, 0, sizeof(*f));
	memcpy(&f->m, &current.m, sizeof(f->m));
	f->m.cpuid = NULL;
	if (current.m.cpuid)
		memcpy(&f->cpuid, current.m.cpuid, sizeof(f->cpuid));
}

NC_START int nc__counter_status(void) { return current.status; }

NC_START void nc__counter_next(const char *why)
{
	nc__select_next(current.cands, current.ncand, why, &current.sel);
	current.resolution = current.cands[current.sel.index].resolution_ticks;
	__atomic_store_n(&current.ctr, current.sel.use, __ATOMIC_RELEASE);
}

/* Appends to a NUL-terminated buffer, truncating.  A start runs it where
 * the kernel distrusts the TSC (kernel_notes): check-start-layout named it
 * on such a host. */
NC_START __attribute__((format(printf, 3, 4))) static void append(char *buf, size_t size, const char *fmt,
							 ...)
{
	size_t l = strlen(buf);
	if (l + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	nc__vfmt(buf + l, size - l, fmt, ap);
	va_end(ap);
}

/* What the kernel's facts add to the policy line and the candidates'
 * reasons (once they are read): about the choice made at the start, so the
 * selected candidate's counter, even after a fall-back. */
NC_START static void kernel_notes(void) NC_REQUIRES(nc__lib_lock)
{
	const struct nc_candidate *c = &current.cands[current.sel.index];
	if (current.m.unreadable[0])
		append(current.policy, sizeof(current.policy),
		       "; %s: the kernel's view is unknown and the rates it states are absent, so the "
		       "rate is %s",
		       current.m.unreadable,
		       current.sel.use->fixed_hz > 0 ? "exact (an OS clock)" : "measured");
	if (current.m.kv.tsc_unstable != 1)
		return;
	if (strcmp(c->name, "tsc") == 0)
		append(current.policy, sizeof(current.policy),
		       "; the kernel distrusts the TSC (%s) but its rate is invariant and "
		       "nanoclock's own checks pass (monotonic, advancing, consistent calibration); "
		       "cross-CPU agreement is not checked at init",
		       current.m.kv.tsc_unstable_why);
	for (int i = 0; i < current.ncand; i++) /* selected or not (another forced) */
		if (strcmp(current.cands[i].name, "tsc") == 0 &&
		    (current.cands[i].status == NC_CAND_SELECTED ||
		     current.cands[i].status == NC_CAND_USABLE))
			append(current.cands[i].reason, sizeof(current.cands[i].reason),
			       "; kernel distrusts it, our checks pass");
}

/* RDTSCP only where the kernel lists it too: an emulator's CPUID
 * (valgrind's) can claim it on a CPU without it, and it then faults.  So
 * it is decided once, at the start, from facts that carry the kernel's
 * flags (a shared record's, or the files read at the start); otherwise
 * nc_ticks_end ends with LFENCE;RDTSC;LFENCE for the process's life (the
 * fast path's lines carry the kind: a switch later would reach readers
 * only at their next epoch).  Either is ordered. */
NC_START static uint64_t read_kind(void) NC_REQUIRES(nc__lib_lock)
{
	uint64_t kind = current.ctr->kind;
	if (kind == NC_IMPL_KIND_TSC && current.m.kernel_read && current.m.cpuid->rdtscp &&
	    current.m.cpuinfo_rdtscp != 0)
		kind = NC_IMPL_KIND_TSCP;
	return kind;
}

NC_START void nc__counter_settle(double rate_hz)
{
	const struct nc_candidate *c = &current.cands[current.sel.index];
	__atomic_store_n(&current.kind, read_kind(), __ATOMIC_RELEASE);
	current.inline_ok = nc_impl_hw(current.ctr->kind);
	if (current.sel.ext)
		nc__ext_set_hz(current.sel.ext, rate_hz);
	int forced = current.sel.forced[0] && strcmp(current.sel.forced, c->name) == 0;
	nc__fmt(current.policy, sizeof(current.policy), "%s selected: %s", c->name,
		 forced ? "forced" : "lowest resolution+cost+penalty among usable candidates");
	if (current.m.kernel_read)
		kernel_notes();
	else if (current.ctr->stated && current.ctr->fixed_hz <= 0 &&
		 nc__select_stated_n(current.sel.index) <= 0)
		current.stated_late = 1; /* withheld until the facts are read (x86's) */
}

void nc__counter_complete(void)
{
	nc__lock();
	int done = current.m.kernel_read;
	nc__unlock();
	if (done)
		return;
	/* the files outside the lock (readers that find an epoch due are not
	 * held by them: /proc/cpuinfo may be a FUSE file, LXCFS's); the
	 * buffer off the stack (any call that is not a read comes here, on
	 * any thread's stack); two threads here both read, the first applies.
	 * Without the memory the facts stay unread: said as unknown. */
	struct nc__machine_files f;
	char *buf = malloc(NC_CPUINFO_BUF);
	if (!buf)
		return;
	nc__machine_files_read(&f, buf, NC_CPUINFO_BUF);
	free(buf);
	nc__lock();
	if (!current.m.kernel_read) {
		char before[sizeof(current.policy)];
		memcpy(before, current.policy, sizeof(before));
		nc__machine_complete(&current.m, &f);
		kernel_notes();
		if (strcmp(before, current.policy) != 0)
			nc__log(NC_LOG_INFO, "%s", current.policy); /* what the start's report lacked */
	}
	nc__unlock();
}

int nc__counter_stated_late(struct nc_hz_source *out, int max)
{
	const struct nc__counter *c = current.sel.use;
	if (current.stated_late != 1 || !current.m.kernel_read || nc__counter() != c || !c->stated)
		return 0;
	current.stated_late = 2;
	return c->stated(&current.m, out, max);
}

/* Unchecked by design, these two: every read asks them, from any context
 * (acquire loads).  kind is stored after ctr, with release: a reader that
 * sees the new kind sees the new counter */
NC_START const struct nc__counter *nc__counter(void) NC_NO_TSA
{
	return __atomic_load_n(&current.ctr, __ATOMIC_ACQUIRE);
}
NC_START
uint64_t nc__counter_kind(void) NC_NO_TSA { return __atomic_load_n(&current.kind, __ATOMIC_ACQUIRE); }
NC_START int nc__counter_inline(void) { return current.inline_ok; }
NC_START uint64_t nc__counter_resolution(void) { return current.resolution; }
/* Unchecked by design: its callers hold the lock, or read what the start
 * wrote (the part nc__counter_complete leaves alone). */
NC_START const struct nc__machine *nc__counter_machine(void) NC_NO_TSA { return &current.m; }
const char *nc__counter_policy(void) { return current.policy; }

NC_START uint64_t nc__counter_read(void)
{
	uint64_t k = nc__counter_kind();
	if (nc_impl_hw(k))
		return nc_impl_fenced(k);
	const struct nc__counter *c = nc__counter();
	return c->read_ordered(c->ctx);
}

NC_START uint64_t nc__counter_io_read(void *ctx)
{
	const struct nc__counter *c = ctx;
	return c ? c->read_ordered(c->ctx) : nc__counter_read();
}

void nc__counter_fall_back(void)
{
	NC_LOCK_HELD();
	__atomic_store_n(&current.ctr, &nc__counter_mono_raw, __ATOMIC_RELEASE);
	__atomic_store_n(&current.kind, NC_IMPL_KIND_CALL, __ATOMIC_RELEASE);
	current.inline_ok = 0;
}

void nc__counter_info(struct nc_info *o)
{
	NC_LOCK_HELD();
	o->counter = nc__counter()->name;
	o->resolution_ticks = current.resolution;
	nc__copy(o->policy, sizeof(o->policy), current.policy);
	nc__copy(o->counter_forced, sizeof(o->counter_forced), current.sel.forced);
	nc__copy(o->counter_error, sizeof(o->counter_error), current.sel.error);
	o->n_candidates = current.ncand;
	memcpy(o->candidates, current.cands, sizeof(current.cands));
	o->kernel = current.m.kv; /* the clocksource: nc_get_info reads it, outside the lock */
}
