/* SPDX-License-Identifier: MIT */
/*
 * Telling the application what the library decided, without printing:
 * nc_set_log() installs the application's function; by default nothing is
 * reported anywhere.  NANOCLOCK_LOG=stderr[:LEVEL] lets a user see the
 * reports of any program without recompiling — the one place the library
 * writes to a file descriptor, and only when asked.
 *
 * Reports are made where decisions are taken, often with the library's
 * lock held or inside the one-time initialisation; calling the
 * application there would deadlock a function that calls back into the
 * library.  So a report is queued (under nc__mu) and delivered after the
 * lock is released (nc__unlock) or the initialisation has finished
 * (nc__ensure_init), in order, by whichever thread gets there first.
 */
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QLEN 32
#define MSGLEN 224

static nc_log_fn log_fn;
static void *log_ctx;
static int log_level = -1; /* below every level: off */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* the queue, a ring: written and read with nc__mu held; `pending` lets
 * the unlocked paths see cheaply whether there is anything to deliver */
static struct nc__logmsg q[QLEN];
static int qhead, qn, pending;
static unsigned dropped;

static void to_stderr(void *ctx, int level, const char *msg)
{
	(void)ctx;
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char line[MSGLEN + 32];
	int n = snprintf(line, sizeof(line), "nanoclock: %s: %s\n",
			 level >= 0 && level <= 3 ? names[level] : "?", msg);
	if (n > 0) {
		ssize_t w = write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		(void)w; /* nowhere to report a failed report */
	}
}

/* NANOCLOCK_LOG=stderr, stderr:debug, stderr:3 ... read once. */
static void read_env(void)
{
	const char *v = getenv("NANOCLOCK_LOG");
	if (!v || strncmp(v, "stderr", 6) != 0 || log_fn)
		return;
	int level = NC_LOG_INFO;
	const char *l = v[6] == ':' ? v + 7 : "";
	static const char *const names[] = {"error", "warning", "info", "debug"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(l, names[i]) || (l[0] == '0' + i && !l[1]))
			level = i;
	log_fn = to_stderr;
	log_ctx = NULL;
	__atomic_store_n(&log_level, level, __ATOMIC_RELEASE);
}

int nc_set_log(nc_log_fn fn, void *ctx, int level)
{
	if (fn && (level < NC_LOG_ERROR || level > NC_LOG_DEBUG))
		return NC_EINVAL;
	pthread_once(&env_once, read_env);
	nc__lock();
	log_fn = fn;
	log_ctx = ctx;
	__atomic_store_n(&log_level, fn ? level : -1, __ATOMIC_RELEASE);
	nc__unlock();
	return 0;
}

int nc__log_wanted(int level)
{
	pthread_once(&env_once, read_env);
	return level <= __atomic_load_n(&log_level, __ATOMIC_ACQUIRE);
}

static void nc__logv_locked(int level, const char *fmt, va_list ap)
{
	if (!nc__log_wanted(level))
		return;
	if (qn == QLEN) {
		dropped++;
		return;
	}
	struct nc__logmsg *m = &q[(qhead + qn) % QLEN];
	m->level = level;
	vsnprintf(m->msg, sizeof(m->msg), fmt, ap);
	qn++;
	__atomic_store_n(&pending, 1, __ATOMIC_RELEASE);
}

void nc__log_locked(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	nc__logv_locked(level, fmt, ap);
	va_end(ap);
}

void nc__log(int level, const char *fmt, ...)
{
	if (!nc__log_wanted(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	nc__lock();
	nc__logv_locked(level, fmt, ap);
	va_end(ap);
	nc__unlock();
}

/* From anywhere, lock held or not (the debug checks): a report that
 * cannot take the lock is written only to NANOCLOCK_LOG's stderr. */
void nc__log_any(int level, const char *fmt, ...)
{
	if (!nc__log_wanted(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	if (nc__trylock()) {
		nc__logv_locked(level, fmt, ap);
		va_end(ap);
		nc__unlock();
		return;
	}
	if (log_fn == to_stderr) {
		char msg[MSGLEN];
		vsnprintf(msg, sizeof(msg), fmt, ap);
		to_stderr(NULL, level, msg);
	} else {
		dropped++; /* said at the next delivery */
	}
	va_end(ap);
}

/* nc__mu held: the oldest report and where it goes, or 0. */
int nc__log_pop(struct nc__logmsg *out, nc_log_fn *fn, void **ctx)
{
	if (dropped && qn < QLEN) { /* say so, in order */
		struct nc__logmsg *m = &q[(qhead + qn) % QLEN];
		m->level = NC_LOG_WARN;
		snprintf(m->msg, sizeof(m->msg), "%u reports dropped (more than %d at once)", dropped,
			 QLEN);
		qn++;
		dropped = 0;
	}
	if (qn == 0) {
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
		return 0;
	}
	*out = q[qhead];
	qhead = (qhead + 1) % QLEN;
	qn--;
	*fn = log_fn;
	*ctx = log_ctx;
	return 1;
}

int nc__log_pending(void) { return __atomic_load_n(&pending, __ATOMIC_ACQUIRE); }
