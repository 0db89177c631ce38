/* SPDX-License-Identifier: MIT */
/*
 * `nanoclock bench --plot DIR [--seconds N] [--quick]`: measures, writes the
 * data and a gnuplot script into DIR, and runs gnuplot (Debian:
 * gnuplot-nox) to draw three PNGs:
 *
 *   cost.png    the distribution of the cost of one call, for nanoclock's
 *               reads and clock_gettime side by side: boxes (25th-75th
 *               percentile, median, whiskers 1st-99th, the 99.9th marked)
 *               and the fraction of calls slower than x (tails)
 *   offset.png  nc_now_ns - CLOCK_MONOTONIC_RAW and nc_unix_ns -
 *               CLOCK_REALTIME over a run of N seconds (default 30), each
 *               sample the narrowest of 5 brackets of kernel reads, with
 *               the bracket's half-width and, for Unix time, the bound the
 *               library states (nc_get_unix_status: tie_error_ns)
 *   calib.png   the calibration (the library's own, src/rate/calibrate.c, on the
 *               selected counter against CLOCK_MONOTONIC_RAW) for windows
 *               of 0.125 .. 32 ms: its stated uncertainty and its true
 *               error against a rate this process measures over the whole
 *               run (at least 1 s; that reference's own uncertainty is
 *               drawn too)
 *
 * --quick: fewer samples and windows up to 8 ms (for CI with --seconds 2).
 * The .dat files and plot.gp stay in DIR: `cd DIR && gnuplot plot.gp`
 * redraws.  The figures are also printed.  DIR is made if missing; an
 * existing one must be the user's, writable by no one else, and empty or
 * an earlier plot's (below: the plot's directory and its files).
 */
#include "bench.h"
#include "plot.h"

#include <nanoclock_info.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t plot_sink;

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* q-th quantile of sorted v[0..n-1] (nearest rank) */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)floor(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}


/* ---- 1. the cost of one call ----
 * A sample: an ordered counter read, BATCH calls back to back, an ordered
 * read; minus the narrowest empty bracket, over BATCH.  Ten calls per
 * sample put the counter's step (21 ticks, 10 ns, on a VM) below 1 ns per
 * call while a stall of one call still shows in the tail. */
#define BATCH 10

#define SAMPLE(buf, n, expr)                                                               \
	do {                                                                               \
		for (size_t s_ = 0; s_ < (n); s_++) {                                      \
			uint64_t acc_ = 0;                                                 \
			uint64_t t0_ = nc_ticks_begin();                                   \
			for (int k_ = 0; k_ < BATCH; k_++) {                               \
				acc_ += (uint64_t)(expr);                                  \
				__asm__ __volatile__("" : "+r"(acc_));                     \
			}                                                                  \
			uint64_t t1_ = nc_ticks_end();                                     \
			plot_sink = acc_;                                                  \
			(buf)[s_] = (double)(t1_ - t0_);                                   \
		}                                                                          \
	} while (0)

static uint64_t cgt(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_nsec;
}

#define NCLOCKS 8
static const char *const clock_names[NCLOCKS] = {
	"nc_ticks",
	"nc_ticks_begin",
	"nc_ticks_end",
	"nc_now_ns",
	"nc_unix_ns",
	"clock_gettime(MONOTONIC_RAW)",
	"clock_gettime(MONOTONIC)",
	"clock_gettime(REALTIME)",
};

static void sample_clock(int which, double *buf, size_t n)
{
	switch (which) {
	case 0: SAMPLE(buf, n, nc_ticks()); break;
	case 1: SAMPLE(buf, n, nc_ticks_begin()); break;
	case 2: SAMPLE(buf, n, nc_ticks_end()); break;
	case 3: SAMPLE(buf, n, nc_now_ns()); break;
	case 4: SAMPLE(buf, n, nc_unix_ns()); break;
	case 5: SAMPLE(buf, n, cgt(CLOCK_MONOTONIC_RAW)); break;
	case 6: SAMPLE(buf, n, cgt(CLOCK_MONOTONIC)); break;
	default: SAMPLE(buf, n, cgt(CLOCK_REALTIME)); break;
	}
}

