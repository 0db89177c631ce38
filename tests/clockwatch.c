/* SPDX-License-Identifier: MIT */
/* The machine's clock as the test suite finds it, keeps it and leaves it.
 *
 *   clockwatch watch [--max-step-us N] -- CMD...
 *       runs CMD and, meanwhile, reads (never writes) CLOCK_REALTIME
 *       against CLOCK_MONOTONIC_RAW and the kernel's NTP state (adjtimex
 *       with no mode).  Fails (exit 1) when CLOCK_REALTIME moved by more
 *       than N us (100) against MONOTONIC_RAW between two looks beyond
 *       what the kernel's frequency explains, or when the NTP state
 *       (frequency, tick, status, time constant, PLL offset, estimated
 *       error, adjtime's offset) changed; otherwise CMD's exit status.
 *   clockwatch save FILE       the NTP state and REALTIME - MONOTONIC_RAW
 *   clockwatch restore FILE    puts them back (root): the NTP state as
 *       saved, and CLOCK_REALTIME stepped to where the saved offset and
 *       the saved frequency say it would be, when it is more than 20 us
 *       from there.  Exit 1 when something could not be put back.
 *   clockwatch disturb SECONDS [PERIOD_S]
 *       what a time daemon may do to the clock, every PERIOD_S (10): steps
 *       it +-0.5 s and sets the frequency +-300 ppm, alternately; restores
 *       both at the end (and on SIGINT/SIGTERM).  Only with
 *       NANOCLOCK_TEST_DESTRUCTIVE=1: it moves every process's clock.
 *
 * Each look brackets a REALTIME read between two MONOTONIC_RAW reads and
 * keeps the narrowest of a few tries, so that a preemption between two
 * reads (a busy machine) is not taken for a step: the bracket's width is
 * allowed for. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t ns(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* REALTIME - MONOTONIC_RAW and the half-width of its bracket, at RAW *at */
static int64_t offset(int64_t *halfwidth, int64_t *at)
{
	int64_t best = INT64_MAX, d = 0, mid = 0;
	for (int i = 0; i < 5; i++) {
		int64_t a = ns(CLOCK_MONOTONIC_RAW), r = ns(CLOCK_REALTIME), b = ns(CLOCK_MONOTONIC_RAW);
		if (b - a < best) {
			best = b - a;
			mid = a + (b - a) / 2;
			d = r - mid;
		}
	}
	*halfwidth = best / 2 + 1;
	*at = mid;
	return d;
}

struct ntp {
	long freq, tick, constant, offset, esterror, ss_offset;
	int status;
};

static int ntp_read(struct ntp *n)
{
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	if (adjtimex(&tx) < 0)
		return -1;
	struct timex ss;
	memset(&ss, 0, sizeof(ss));
	ss.modes = ADJ_OFFSET_SS_READ; /* adjtime()'s offset still to slew: a read */
	if (adjtimex(&ss) < 0)
		ss.offset = 0;
	n->freq = tx.freq;
	n->tick = tx.tick;
	n->constant = tx.constant;
	/* in microsecond mode unless STA_NANO: compare in ns */
	n->offset = (tx.status & STA_NANO) ? tx.offset : tx.offset * 1000;
	n->esterror = tx.esterror;
	n->status = tx.status;
	n->ss_offset = ss.offset;
	return 0;
}

static int ntp_diff(const struct ntp *a, const struct ntp *b, char *why, size_t len)
{
	if (a->freq != b->freq)
		return snprintf(why, len, "frequency %+.3f -> %+.3f ppm", a->freq / 65536.0,
				b->freq / 65536.0), 1;
	if (a->tick != b->tick)
		return snprintf(why, len, "tick %ld -> %ld us", a->tick, b->tick), 1;
	if (a->status != b->status)
		return snprintf(why, len, "status 0x%x -> 0x%x", a->status, b->status), 1;
	if (a->constant != b->constant)
		return snprintf(why, len, "time constant %ld -> %ld", a->constant, b->constant), 1;
	if (a->offset != b->offset)
		return snprintf(why, len, "PLL offset %ld -> %ld ns", a->offset, b->offset), 1;
	if (a->esterror != b->esterror)
		return snprintf(why, len, "estimated error %ld -> %ld us", a->esterror, b->esterror), 1;
	if (a->ss_offset != b->ss_offset)
		return snprintf(why, len, "adjtime offset %ld -> %ld us", a->ss_offset, b->ss_offset), 1;
	return 0;
}

