/* SPDX-License-Identifier: MIT */
/*
 * The optional upkeep thread (nc_upkeep_start): it refreshes the
 * registered timelines when they fall due, so readers rarely do, looks at
 * the counter (the one place a stopped counter is seen unasked), delivers
 * queued reports, and follows a step of the system clock as it happens.
 * On Linux a timerfd on CLOCK_REALTIME armed with TFD_TIMER_CANCEL_ON_SET
 * becomes readable, its read failing with ECANCELED, whenever the clock
 * is set (settimeofday, clock_settime, an NTP step, a leap second, a
 * resume): the thread then tells the timelines at once.  Without a timerfd
 * (seccomp, no descriptors left) it runs on time only, and says so.  It
 * sleeps in poll() until the next epoch is due or an eventfd asks it to
 * stop; it never holds the library's lock while it sleeps.
 *
 * Each thread gets its own descriptors, in its own argument: a start
 * racing a stop can never hand one thread another's.  Only the stop that
 * took a thread out of the state joins it and closes its descriptors.
 *
 * fork(): the child has no upkeep thread.  It is started again in the
 * child at its first call that is not a read (nc__upkeep_after_fork):
 * creating a thread is not async-signal-safe, and reads must be.
 */
#include "upkeep.h"
#include "base/fmt.h"
#include "../shared/shared.h"
#include "events.h"
#include "recent.h"
#include "timeline.h"
#include "wall.h"
#include "../base/lock.h"
#include "../base/log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct thread_arg {
	int stop_fd;     /* eventfd: wakes the thread to stop */
	int tfd;         /* timerfd (-1: none, it refreshes on time only) */
	int self_stopped; /* stopped from its own log delivery: it frees this and detaches */
};

/* Guarded by nc__lib_lock. */
static struct {
	int wanted;      /* nc_upkeep_start was called (and not stopped) */
	int forked;      /* this is a child forked while it ran: start it again */
	int running;     /* a thread runs in this process */
	pid_t pid;       /* ... the process it runs in */
	pthread_t th;
	struct thread_arg *arg; /* the running thread's descriptors */
	struct thread_arg *stale; /* a forked child's copy of the parent's, freed later */
	char note[128];  /* a degraded mode ("" when none) */
	/* descriptors of stopped threads still being joined: a fork() meanwhile
	 * must close the child's copies too */
	int retired[8];
	int nretired;
	int joining;     /* stops joining a thread right now: later stops wait for them */
} upkeep NC_GUARDED_BY(nc__lib_lock);

static int arm_cancel_on_set(int tfd)
{
	/* an absolute expiry far away: the timer never fires, it only cancels */
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(((uint64_t)1 << 31) - 1);
	return timerfd_settime(tfd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL);
}

static void close_arg(struct thread_arg *a)
{
	if (!a)
		return;
	if (a->stop_fd >= 0)
		close(a->stop_fd);
	if (a->tfd >= 0)
		close(a->tfd);
	free(a);
}

/* One pass: nc__lib_lock held. */
static void upkeep_pass(int clock_was_set) NC_REQUIRES(nc__lib_lock)
{
	NC_LOCK_HELD();
	if (clock_was_set)
		for (int i = 0; i < nc__timeline_count(); i++)
			if (nc__timeline_at(i)->system_clock)
				nc__timeline_at(i)->system_clock(1);
	nc__events_check();
	for (int i = 0; i < nc__timeline_count(); i++)
		nc__timeline_refresh_if_due(nc__timeline_at(i));
}

static double next_due_ns(void) NC_REQUIRES(nc__lib_lock)
{
	double due = 1e9;
	for (int i = 0; i < nc__timeline_count(); i++) {
		double d = nc__timeline_due_ns(nc__timeline_at(i));
		if (d < due)
			due = d;
	}
	return due;
}

/* The thread's own time, CLOCK_MONOTONIC: what ppoll sleeps on (never a
 * simulated reference clock: the thread sleeps in real time) */