static int plot_costs(const struct pdir *dir, size_t n)
{
	double *buf = malloc(n * sizeof(double));
	FILE *box = open_in(dir, "cost.dat"), *cdf = box ? open_in(dir, "cost-tail.dat") : NULL;
	if (!buf || !box || !cdf) {
		free(buf);
		if (box)
			fclose(box);
		if (cdf)
			fclose(cdf);
		return -1;
	}
	double ns_per_tick = 1e9 / nc_ticks_per_second();
	/* the bracket alone: its narrowest is the fixed overhead */
	double empty = INFINITY;
	for (size_t s = 0; s < n; s++) {
		uint64_t t0 = nc_ticks_begin();
		uint64_t t1 = nc_ticks_end();
		if ((double)(t1 - t0) < empty)
			empty = (double)(t1 - t0);
	}
	fprintf(box, "# x name p1 p25 p50 p75 p99 p99.9 max (ns per call; %zu samples of %d calls; "
		     "empty bracket %.0f ticks subtracted)\n",
		n, BATCH, empty);
	printf("cost of one call, ns (%zu samples of %d back-to-back calls each, bracket overhead "
	       "subtracted):\n",
	       n, BATCH);
	printf("  %-30s %8s %8s %8s %8s %8s %9s %10s\n", "call", "p1", "p25", "p50", "p75", "p99",
	       "p99.9", "max");
	for (int c = 0; c < NCLOCKS; c++) {
		sample_clock(c, buf, n / 10); /* warm up */
		sample_clock(c, buf, n);
		for (size_t s = 0; s < n; s++) {
			double v = (buf[s] - empty) * ns_per_tick / BATCH;
			buf[s] = v > 0.01 ? v : 0.01; /* a log axis has no 0 */
		}
		qsort(buf, n, sizeof(double), cmp_double);
		double p1 = quantile(buf, n, 0.01), p25 = quantile(buf, n, 0.25),
		       p50 = quantile(buf, n, 0.5), p75 = quantile(buf, n, 0.75),
		       p99 = quantile(buf, n, 0.99), p999 = quantile(buf, n, 0.999), mx = buf[n - 1];
		fprintf(box, "%d \"%s\" %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", c, clock_names[c], p1,
			p25, p50, p75, p99, p999, mx);
		printf("  %-30s %8.2f %8.2f %8.2f %8.2f %8.2f %9.2f %10.1f\n", clock_names[c], p1, p25,
		       p50, p75, p99, p999, mx);
		/* the fraction of calls slower than x: at most ~600 points per clock */
		fprintf(cdf, "# %s: ns, fraction of calls slower\n", clock_names[c]);
		size_t step = n / 400 ? n / 400 : 1;
		for (size_t s = 0; s < n; s++) {
			size_t slower = n - 1 - s;
			if (s % step == 0 || slower < 200)
				fprintf(cdf, "%.3f %.6g\n", buf[s], slower > 0 ? (double)slower / (double)n
									 : 0.5 / (double)n);
		}
		fprintf(cdf, "\n\n");
	}
	free(buf);
	int e = close_in(dir, "cost.dat", box);
	return close_in(dir, "cost-tail.dat", cdf) | e;
}

/* ---- 2. reference pairs: an ordered counter read inside the narrowest of
 * many CLOCK_MONOTONIC_RAW brackets ---- */
struct refpair {
	double raw_ns;  /* middle of the bracket */
	double half_ns; /* its half-width */
	uint64_t tick;
};

static void take_refpair(struct refpair *p)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < 200; i++) {
		int64_t a = clock_ns(CLOCK_MONOTONIC_RAW);
		uint64_t t = nc_ticks_begin();
		int64_t b = clock_ns(CLOCK_MONOTONIC_RAW);
		if (b - a < best) {
			best = b - a;
			p->raw_ns = (double)a + (double)(b - a) / 2;
			p->half_ns = (double)(b - a) / 2;
			p->tick = t;
		}
	}
}

