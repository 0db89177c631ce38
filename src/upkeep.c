/* SPDX-License-Identifier: MIT */
/*
 * The optional upkeep thread (nc_upkeep_start): it refreshes nc_now_ns's
 * and nc_unix_ns's epochs when they fall due, so readers rarely do, and
 * follows a step of the system clock as it happens.  On Linux a timerfd on
 * CLOCK_REALTIME armed with TFD_TIMER_CANCEL_ON_SET becomes readable, its
 * read failing with ECANCELED, whenever the clock is set (settimeofday,
 * clock_settime, an NTP step, a leap second, a resume): the thread then
 * re-ties Unix time at once.  It sleeps in poll() until the next epoch is
 * due or an eventfd asks it to stop; it never holds the library's lock
 * while it sleeps.
 *
 * fork(): the child has no upkeep thread.  It is restarted in the child
 * at the child's first refresh (nc__upkeep_after_fork_check), so a program
 * that forks keeps what it asked for without doing anything.
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static struct {
	int wanted;      /* nc_upkeep_start was called (and not stopped) */
	int forked;      /* this is a child forked while it ran: restart it */
	int running;     /* a thread runs in this process */
	pid_t pid;       /* ... the process it runs in */
	pthread_t th;
	int stop_fd;     /* eventfd: wakes the thread to stop */
	int tfd;         /* the thread's timerfd (-1: none, it refreshes on time only) */
} U = {.stop_fd = -1, .tfd = -1};
/* Both fds are created and closed under nc__mu, never by the thread: a
 * fork() (which holds nc__mu, init.c) sees them consistently, so a child
 * closes its copies of the parent's — the thread that used them did not
 * come along. */

static int arm_cancel_on_set(int tfd)
{
	/* an absolute expiry far away: the timer never fires, it only cancels */
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(((uint64_t)1 << 31) - 1);
	return timerfd_settime(tfd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL);
}

struct upkeep_fds {
	int stop_fd, tfd;
};
static struct upkeep_fds fds_arg; /* handed to the thread (under nc__mu) */

static void *upkeep_main(void *arg)
{
	const struct upkeep_fds *f = arg;
	int stop_fd = f->stop_fd, tfd = f->tfd;
	for (;;) {
		double due = nc__now_due_ns(), wd = nc__wall_due_ns();
		if (wd < due)
			due = wd;
		/* wake just after the due time, at least every second */
		int ms = due >= 1e9 ? 1000 : (int)(due / 1e6) + 1;
		struct pollfd pf[2] = {{stop_fd, POLLIN, 0}, {tfd, POLLIN, 0}};
		int n = poll(pf, tfd >= 0 ? 2 : 1, ms);
		if (n < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		if (tfd >= 0 && pf[1].revents) {
			uint64_t exp;
			if (read(tfd, &exp, sizeof(exp)) < 0 && errno == ECANCELED) {
				nc__wall_clock_was_set();
				arm_cancel_on_set(tfd);
			}
		}
		nc__lock();
		nc__observe(); /* the one place a stopped counter is seen unasked */
		nc__unlock();
		nc__now_upkeep();
		nc__wall_upkeep();
	}
	return NULL;
}

static void close_fds(void)
{
	if (U.stop_fd >= 0)
		close(U.stop_fd);
	if (U.tfd >= 0)
		close(U.tfd);
	U.stop_fd = U.tfd = -1;
}

/* nc__mu held */
static int start_locked(void)
{
	if (U.running && U.pid == getpid())
		return 0;
	close_fds();
	U.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (U.stop_fd < 0)
		return NC_ESYS;
	U.tfd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
	if (U.tfd >= 0 && arm_cancel_on_set(U.tfd) != 0) {
		close(U.tfd);
		U.tfd = -1; /* no clock-set events: refresh on time only */
	}
	fds_arg.stop_fd = U.stop_fd;
	fds_arg.tfd = U.tfd;
	/* the thread blocks no signal the application expects to see */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&U.th, NULL, upkeep_main, &fds_arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		close_fds();
		return NC_ESYS;
	}
	U.running = 1;
	U.pid = getpid();
	nc__log_locked(NC_LOG_INFO, "upkeep thread started%s", U.forked ? " again in a forked child" : "");
	return 0;
}

int nc_upkeep_start(void)
{
	nc__ensure_init();
	nc__lock();
	U.wanted = 1;
	int rc = start_locked();
	nc__unlock();
	return rc;
}

/* fds of stopped threads still being joined (under nc__mu): a fork()
 * meanwhile must close the child's copies too */
static int retired[8];
static int nretired;

static void retire(int fd)
{
	if (fd >= 0 && nretired < (int)(sizeof(retired) / sizeof(retired[0])))
		retired[nretired++] = fd;
}

static void unretire_close(int fd)
{
	if (fd < 0)
		return;
	for (int i = 0; i < nretired; i++)
		if (retired[i] == fd) {
			retired[i] = retired[--nretired];
			break;
		}
	close(fd);
}

int nc_upkeep_stop(void)
{
	nc__ensure_init();
	nc__lock();
	U.wanted = 0;
	int join = U.running && U.pid == getpid();
	pthread_t th = U.th;
	int stop_fd = U.stop_fd, tfd = U.tfd;
	if (join) {
		uint64_t one = 1;
		if (write(stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
			nc__unlock();
			return NC_ESYS; /* cannot happen to an eventfd of ours: it keeps running */
		}
		retire(stop_fd);
		retire(tfd);
	} else {
		close_fds(); /* none, or a forked child's that never restarted */
		stop_fd = tfd = -1;
	}
	U.stop_fd = U.tfd = -1;
	U.running = 0;
	nc__unlock();
	if (!join)
		return 0;
	pthread_join(th, NULL); /* outside the lock: the thread may want it */
	nc__lock();
	unretire_close(stop_fd);
	unretire_close(tfd);
	nc__unlock();
	return 0;
}

int nc__upkeep_running(void)
{
	return U.running && U.pid == getpid();
}

/* fork_child handler (init.c): the thread did not come along */
void nc__upkeep_forked(void)
{
	U.forked = U.wanted;
	U.running = 0;
	close_fds(); /* the parent's thread's: unusable here (close is async-signal-safe) */
	for (int i = 0; i < nretired; i++)
		close(retired[i]);
	nretired = 0;
}

/* In a forked child, start the thread again at the first look or refresh
 * (creating threads in the fork handler itself is not safe). */
void nc__upkeep_after_fork_check(void)
{
	if (U.forked) {
		start_locked(); /* also closes this process's copy of the parent's eventfd */
		U.forked = 0;
	}
}
