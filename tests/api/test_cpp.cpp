/* SPDX-License-Identifier: MIT */
// nanoclock.hpp: the std::chrono clocks over the C API.  Built as C++11
// and C++20, with g++ and clang++ (see the Makefile).
#include <nanoclock.hpp>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <type_traits>

using namespace std::chrono;

// The Clock requirements, checked by the compiler.
static_assert(nanoclock::steady_clock::is_steady, "steady");
static_assert(!nanoclock::system_clock::is_steady, "system clock follows steps");
static_assert(std::is_same<nanoclock::steady_clock::duration, nanoseconds>::value, "ns");
static_assert(std::is_same<nanoclock::steady_clock::time_point,
			   time_point<nanoclock::steady_clock, nanoseconds>>::value,
	      "time_point");
static_assert(std::is_same<nanoclock::system_clock::rep, int64_t>::value, "signed Unix time");
// ticks are not a std::chrono duration: no duration_cast with a made-up rate
static_assert(!std::is_convertible<nanoclock::ticks, nanoseconds>::value, "ticks stay ticks");

static void test_steady(void **)
{
	auto a = nanoclock::steady_clock::now();
	auto b = nanoclock::steady_clock::now();
	assert_true(b >= a);
	// same origin as CLOCK_MONOTONIC_RAW: inside a bracket of it, give or
	// take 10 us (a preemption only widens the bracket)
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	int64_t before = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	int64_t now = nanoclock::steady_clock::now().time_since_epoch().count();
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	int64_t after = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	assert_true(now >= before - 10000 && now <= after + 10000);
	// to_system_time: the same instant as std::chrono::system_clock's
	// now, inside a bracket of it
	auto sys0 = std::chrono::system_clock::now();
	auto s = nanoclock::steady_clock::to_system_time(nanoclock::steady_clock::now());
	auto sys1 = std::chrono::system_clock::now();
	assert_true(s >= sys0 - microseconds(10) && s <= sys1 + microseconds(10));
}

static void test_system(void **)
{
	auto sys0 = std::chrono::system_clock::now();
	auto u = nanoclock::system_clock::now();
	auto sys1 = std::chrono::system_clock::now();
	// to_sys / from_sys: identity on the instant
	auto as_sys = nanoclock::system_clock::to_sys(u);
	assert_true(as_sys >= sys0 - microseconds(10) && as_sys <= sys1 + microseconds(10));
	auto back = nanoclock::system_clock::from_sys(as_sys);
	assert_true(back == u);
	assert_true(std::abs((long long)(nanoclock::system_clock::to_time_t(u) - std::time(nullptr))) <= 1);
#if defined(__cpp_lib_chrono) && __cpp_lib_chrono >= 201907L
	// C++20 clock_cast through to_sys/from_sys
	auto cc = clock_cast<std::chrono::system_clock>(u);
	assert_true(cc.time_since_epoch() == u.time_since_epoch());
	auto cb = clock_cast<nanoclock::system_clock>(cc);
	assert_true(cb == u);
#endif
}

static void test_ticks(void **)
{
	auto t0 = nanoclock::tick_clock::begin();
	auto t1 = nanoclock::tick_clock::end();
	assert_true(t0 <= t1);
	nanoclock::ticks d = t1 - t0;
	// exactly as the C conversion
	assert_true((uint64_t)nanoclock::to_duration(d).count() == nc_ticks_to_ns(d.count()));
	nanoclock::ticks big(123456789012ull);
	assert_true((uint64_t)nanoclock::to_duration(big).count() == nc_ticks_to_ns(123456789012ull));
	assert_true(nanoclock::to_duration<microseconds>(big).count() ==
		    (int64_t)(nc_ticks_to_ns(123456789012ull) / 1000));
	assert_true(nanoclock::to_ticks(milliseconds(250)).count() == nc_ns_to_ticks(250000000));
	assert_true(nanoclock::to_ticks(nanoseconds(-5)).count() == 0);
	// a stamp as Unix time, inside a bracket of nc_unix_ns
	auto u0 = nanoclock::system_clock::now();
	auto st = nanoclock::tick_clock::to_system(nanoclock::tick_clock::begin());
	auto u1 = nanoclock::system_clock::now();
	assert_true(st >= u0 - microseconds(10) && st <= u1 + microseconds(10));
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady),
		cmocka_unit_test(test_system),
		cmocka_unit_test(test_ticks),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
