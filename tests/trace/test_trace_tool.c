/* SPDX-License-Identifier: MIT */
/* `nanoclock trace` end to end, through the tool built beside this test
 * ($(B)/nanoclock): demo -> stats -> export, checked here field by field
 * (the event counts the demo guarantees, the merged order, valid JSON),
 * the example's trace converted, two files merged, and bad files and bad
 * usage answered with one line on stderr and a non-zero exit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "skip.h"

#include "trace_util.h"

#include <dirent.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* The tool's output code itself, built in (with a switch to take the paths
 * used without renameat2), for what a command line cannot time: something
 * appearing at the path while an export is written. */
#define NC_OUT_TEST 1
#include "../../tools/out_file.c"

/* the programs, each prefixed with the runner the tests run under
 * (NC_TEST_RUN: qemu-user for a cross build, from `make check`) */
static char tool[PATH_MAX + 256], example[PATH_MAX + 256];
static char out_path[256], err_path[256];

static int setup(void **state)
{
	(void)state;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	char *dir = dirname(self); /* $(B)/tests */
	const char *runner = getenv("NC_TEST_RUN");
	runner = runner ? runner : "";
	snprintf(tool, sizeof(tool), "%s/../nanoclock", dir);
	if (access(tool, X_OK) != 0)
		return -1;
	snprintf(tool, sizeof(tool), "%s%s%s/../nanoclock", runner, *runner ? " " : "", dir);
	snprintf(example, sizeof(example), "%s%s%s/../examples/trace_pc", runner, *runner ? " " : "",
		 dir);
	char *o = tmp_path("out"), *e = tmp_path("err");
	snprintf(out_path, sizeof(out_path), "%s", o);
	snprintf(err_path, sizeof(err_path), "%s", e);
	free(o);
	free(e);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(out_path);
	unlink(err_path);
	return 0;
}

/* Runs the command line (the tool's path first), stdout and stderr to
 * files; returns the exit status. */
static int run(const char *fmt, ...)
{
	char args[2048], cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s >%s 2>%s", args, out_path, err_path);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *contents(const char *path, size_t *len)
{
	size_t n;
	unsigned char *b = slurp(path, &n);
	assert_non_null(b);
	char *s = realloc(b, n + 1);
	s[n] = 0;
	if (len)
		*len = n;
	return s;
}

static long count_str(const char *s, const char *what)
{
	long n = 0;
	for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

/* "key": number in a JSON text */
static long long json_num(const char *s, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\": ", key);
	const char *p = strstr(s, k);
	if (!p)
		fail_msg("no %s in the output", key);
	return strtoll(p + strlen(k), NULL, 10);
}

/* ---- a small JSON checker: the whole text is one valid value ---- */
static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}
static const char *jvalue(const char *p, int depth);
static const char *jstring(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}
static const char *jnumber(const char *p)
{
	const char *s = p;
	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return NULL;
	while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
	       (*p == '-' && p > s))
		p++;
	return p;
}
static const char *jvalue(const char *p, int depth)
{
	if (depth > 64)
		return NULL;
	p = ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		int obj = *p == '{';
		p = ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = jstring(ws(p));
				if (!p)
					return NULL;
				p = ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = jvalue(p, depth + 1);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '"')
		return jstring(p);
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	return jnumber(p);
}
static void assert_json(const char *s)
{
	const char *e = jvalue(s, 0);
	if (!e || *ws(e))
		fail_msg("invalid JSON near byte %ld", e ? (long)(e - s) : -1L);
}

