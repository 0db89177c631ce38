/* SPDX-License-Identifier: MIT */
/* The counter in use: chosen at initialisation among the candidates
 * (select.c), moved to the next best if its calibration fails, and changed
 * once at most afterwards — to CLOCK_MONOTONIC_RAW, if it stops.  This
 * file owns that state. */
#include "counter.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Written during initialisation (which holds nc__lib_lock) and at a
 * fall-back (nc__lib_lock held); `ctr` is also read without the lock, by
 * an acquire load, on the reading paths. */
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
} C;

void nc__counter_choose(const struct nc__registered *reg, const char *env_counter,
			const char *env_why)
{
	nc__machine_read(&C.m);
	nc__select(&C.m, reg, env_counter, C.cands, &C.ncand, &C.sel);
	if (env_why[0] && !C.sel.status) {
		/* an unusable NANOCLOCK_COUNTER value forces nothing, and says so */
		C.sel.status = NC_ENOCOUNTER;
		C.sel.forced_by = "NANOCLOCK_COUNTER";
		snprintf(C.sel.forced, sizeof(C.sel.forced), "(invalid)");
		snprintf(C.sel.error, sizeof(C.sel.error), "%.180s", env_why);
	}
	C.status = C.sel.status;
	C.resolution = C.cands[C.sel.index].resolution_ticks;
	__atomic_store_n(&C.ctr, C.sel.use, __ATOMIC_RELEASE);
}

int nc__counter_status(void) { return C.status; }

void nc__counter_next(const char *why)
{
	nc__select_next(C.cands, C.ncand, why, &C.sel);
	C.resolution = C.cands[C.sel.index].resolution_ticks;
	__atomic_store_n(&C.ctr, C.sel.use, __ATOMIC_RELEASE);
}

/* Appends to a NUL-terminated buffer, truncating. */
__attribute__((format(printf, 3, 4))) static void append(char *buf, size_t size, const char *fmt,
							 ...)
{
	size_t l = strlen(buf);
	if (l + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + l, size - l, fmt, ap);
	va_end(ap);
}

void nc__counter_settle(double rate_hz)
{
	const struct nc_candidate *c = &C.cands[C.sel.index];
	uint64_t kind = C.ctr->kind;
	if (kind == NC_IMPL_KIND_TSC && C.m.cpuid->rdtscp)
		kind = NC_IMPL_KIND_TSCP;
	__atomic_store_n(&C.kind, kind, __ATOMIC_RELEASE);
	C.inline_ok = nc_impl_hw(kind);
	if (C.sel.ext)
		nc__ext_set_hz(C.sel.ext, rate_hz);
	int forced = C.sel.forced[0] && strcmp(C.sel.forced, c->name) == 0;
	snprintf(C.policy, sizeof(C.policy), "%s selected: %s", c->name,
		 forced ? "forced" : "lowest resolution+cost+penalty among usable candidates");
	if (C.m.unreadable[0])
		append(C.policy, sizeof(C.policy),
		       "; %s: the kernel's view is unknown and the rates it states are absent, so the "
		       "rate is %s",
		       C.m.unreadable, C.ctr->fixed_hz > 0 ? "exact (an OS clock)" : "measured");
	if (strcmp(c->name, "tsc") == 0 && C.m.kv.tsc_unstable == 1)
		append(C.policy, sizeof(C.policy),
		       "; the kernel distrusts the TSC (%s) but its rate is invariant and "
		       "nanoclock's own checks pass (monotonic, advancing, consistent calibration); "
		       "cross-CPU agreement is not checked at init",
		       C.m.kv.tsc_unstable_why);
}

const struct nc__counter *nc__counter(void) { return __atomic_load_n(&C.ctr, __ATOMIC_ACQUIRE); }
/* kind is stored after ctr, with release: a reader that sees the new kind
 * sees the new counter */
uint64_t nc__counter_kind(void) { return __atomic_load_n(&C.kind, __ATOMIC_ACQUIRE); }
int nc__counter_inline(void) { return C.inline_ok; }
uint64_t nc__counter_resolution(void) { return C.resolution; }
const struct nc__machine *nc__counter_machine(void) { return &C.m; }
const char *nc__counter_policy(void) { return C.policy; }

uint64_t nc__counter_read(void)
{
	uint64_t k = nc__counter_kind();
	if (nc_impl_hw(k))
		return nc_impl_fenced(k);
	const struct nc__counter *c = nc__counter();
	return c->read_ordered(c->ctx);
}

uint64_t nc__counter_io_read(void *ctx)
{
	const struct nc__counter *c = ctx;
	return c ? c->read_ordered(c->ctx) : nc__counter_read();
}

void nc__counter_fall_back(void)
{
	__atomic_store_n(&C.ctr, &nc__counter_mono_raw, __ATOMIC_RELEASE);
	__atomic_store_n(&C.kind, NC_IMPL_KIND_CALL, __ATOMIC_RELEASE);
	C.inline_ok = 0;
}

void nc__counter_info(struct nc_info *o)
{
	o->counter = nc__counter()->name;
	o->resolution_ticks = C.resolution;
	snprintf(o->policy, sizeof(o->policy), "%s", C.policy);
	snprintf(o->counter_forced, sizeof(o->counter_forced), "%s", C.sel.forced);
	snprintf(o->counter_error, sizeof(o->counter_error), "%s", C.sel.error);
	o->n_candidates = C.ncand;
	memcpy(o->candidates, C.cands, sizeof(C.cands));
	o->kernel = C.m.kv;
}
