/* SPDX-License-Identifier: MIT */
// The C++ side of the consumer: nanoclock.hpp's clocks, from an installed
// nanoclock (see consumer.c).
#include <nanoclock.hpp>

#include <chrono>
#include <cstdio>

int main()
{
	nanoclock::steady_clock::time_point a = nanoclock::steady_clock::now();
	nanoclock::tick_clock::time_point b = nanoclock::tick_clock::begin();
	nanoclock::system_clock::time_point s = nanoclock::system_clock::now();
	nanoclock::tick_clock::time_point e = nanoclock::tick_clock::end();
	nanoclock::steady_clock::time_point z = nanoclock::steady_clock::now();
	if (z < a || e < b || s.time_since_epoch().count() <= 0)
		return 1;
	std::printf("nanoclock %s ok (C++, %lld ns)\n", nc_version(),
		    static_cast<long long>(nanoclock::to_duration(e - b).count()));
	return 0;
}
