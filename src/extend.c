/* Counters narrower than 64 bits (a 32-bit device clock, a 56-bit timer)
 * are extended to 64 bits here.
 *
 * Each read takes the raw value and CLOCK_MONOTONIC_RAW under a lock and
 * adds the step since the previous read to a 64-bit total.  The step is
 * the difference modulo 2^bits, plus whole wrap periods when the OS clock
 * says more than half a period passed (once the rate is known): so wraps
 * are counted even if nobody read the counter for hours.  A raw value just
 * below the previous one (a counter running backwards, or two CPUs
 * disagreeing) would look like an almost full wrap; when the OS clock
 * says that much time cannot have passed, the step is taken as zero and
 * counted as a backward step, which selection rejects.
 * The lock makes reads of narrow counters cost a mutex and a vDSO call:
 * they are a fallback for devices, not a fast path. */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t nc__ext_step(struct nc__ext *e, uint64_t raw, int64_t os_ns)
{
	raw &= e->mask;
	if (!e->started) {
		e->started = 1;
		e->last_raw = raw;
		e->ext = raw;
		e->last_os = os_ns;
		return e->ext;
	}
	double period = (double)e->mask + 1.0;
	uint64_t delta = (raw - e->last_raw) & e->mask;
	double expect = -1; /* ticks the OS clock says passed; < 0: rate unknown */
	if (e->hz > 0 && os_ns >= e->last_os)
		expect = (double)(os_ns - e->last_os) * e->hz / 1e9;
	if (expect >= period / 2) {
		/* long gap: whole periods from the OS clock, rest from the counter */
		double k = nearbyint((expect - (double)delta) / period);
		if (k > 0)
			delta += (uint64_t)k * (e->mask + 1);
	} else if ((double)delta > period / 2 &&
		   (expect < 0 || (double)delta > expect + period / 4)) {
		e->backsteps++;
		delta = 0;
		raw = e->last_raw; /* keep measuring from the highest value seen */
	}
	e->ext += delta;
	e->last_raw = raw;
	e->last_os = os_ns;
	return e->ext;
}

static uint64_t ext_read_with(struct nc__ext *e, uint64_t (*rd)(void *))
{
	pthread_mutex_lock(&mu);
	uint64_t raw = rd(e->raw->ctx);
	uint64_t v = nc__ext_step(e, raw, nc__mono_raw_ns());
	pthread_mutex_unlock(&mu);
	return v;
}

static uint64_t ext_read(void *ctx)
{
	struct nc__ext *e = ctx;
	return ext_read_with(e, e->raw->read);
}

static uint64_t ext_read_ordered(void *ctx)
{
	struct nc__ext *e = ctx;
	return ext_read_with(e, e->raw->read_ordered);
}

void nc__ext_init(struct nc__ext *e, const struct nc__counter *raw)
{
	memset(e, 0, sizeof(*e));
	e->raw = raw;
	e->mask = raw->bits >= 64 ? UINT64_MAX : (UINT64_C(1) << raw->bits) - 1;
	e->wrapped = *raw;
	e->wrapped.kind = NC__KIND_CALL;
	e->wrapped.read = ext_read;
	e->wrapped.read_ordered = ext_read_ordered;
	e->wrapped.ctx = e;
	e->wrapped.bits = 64;
}

void nc__ext_set_hz(struct nc__ext *e, double hz)
{
	pthread_mutex_lock(&mu);
	e->hz = hz;
	pthread_mutex_unlock(&mu);
}