/* ---- CSV: file,thread,thread_name,seq,gseq,kind,id,name,arg,ticks,mono_ns,unix_ns,cpu_ns ---- */
struct row {
	unsigned file, thread;
	uint64_t seq, ticks;
	int64_t mono, unx;
	char kind[16];
};
static int split_row(char *line, struct row *r)
{
	char *f[17];
	int n = 0;
	char *p = line;
	while (n < 17) {
		f[n++] = p;
		if (*p == '"') { /* quoted: "" is a quote */
			p++;
			while (*p && !(*p == '"' && p[1] != '"'))
				p += *p == '"' ? 2 : 1;
			if (*p)
				p++;
		}
		char *c = strchr(p, ',');
		if (!c)
			break;
		*c = 0;
		p = c + 1;
	}
	if (n != 17)
		return -1;
	/* the UTC columns: an interval only with a known status; one
	 * machine's events are never concurrent */
	int known = !strcmp(f[15], "synchronised") || !strcmp(f[15], "free-running");
	if (!known && (strcmp(f[15], "unknown") && strcmp(f[15], "disrupted")))
		return -1;
	if (known != (f[13][0] != 0) || known != (f[14][0] != 0) || strcmp(f[16], "0"))
		return -1;
	r->file = (unsigned)strtoul(f[0], NULL, 10);
	r->thread = (unsigned)strtoul(f[1], NULL, 10);
	r->seq = strtoull(f[3], NULL, 10);
	snprintf(r->kind, sizeof(r->kind), "%s", f[5]);
	r->ticks = strtoull(f[9], NULL, 10);
	r->mono = strtoll(f[10], NULL, 10);
	r->unx = strtoll(f[11], NULL, 10);
	return 0;
}

/* Checks a CSV export: header, rows, merge order; returns the rows. */
static long check_csv(char *s, int by_unix, long *begins)
{
	char *save, *line = strtok_r(s, "\n", &save);
	assert_non_null(line);
	assert_string_equal(line, "file,thread,thread_name,seq,gseq,kind,id,name,arg,ticks,mono_ns,"
				  "unix_ns,cpu_ns,utc_earliest_ns,utc_latest_ns,utc_status,concurrent");
	long n = 0;
	struct row prev = {0}, r;
	uint64_t next_seq[64][64] = {{0}};
	*begins = 0;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		if (split_row(line, &r) != 0)
			fail_msg("bad CSV row %ld: %s", n + 1, line);
		assert_true(r.file < 64 && r.thread < 64);
		/* each thread's sequence is whole: the demo loses nothing */
		assert_int_equal(r.seq, next_seq[r.file][r.thread]);
		next_seq[r.file][r.thread]++;
		if (n > 0) {
			if (by_unix)
				assert_true(r.unx >= prev.unx);
			else
				assert_true(r.ticks >= prev.ticks && r.mono >= prev.mono);
		}
		*begins += !strcmp(r.kind, "begin");
		prev = r;
		n++;
	}
	return n;
}

static void test_demo_stats_export(void **state)
{
	(void)state;
	char *f = tmp_path("demo");
	const long threads = 2, items = 3000;
	assert_int_equal(run("%s trace demo %s --threads %ld --items %ld", tool, f, threads, items), 0);
	char *o = contents(out_path, NULL);
	assert_non_null(strstr(o, "wrote"));
	free(o);
	/* stats: every event the demo makes (producer 3 per item, consumer 2) */
	const long events = 5 * threads * items;
	assert_int_equal(run("%s trace stats %s --json", tool, f), 0);
	o = contents(out_path, NULL);
	assert_json(o);
	assert_int_equal(json_num(o, "events"), events);
	assert_int_equal(json_num(o, "threads"), 2 * threads);
	assert_int_equal(json_num(o, "dropped"), 0);
	assert_int_equal(json_num(o, "sequence_gaps"), 0);
	assert_non_null(strstr(o, "\"closed\": true"));
	assert_true(json_num(o, "span_ns") > 0);
	free(o);
	assert_int_equal(run("%s trace stats %s", tool, f), 0);
	o = contents(out_path, NULL);
	assert_non_null(strstr(o, "events       30000 in 4 threads"));
	free(o);
	/* CSV: every event once, in time order, each thread's sequence whole */
	assert_int_equal(run("%s trace export --format csv %s", tool, f), 0);
	o = contents(out_path, NULL);
	long begins;
	assert_int_equal(check_csv(o, 0, &begins), events);
	assert_int_equal(begins, 2 * threads * items);
	free(o);
	/* Chrome JSON, to a file: valid, with the demo's begin/end/counter events */
	char *j = tmp_path("json");
	assert_int_equal(run("%s trace export --format chrome -o %s %s", tool, j, f), 0);
	size_t n;
	o = contents(j, &n);
	assert_json(o);
	assert_int_equal(count_str(o, "\"ph\": \"B\""), 2 * threads * items);
	assert_int_equal(count_str(o, "\"ph\": \"E\""), 2 * threads * items);
	assert_int_equal(count_str(o, "\"ph\": \"C\""), threads * items);
	assert_int_equal(count_str(o, "\"name\": \"thread_name\""), 2 * threads);
	assert_non_null(strstr(o, "\"traceEvents\""));
	assert_non_null(strstr(o, "\"name\": \"produce\""));
	free(o);
	unlink(j);
	free(j);
	/* two files merge on Unix time */
	char *g = tmp_path("demo2");
	assert_int_equal(
		run("%s trace demo %s --threads 1 --items 500 --gseq --cputime --sync-check", tool, g), 0);
	assert_int_equal(run("%s trace stats %s --json", tool, g), 0);
	o = contents(out_path, NULL);
	assert_json(o);
	assert_non_null(strstr(o, "\"global_seq\": true"));
	assert_non_null(strstr(o, "\"cputime\": true"));
	assert_null(strstr(o, "\"cross_cpu\": \"not run\"")); /* the verdict is in the file */
	free(o);
	assert_int_equal(run("%s trace export --format csv %s %s", tool, f, g), 0);
	o = contents(out_path, NULL);
	assert_int_equal(check_csv(o, 1, &begins), events + 5 * 500);
	free(o);
	assert_int_equal(run("%s trace export --format chrome %s %s", tool, f, g), 0);
	o = contents(out_path, NULL);
	assert_json(o);
	assert_non_null(strstr(o, "\"timebase\": \"unix\""));
	free(o);
	unlink(g);
	free(g);
	unlink(f);
	free(f);
}