/* ---- 3. the calibration against window length ---- */
#define MAX_WINDOWS 12
#define MAX_REPS 8
struct calib_runs {
	int nwin, reps;
	double window_ms[MAX_WINDOWS];
	struct nc_rate_measurement c[MAX_WINDOWS][MAX_REPS];
	int rc[MAX_WINDOWS][MAX_REPS];
};

static void run_calibrations(struct calib_runs *r, int quick)
{
	r->nwin = quick ? 7 : 9; /* 0.125 .. 8 ms, or .. 32 ms */
	r->reps = quick ? 3 : MAX_REPS;
	for (int w = 0; w < r->nwin; w++) {
		r->window_ms[w] = 0.125 * (double)(1 << w);
		for (int k = 0; k < r->reps; k++)
			r->rc[w][k] = nc_measure_rate(r->window_ms[w], &r->c[w][k]);
	}
}

static int write_calibrations(const struct pdir *dir, const struct calib_runs *r, double ref_hz,
			      double ref_ppm)
{
	FILE *f = open_in(dir, "calib.dat"), *m = f ? open_in(dir, "calib-median.dat") : NULL;
	if (!f || !m) {
		if (f)
			fclose(f);
		if (m)
			fclose(m);
		return -1;
	}
	fprintf(f, "# window_ms hz stated_ppm worst_case_ppm error_ppm |error|_ppm "
		   "(reference %.3f Hz +- %.4g ppm)\n",
		ref_hz, ref_ppm);
	fprintf(m, "# window_ms median_stated_ppm median_|error|_ppm max_|error|_ppm within\n");
	printf("\ncalibration against window length (%d runs each; true error against %.3f Hz "
	       "measured over the whole run, itself +-%.4f ppm):\n",
	       r->reps, ref_hz, ref_ppm);
	printf("  %10s %14s %14s %14s %8s\n", "window ms", "stated ppm", "|error| ppm", "max |err|",
	       "within");
	for (int w = 0; w < r->nwin; w++) {
		double st[MAX_REPS], er[MAX_REPS], mx = 0;
		int k2 = 0, within = 0;
		for (int k = 0; k < r->reps; k++) {
			if (r->rc[w][k] != 0)
				continue;
			const struct nc_rate_measurement *c = &r->c[w][k];
			double err = (c->hz / ref_hz - 1) * 1e6;
			fprintf(f, "%.4f %.3f %.6g %.6g %+.6g %.6g\n", r->window_ms[w], c->hz, c->uncertainty_ppm,
				c->worst_ppm, err, fabs(err));
			st[k2] = c->uncertainty_ppm;
			er[k2] = fabs(err);
			within += fabs(err) <= c->uncertainty_ppm;
			mx = fabs(err) > mx ? fabs(err) : mx;
			k2++;
		}
		if (k2 == 0)
			continue;
		qsort(st, (size_t)k2, sizeof(double), cmp_double);
		qsort(er, (size_t)k2, sizeof(double), cmp_double);
		double ms = quantile(st, (size_t)k2, 0.5), me = quantile(er, (size_t)k2, 0.5);
		fprintf(m, "%.4f %.6g %.6g %.6g %d/%d\n", r->window_ms[w], ms, me, mx, within, k2);
		printf("  %10.3f %14.4f %14.4f %14.4f %5d/%d\n", r->window_ms[w], ms, me, mx, within,
		       k2);
	}
	int e = close_in(dir, "calib.dat", f);
	return close_in(dir, "calib-median.dat", m) | e;
}

/* ---- 4. nc_now_ns and nc_unix_ns against the kernel's clocks ---- */
struct offsets {
	double now_min, now_max, unix_min, unix_max, stated_max;
	long n, outside;
};

