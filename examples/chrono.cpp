/* SPDX-License-Identifier: MIT */
// nanoclock from C++: std::chrono clocks over the C API (nanoclock.hpp,
// header-only, C++11 and later).
//
//   nanoclock::steady_clock  nc_now_ns: monotonic, nanoseconds
//   nanoclock::system_clock  nc_unix_ns: Unix time; to_sys() gives a
//                            std::chrono::system_clock time point
//   nanoclock::tick_clock    the raw counter: begin()/end() bracket a block,
//                            to_duration() converts its ticks
//
// Build: c++ -std=c++11 chrono.cpp $(pkg-config --cflags --libs nanoclock)
#include <nanoclock.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>

static volatile unsigned sink;

static void work()
{
	for (unsigned i = 0; i < 10000; i++)
		sink += i * i;
}

int main()
{
	using std::chrono::duration_cast;
	using std::chrono::microseconds;
	using std::chrono::nanoseconds;

	// a duration, as with std::chrono::steady_clock
	nanoclock::steady_clock::time_point t0 = nanoclock::steady_clock::now();
	work();
	nanoclock::steady_clock::time_point t1 = nanoclock::steady_clock::now();
	nanoseconds d = t1 - t0;
	std::printf("work() took %lld ns by nanoclock::steady_clock\n", (long long)d.count());

	// a short block in raw ticks, with ordered reads, converted exactly as
	// nc_ticks_to_ns does
	nanoclock::tick_clock::time_point b = nanoclock::tick_clock::begin();
	work();
	nanoclock::tick_clock::time_point e = nanoclock::tick_clock::end();
	nanoclock::ticks dt = e - b;
	std::printf("work() took %llu ticks = %lld ns = %lld us by nanoclock::tick_clock\n",
		    (unsigned long long)dt.count(), (long long)nanoclock::to_duration(dt).count(),
		    (long long)nanoclock::to_duration<microseconds>(dt).count());

	// Unix time, handed to code that wants std::chrono::system_clock
	nanoclock::system_clock::time_point now = nanoclock::system_clock::now();
	std::chrono::system_clock::time_point sys = nanoclock::system_clock::to_sys(now);
	std::time_t tt = std::chrono::system_clock::to_time_t(sys);
	char buf[64];
	std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
	long long diff = (long long)duration_cast<microseconds>(std::chrono::system_clock::now() - sys)
				 .count();
	std::printf("now %s; std::chrono::system_clock is %lld us later\n", buf, diff);

	// a steady time point on the system clock (through the current tie)
	std::chrono::system_clock::time_point s0 = nanoclock::steady_clock::to_system_time(t0);
	std::printf("work() started %lld us ago\n",
		    (long long)duration_cast<microseconds>(std::chrono::system_clock::now() - s0)
			    .count());
#if __cplusplus >= 202002L && defined(__cpp_lib_chrono) && __cpp_lib_chrono >= 201907L
	// C++20: clock_cast through to_sys/from_sys
	auto via_cast = std::chrono::clock_cast<std::chrono::system_clock>(now);
	std::printf("clock_cast agrees: %s\n", via_cast == sys ? "yes" : "no");
#endif
	// sanity for `make check`: the clocks moved forward, in step
	return d.count() > 0 && t1 >= t0 && dt.count() > 0 && diff > -1000000 && diff < 1000000 ? 0
												  : 1;
}
