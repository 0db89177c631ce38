/* SPDX-License-Identifier: MIT */
/* The log hook (src/base/log.c): by default nothing is printed; an
 * application's function receives the decisions, outside the library's
 * locks (it may call back); NANOCLOCK_LOG=stderr prints them; in the debug
 * build (make MODE=debug) the internal checks report nothing on a healthy
 * run.  One process per case: initialisation happens once a process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile int reading; /* a read of the clock is under way on this thread */

struct seen {
	int n, errors, warnings, selected, rate, reentered;
	char last[224];
	int in_read; /* calls that came while a read was running */
};
static struct seen seen;

static void collect(void *ctx, int level, const char *msg)
{
	struct seen *s = ctx;
	s->n++;
	s->errors += level == NC_LOG_ERROR;
	s->warnings += level == NC_LOG_WARN;
	s->selected += strstr(msg, "selected") != NULL;
	s->rate += strstr(msg, "rate ") == msg;
	snprintf(s->last, sizeof(s->last), "%s", msg);
	s->in_read += reading;
	if (level == NC_LOG_ERROR)
		fprintf(stderr, "report: %s\n", msg);
	/* calling back into the library from the hook must not deadlock */
	s->reentered += nc_now_ns() > 0 && nc_ticks_per_second() > 0;
}

/* Runs fn with stderr going to a pipe; returns what was written. */
static void capture_stderr(void (*fn)(void), char *out, size_t len)
{
	int fd[2];
	CHECK(pipe(fd) == 0);
	int saved = dup(2);
	dup2(fd[1], 2);
	fn();
	dup2(saved, 2);
	close(saved);
	close(fd[1]);
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	ssize_t n = read(fd[0], out, len - 1);
	out[n > 0 ? n : 0] = 0;
	close(fd[0]);
}

static void use_everything(void)
{
	nc_init();
	for (int i = 0; i < 1000; i++)
		(void)(nc_now_ns() + (uint64_t)nc_unix_ns() + nc_ticks_to_ns(nc_ticks()));
	struct nc_info in;
	nc_get_info(&in);
	struct nc_unix_status st;
	nc_get_unix_status(&st);
	nc_unix_retie();
}

static void child_silent(const char *arg)
{
	(void)arg;
	char out[4096];
	capture_stderr(use_everything, out, sizeof(out));
	CHECK(out[0] == 0); /* nothing printed unless asked */
}

static void child_hook(const char *arg)
{
	(void)arg;
	CHECK(nc_set_log(collect, &seen, 7) == NC_EINVAL);
	CHECK(nc_set_log(collect, &seen, NC_LOG_DEBUG) == 0);
	use_everything();
	CHECK(seen.selected == 1 && seen.rate == 1);
	CHECK(seen.reentered == seen.n);
	CHECK(seen.errors == 0); /* in the debug build: every check held */
	CHECK(nc__debug_failures == 0);
	/* turned off: nothing more */
	CHECK(nc_set_log(NULL, NULL, 0) == 0);
	int before = seen.n;
	nc_unix_retie();
	(void)nc_now_ns();
	CHECK(seen.n == before);
}

static void child_warning(const char *arg)
{
	(void)arg;
	CHECK(nc_set_log(collect, &seen, NC_LOG_WARN) == 0);
	CHECK(nc_init() == NC_EOVERRIDE || nc_init() == 0); /* exact OS clocks ignore it */
	(void)nc_now_ns();
	struct nc_info in;
	nc_get_info(&in);
	if (in.hz_measured > 0)
		CHECK(seen.warnings >= 1 && strstr(seen.last, "NANOCLOCK_HZ"));
	CHECK(seen.selected == 0); /* INFO reports filtered out */
}

static void stderr_init(void) { use_everything(); }

/* Reads never call the application's function (they may run in a signal
 * handler): what a refresh made by a read reports waits for the next call
 * that is not a read. */
static void child_reads_never_deliver(const char *arg)
{
	(void)arg;
	CHECK(nc_set_log(collect, &seen, NC_LOG_DEBUG) == 0);
	nc_init();
	CHECK(nc_set_unix_refresh_ms(1) == 0);
	int before = seen.n;
	/* until a read's refresh has reported (the tie made at initialisation
	 * lasts its 1 s period; then every read below finds it overdue), at
	 * most 5 s: slow worlds (qemu-user) read slowly */
	for (int i = 0; i < 2500 && !nc__log_pending(); i++) {
		usleep(2000);
		reading = 1;
		(void)nc_unix_ns();
		(void)nc_now_ns();
		reading = 0;
	}
	CHECK(seen.in_read == 0);
	CHECK(seen.n == before); /* nothing delivered yet ... */
	CHECK(nc__log_pending());
	struct nc_unix_status st;
	nc_get_unix_status(&st); /* ... until a call that is not a read */
	CHECK(seen.n > before);
	CHECK(!nc__log_pending());
}

/* Capturing copies the arguments by their conversions; delivery formats
 * them: the text is what printf would have made. */