/* The example writes a trace the tool reads and converts. */
static void test_example(void **state)
{
	(void)state;
	char *f = tmp_path("pc");
	assert_int_equal(run("%s %s", example, f), 0);
	assert_int_equal(run("%s trace export --format csv %s", tool, f), 0);
	char *o = contents(out_path, NULL);
	long begins;
	long rows = check_csv(o, 0, &begins);
	assert_true(rows >= 2 * 2000 * 2 * 2); /* produce and consume pairs at least */
	free(o);
	assert_int_equal(run("%s trace export --format chrome %s", tool, f), 0);
	o = contents(out_path, NULL);
	assert_json(o);
	assert_non_null(strstr(o, "wait for an item") ? o : strstr(o, "consume"));
	free(o);
	unlink(f);
	free(f);
}

/* A bad file: exit status 1, one line on stderr naming the file, nothing
 * on stdout. */
static void expect_bad(const char *file, const char *word)
{
	const char *cmds[] = {"trace stats %s", "trace stats %s --json", "trace export --format csv %s",
			      "trace export --format chrome %s"};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char c[512];
		snprintf(c, sizeof(c), "%%s %s", cmds[i]);
		int st = run(c, tool, file);
		size_t on, en;
		char *o = contents(out_path, &on), *e = contents(err_path, &en);
		if (st != 1 || on != 0 || en == 0 || count_str(e, "\n") != 1 || !strstr(e, file) ||
		    !strstr(e, word))
			fail_msg("'%s' on %s: status %d, stdout %zu bytes, stderr: %s", cmds[i], file, st, on,
				 e);
		free(o);
		free(e);
	}
}

