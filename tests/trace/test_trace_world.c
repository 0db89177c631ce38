/* SPDX-License-Identifier: MIT */
/* Traces of a simulated world (tests/world.h): a 3 GHz counter and the
 * system clocks as exact functions of a true time the test moves, so every
 * event's true CLOCK_MONOTONIC_RAW and CLOCK_REALTIME are known.  The
 * decoded times must be within the anchors' half-brackets (+1 ns of
 * rounding), across NTP slewing, a step of the system clock, and gaps
 * longer than the compact field (2^32 ticks, 1.4 s here) with and without
 * periodic sync records.  One child process per case: the library
 * initialises once per process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "world.h"
#include "child.h"
#include "trace_util.h"

#include <math.h>

#define TWO32 (UINT64_C(1) << 32)
#define MAXEV 4096

struct truth {
	uint64_t t;
	int64_t mono, real;
	long double T;
};
static struct truth tr[MAXEV];
static int ntr;

static struct nc_trace *t;
static struct nc_trace_buf *b;
static char *path;

static void start(unsigned flags)
{
	world_install();
	CHECK(nc_init() == 0);
	CHECK(strcmp(nc_counter_name(), "world") == 0);
	path = tmp_path("world");
	t = open_small(path, 65536, 64, NC_TRACE_DROP, flags);
	CHECK(t != NULL);
	CHECK(nc_trace_thread_start(t, "world", &b) == 0);
}

/* One event at the world's present: its stamp and the true clocks there. */
static void event(void)
{
	CHECK(ntr < MAXEV);
	uint64_t tk = nc_ticks();
	struct truth *x = &tr[ntr];
	x->t = tk;
	x->T = w.T; /* the counter was read at this true time */
	x->mono = world_raw_now();
	x->real = (int64_t)world_real();
	nc_trace_event_at(b, tk, NC_TRACE_INSTANT, 1, (uint64_t)ntr);
	ntr++;
}

/* Reads the trace back; checks stamps exactly and times within the bound.
 * Events in [skip_from, skip_to) of true time may carry a clock step not
 * yet seen by a sync record: their Unix time is checked against both. */
/* The thread ended, the file closed and read back: its events (k). */
static long finish(struct nc_trace_reader **r, struct nc_trace_rec **ev)
{
	nc_trace_thread_end(b);
	CHECK(nc_trace_close(t) == 0);
	const char *paths[1] = {path};
	return read_merged(paths, 1, r, ev);
}

/* The reader closed and the file gone. */
static void done(struct nc_trace_reader *r, struct nc_trace_rec *ev)
{
	free(ev);
	nc_trace_read_close(r);
	unlink(path);
	free(path);
}

static void check(long double step_at, long double step_ns)
{
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = finish(r, &ev);
	CHECK(k == ntr);
	struct nc_trace_info in;
	nc_trace_read_info(r[0], &in);
	CHECK(in.anchors >= 1);
	/* where the step became visible: the first anchor after it */
	uint64_t seen_at = UINT64_MAX;
	if (step_ns != 0)
		for (size_t i = 0; i < r[0]->nan; i++)
			if (r[0]->an[i].mono > (int64_t)(step_at - w.raw_lost)) {
				seen_at = r[0]->an[i].t;
				break;
			}
	double bound = in.max_anchor_halfwidth_ns + 1, worst_m = 0, worst_u = 0;
	for (long i = 0; i < k; i++) {
		const struct truth *x = &tr[ev[i].arg];
		CHECK(ev[i].ticks == x->t);
		double em = fabs((double)(ev[i].mono_ns - x->mono));
		double eu = fabs((double)(ev[i].unix_ns - x->real));
		if (step_ns != 0 && x->T >= step_at && x->t < seen_at)
			eu = fmin(eu, fabs((double)(ev[i].unix_ns + (int64_t)step_ns - x->real)));
		worst_m = fmax(worst_m, em);
		worst_u = fmax(worst_u, eu);
		if (em > bound || eu > bound) {
			fprintf(stderr, "event %ld at %.0Lf ns: mono off %.1f ns, unix off %.1f ns, bound %.1f\n",
				i, x->T, em, eu, bound);
			_exit(1);
		}
	}
	fprintf(stderr, "      %ld events, %llu anchors ±%.0f ns: worst mono %.1f ns, unix %.1f ns\n", k,
		(unsigned long long)in.anchors, in.max_anchor_halfwidth_ns, worst_m, worst_u);
	done(r[0], ev);
}

/* 400 events over 0.4 s; NTP slews the system clock by +200 ppm halfway. */
static void child_slew(const char *arg)
{
	(void)arg;
	start(0);
	for (int i = 0; i < 400; i++) {
		if (i == 200)
			world_real_rate(1 + 200e-6);
		w.T += 1e6 + (i * 7919) % 10007; /* about 1 ms, irregular */
		event();
	}
	check(0, 0);
}

/* The system clock is stepped by +5 ms: events after the next sync record
 * carry it; those before carry the old offset (documented). */
static void child_step(const char *arg)
{
	(void)arg;
	start(0);
	long double at = 0;
	for (int i = 0; i < 300; i++) {
		if (i == 150) {
			at = w.T;
			world_real_step(5e6L);
		}
		w.T += 1e6;
		event();
	}
	check(at, 5e6L);
}