static int watch(int argc, char **argv)
{
	double max_step_us = 100;
	int i = 0;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--max-step-us") == 0 && i + 1 < argc)
			max_step_us = atof(argv[++i]);
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: clockwatch watch [--max-step-us N] -- CMD...\n");
		return 2;
	}
	char **cmd = argv + i + 1;
	struct ntp n0, n;
	if (ntp_read(&n0) != 0) {
		perror("clockwatch: adjtimex");
		return 2;
	}
	int64_t hw0, at0, hw, at;
	int64_t d0 = offset(&hw0, &at0), first = d0, first_at = at0;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		execvp(cmd[0], cmd);
		_exit(127);
	}
	double worst = 0, worst_at = 0;
	long looks = 0, steps = 0;
	char why[160] = "";
	int changed = 0, st = 0;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		struct timespec p = {0, 5000000};
		int64_t d = offset(&hw, &at);
		looks++;
		/* what the kernel's frequency explains since the last look,
		 * and both brackets */
		double allowed = fabs((double)n0.freq / 65536e6) * (double)(at - at0) + (double)(hw + hw0);
		double moved = fabs((double)(d - d0)) - allowed;
		if (moved > worst) {
			worst = moved;
			worst_at = (double)(at - first_at) / 1e9;
		}
		if (moved > max_step_us * 1000) {
			steps++;
			fprintf(stderr, "clockwatch: CLOCK_REALTIME moved %+.1f us against MONOTONIC_RAW "
				"at %.3f s\n", (double)(d - d0) / 1e3, (double)(at - first_at) / 1e9);
		}
		d0 = d, hw0 = hw, at0 = at;
		if (!changed && ntp_read(&n) == 0 && ntp_diff(&n0, &n, why, sizeof(why))) {
			changed = 1;
			fprintf(stderr, "clockwatch: the kernel's NTP state changed at %.3f s: %s\n",
				(double)(at - first_at) / 1e9, why);
		}
		if (w == pid)
			break;
		nanosleep(&p, NULL);
	}
	double run_s = (double)(at - first_at) / 1e9;
	printf("clockwatch: %ld looks over %.1f s: largest move between two looks %.1f us (at %.1f s) "
	       "beyond the kernel's frequency; REALTIME - MONOTONIC_RAW %+.1f us in all; %ld steps over "
	       "%.0f us; NTP state %s\n", looks, run_s, worst > 0 ? worst / 1e3 : 0, worst_at,
	       (double)(d0 - first) / 1e3, steps, max_step_us, changed ? "CHANGED" : "unchanged");
	if (steps || changed)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- save and restore ---- */
struct saved {
	struct timex tx;
	int64_t d, at;
};

static int save(const char *path)
{
	struct saved s;
	memset(&s, 0, sizeof(s));
	if (adjtimex(&s.tx) < 0) {
		perror("clockwatch: adjtimex");
		return 1;
	}
	int64_t hw;
	s.d = offset(&hw, &s.at);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(&s, sizeof(s), 1, f) != 1 || fclose(f) != 0) {
		fprintf(stderr, "clockwatch: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("clockwatch: saved: frequency %+.3f ppm, tick %ld, status 0x%x, time constant %ld, "
	       "PLL offset %ld\n", s.tx.freq / 65536.0, s.tx.tick, s.tx.status, s.tx.constant,
	       s.tx.offset);
	return 0;
}