static void test_capture_format(void **state)
{
	(void)state;
	char out[224], want[224];
	char stack[16] = "on the stack";
	nc__log_format_test(out, sizeof(out), "%s %d %u %ld %lld %llu %zu %x %%", stack, -3, 4u, -5L,
			    -6LL, 7ULL, (size_t)8, 255u);
	snprintf(want, sizeof(want), "%s %d %u %ld %lld %llu %zu %x %%", stack, -3, 4u, -5L, -6LL,
		 7ULL, (size_t)8, 255u);
	assert_string_equal(out, want);
	nc__log_format_test(out, sizeof(out), "%.3f %+.1f %g %5.2e %c|%p", 3.14159, -2.25, 1e-9,
			    12345.678, 'z', (void *)out);
	snprintf(want, sizeof(want), "%.3f %+.1f %g %5.2e %c|%p", 3.14159, -2.25, 1e-9, 12345.678,
		 'z', (void *)out);
	assert_string_equal(out, want);
	stack[0] = 'X'; /* copied when captured, not referenced */
	nc__log_format_test(out, sizeof(out), "%.150s|%*d|%-6s|", "abc", 4, 7, "ab");
	assert_string_equal(out, "abc|   7|ab    |");
	nc__log_format_test(out, 8, "%s", "a long string cut to the buffer");
	assert_string_equal(out, "a long ");
	/* a negative precision through '*' is no precision, as printf's */
	nc__log_format_test(out, sizeof(out), "%.*f|%d", -1, 3.25, 7);
	snprintf(want, sizeof(want), "%.*f|%d", -1, 3.25, 7);
	assert_string_equal(out, want);
}

static void child_env_stderr(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_LOG", "stderr", 1);
	char out[8192];
	capture_stderr(stderr_init, out, sizeof(out));
	CHECK(strncmp(out, "nanoclock: info: ", 17) == 0);
	CHECK(strstr(out, "selected") && strstr(out, "initialised in"));
	CHECK(!strstr(out, "nanoclock: debug:")); /* info is the default level */
	CHECK(!strstr(out, "nanoclock: error:"));
}

/* NANOCLOCK_LOG's one rule, one fresh process per value: "stderr" logs at
 * info; "stderr:LEVEL" at that level (error, warning, info, debug or 0-3);
 * "stderr:" with anything else (a typo of a level) logs at info, its first
 * line a warning naming the value; a value that does not name stderr logs
 * nothing at all.  stderr:99, stderr:-1 and stderr:debug:junk logged at
 * info silently, and stderrx logged, where the README said nothing. */
struct log_rule {
	const char *value;
	int info, debug, warned; /* info lines?  debug lines?  the value named in a warning? */
};
static const struct log_rule log_rules[] = {
	{"stderr", 1, 0, 0},	      {"stderr:debug", 1, 1, 0},     {"stderr:3", 1, 1, 0},
	{"stderr:warning", 0, 0, 0},  {"stderr:1", 0, 0, 0},	     {"stderr:info", 1, 0, 0},
	{"stderr:99", 1, 0, 1},	      {"stderr:-1", 1, 0, 1},	     {"stderr:debug:junk", 1, 0, 1},
	{"stderr:", 1, 0, 1},	      {"stderrx", 0, 0, 0},	     {"STDERR", 0, 0, 0},
	{"", 0, 0, 0},		      {"1", 0, 0, 0},
};

static void child_env_values(const char *arg)
{
	(void)arg;
	for (size_t i = 0; i < sizeof(log_rules) / sizeof(log_rules[0]); i++) {
		const struct log_rule *r = &log_rules[i];
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("NANOCLOCK_LOG", r->value, 1);
			char out[8192];
			capture_stderr(stderr_init, out, sizeof(out));
			char named[64];
			snprintf(named, sizeof(named), "nanoclock: warning: NANOCLOCK_LOG=%s:", r->value);
			int info = strstr(out, "nanoclock: info: ") != NULL;
			int debug = strstr(out, "nanoclock: debug: ") != NULL;
			int warned = strncmp(out, named, strlen(named)) == 0;
			if (info != r->info || debug != r->debug || warned != r->warned) {
				fprintf(stderr, "case: NANOCLOCK_LOG='%s': info %d debug %d warned %d, want "
					"%d %d %d; printed:\n%.300s\n", r->value, info, debug, warned,
					r->info, r->debug, r->warned, out);
				_exit(1);
			}
			_exit(0);
		}
		int st = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

static const struct child_case cases[] = {
	{"silent_by_default", child_silent, NULL, NULL, NULL},
	{"hook", child_hook, NULL, NULL, NULL},
	{"warning_level", child_warning, NULL, NULL, "1k"},
	{"env_stderr", child_env_stderr, NULL, NULL, NULL},
	{"env_values", child_env_values, NULL, NULL, NULL},
	{"reads_never_deliver", child_reads_never_deliver, NULL, NULL, NULL},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv)
{
	const struct CMUnitTest plain[] = {cmocka_unit_test(test_capture_format)};
	return child_program("test_log", argc, argv, plain, (int)(sizeof(plain) / sizeof(plain[0])), cases,
			     NCASES, NULL, 0);
}