static void test_bad_files(void **state)
{
	(void)state;
	char *good = tmp_path("good"), *bad = tmp_path("bad");
	assert_int_equal(run("%s trace demo %s --threads 1 --items 200", tool, good), 0);
	size_t n;
	unsigned char *b = slurp(good, &n);
	assert_non_null(b);
	FILE *f;
	/* empty */
	f = fopen(bad, "wb");
	fclose(f);
	expect_bad(bad, "empty file");
	/* cut inside the clock-domain record: nothing to read */
	f = fopen(bad, "wb");
	fwrite(b, 1, NC__TR_FILE_HDR + 100, f);
	fclose(f);
	expect_bad(bad, "truncated");
	/* garbage */
	f = fopen(bad, "wb");
	for (int i = 0; i < 5000; i++)
		fputc((i * 131 + 7) & 0xff, f);
	fclose(f);
	expect_bad(bad, "not a nanoclock trace");
	/* corrupt: a block's record length made hostile */
	b[NC__TR_FILE_HDR + NC__TR_DOMAIN_BYTES + 4] = 3;
	f = fopen(bad, "wb");
	fwrite(b, 1, n, f);
	fclose(f);
	expect_bad(bad, "corrupt");
	/* missing, and a directory */
	expect_bad("/nonexistent/trace.nct", "cannot open");
	expect_bad("/tmp", "not a regular file");
	/* one bad file among good ones fails the whole export */
	assert_int_equal(run("%s trace export --format csv %s %s", tool, good, bad), 1);
	free(b);
	unlink(good);
	unlink(bad);
	free(good);
	free(bad);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NC_SANITIZED 1
#endif
#endif

static void expect_lines(const char *what, int st_want, int st, int lines, const char *word)
{
	size_t en;
	char *e = contents(err_path, &en);
	if (st != st_want || count_str(e, "\n") != lines || (word && !strstr(e, word)))
		fail_msg("%s: status %d (want %d), stderr: %s", what, st, st_want, e);
	free(e);
}

/* Hostile paths through the tool (each failed before: exit 0
 * on /dev/full, 100+ error lines from demo, a hang on a FIFO, a bare nan
 * in JSON, the link's target overwritten, a cut trace refused). */
static void test_hostile_paths(void **state)
{
	(void)state;
	char *good = tmp_path("good"), *w = tmp_path("w"), *w2 = tmp_path("w2");
	assert_int_equal(run("%s trace demo %s --threads 1 --items 300 --block-bytes 4096", tool, good), 0);
	/* write errors on standard output */
	const char *full[] = {"now", "now --json", "info", "check --probes 200 --rounds 1",
			      "trace stats %s", "trace export --format csv %s", "trace --help"};
	for (size_t i = 0; i < sizeof(full) / sizeof(full[0]); i++) {
		char c[256];
		snprintf(c, sizeof(c), "(%%s %s > /dev/full)", full[i]);
		char cmd[512];
		snprintf(cmd, sizeof(cmd), c, tool, good);
		int st = run("%s", cmd);
		expect_lines(cmd, 1, st, 1, "write error");
	}
	int st = run("(%s trace demo %s --threads 1 --items 10 > /dev/full)", tool, w);
	expect_lines("trace demo > /dev/full", 1, st, 1, "write error");
#ifndef NC_SANITIZED
	/* threads that cannot start (address space for ~8 of 128 stacks): one
	 * line, exit 1, no hang; not under an emulator, which needs the
	 * address space itself (qemu-user: "mmap stack: Cannot allocate memory") */
	const char *emu = getenv("NC_TEST_RUN");
	/* nor under valgrind, which follows the tool into the limit and
	 * sometimes cannot map itself there */
	if (!(emu && emu[0]) && !getenv("NC_TEST_VALGRIND")) {
		st = run("ulimit -v 200000; timeout 60 %s trace demo %s --threads 64 --items 100000",
			 tool, w);
		expect_lines("demo under ulimit -v", 1, st, 1, "cannot start thread");
	}
#endif
	/* a FIFO with no writer: refused at once */
	unlink(w);
	assert_int_equal(mkfifo(w, 0600), 0);
	st = run("timeout 20 %s trace stats %s", tool, w);
	expect_lines("stats FIFO", 1, st, 1, "not a regular file");
	st = run("timeout 20 %s trace export --format csv %s", tool, w);
	expect_lines("export FIFO", 1, st, 1, "not a regular file");
	/* and as an output with no reader, for demo and export */
	st = run("timeout 20 %s trace demo %s --items 10", tool, w);
	expect_lines("demo to a FIFO", 1, st, 1, "no reader");
	st = run("timeout 20 %s trace export --format csv -o %s %s", tool, w, good);
	expect_lines("export to a FIFO", 1, st, 1, "no reader");
	unlink(w);
	/* -o through a planted link: neither followed nor replaced */
	FILE *f = fopen(w2, "w");
	fputs("precious", f);
	fclose(f);
	assert_int_equal(symlink(w2, w), 0);
	st = run("%s trace export --format csv -o %s %s", tool, w, good);
	expect_lines("export through a link", 1, st, 1, "symbolic link");
	size_t n;
	char *t = contents(w2, &n);
	assert_string_equal(t, "precious");
	free(t);
	struct stat sb;
	assert_int_equal(lstat(w, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	unlink(w);
	assert_int_equal(symlink(w2, w), 0);
	st = run("%s trace demo %s --items 10", tool, w);
	expect_lines("demo through a link", 1, st, 1, "symbolic link");
	t = contents(w2, &n);
	assert_string_equal(t, "precious");
	free(t);
	unlink(w);
	/* a trace cut short: stats and export of its complete records, exit 5 */
	unsigned char *b = slurp(good, &n);
	f = fopen(w, "wb");
	fwrite(b, 1, n - 13, f);
	fclose(f);
	st = run("%s trace stats %s", tool, w);
	expect_lines("stats of a cut trace", 5, st, 1, "cut short at byte");
	st = run("%s trace export --format csv %s", tool, w);
	expect_lines("export of a cut trace", 5, st, 1, "cut short at byte");
	t = contents(out_path, NULL);
	assert_true(count_str(t, "\n") > 100);
	free(t);
	/* a hostile rate uncertainty: JSON keeps null, never a bare nan */
	memcpy(b + NC__TR_FILE_HDR + 8 + 40, "\0\0\0\0\0\0\xf8\xff", 8); /* NaN */
	f = fopen(w, "wb");
	fwrite(b, 1, n, f);
	fclose(f);
	assert_int_equal(run("%s trace stats --json %s", tool, w), 0);
	t = contents(out_path, NULL);
	assert_json(t);
	/* (as a value: a path may hold the letters, /dev/shm/nanoclock-0) */
	assert_null(strstr(t, ": nan"));
	assert_null(strstr(t, ": -nan"));
	assert_non_null(strstr(t, "\"hz_ppm\": null"));
	free(t);
	free(b);
	/* CTF into a directory that holds other files: refused, untouched */
	unlink(w);
	assert_int_equal(mkdir(w, 0700), 0);
	char other[300];
	snprintf(other, sizeof(other), "%s/notes.txt", w);
	f = fopen(other, "w");
	fclose(f);
	st = run("%s trace export --format ctf -o %s %s", tool, w, good);
	expect_lines("ctf into a foreign directory", 1, st, 1, "other files");
	assert_int_equal(access(other, F_OK), 0);
	unlink(other);
	/* an earlier export there is replaced */
	assert_int_equal(run("%s trace export --format ctf -o %s %s", tool, w, good), 0);
	assert_int_equal(run("%s trace export --format ctf -o %s %s", tool, w, good), 0);
	assert_int_equal(run("rm -r %s", w), 0);
	unlink(good);
	unlink(w2);
	free(good);
	free(w);
	free(w2);
}

/* ---- several machines' traces: the concurrency marks ---- */

/* A ClockBound segment (PROTOCOL.md, version 2, native byte order) stating
 * bound_ns, valid for an hour from now, as the UTC source of a demo. */
static void cb_segment(const char *path, int64_t bound_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* clockbound-d's clock */
	int64_t t[4] = {ts.tv_sec, ts.tv_nsec, ts.tv_sec + 3600, ts.tv_nsec};
	unsigned char p[80] = {0};
	uint32_t w[3] = {0x414d5a4eu, 0x43420200u, 80}; /* magic, size */
	uint16_t v[2] = {2, 2};                          /* version, generation */
	uint64_t marker = 0;
	uint32_t drift_ppb = 15000;
	int32_t status = 1; /* synchronised */
	memcpy(p, w, 12);
	memcpy(p + 12, v, 4);
	memcpy(p + 16, t, 32);
	memcpy(p + 48, &bound_ns, 8);
	memcpy(p + 56, &marker, 8);
	memcpy(p + 64, &drift_ppb, 4);
	memcpy(p + 68, &status, 4);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, sizeof(p), f), sizeof(p));
	assert_int_equal(fclose(f), 0);
}

/* The host name in a trace: the clock-domain record's payload at 176,
 * after the file header (24) and the record header (8). */
static void set_host(const char *path, const char *name)
{
	char host[64] = {0};
	snprintf(host, sizeof(host), "%s", name);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, host, sizeof(host), 24 + 8 + 176), (ssize_t)sizeof(host));
	close(fd);
}