/* the kernel's rate correction, ppm: its frequency and its tick's */
static double rate_ppm(const struct timex *tx)
{
	long hz = sysconf(_SC_CLK_TCK), nominal = hz > 0 ? 1000000 / hz : 10000;
	return (double)tx->freq / 65536.0 + (double)(tx->tick - nominal) * 1e6 / (double)nominal;
}

/* status bits the kernel keeps itself (adjtimex cannot set them) */
#define RONLY (STA_PPSSIGNAL | STA_PPSJITTER | STA_PPSWANDER | STA_PPSERROR | STA_CLOCKERR | \
	       STA_NANO | STA_MODE | STA_CLK)

static int put_back(const struct saved *s)
{
	int bad = 0;
	struct timex tx;
	/* the time first: a set of the clock clears the kernel's NTP state
	 * (STA_UNSYNC, the errors at 16 s, the offsets), which is then put
	 * back.  Where it was going: the saved offset carried forward at the
	 * saved rate (frequency and tick) */
	int64_t hw, at, d = offset(&hw, &at);
	double elapsed = (double)(at - s->at);
	int64_t want = s->d + (int64_t)(rate_ppm(&s->tx) * 1e-6 * elapsed);
	if (llabs(d - want) > 20000) {
		int64_t r = ns(CLOCK_REALTIME) + (want - d);
		struct timespec ts = {(time_t)(r / 1000000000), (long)(r % 1000000000)};
		if (clock_settime(CLOCK_REALTIME, &ts) != 0) {
			fprintf(stderr, "clockwatch: clock_settime: %s\n", strerror(errno));
			bad = 1;
		} else {
			printf("clockwatch: CLOCK_REALTIME stepped %+.1f us back to where it was going\n",
			       (double)(want - d) / 1e3);
		}
	}
	/* end any PLL offset and adjtime() slew: left behind, the kernel goes
	 * on slewing them whatever else is set */
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_STATUS;
	tx.status = STA_PLL | STA_FREQHOLD;
	bad |= adjtimex(&tx) < 0;
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET;
	bad |= adjtimex(&tx) < 0;
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET_SINGLESHOT;
	bad |= adjtimex(&tx) < 0;
	memset(&tx, 0, sizeof(tx));
	/* the time constant in nanosecond mode: in microsecond mode the kernel
	 * adds 4 to what is set.  The maximum error as the kernel would have
	 * grown it meanwhile (500 us a second, to 16 s), never the stale one */
	tx.modes = ADJ_STATUS | ADJ_NANO | ADJ_MAXERROR | ADJ_ESTERROR | ADJ_TIMECONST |
		   ADJ_FREQUENCY | ADJ_TICK;
	tx.status = s->tx.status & ~RONLY;
	double maxerr = (double)s->tx.maxerror + 500.0 * elapsed / 1e9;
	tx.maxerror = maxerr < 16000000 ? (long)maxerr : 16000000;
	tx.esterror = s->tx.esterror;
	tx.constant = s->tx.constant;
	tx.freq = s->tx.freq;
	tx.tick = s->tx.tick;
	bad |= adjtimex(&tx) < 0;
	memset(&tx, 0, sizeof(tx));
	tx.modes = (s->tx.status & STA_NANO) ? ADJ_NANO : ADJ_MICRO;
	bad |= adjtimex(&tx) < 0;
	return bad;
}