static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *upkeep_main(void *p) NC_EXCLUDES(nc__lib_lock)
{
	struct thread_arg *a = p;
	int64_t tick_raw = 0; /* the coarse clock's next tick (recent.c), once asked for */
	for (;;) {
		nc__lock();
		double due = next_due_ns();
		nc__unlock();
		/* wake just after the due time, at least every second; and at the
		 * coarse clock's ticks */
		int64_t t0 = mono_ns(), wait = due >= 1e9 ? 1000000000 : (int64_t)due + 1000000;
		int64_t pass_raw = t0 + wait - 1000000;
		if (nc__recent_wanted()) {
			if (!tick_raw)
				tick_raw = t0;
			if (tick_raw - t0 < wait)
				wait = tick_raw > t0 ? tick_raw - t0 : 0;
		}
		struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
		struct pollfd pf[2] = {{a->stop_fd, POLLIN, 0}, {a->tfd, POLLIN, 0}};
		int n = ppoll(pf, a->tfd >= 0 ? 2 : 1, &ts, NULL);
		if (n < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		int64_t t1 = mono_ns();
		if (tick_raw && t1 >= tick_raw) {
			nc__recent_tick(tick_raw);
			int64_t period = nc__recent_period_ns();
			tick_raw += period;
			if (tick_raw <= t1) /* fallen behind (a busy machine): from now on */
				tick_raw = t1 + period;
		}
		if (n == 0 && t1 < pass_raw)
			continue; /* a tick only: the timelines are not due */
		int set = 0;
		if (a->tfd >= 0 && pf[1].revents) {
			uint64_t exp;
			if (read(a->tfd, &exp, sizeof(exp)) < 0 && errno == ECANCELED) {
				set = 1;
				arm_cancel_on_set(a->tfd);
			}
		}
		nc__lock();
		upkeep_pass(set);
		nc__unlock();
		nc__shared_flush();
		nc__log_deliver(); /* the application's function may stop this very thread */
	}
	nc__recent_stop();
	if (__atomic_load_n(&a->self_stopped, __ATOMIC_ACQUIRE)) {
		/* nobody joins a thread that stopped itself: it cleans up */
		pthread_detach(pthread_self());
		close_arg(a);
	}
	return NULL;
}

/* nc__lib_lock held */
static int start_locked(void) NC_REQUIRES(nc__lib_lock)
{
	if (upkeep.running && upkeep.pid == getpid())
		return 0;
	struct thread_arg *a = calloc(1, sizeof(*a));
	if (!a)
		return NC_ESYS;
	a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	a->tfd = -1;
	if (a->stop_fd < 0) {
		nc__fmt(upkeep.note, sizeof(upkeep.note), "not started: eventfd: %s", strerror(errno));
		close_arg(a);
		return NC_ESYS;
	}
	upkeep.note[0] = 0;
	a->tfd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
	if (a->tfd < 0)
		nc__fmt(upkeep.note, sizeof(upkeep.note),
			 "on time only, clock sets seen within a period: timerfd_create: %s",
			 strerror(errno));
	else if (arm_cancel_on_set(a->tfd) != 0) {
		nc__fmt(upkeep.note, sizeof(upkeep.note),
			 "on time only, clock sets seen within a period: timerfd_settime: %s",
			 strerror(errno));
		close(a->tfd);
		a->tfd = -1;
	}
	/* the thread takes none of the application's signals */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&upkeep.th, NULL, upkeep_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		nc__fmt(upkeep.note, sizeof(upkeep.note), "not started: pthread_create: %s", strerror(rc));
		close_arg(a);
		return NC_ESYS;
	}
	upkeep.arg = a;
	upkeep.running = 1;
	upkeep.pid = getpid();
	if (upkeep.note[0])
		nc__log(NC_LOG_WARN, "upkeep thread started, %s", upkeep.note);
	else
		nc__log(NC_LOG_INFO, "upkeep thread started%s", upkeep.forked ? " again in a forked child" : "");
	return 0;
}

