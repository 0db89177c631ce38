/* SPDX-License-Identifier: MIT */
/*
 * nanoclock for C++ (C++11 and later): std::chrono clocks over the C API,
 * header-only.  Link with -lnanoclock as for C.
 *
 *   nanoclock::steady_clock   nc_now_ns: is_steady, nanoseconds, the origin and
 *                             rate of CLOCK_MONOTONIC_RAW
 *   nanoclock::system_clock   nc_unix_ns: nanoseconds since 1970-01-01 UTC, with
 *                             to_sys/from_sys (so C++20's std::chrono::clock_cast
 *                             works where the standard library has it)
 *   nanoclock::tick_clock     the raw counter: its duration counts ticks
 *
 * The counter's rate is known only at run time, so tick durations are a
 * type of their own (nanoclock::ticks), not a std::chrono::duration: a
 * duration_cast could only convert them with a made-up rate.  to_duration()
 * and to_ticks() convert exactly as nc_ticks_to_ns and nc_ns_to_ticks do.
 */
#ifndef NANOCLOCK_HPP
#define NANOCLOCK_HPP

#include <chrono>
#include <cstdint>

#include "nanoclock.h"

namespace nanoclock {

/* nc_now_ns as a std::chrono clock. */
struct steady_clock {
	typedef std::chrono::nanoseconds duration;
	typedef duration::rep rep;
	typedef duration::period period;
	typedef std::chrono::time_point<steady_clock> time_point;
	static constexpr bool is_steady = true;

	static time_point now() noexcept
	{
		return time_point(duration(static_cast<rep>(nc_now_ns())));
	}

	/* The same instant on the system clock, through the current tie
	 * between nc_now_ns and nc_unix_ns (the model's to_system_time). */
	static std::chrono::system_clock::time_point to_system_time(time_point t) noexcept
	{
		std::uint64_t a = nc_now_ns();
		std::int64_t u = nc_unix_ns();
		std::uint64_t b = nc_now_ns();
		std::int64_t mono_mid = static_cast<std::int64_t>(a + (b - a) / 2);
		std::int64_t unix_ns = u + (t.time_since_epoch().count() - mono_mid);
		return std::chrono::system_clock::time_point(
			std::chrono::duration_cast<std::chrono::system_clock::duration>(
				std::chrono::nanoseconds(unix_ns)));
	}
};

/* nc_unix_ns as a std::chrono clock (not steady: it follows steps of the
 * system clock). */
struct system_clock {
	typedef std::chrono::nanoseconds duration;
	typedef duration::rep rep;
	typedef duration::period period;
	typedef std::chrono::time_point<system_clock> time_point;
	static constexpr bool is_steady = false;

	static time_point now() noexcept { return time_point(duration(nc_unix_ns())); }

	/* Both clocks count from 1970-01-01 UTC: a conversion of types only. */
	template <class Duration>
	static std::chrono::time_point<std::chrono::system_clock, Duration>
	to_sys(const std::chrono::time_point<system_clock, Duration> &t) noexcept
	{
		return std::chrono::time_point<std::chrono::system_clock, Duration>(t.time_since_epoch());
	}
	template <class Duration>
	static std::chrono::time_point<system_clock, Duration>
	from_sys(const std::chrono::time_point<std::chrono::system_clock, Duration> &t) noexcept
	{
		return std::chrono::time_point<system_clock, Duration>(t.time_since_epoch());
	}
	static std::time_t to_time_t(const time_point &t) noexcept
	{
		return static_cast<std::time_t>(
			std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
	}
};

/* A count of counter ticks. */
class ticks {
public:
	typedef std::uint64_t rep;
	constexpr ticks() noexcept : n_(0) {}
	constexpr explicit ticks(rep n) noexcept : n_(n) {}
	constexpr rep count() const noexcept { return n_; }
	ticks &operator+=(ticks o) noexcept { n_ += o.n_; return *this; }
	ticks &operator-=(ticks o) noexcept { n_ -= o.n_; return *this; }
	friend constexpr ticks operator+(ticks a, ticks b) noexcept { return ticks(a.n_ + b.n_); }
	friend constexpr ticks operator-(ticks a, ticks b) noexcept { return ticks(a.n_ - b.n_); }
	friend constexpr bool operator==(ticks a, ticks b) noexcept { return a.n_ == b.n_; }
	friend constexpr bool operator!=(ticks a, ticks b) noexcept { return a.n_ != b.n_; }
	friend constexpr bool operator<(ticks a, ticks b) noexcept { return a.n_ < b.n_; }
	friend constexpr bool operator<=(ticks a, ticks b) noexcept { return a.n_ <= b.n_; }
	friend constexpr bool operator>(ticks a, ticks b) noexcept { return a.n_ > b.n_; }
	friend constexpr bool operator>=(ticks a, ticks b) noexcept { return a.n_ >= b.n_; }

private:
	rep n_;
};

/* The raw counter.  now() is nc_ticks (unordered); begin()/end() are the
 * ordered reads that bracket a measured block. */
struct tick_clock {
	typedef ticks duration;
	typedef ticks::rep rep;
	static constexpr bool is_steady = true;
	class time_point {
	public:
		constexpr time_point() noexcept : t_(0) {}
		constexpr explicit time_point(ticks t) noexcept : t_(t) {}
		constexpr ticks time_since_epoch() const noexcept { return t_; }
		friend constexpr ticks operator-(time_point a, time_point b) noexcept
		{
			return a.t_ - b.t_;
		}
		friend constexpr bool operator<(time_point a, time_point b) noexcept
		{
			return a.t_ < b.t_;
		}
		friend constexpr bool operator<=(time_point a, time_point b) noexcept
		{
			return a.t_ <= b.t_;
		}

	private:
		ticks t_;
	};
	static time_point now() noexcept { return time_point(ticks(nc_ticks())); }
	static time_point begin() noexcept { return time_point(ticks(nc_ticks_begin())); }
	static time_point end() noexcept { return time_point(ticks(nc_ticks_end())); }
	/* a stamp as Unix time (nc_ticks_to_unix_ns) */
	static system_clock::time_point to_system(time_point t) noexcept
	{
		return system_clock::time_point(
			std::chrono::nanoseconds(nc_ticks_to_unix_ns(t.time_since_epoch().count())));
	}
};

/* Ticks to a std::chrono duration, exactly as nc_ticks_to_ns converts,
 * then to the unit asked for (default: nanoseconds). */
template <class Duration = std::chrono::nanoseconds>
inline Duration to_duration(ticks d) noexcept
{
	return std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(
		static_cast<std::chrono::nanoseconds::rep>(nc_ticks_to_ns(d.count()))));
}

/* A std::chrono duration (non-negative) to ticks, as nc_ns_to_ticks. */
template <class Rep, class Period>
inline ticks to_ticks(const std::chrono::duration<Rep, Period> &d) noexcept
{
	std::chrono::nanoseconds ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d);
	return ticks(nc_ns_to_ticks(ns.count() > 0 ? static_cast<std::uint64_t>(ns.count()) : 0));
}

} /* namespace nanoclock */

#endif /* NANOCLOCK_HPP */
