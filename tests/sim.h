/* SPDX-License-Identifier: MIT */
/* A simulated counter and reference clock for the calibration tests:
 * exact true time advanced by every call (a random call cost), a counter
 * of known rate, offset and granularity, and occasional preemption. */
#ifndef NC_TEST_SIM_H
#define NC_TEST_SIM_H

#include <math.h>
#include <stdint.h>

struct sim {
	long double t_ns;     /* true time */
	double hz;            /* counter rate */
	uint64_t offset;      /* counter value at t = 0 */
	unsigned gran;        /* counter advances in steps of gran ticks */
	double cost_min_ns, cost_max_ns; /* cost of one call, uniform */
	double preempt_p;     /* probability a call is preempted ... */
	double preempt_ns;    /* ... for this long */
	int frozen;           /* counter never moves */
	int backwards;        /* counter runs backwards */
	int ref_frozen;       /* reference never moves */
	/* slow wander of the reference reading (an emulated or virtual timer
	 * catching up): + wander_ns * sin(2 pi t / wander_period_ns + phase) */
	double wander_ns, wander_period_ns, wander_phase;
	/* code warming up: after each reference read, an extra delay that
	 * falls linearly from warm_ns (at the start) to 0 over warm_period_ns
	 * of true time, so brackets narrow and the reference's place in them
	 * drifts (a systematic bias of the slope: warm_ns / 2 / warm_period) */
	double warm_ns, warm_period_ns;
	long double warm_t0;
	/* episodes (an emulator on a busy machine): after each preemption the
	 * reference reads off by a new U(-episode_ns, episode_ns), decaying
	 * with time constant episode_tau_ns (caches and the emulator's code
	 * warming again) */
	double episode_ns, episode_tau_ns, episode_off;
	long double episode_t;
	/* time slices (many processes on few CPUs): after each slice_ns *
	 * U(0.5, 1.5) of running, the process is off its CPU for stall_ns *
	 * U(0.5, 1.5), and the reference reads off by a new offset of
	 * U(-stall_step_ns, stall_step_ns) (another CPU, caches cold) */
	double slice_ns, stall_ns, stall_step_ns, slice_left, stall_off;
	/* the reference's place in the bracket steps by place_step_ns at true
	 * time place_step_t (what runs beside the process changed) */
	double place_step_ns;
	long double place_step_t;
	uint64_t rng;
	long calls;
};

static inline double sim_uniform(struct sim *s)
{
	/* xorshift64*: deterministic per seed */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static inline void sim_advance(struct sim *s)
{
	s->calls++;
	double cost = s->cost_min_ns + (s->cost_max_ns - s->cost_min_ns) * sim_uniform(s);
	s->t_ns += cost;
	if (s->slice_ns > 0 && (s->slice_left -= cost) <= 0) {
		s->t_ns += s->stall_ns * (0.5 + sim_uniform(s));
		s->slice_left = s->slice_ns * (0.5 + sim_uniform(s));
		s->stall_off = s->stall_step_ns * (2 * sim_uniform(s) - 1);
	}
	if (s->preempt_p > 0 && sim_uniform(s) < s->preempt_p) {
		s->t_ns += s->preempt_ns * (0.5 + sim_uniform(s));
		if (s->episode_ns > 0) {
			s->episode_off = s->episode_ns * (2 * sim_uniform(s) - 1);
			s->episode_t = s->t_ns;
		}
	}
}

static inline uint64_t sim_ticks_at(const struct sim *s, long double t_ns)
{
	if (s->frozen)
		return s->offset;
	uint64_t v = (uint64_t)(t_ns * s->hz / 1e9L);
	v -= v % s->gran;
	return s->backwards ? s->offset - v : s->offset + v;
}

static inline uint64_t sim_read(void *ctx)
{
	struct sim *s = (struct sim *)ctx;
	sim_advance(s);
	return sim_ticks_at(s, s->t_ns);
}

static inline int64_t sim_ref(void *ctx)
{
	struct sim *s = (struct sim *)ctx;
	sim_advance(s);
	if (s->ref_frozen)
		return 1000;
	long double t = s->t_ns;
	if (s->wander_ns > 0)
		t += s->wander_ns * sin(6.283185307179586 * (double)(t / s->wander_period_ns) +
					s->wander_phase);
	if (s->episode_ns > 0)
		t += s->episode_off * exp(-(double)(s->t_ns - s->episode_t) / s->episode_tau_ns);
	t += s->stall_off;
	if (s->place_step_ns != 0 && s->t_ns >= s->place_step_t)
		t += s->place_step_ns;
	if (s->warm_ns > 0) {
		double age = (double)(s->t_ns - s->warm_t0);
		if (age < s->warm_period_ns)
			s->t_ns += s->warm_ns * (1 - age / s->warm_period_ns);
	}
	return (int64_t)floorl(t);
}

static inline void sim_default(struct sim *s, double hz, uint64_t seed)
{
	s->t_ns = 1e9L + (long double)(seed % 1000);
	s->hz = hz;
	s->offset = 123456789ull * (seed + 1);
	s->gran = 1;
	s->cost_min_ns = 8;
	s->cost_max_ns = 30;
	s->preempt_p = 0;
	s->preempt_ns = 0;
	s->frozen = s->backwards = s->ref_frozen = 0;
	s->wander_ns = s->wander_period_ns = s->wander_phase = 0;
	s->warm_ns = s->warm_period_ns = 0;
	s->warm_t0 = s->t_ns;
	s->episode_ns = s->episode_tau_ns = s->episode_off = 0;
	s->episode_t = s->t_ns;
	s->slice_ns = s->stall_ns = s->stall_step_ns = s->slice_left = s->stall_off = 0;
	s->place_step_ns = 0;
	s->place_step_t = 0;
	s->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	s->calls = 0;
}

#endif