static int restore(const char *path)
{
	struct saved s;
	FILE *f = fopen(path, "rb");
	if (!f || fread(&s, sizeof(s), 1, f) != 1) {
		fprintf(stderr, "clockwatch: cannot read %s\n", path);
		if (f)
			fclose(f);
		return 1;
	}
	fclose(f);
	if (put_back(&s) != 0) {
		fprintf(stderr, "clockwatch: the clock's state could not all be put back: %s\n",
			strerror(errno));
		return 1;
	}
	struct ntp want, got;
	if (ntp_read(&got) != 0)
		return 1;
	want.freq = s.tx.freq;
	want.tick = s.tx.tick;
	want.constant = s.tx.constant;
	want.offset = (s.tx.status & STA_NANO) ? s.tx.offset : s.tx.offset * 1000;
	want.esterror = s.tx.esterror;
	want.status = s.tx.status & ~RONLY;
	want.ss_offset = 0;
	got.status &= ~RONLY;
	got.offset = want.offset; /* a PLL offset is not put back: it was slewed in */
	char why[160];
	if (ntp_diff(&want, &got, why, sizeof(why))) {
		fprintf(stderr, "clockwatch: after the restore: %s\n", why);
		return 1;
	}
	printf("clockwatch: restored\n");
	return 0;
}

/* ---- a daemon's disturbances ---- */
static volatile sig_atomic_t stop;
static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int disturb(int argc, char **argv)
{
	const char *v = getenv("NANOCLOCK_TEST_DESTRUCTIVE");
	if (!v || strcmp(v, "1") != 0) {
		fprintf(stderr, "clockwatch disturb: refused: it steps and slews the machine's clock; "
			"set NANOCLOCK_TEST_DESTRUCTIVE=1\n");
		return 2;
	}
	if (argc < 1) {
		fprintf(stderr, "usage: clockwatch disturb SECONDS [PERIOD_S]\n");
		return 2;
	}
	double secs = atof(argv[0]), period = argc > 1 ? atof(argv[1]) : 10;
	/* gone with the process that started it (a script killed without its
	 * trap): SIGTERM, and the clock put back */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	struct saved s;
	memset(&s, 0, sizeof(s));
	if (adjtimex(&s.tx) < 0)
		return 1;
	int64_t hw;
	s.d = offset(&hw, &s.at);
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	signal(SIGHUP, on_stop);
	int64_t t0 = ns(CLOCK_MONOTONIC_RAW);
	long k = 0;
	while (!stop && (double)(ns(CLOCK_MONOTONIC_RAW) - t0) / 1e9 < secs) {
		struct timex tx;
		memset(&tx, 0, sizeof(tx));
		int64_t step = 0;
		switch (k++ % 4) {
		case 0: step = 500000000; break;
		case 1: tx.modes = ADJ_FREQUENCY; tx.freq = s.tx.freq + 300L * 65536; break;
		case 2: step = -500000000; break;
		case 3: tx.modes = ADJ_FREQUENCY; tx.freq = s.tx.freq - 300L * 65536; break;
		}
		if (step) {
			int64_t r = ns(CLOCK_REALTIME) + step;
			struct timespec ts = {(time_t)(r / 1000000000), (long)(r % 1000000000)};
			if (clock_settime(CLOCK_REALTIME, &ts) != 0)
				perror("clockwatch disturb: clock_settime");
		} else if (adjtimex(&tx) < 0) {
			perror("clockwatch disturb: adjtimex");
		}
		printf("clockwatch disturb: %s\n", step ? (step > 0 ? "stepped +0.5 s" : "stepped -0.5 s")
							: (tx.freq > s.tx.freq ? "frequency +300 ppm"
									      : "frequency -300 ppm"));
		fflush(stdout);
		struct timespec p = {(time_t)period, (long)((period - (double)(time_t)period) * 1e9)};
		while (nanosleep(&p, &p) != 0 && errno == EINTR && !stop)
			;
	}
	int rc = put_back(&s);
	printf("clockwatch disturb: %ld disturbances; clock %s\n", k, rc ? "NOT restored" : "restored");
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "watch") == 0)
		return watch(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "save") == 0)
		return save(argv[2]);
	if (argc == 3 && strcmp(argv[1], "restore") == 0)
		return restore(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "disturb") == 0)
		return disturb(argc - 2, argv + 2);
	fprintf(stderr, "usage: clockwatch watch [--max-step-us N] -- CMD... | save FILE | "
		"restore FILE | disturb SECONDS [PERIOD_S]\n");
	return 2;
}
