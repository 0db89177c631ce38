/* SPDX-License-Identifier: MIT */
/* NC_INIT_AT_LOAD(): the library is initialised when the program loads,
 * before main: the settings that only the first use may make are already
 * closed (NC_EBUSY) when main runs, and the first read finds the rate
 * measured.  (A program without the macro: test_env's calib_good, where
 * the same calls succeed before nc_init.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nanoclock.h"
#include "nanoclock_info.h"

#include <string.h>

NC_INIT_AT_LOAD()

static uint64_t my_read(void *ctx)
{
	(void)ctx;
	return 0;
}

static void test_initialised_before_main(void **state)
{
	(void)state;
	/* before anything else of the library in main */
	assert_int_equal(nc_set_calibration_target(1, 20), NC_EBUSY);
	struct nc_counter_spec spec = {"late", my_read, NULL, 1e9, 64};
	assert_int_equal(nc_set_counter(&spec), NC_EBUSY);
	struct nc_info in;
	assert_int_equal(nc_get_info(&in), 0);
	assert_true(nc_ticks_per_second() > 0);
	assert_true(strcmp(nc_counter_name(), "late") != 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initialised_before_main),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