/* Intervals of different widths on one machine: A's first file under a
 * 100 s bound, its second and B's file under 100 us, B recorded 50 ms after
 * A's second.  B's events overlap A's wide intervals only, which start
 * long before A's narrow ones: the interval of A that starts last before a
 * B event ends is narrow and over by then, so only a running maximum of
 * A's ends (tools/export.c) finds the overlap.  The CSV's marks are
 * compared with the rule computed here by brute force over its intervals:
 * an event is concurrent iff some event of the other machine has an
 * interval overlapping its own (both ends inclusive). */
static void test_export_concurrent_widths(void **state)
{
	(void)state;
	char *seg = tmp_path("cbseg"), *f[3];
	static const int64_t bound_ns[3] = {100000000000, 100000, 100000};
	static const int machine[3] = {0, 0, 1}; /* file -> machine */
	for (int i = 0; i < 3; i++) {
		f[i] = tmp_path("widths");
		if (i == 2)
			usleep(50000); /* B's intervals clear of A's narrow ones */
		cb_segment(seg, bound_ns[i]);
		assert_int_equal(run("NANOCLOCK_UTC_SOURCE=clockbound:%s %s trace demo %s --threads 1 "
				     "--items 100", seg, tool, f[i]), 0);
		set_host(f[i], machine[i] ? "machine-b" : "machine-a");
	}
	assert_int_equal(run("%s trace export --format csv %s %s %s", tool, f[0], f[1], f[2]), 0);
	char *o = contents(out_path, NULL);
	enum { MAX = 3 * 5 * 100 };
	static int64_t E[MAX], L[MAX];
	static int host[MAX], conc[MAX];
	int n = 0;
	char *save, *line = strtok_r(o, "\n", &save);
	assert_non_null(line);
	assert_non_null(strstr(line, ",utc_earliest_ns,utc_latest_ns,utc_status,concurrent"));
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		/* the file first, the UTC columns last (names may hold commas) */
		char *fl[32];
		int nf = 0;
		for (char *q = line, *s; nf < 32 && (s = strsep(&q, ",")); )
			fl[nf++] = s;
		if (nf < 17 || n == MAX || strcmp(fl[nf - 2], "synchronised"))
			fail_msg("CSV row %d: %d fields, status %s", n + 1, nf, nf ? fl[nf - 2] : "");
		unsigned file = (unsigned)strtoul(fl[0], NULL, 10);
		assert_true(file < 3);
		host[n] = machine[file];
		E[n] = strtoll(fl[nf - 4], NULL, 10);
		L[n] = strtoll(fl[nf - 3], NULL, 10);
		conc[n] = atoi(fl[nf - 1]);
		assert_true(E[n] <= L[n]);
		n++;
	}
	free(o);
	assert_int_equal(n, MAX);
	/* the rule, by brute force; and the events it marks only through an
	 * interval of the other machine that starts before the one starting
	 * last at or before the event's end (the case that needs the running
	 * maximum: the previous interval alone does not overlap) */
	int marked = 0, deep = 0, wrong = 0;
	for (int i = 0; i < n; i++) {
		int want = 0;
		int64_t last = INT64_MIN; /* the latest start of the other's, <= L[i] */
		for (int j = 0; j < n; j++) {
			if (host[j] == host[i])
				continue;
			want |= E[j] <= L[i] && E[i] <= L[j];
			if (E[j] <= L[i] && E[j] > last)
				last = E[j];
		}
		int prev_overlaps = 0;
		for (int j = 0; j < n; j++)
			prev_overlaps |= host[j] != host[i] && E[j] == last && L[j] >= E[i];
		marked += want;
		deep += want && !prev_overlaps;
		if (want != conc[i] && wrong++ < 5)
			print_message("  event %d (machine %d, [%lld, %lld]) marked %d, should be %d\n", i,
				      host[i], (long long)E[i], (long long)L[i], conc[i], want);
	}
	print_message("  %d events of two machines, %d concurrent, %d of them only through an "
		      "earlier wider interval; %d marked wrong\n", n, marked, deep, wrong);
	assert_int_equal(wrong, 0);
	assert_true(deep > 0 && marked < n);
	for (int i = 0; i < 3; i++) {
		unlink(f[i]);
		free(f[i]);
	}
	unlink(seg);
	free(seg);
}