static int run_offsets(const struct pdir *dir, double seconds, struct offsets *o)
{
	FILE *f = open_in(dir, "offset.dat");
	if (!f)
		return -1;
	fprintf(f, "# t_s now-raw_ns half_ns unix-real_ns half_ns stated_tie_error_ns\n");
	int64_t start = clock_ns(CLOCK_MONOTONIC_RAW), end = start + (int64_t)(seconds * 1e9);
	double now_min = INFINITY, now_max = -INFINITY, unix_min = INFINITY, unix_max = -INFINITY;
	long n = 0, outside = 0;
	double stated_max = 0;
	for (;;) {
		int64_t t = clock_ns(CLOCK_MONOTONIC_RAW);
		if (t >= end)
			break;
		double now_off = 0, now_half = INFINITY, unix_off = 0, unix_half = INFINITY;
		for (int i = 0; i < 5; i++) {
			int64_t a = clock_ns(CLOCK_MONOTONIC_RAW);
			uint64_t v = nc_now_ns();
			int64_t b = clock_ns(CLOCK_MONOTONIC_RAW);
			if ((double)(b - a) / 2 < now_half) {
				now_half = (double)(b - a) / 2;
				now_off = (double)(int64_t)(v - (uint64_t)a) - now_half;
			}
			int64_t c = clock_ns(CLOCK_REALTIME);
			int64_t u = nc_unix_ns();
			int64_t d = clock_ns(CLOCK_REALTIME);
			if ((double)(d - c) / 2 < unix_half) {
				unix_half = (double)(d - c) / 2;
				unix_off = (double)(u - c) - unix_half;
			}
		}
		struct nc_unix_status st;
		nc_get_unix_status(&st);
		fprintf(f, "%.4f %.1f %.1f %.1f %.1f %.1f\n", (double)(t - start) / 1e9, now_off,
			now_half, unix_off, unix_half, st.tie_error_ns);
		now_min = fmin(now_min, now_off);
		now_max = fmax(now_max, now_off);
		unix_min = fmin(unix_min, unix_off);
		unix_max = fmax(unix_max, unix_off);
		stated_max = fmax(stated_max, st.tie_error_ns);
		outside += fabs(unix_off) - unix_half > st.tie_error_ns;
		n++;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	if (close_in(dir, "offset.dat", f) != 0)
		return -1;
	*o = (struct offsets){now_min, now_max, unix_min, unix_max, stated_max, n, outside};
	printf("\nover %.1f s, %ld samples (every 10 ms, the narrowest of 5 brackets):\n", seconds, n);
	printf("  nc_now_ns  - CLOCK_MONOTONIC_RAW: %+.0f .. %+.0f ns\n", now_min, now_max);
	printf("  nc_unix_ns - CLOCK_REALTIME:      %+.0f .. %+.0f ns; stated bound up to %.0f ns, "
	       "exceeded (beyond the bracket) in %ld of %ld samples\n",
	       unix_min, unix_max, stated_max, outside, n);
	return 0;
}

/* ---- the gnuplot script ---- */
static const char plot_gp[] =
	PLOT_GP_FIRST "\n"
	"if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
	"  term_png = 'pngcairo enhanced font \"sans,10\"'\n"
	"} else {\n"
	"  term_png = 'png'\n"
	"}\n"
	"load 'title.gp'\n"
	"set grid\n"
	"set key opaque\n"
	"\n"
	"# ---- cost.png ----\n"
	"eval('set terminal '.term_png.' size 1400,650')\n"
	"set output 'cost.png'\n"
	"set multiplot layout 1,2 title title_cost\n"
	"set logscale y\n"
	"set ylabel 'ns per call'\n"
	"set xrange [-0.6:7.6]\n"
	"set xtics rotate by 30 right noenhanced\n"
	"set boxwidth 0.5\n"
	"set style fill solid 0.3 border\n"
	"set key top left\n"
	"set title 'box: 25th-75th percentile, line: median, whiskers: 1st-99th, x: 99.9th'\n"
	"plot 'cost.dat' using 1:4:3:7:6:xtic(2) with candlesticks whiskerbars lc rgb '#3060c0' "
	"title 'p1 / p25 / p75 / p99', \\\n"
	"     '' using 1:5:5:5:5 with candlesticks lw 2 lc rgb 'black' title 'median', \\\n"
	"     '' using 1:8 with points pt 2 ps 1.5 lc rgb '#c03030' title 'p99.9'\n"
	"unset xtics\n"
	"set xtics\n"
	"set xrange [*:*]\n"
	"set logscale x\n"
	"set xlabel 'ns per call'\n"
	"set ylabel 'fraction of calls slower'\n"
	"set format y '10^{%L}'\n"
	"set title 'tails; horizontal lines: p50, p99, p99.9'\n"
	"set key top right font ',8'\n"
	"set arrow 1 from graph 0, first 0.5 to graph 1, first 0.5 nohead dt 2 lc rgb 'gray'\n"
	"set arrow 2 from graph 0, first 0.01 to graph 1, first 0.01 nohead dt 2 lc rgb 'gray'\n"
	"set arrow 3 from graph 0, first 0.001 to graph 1, first 0.001 nohead dt 2 lc rgb 'gray'\n"
	"plot for [i=0:7] 'cost-tail.dat' index i using 1:2 with lines lw 2 title word(names, i+1)\n"
	"unset multiplot\n"
	"unset arrow\n"
	"unset logscale\n"
	"set format y '%g'\n"
	"\n"
	"# ---- offset.png ----\n"
	"eval('set terminal '.term_png.' size 1200,800')\n"
	"set output 'offset.png'\n"
	"set multiplot layout 2,1 title title_offset\n"
	"set xlabel 'seconds'\n"
	"set ylabel 'ns'\n"
	"set key top right\n"
	"set title 'nc\\_now\\_ns - CLOCK\\_MONOTONIC\\_RAW'\n"
	"set label 1 note_now at graph 0.01, graph 0.93 left front\n"
	"plot 'offset.dat' using 1:($2-$3):($2+$3) with filledcurves fc rgb '#c0d0f0' "
	"title 'kernel reads bracket (half-width)', \\\n"
	"     '' using 1:2 with linespoints pt 7 ps 0.3 lc rgb '#3060c0' title 'offset'\n"
	"set title 'nc\\_unix\\_ns - CLOCK\\_REALTIME'\n"
	"set label 1 note_unix at graph 0.01, graph 0.93 left front\n"
	"plot 'offset.dat' using 1:($4-$5):($4+$5) with filledcurves fc rgb '#f0d0c0' "
	"title 'kernel reads bracket (half-width)', \\\n"
	"     '' using 1:4 with linespoints pt 7 ps 0.3 lc rgb '#c03030' title 'offset', \\\n"
	"     '' using 1:6 with lines dt 2 lc rgb 'black' title 'stated bound (tie\\_error\\_ns)', \\\n"
	"     '' using 1:(-$6) with lines dt 2 lc rgb 'black' notitle\n"
	"unset multiplot\n"
	"unset label 1\n"
	"\n"
	"# ---- calib.png ----\n"
	"eval('set terminal '.term_png.' size 1000,700')\n"
	"set output 'calib.png'\n"
	"set title title_calib\n"
	"set logscale xy\n"
	"set xlabel 'calibration window (ms of CLOCK\\_MONOTONIC\\_RAW)'\n"
	"set ylabel 'ppm'\n"
	"set format y '10^{%L}'\n"
	"set xtics (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32)\n"
	"set xrange [0.1:calib_xmax]\n"
	"set key top right\n"
	"plot 'calib.dat' using 1:3 with points pt 6 lc rgb '#3060c0' title 'stated uncertainty', \\\n"
	"     'calib-median.dat' using 1:2 with lines lw 2 lc rgb '#3060c0' title 'stated (median)', \\\n"
	"     'calib.dat' using 1:($6 > 1e-6 ? $6 : 1e-6) with points pt 7 lc rgb '#c03030' "
	"title '|true error|', \\\n"
	"     'calib-median.dat' using 1:($3 > 1e-6 ? $3 : 1e-6) with lines lw 2 lc rgb '#c03030' "
	"title '|true error| (median)', \\\n"
	"     'calib.dat' using 1:4 with points pt 1 lc rgb 'gray' title 'worst case from bracket "
	"widths', \\\n"
	"     ref_ppm with lines dt 2 lc rgb 'black' title 'the reference''s own uncertainty'\n";

/* s for a single-quoted gnuplot string in enhanced text: ' doubled, _
 * escaped (else it makes a subscript) */
static void gp_text(const char *s, char *out, size_t len)
{
	size_t o = 0;
	for (; *s && o + 3 < len; s++) {
		if (*s == '\'')
			out[o++] = '\'';
		else if (*s == '_' || *s == '^' || *s == '{' || *s == '}' || *s == '@' || *s == '&')
			out[o++] = '\\';
		out[o++] = *s;
	}
	out[o] = 0;
}

/* gnuplot plot.gp, run in the directory opened */
static int run_gnuplot(const struct pdir *dir)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (fchdir(dir->fd) != 0)
			_exit(126);
		execlp("gnuplot", "gnuplot", "plot.gp", (char *)NULL);
		_exit(errno == ENOENT ? 127 : 126);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* a PNG of nonzero size beyond its 8-byte signature */
static int png_ok(const struct pdir *dir, const char *name)
{
	int fd = openat(dir->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	unsigned char sig[8];
	static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	size_t got = fread(sig, 1, 8, f);
	int ok = got == 8 && !memcmp(sig, png, 8) && fgetc(f) != EOF;
	fclose(f);
	return ok;
}

/* title.gp: the titles and notes the plots show */
static int write_titles(const struct pdir *dir, double seconds, const struct calib_runs *cr,
			const struct offsets *off, double ref_ppm)
{
	FILE *t = open_in(dir, "title.gp");
	if (!t)
		return 1;
	char host[64] = "?";
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	for (char *p = host; *p; p++)
		if (*p == '\'' || *p == '"' || *p == '\\')
			*p = '_';
	char raw_head[256], head[512], names[512] = "", name[64];
	snprintf(raw_head, sizeof(raw_head), "nanoclock %s, counter %s at %.3f MHz, host %s",
		 nc_version(), nc_counter_name(), nc_ticks_per_second() / 1e6, host);
	gp_text(raw_head, head, sizeof(head));
	for (int c = 0; c < NCLOCKS; c++) {
		gp_text(clock_names[c], name, sizeof(name));
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", c ? " " : "",
			 name);
	}
	fprintf(t, "names = '%s'\n", names);
	fprintf(t, "title_cost = '%s: the cost of one call'\n", head);
	fprintf(t, "title_offset = '%s: against the kernel clocks over %.0f s'\n", head, seconds);
	fprintf(t, "title_calib = '%s: calibration, stated uncertainty and true error'\n", head);
	fprintf(t, "ref_ppm = %.6g\n", ref_ppm > 1e-6 ? ref_ppm : 1e-6);
	fprintf(t, "calib_xmax = %g\n", cr->window_ms[cr->nwin - 1] * 1.4);
	fprintf(t, "note_now = 'offset %+.0f .. %+.0f ns in %ld samples'\n", off->now_min,
		off->now_max, off->n);
	fprintf(t, "note_unix = 'offset %+.0f .. %+.0f ns; stated bound up to %.0f ns, exceeded in %ld "
		   "of %ld samples'\n",
		off->unix_min, off->unix_max, off->stated_max, off->outside, off->n);
	return close_in(dir, "title.gp", t) != 0;
}

/* gnuplot run over the data, the earlier PNGs replaced: 0, or 1 (said) */
static int draw(const struct pdir *dir)
{
	/* the earlier PNGs (checked again) go before gnuplot writes new ones */
	static const char *const pngs[] = {"cost.png", "offset.png", "calib.png"};
	for (size_t i = 0; i < sizeof(pngs) / sizeof(pngs[0]); i++) {
		if (file_ok(dir, pngs[i]) != 0)
			return 1;
		if (unlinkat(dir->fd, pngs[i], 0) != 0 && errno != ENOENT) {
			plot_fail("cannot replace %s/%s: %s", dir->name, pngs[i], strerror(errno));
			return 1;
		}
	}
	int gp = run_gnuplot(dir);
	if (gp == 127) {
		fprintf(stderr, "nanoclock bench --plot: gnuplot not found (Debian: apt-get install "
				"gnuplot-nox); the data and plot.gp are in %s\n",
			dir->name);
		return 1;
	}
	if (gp != 0) {
		fprintf(stderr, "nanoclock bench --plot: gnuplot failed (status %d); the data and "
				"plot.gp are in %s\n",
			gp, dir->name);
		return 1;
	}
	int bad = 0;
	printf("\n");
	for (size_t i = 0; i < sizeof(pngs) / sizeof(pngs[0]); i++) {
		int ok = png_ok(dir, pngs[i]);
		printf("%s %s/%s\n", ok ? "wrote" : "MISSING or not a PNG:", dir->name, pngs[i]);
		bad += !ok;
	}
	return bad ? 1 : 0;
}

/* The plot, in the directory checked and opened */
static int plot_in(const struct pdir *dir, double seconds, int quick)
{
	/* plot.gp first: an interrupted run leaves a directory recognised as
	 * an earlier plot's, which the next run may use */
	FILE *g = open_in(dir, "plot.gp");
	if (!g)
		return 1;
	fputs(plot_gp, g);
	if (close_in(dir, "plot.gp", g) != 0)
		return 1;
	int rc = nc_init();
	struct refpair a, b;
	take_refpair(&a);
	int64_t t_start = clock_ns(CLOCK_MONOTONIC_RAW);
	printf("nanoclock bench --plot %s — counter %s, %.6f MHz (%s)%s%s\n", dir->name,
	       nc_counter_name(), nc_ticks_per_second() / 1e6, nc_ticks_per_second_source(),
	       rc ? "; nc_init: " : "", rc ? nc_strerror(rc) : "");
	/* what it costs: the offset run, plus the other measurements (measured
	 * on an x86-64 VM: 1.2 s, with --quick 0.3 s; slower machines more) */
	printf("takes about %.0f s: the %g s offset run (--seconds) and about %s s of other "
	       "measurements\n\n",
	       seconds + (quick ? 0.3 : 1.2), seconds, quick ? "0.3" : "1.2");
	fflush(stdout);

	if (plot_costs(dir, quick ? 20000 : 200000) != 0)
		return 1;
	static struct calib_runs cr;
	run_calibrations(&cr, quick);
	struct offsets off;
	if (run_offsets(dir, seconds, &off) != 0)
		return 1;
	/* the reference rate needs a baseline of a second or more */
	int64_t left = t_start + 1000000000 - clock_ns(CLOCK_MONOTONIC_RAW);
	if (left > 0) {
		struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	take_refpair(&b);
	double span_ns = b.raw_ns - a.raw_ns;
	double ref_hz = (double)(b.tick - a.tick) / span_ns * 1e9;
	double ref_ppm = (a.half_ns + b.half_ns) / span_ns * 1e6;
	if (write_calibrations(dir, &cr, ref_hz, ref_ppm) != 0)
		return 1;

	if (write_titles(dir, seconds, &cr, &off, ref_ppm) != 0)
		return 1;
	return draw(dir);
}

int tool_bench_plot(const char *dir, double seconds, int quick)
{
	struct pdir d;
	int rc = plot_dir_open(&d, dir) == 0 ? plot_in(&d, seconds, quick) : 1;
	if (d.fd >= 0)
		close(d.fd);
	return rc;
}
