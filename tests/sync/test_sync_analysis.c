/* SPDX-License-Identifier: MIT */
/* The cross-CPU check's analysis (src/sync/analysis.c) on synthetic
 * readings, where the truth is known exactly: agreeing counters, one
 * reading out of order, a constant offset, a shift that moves, a frozen
 * counter, too little interleaving. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"

#include <string.h>

static const int cpus[2] = {0, 3};

/* n readings alternating base / CPU 3, each `step` ticks after the last
 * in true time; CPU 3's counter reads `shift(k)` ahead of the truth. */
static size_t make(struct nc__sync_rec *r, size_t n, uint64_t step, int64_t (*shift)(size_t k))
{
	uint64_t t = 1000000;
	for (size_t k = 0; k < n; k++) {
		t += step;
		r[k].idx = (uint32_t)(k & 1);
		r[k].t = r[k].idx ? (uint64_t)((int64_t)t + shift(k)) : t;
	}
	return n;
}

static int64_t none(size_t k) { return (void)k, 0; }
static int64_t ahead(size_t k) { return (void)k, 500; }
static int64_t moving(size_t k) { return k < 1000 ? 0 : 2500; }

static struct nc_sync_report rep;
static struct nc__sync_acc acc;
static struct nc__sync_rec rec[2000];

static void analyse(size_t n, unsigned min_enclosed)
{
	nc__sync_acc_init(&acc, cpus, 2);
	nc__sync_analyse_round(&acc, rec, n);
	memset(&rep, 0, sizeof(rep));
	rep.rounds_done = 1;
	nc__sync_report(&acc, min_enclosed, 1e9, 1, &rep);
}

static void test_agreeing(void **state)
{
	(void)state;
	analyse(make(rec, 2000, 100, none), 50);
	assert_int_equal(rep.verdict, NC_SYNC_CONSISTENT);
	assert_true(rep.monotonic && rep.same_pace && rep.advancing);
	/* interval [-100, 100] around the true 0: the bound is the two hand-offs */
	assert_int_equal(rep.cpu[1].shift_lo, -100);
	assert_int_equal(rep.cpu[1].shift_hi, 100);
	assert_int_equal(rep.max_shift_ticks, 200);
	assert_int_equal(rep.bad_cpu, -1);
	assert_string_equal(rep.evidence, "");
}

static void test_offset(void **state)
{
	(void)state;
	/* CPU 3 ahead by 500 ticks with hand-offs of 100: interval [400, 600]
	 * excludes 0, and the readings also go backwards */
	analyse(make(rec, 2000, 100, ahead), 50);
	assert_int_equal(rep.verdict, NC_SYNC_INCONSISTENT);
	assert_int_equal(rep.bad_cpu, 3);
	assert_false(rep.monotonic);
	assert_true(rep.cpu[1].shift_lo == 400 && rep.cpu[1].shift_hi == 600);
}

static void test_moving_shift(void **state)
{
	(void)state;
	/* the shift jumps from 0 to 2500 half way: the halves' intervals
	 * ([-1000, 1000] and [1500, 3500]) do not meet */
	analyse(make(rec, 2000, 1000, moving), 50);
	assert_int_equal(rep.verdict, NC_SYNC_INCONSISTENT);
	assert_false(rep.same_pace);
	assert_int_equal(rep.bad_cpu, 3);
}

static void test_frozen(void **state)
{
	(void)state;
	make(rec, 2000, 100, none);
	for (size_t k = 1; k < 2000; k += 2)
		rec[k].t = rec[1].t; /* CPU 3's counter never moves */
	analyse(2000, 50);
	assert_int_equal(rep.verdict, NC_SYNC_INCONSISTENT);
	assert_false(rep.advancing);
	assert_int_equal(rep.bad_cpu, 3);
}

static void test_too_little(void **state)
{
	(void)state;
	/* all of CPU 3's readings after all of the base's: nothing enclosed */
	uint64_t t = 1000;
	for (size_t k = 0; k < 200; k++) {
		rec[k].idx = k >= 100;
		rec[k].t = t += 10;
	}
	analyse(200, 50);
	assert_int_equal(rep.verdict, NC_SYNC_INCONCLUSIVE);
	assert_int_equal(rep.quality, 0);
	assert_false(rep.bounded);
	assert_non_null(strstr(rep.evidence, "too little evidence"));
}

/* One reading per CPU per round (nanoclock check --probes 1): whether a
 * counter advances cannot be seen, so it is not a failure: too little
 * evidence, inconclusive. */
static void test_one_reading_each(void **state)
{
	(void)state;
	nc__sync_acc_init(&acc, cpus, 2);
	for (int round = 0; round < 6; round++) {
		struct nc__sync_rec r[2] = {{0, 1000u + 100u * (unsigned)round},
					    {1, 1050u + 100u * (unsigned)round}};
		nc__sync_analyse_round(&acc, r, 2);
	}
	memset(&rep, 0, sizeof(rep));
	rep.rounds_done = 6;
	nc__sync_report(&acc, 50, 1e9, 1, &rep);
	assert_int_equal(rep.verdict, NC_SYNC_INCONCLUSIVE);
	assert_null(strstr(rep.evidence, "did not advance"));
	assert_non_null(strstr(rep.evidence, "too little evidence"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agreeing),     cmocka_unit_test(test_offset),
		cmocka_unit_test(test_moving_shift), cmocka_unit_test(test_frozen),
		cmocka_unit_test(test_too_little),   cmocka_unit_test(test_one_reading_each),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