int nc__upkeep_start(void)
{
	NC_LOCK_HELD();
	upkeep.wanted = 1;
	return start_locked();
}

static void retire(int fd) NC_REQUIRES(nc__lib_lock)
{
	if (fd >= 0 && upkeep.nretired < (int)(sizeof(upkeep.retired) / sizeof(upkeep.retired[0])))
		upkeep.retired[upkeep.nretired++] = fd;
}

static void unretire(int fd) NC_REQUIRES(nc__lib_lock)
{
	for (int i = 0; i < upkeep.nretired; i++)
		if (upkeep.retired[i] == fd) {
			upkeep.retired[i] = upkeep.retired[--upkeep.nretired];
			return;
		}
}

/* Called with nc__lib_lock held; returns with it held.  The join happens
 * unlocked: the thread may be waiting for the lock. */
int nc__upkeep_stop(void)
{
	NC_LOCK_HELD();
	upkeep.wanted = 0;
	if (!(upkeep.running && upkeep.pid == getpid())) {
		upkeep.running = 0;
		/* another stop is joining the thread: this one returns when it ended */
		while (upkeep.joining > 0) {
			nc__unlock();
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
			nc__lock();
		}
		return 0;
	}
	struct thread_arg *a = upkeep.arg;
	pthread_t th = upkeep.th;
	uint64_t one = 1;
	if (write(a->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		return NC_ESYS; /* cannot happen to an eventfd of ours: it keeps running */
	upkeep.running = 0;
	upkeep.arg = NULL;
	if (pthread_equal(pthread_self(), th)) {
		/* from the thread itself (the application's log function, which it
		 * delivers to): it ends when that returns, and cleans up after
		 * itself; a join here would wait for ever */
		__atomic_store_n(&a->self_stopped, 1, __ATOMIC_RELEASE);
		return 0;
	}
	retire(a->stop_fd);
	retire(a->tfd);
	upkeep.joining++;
	nc__unlock();
	pthread_join(th, NULL);
	nc__lock();
	upkeep.joining--;
	unretire(a->stop_fd);
	unretire(a->tfd);
	close_arg(a);
	return 0;
}

int nc__upkeep_running(void) { return upkeep.running && upkeep.pid == getpid(); }
const char *nc__upkeep_note(void) { return upkeep.note; }

/* (no NC_LOCK_HELD: the hold is the parent's thread's, taken before the
 * fork, and this process is not the one that took it) */
void nc__upkeep_forked(void)
{
	upkeep.forked = upkeep.wanted;
	upkeep.running = 0;
	nc__recent_stop(); /* no ticks here: full reads until it runs again */
	/* the parent's thread's descriptors: unusable here (close is async-signal-safe) */
	if (upkeep.arg) {
		if (upkeep.arg->stop_fd >= 0)
			close(upkeep.arg->stop_fd);
		if (upkeep.arg->tfd >= 0)
			close(upkeep.arg->tfd);
		upkeep.arg->stop_fd = upkeep.arg->tfd = -1;
		upkeep.stale = upkeep.arg; /* freed at the child's first call (free is not async-signal-safe) */
		upkeep.arg = NULL;
	}
	for (int i = 0; i < upkeep.nretired; i++)
		close(upkeep.retired[i]);
	upkeep.nretired = 0;
}

/* Unchecked by design: a flag every call tests before taking the lock
 * (atomic loads; nc__upkeep_after_fork looks again under it). */
NC_START int nc__upkeep_fork_pending(void) NC_NO_TSA
{
	return __atomic_load_n(&upkeep.forked, __ATOMIC_RELAXED) || __atomic_load_n(&upkeep.stale, __ATOMIC_RELAXED);
}

void nc__upkeep_after_fork(void)
{
	NC_LOCK_HELD();
	free(upkeep.stale);
	upkeep.stale = NULL;
	if (upkeep.forked) {
		upkeep.forked = 0;
		start_locked();
	}
}