/* Gaps longer than the compact field: 2^32 + 5 ticks, exactly 2^32,
 * 2^32 - 1, three times 2^32, each preceded and followed by closer events.
 * arg "periodic": sync records every 10 ms too (so one lies between);
 * "wrap-only": only where the field could wrap. */
static void child_gaps(const char *arg)
{
	int periodic = strcmp(arg, "periodic") == 0;
	start(periodic ? 0 : NC_TRACE_NO_PERIODIC);
	const uint64_t gaps[] = {TWO32 + 5, TWO32, TWO32 - 1, 3 * TWO32, 1000, TWO32 + 1};
	event();
	for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		/* the counter runs at 3 ticks per ns; a read costs 60 ticks */
		w.T += (long double)(gaps[g] - 60) / 3;
		event();
		w.T += 500;
		event();
	}
	struct nc_trace_counts c;
	nc_trace_get_counts(b, &c);
	CHECK(c.events == (uint64_t)ntr);
	check(0, 0);
}

/* A short trace while NTP slews the system clock +500 ppm from
 * MONOTONIC_RAW: the sync record written at the thread's end is kept as an
 * anchor though an earlier one shares its 10 ms window, so its events are
 * not extrapolated from that one at the counter's rate (before: 140 to
 * 990 ns off, against a bound of 31), and each window keeps its narrowest
 * (it kept its earliest). */
static void child_short_end(const char *arg)
{
	/* arg "N,GAP": N events GAP ns apart */
	int n = atoi(arg);
	double gap = atof(strchr(arg, ',') + 1);
	start(0);
	world_real_rate(1 + 500e-6);
	for (int i = 0; i < n; i++) {
		w.T += gap;
		event();
	}
	check(0, 0);
}

static int by_ticks(const void *p, const void *q)
{
	uint64_t x = ((const struct nc_trace_rec *)p)->ticks, y = ((const struct nc_trace_rec *)q)->ticks;
	return x < y ? -1 : x > y;
}

/* The system clock slower (or faster) than MONOTONIC_RAW, NTP slewing it
 * -300 (+300) ppm: Unix time and CLOCK_MONOTONIC_RAW still never go back
 * as the counter goes forward, at the finest grain -- 100,000 events on
 * consecutive counter values (a third of a ns apart), between two anchors
 * 10 ms apart -- and their difference moves only as often as it changes by
 * a ns (a Perfetto export repeats its clock snapshot at each move). */
static void child_slow_unix(const char *arg)
{
	double ppm = atof(arg);
	start(0);
	world_real_rate(1 + ppm * 1e-6);
	for (int i = 0; i < 5; i++) {
		w.T += 1e6;
		event();
	}
	enum { BURST = 100000 };
	uint64_t tk0 = nc_ticks();
	for (uint64_t j = 0; j < BURST; j++)
		nc_trace_event_at(b, tk0 + 1000 + j, NC_TRACE_INSTANT, 2, j);
	for (int i = 0; i < 25; i++) {
		w.T += 1e6;
		event();
	}
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = finish(r, &ev);
	CHECK(k == ntr + BURST);
	qsort(ev, (size_t)k, sizeof(*ev), by_ticks);
	long back_u = 0, back_m = 0, moves = 0;
	int64_t off_first = 0, off_last = 0;
	for (long i = 1; i < k; i++) {
		if (ev[i].ticks == ev[i - 1].ticks)
			continue;
		if (ev[i].id == 2) { /* the burst */
			int64_t o = ev[i].unix_ns - ev[i].mono_ns, p = ev[i - 1].unix_ns - ev[i - 1].mono_ns;
			if (ev[i - 1].id == 2 && o != p)
				moves++;
			if (ev[i - 1].id != 2)
				off_first = o;
			off_last = o;
		}
		back_u += ev[i].unix_ns < ev[i - 1].unix_ns;
		back_m += ev[i].mono_ns < ev[i - 1].mono_ns;
		if (ev[i].unix_ns < ev[i - 1].unix_ns && back_u <= 3)
			fprintf(stderr, "event at tick %llu: Unix time %lld ns, 1 tick before %lld\n",
				(unsigned long long)ev[i].ticks, (long long)ev[i].unix_ns,
				(long long)ev[i - 1].unix_ns);
	}
	int64_t moved = off_last > off_first ? off_last - off_first : off_first - off_last;
	fprintf(stderr, "      %ld events a tick apart, REALTIME at %+.0f ppm: Unix time back %ld times, "
		"MONOTONIC_RAW %ld; their difference moved %ld times over %lld ns\n", k, ppm, back_u, back_m,
		moves, (long long)moved);
	CHECK(back_u == 0 && back_m == 0);
	CHECK(moves <= moved + 1);
	done(r[0], ev);
}

static const struct child_case cases[] = {
	{"slew", child_slew, NULL, "world", NULL},
	{"step", child_step, NULL, "world", NULL},
	{"gaps_periodic", child_gaps, "periodic", "world", NULL},
	{"gaps_wrap_only", child_gaps, "wrap-only", "world", NULL},
	{"short_end_3x2ms", child_short_end, "3,2e6", "world", NULL},
	{"short_end_5x1ms", child_short_end, "5,1e6", "world", NULL},
	{"short_end_15x1ms", child_short_end, "15,1e6", "world", NULL},
	{"slow_unix", child_slow_unix, "-300", "world", NULL},
	{"fast_unix", child_slow_unix, "300", "world", NULL},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv)
{
	return child_program("test_trace_world", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