/* ---- the output's last step (tools/out_file.c) ---- */
static int csv_ours(const unsigned char *h, size_t n)
{
	static const char head[] = "file,thread,";
	return n >= sizeof(head) - 1 && !memcmp(h, head, sizeof(head) - 1);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void assert_text(const char *path, const char *text)
{
	size_t n;
	char *t = contents(path, &n);
	assert_string_equal(t, text);
	free(t);
}

/* Nothing but the names given (or NULL) in dir: no temporary left behind */
static void assert_only(const char *dir, const char *a, const char *b)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && (!a || strcmp(e->d_name, a)) &&
		    (!b || strcmp(e->d_name, b)))
			fail_msg("%s/%s left behind", dir, e->d_name);
	closedir(d);
}

/* What appears at the path while the export is written is never replaced:
 * a file where there was nothing (RENAME_NOREPLACE, or link()), another
 * file put in place of the earlier export, the earlier export rewritten
 * by its user meanwhile (swapped out, found changed, swapped back); an
 * earlier export that appeared is replaced; each with renameat2 and
 * without it. */
static void test_output_races(void **state)
{
	(void)state;
	char dir[] = "/tmp/nc-test-races-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p[256], moved[512], why[512];
	snprintf(p, sizeof(p), "%s/out.csv", dir);
	snprintf(moved, sizeof(moved), "%s/moved", dir);
	for (int no2 = 0; no2 < 2; no2++) {
		tool_out_test_no_renameat2 = no2;
		struct tool_out o;
		/* nothing there at the open, a text file at the close */
		assert_int_equal(tool_out_open(&o, p, csv_ours, why, sizeof(why)), 0);
		fputs("file,thread,new\n", o.f);
		put(p, "notes\n");
		assert_int_equal(tool_out_close(&o, 1, why, sizeof(why)), -1);
		assert_non_null(strstr(why, "found there at the end; the export was not kept"));
		assert_text(p, "notes\n");
		assert_only(dir, "out.csv", NULL);
		/* nothing there, an earlier export at the close: replaced */
		unlink(p);
		assert_int_equal(tool_out_open(&o, p, csv_ours, why, sizeof(why)), 0);
		fputs("file,thread,new\n", o.f);
		put(p, "file,thread,old\n");
		assert_int_equal(tool_out_close(&o, 1, why, sizeof(why)), 0);
		assert_text(p, "file,thread,new\n");
		assert_only(dir, "out.csv", NULL);
		/* an earlier export at the open, moved away and a text file put
		 * there: both stay */
		assert_int_equal(tool_out_open(&o, p, csv_ours, why, sizeof(why)), 0);
		fputs("file,thread,newer\n", o.f);
		assert_int_equal(rename(p, moved), 0);
		put(p, "notes\n");
		assert_int_equal(tool_out_close(&o, 1, why, sizeof(why)), -1);
		assert_non_null(strstr(why, "not an earlier nanoclock export"));
		assert_text(p, "notes\n");
		assert_text(moved, "file,thread,new\n");
		assert_only(dir, "out.csv", "moved");
		unlink(moved);
		/* the earlier export rewritten in place by its user meanwhile */
		put(p, "file,thread,old\n");
		struct stat before, after;
		assert_int_equal(stat(p, &before), 0);
		assert_int_equal(tool_out_open(&o, p, csv_ours, why, sizeof(why)), 0);
		fputs("file,thread,new\n", o.f);
		put(p, "notes now\n");
		assert_int_equal(tool_out_close(&o, 1, why, sizeof(why)), -1);
		assert_text(p, "notes now\n");
		assert_int_equal(stat(p, &after), 0);
		assert_true(before.st_ino == after.st_ino);
		assert_only(dir, "out.csv", NULL);
		unlink(p);
		/* a write error: the reason said, nothing put there */
		assert_int_equal(tool_out_open(&o, p, csv_ours, why, sizeof(why)), 0);
		o.err = ENOSPC;
		assert_int_equal(tool_out_close(&o, 1, why, sizeof(why)), -1);
		assert_non_null(strstr(why, "No space left on device; nothing was put there"));
		assert_only(dir, NULL, NULL);
		/* a CTF directory: one that appeared with other files stays */
		assert_int_equal(tool_out_dir_open(&o, p, why, sizeof(why)), 0);
		assert_int_equal(mkdir(p, 0755), 0);
		snprintf(moved, sizeof(moved), "%s/notes", p);
		put(moved, "mine\n");
		assert_int_equal(tool_out_close(&o, 1, why, sizeof(why)), -1);
		assert_non_null(strstr(why, "found there at the end; the export was not kept"));
		assert_text(moved, "mine\n");
		assert_int_equal(unlink(moved), 0);
		/* and an empty one of this user's is replaced */
		assert_int_equal(tool_out_dir_open(&o, p, why, sizeof(why)), 0);
		assert_int_equal(tool_out_close(&o, 1, why, sizeof(why)), 0);
		assert_only(dir, "out.csv", NULL);
		assert_int_equal(rmdir(p), 0);
		snprintf(moved, sizeof(moved), "%s/moved", dir);
	}
	tool_out_test_no_renameat2 = 0;
	assert_int_equal(rmdir(dir), 0);
}

/* --help and -h: usage with every option on stdout, exit 0. */
/* `trace demo` where the threads cannot be made (clone denied by a seccomp
 * filter): exit 1 and a line that says what failed (it said only "system
 * call failed") */
static void test_demo_without_threads(void **state)
{
	(void)state;
	const char *emu = getenv("NC_TEST_RUN");
	if (emu && emu[0]) {
		SKIP("emulator", "an emulator's own threads need clone");
	}
	char *f = tmp_path("nothreads");
	unlink(f);
	char bin[PATH_MAX + 256];
	snprintf(bin, sizeof(bin), "%s", tool);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_TRUNC | O_CREAT, 0644);
		int e = open(err_path, O_WRONLY | O_TRUNC | O_CREAT, 0644);
		dup2(o, 1);
		dup2(e, 2);
		/* clone3 unknown (libc falls back to clone), clone denied */
		struct sock_filter filter[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef SYS_clone3
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#endif
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {(unsigned short)(sizeof(filter) / sizeof(filter[0])), filter};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(77);
		execl(bin, "nanoclock", "trace", "demo", f, (char *)NULL);
		_exit(78);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	char *err = contents(err_path, NULL);
	print_message("  clone denied: status %d, '%s'\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, err);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	assert_non_null(strstr(err, "flush thread could not start: Operation not permitted"));
	free(err);
	unlink(f);
	free(f);
}

static void test_help(void **state)
{
	(void)state;
	static const struct {
		const char *cmd;
		const char *opts[10];
	} h[] = {
		{"trace", {"stats", "export", "demo", "--format", "-o", "--json", "--threads", NULL}},
		{"trace stats", {"--json", "--help", NULL}},
		{"trace export", {"--format", "ctf", "perfetto", "chrome", "csv", "-o", "--help", NULL}},
		{"trace demo", {"--threads", "--items", "--block-bytes", "--blocks", "--overwrite", "--cputime",
				"--gseq", "--sync-check", "--help", NULL}},
	};
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		for (int k = 0; k < 2; k++) {
			assert_int_equal(run("%s %s %s", tool, h[i].cmd, k ? "-h" : "--help"), 0);
			char *o = contents(out_path, NULL);
			assert_non_null(strstr(o, "usage:"));
			for (int j = 0; h[i].opts[j]; j++)
				if (!strstr(o, h[i].opts[j]))
					fail_msg("%s --help does not list %s", h[i].cmd, h[i].opts[j]);
			free(o);
		}
}

static void test_usage(void **state)
{
	(void)state;
	assert_int_equal(run("%s trace", tool), 2);
	assert_int_equal(run("%s trace stats", tool), 2);
	assert_int_equal(run("%s trace export x.nct", tool), 2);
	assert_int_equal(run("%s trace export --format xml x.nct", tool), 2);
	assert_int_equal(run("%s trace demo", tool), 2);
	assert_int_equal(run("%s trace demo /tmp/x --threads 0", tool), 2);
	assert_int_equal(run("%s trace demo /tmp/x --block-bytes 1000", tool), 2);
	assert_int_equal(run("%s trace demo /nonexistent/x.nct", tool), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demo_stats_export),
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_export_concurrent_widths),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_hostile_paths),
		cmocka_unit_test(test_output_races),
		cmocka_unit_test(test_demo_without_threads),
		cmocka_unit_test(test_help),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
