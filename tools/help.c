/* SPDX-License-Identifier: MIT */
/* The tool's help texts (tools/help.h).  Every option a command accepts is
 * listed in its help and in nanoclock(1) (tests/tool/test_help.sh compares
 * them); the usage lines of all commands make `nanoclock --help`. */
#include "help.h"

#include <string.h>

#define USAGE_INFO "nanoclock info [--json]"
#define USAGE_NOW "nanoclock now [--unix | --iso | --json]"
#define USAGE_CHECK "nanoclock check [--method cop|switch] [--probes N] [--rounds N] [--json]"
#define USAGE_BENCH "nanoclock bench [--quick]"
#define USAGE_PLOT "nanoclock bench --plot DIR [--seconds N] [--quick]"
#define USAGE_INIT "nanoclock bench init [--runs N] [--idle SECONDS]"
#define USAGE_UNIX "nanoclock bench unix [--seconds N] [--step]"
#define USAGE_SYNC "nanoclock bench sync [--runs N]"
#define USAGE_STRESS "nanoclock bench stress [--threads N] [--seconds S]"
#define USAGE_LATENCY "nanoclock bench latency [--calls N]"
#define USAGE_BTRACE "nanoclock bench trace [--quick]"
#define USAGE_DAEMON "nanoclock daemon [--record PATH] [--interval SECONDS] [--clockbound PATH] [--once]"

#define EXIT_STATUS                                                                         \
	"exit status: 0 ok; 1 check: inconsistent, or a bench or trace failure; 2 bad command\n" \
	"             line; 3 check: inconclusive; 4 nc_init() refused a setting (NANOCLOCK_*):\n" \
	"             one line on stderr says which, the output is still printed\n"

static const char top[] =
	"usage: " USAGE_INFO "\n"
	"       " USAGE_NOW "\n"
	"       " USAGE_CHECK "\n"
	"       " USAGE_BENCH "\n"
	"       " USAGE_PLOT "\n"
	"       " USAGE_INIT "\n"
	"       " USAGE_UNIX "\n"
	"       " USAGE_SYNC "\n"
	"       " USAGE_STRESS "\n"
	"       " USAGE_LATENCY "\n"
	"       " USAGE_BTRACE "\n"
	"       nanoclock trace stats FILE [--json]\n"
	"       nanoclock trace export --format ctf|perfetto|chrome|csv [-o OUT] FILE...\n"
	"       nanoclock trace demo FILE [--threads N] [--items N] [--block-bytes N]\n"
	"                            [--blocks N] [--overwrite] [--cputime] [--gseq]\n"
	"                            [--sync-check]\n"
	"       " USAGE_DAEMON "\n"
	"       nanoclock [-h | --help | --version]\n"
	"\n"
	"What the nanoclock library chose on this machine (info), the time with its\n"
	"stated error (now), whether the CPUs' counters agree (check), what it costs\n"
	"and how accurate it is (bench), event traces (trace), one calibration for\n"
	"every process of the machine (daemon).\n"
	"\n"
	"  nanoclock COMMAND --help   a command's options and what it prints\n"
	"  --version                  the version of the tool and library\n"
	"  -h, --help                 this help (also: nanoclock alone, nanoclock help)\n"
	"\n" EXIT_STATUS "manual: man nanoclock (the tool), man 3 nanoclock (the library)\n";

static const char info[] =
	"usage: " USAGE_INFO "\n"
	"\n"
	"Initialises the library and prints what it decided, and why: the counter and\n"
	"every candidate considered, the frequency and how well it is known, the\n"
	"resolution, the time nc_init() took, what each read costs, the kernel's view,\n"
	"how far Unix time may be from UTC, and a quick cross-CPU check.\n"
	"\n"
	"options:\n"
	"  --json       the same as one JSON object\n"
	"  -h, --help   this help\n"
	"\n"
	"lines:\n"
	"  unix time    how far nc_unix_ns() may be from UTC: the half width of\n"
	"               nc_utc_now()'s interval, its source and its parts, or why it\n"
	"               is unknown; and how far nc_unix_ns() may be from the system\n"
	"               clock now (the tie's half-width, its age's drift, a correction\n"
	"               being slewed); then the last tie itself: half the width of the\n"
	"               bracket that tied the counter to CLOCK_REALTIME, and its age\n"
	"  utc source   where that bound comes from, its status, and how it was\n"
	"               chosen (docs/time-across-machines.md)\n"
	"  shared record  the shared calibration record: each place looked at and\n"
	"               what became of it (none, adopted, refused and why, written);\n"
	"               the record in use: its writer, generation, age, rate and\n"
	"               baseline, and the cross-CPU verdict it carries\n"
	"  cross-CPU    a short `nanoclock check`: see nanoclock check --help\n"
	"\n"
	"exit status: 0; 4 nc_init() refused a NANOCLOCK_* setting (said on stderr)\n";

static const char daemon_help[] =
	"usage: " USAGE_DAEMON "\n"
	"\n"
	"Keeps a shared calibration record fresh, so that every process on the\n"
	"machine starts from it instead of calibrating (a start then costs a fraction\n"
	"of a calibrating one: nanoclock bench init measures both) and converts ticks\n"
	"the same way.  It continues the record it finds\n"
	"at PATH (same tie, ever longer baseline), runs the cross-CPU check once per\n"
	"boot and stores its verdict, then rewrites the record every interval.\n"
	"Processes adopt a record only if it is owned by root or by their user and\n"
	"writable by no one else, of this boot and counter, intact, and agrees with a\n"
	"bracket of the counter taken when they start (docs/shared-clock.md).\n"
	"\n"
	"options:\n"
	"  --record PATH        the record (default /run/nanoclock/record, the system\n"
	"                       record every process looks at first; its directory is\n"
	"                       made if missing)\n"
	"  --interval SECONDS   between rewrites (default 60, 0.01 to 86400)\n"
	"  --clockbound PATH    also publish the bound on UTC every second as an AWS\n"
	"                       ClockBound segment (protocol version 2) at PATH, e.g.\n"
	"                       /var/run/clockbound/shm0: ClockBound clients read it\n"
	"                       unchanged; only a segment of this user's is updated,\n"
	"                       anything else at PATH is left alone\n"
	"  --once               write the record (and the segment) once and exit\n"
	"  -h, --help           this help\n"
	"\n"
	"SIGTERM or SIGINT: stops, exit status 0; SIGHUP: rewrites the record at once.\n"
	"A line on stdout when it starts, when the record's uncertainty has halved and\n"
	"for each SIGHUP (beginning \"SIGHUP:\").\n"
	"\n"
	"exit status: 0 stopped by a signal, or --once wrote the record; 1 the record\n"
	"or the segment could not be written with --once (the reason on stderr;\n"
	"without --once it is said once and the daemon keeps trying); 2 bad command\n"
	"line\n";

static const char now[] =
	"usage: " USAGE_NOW "\n"
	"\n"
	"The time from nc_utc_now() (nc_unix_ns()'s value, for one counter read): by\n"
	"default as ISO 8601 UTC and seconds since the epoch on one line, then the\n"
	"interval that holds UTC (its half width, the source and its parts), or why\n"
	"it is unknown.\n"
	"\n"
	"options:\n"
	"  --unix       seconds.nanoseconds only\n"
	"  --iso        the ISO 8601 form only\n"
	"  --json       everything: unix_ns, iso, monotonic_ns (nc_now_ns()), counter,\n"
	"               earliest_ns and latest_ns (null when unknown), utc_source,\n"
	"               utc_status, utc_as_of, init_status, and status, which is\n"
	"               nc_get_unix_status() (its kernel_synchronised is what the\n"
	"               kernel says of the system clock; utc_status is the source's)\n"
	"  -h, --help   this help\n"
	"\n"
	"exit status: 0; 4 nc_init() refused a NANOCLOCK_* setting (said on stderr)\n";

static const char check[] =
	"usage: " USAGE_CHECK "\n"
	"\n"
	"Do the counters of all CPUs agree?  nc_sync_check() over the CPUs this process\n"
	"may run on: the verdict, an upper bound on the shift between any two CPUs'\n"
	"counters, each CPU's shift interval against a base CPU, whether readings were\n"
	"monotonic and the counters ran at the same pace, and the evidence when not.\n"
	"\n"
	"options:\n"
	"  --method cop|switch  cop (the default): CAS-ordered probes, one pinned thread\n"
	"                       per CPU; each probe reads the counter (ordered) between\n"
	"                       loading a shared sequence number and claiming it with a\n"
	"                       compare-and-swap, so the recorded order is the order in\n"
	"                       time.  switch: one thread hopping between CPUs (coarser)\n"
	"  --probes N           probes per CPU per round (1..100000000; default: enough\n"
	"                       for the CPUs allowed)\n"
	"  --rounds N           rounds (1..1000; default 3)\n"
	"  --json               one JSON object\n"
	"  -h, --help           this help\n"
	"\n"
	"output:\n"
	"  max shift <= N ticks an upper bound on the shift between any two CPUs'\n"
	"                       counters (the true shift is somewhere below it)\n"
	"  shift in [lo, hi]    the interval one CPU's counter is shifted by against the\n"
	"                       base CPU's\n"
	"  enclosed             probes of a CPU with a base-CPU probe just before and\n"
	"                       just after it: each narrows the interval\n"
	"  quality              the fewest enclosed probes of any CPU divided by the\n"
	"                       number needed (50), at most 1; below 1: inconclusive\n"
	"\n"
	"exit status: 0 consistent; 1 inconsistent; 3 inconclusive (too little\n"
	"evidence: a busy machine; run it again, or with more --probes); 2 bad\n"
	"command line\n";

static const char bench[] =
	"usage: " USAGE_BENCH "\n"
	"       " USAGE_PLOT "\n"
	"       nanoclock bench init|unix|sync|stress|latency|trace [options]\n"
	"\n"
	"The cost of every read and conversion against the bare counter instruction,\n"
	"the ordered one and clock_gettime(2), measured in the same run: each call's\n"
	"best round and the spread over rounds, each ratio with the range over rounds,\n"
	"and whether each target was met, missed, or the machine too noisy to tell;\n"
	"then nc_init() in 21 cold processes and the accuracy of nc_now_ns() over 1, 5\n"
	"and 10 s (13 s in all on an x86-64 VM).\n"
	"\n"
	"options:\n"
	"  --quick       fewer calls per round, 5 cold processes, no accuracy run\n"
	"                (0.2 s on an x86-64 VM, against 13 s)\n"
	"  --plot DIR    measure and draw cost.png, offset.png and calib.png in DIR\n"
	"                with gnuplot: --seconds plus about 1.2 s (--quick: 0.3 s);\n"
	"                it says so when it starts.  DIR is made if missing; else it\n"
	"                must be this user's, writable by no one else, and empty or\n"
	"                an earlier plot's (nothing else there is replaced)\n"
	"  --seconds N   with --plot: the offset run, in seconds (0.1..86400; default\n"
	"                30, with --quick 2)\n"
	"  --init-once   internal: one cold nc_init(), as one line of figures (what\n"
	"                bench and bench init run in each cold process)\n"
	"  --floor-once  internal: a shared start's system calls alone, without the\n"
	"                library, as one line (bench init's floor)\n"
	"  -h, --help    this help\n"
	"\n"
	"benchmarks (nanoclock bench NAME --help for each):\n"
	"  init          nc_init() in cold processes after idle time\n"
	"  unix          nc_unix_ns() against CLOCK_REALTIME over a run\n"
	"  sync          the cross-CPU check repeated, against the hand-off limit\n"
	"  stress        no clock inversion between threads taking a lock in turn\n"
	"  latency       the distribution of one nc_now_ns() call\n"
	"  trace         the cost of trace events\n"
	"\n"
	"exit status: 0; 1 a measurement or --plot failed\n";

static const char bench_init[] =
	"usage: " USAGE_INIT "\n"
	"\n"
	"N runs of two cold processes, each after SECONDS of idle time, side by side:\n"
	"unshared (NANOCLOCK_SHARED=off: it calibrates) and shared (it finds a shared\n"
	"record that this process keeps fresh, as nanoclock daemon would).  For each:\n"
	"the time of nc_init(), and its rate at init against one reference rate this\n"
	"process measures over the whole run; \"within\" allows the reference's own\n"
	"error (half its end brackets over its span) beside the stated uncertainty.\n"
	"Each run also starts a third cold process, the floor: the system calls the\n"
	"shared start makes (the lock's getpid, the record's, the boot id's, the Unix\n"
	"tie's), without the library; the summary gives the shared start against it.\n"
	"\n"
	"options:\n"
	"  --runs N          cold processes (1..100000; default 21)\n"
	"  --idle SECONDS    idle time before each (0..3600; default 2)\n"
	"  -h, --help        this help\n";

static const char bench_unix[] =
	"usage: " USAGE_UNIX "\n"
	"\n"
	"nc_unix_ns() against bracketing CLOCK_REALTIME reads, and nc_now_ns() against\n"
	"CLOCK_MONOTONIC_RAW, one sample every 10 ms.\n"
	"\n"
	"options:\n"
	"  --seconds N   the run (0.1..86400; default 60)\n"
	"  --step        also step the system clock by +10 ms and back, and time how\n"
	"                soon nc_unix_ns() follows, with and without the upkeep\n"
	"                thread.  Needs CAP_SYS_TIME and CHANGES THE SYSTEM TIME\n"
	"  -h, --help    this help\n";

static const char bench_sync[] =
	"usage: " USAGE_SYNC "\n"
	"\n"
	"The cross-CPU check repeated, next to the hand-off limit (the fastest round\n"
	"trip of a cache line between two CPUs, which no check can beat): verdicts,\n"
	"the spread of the bound, the time per check.\n"
	"\n"
	"options:\n"
	"  --runs N      checks (1..100000; default 100)\n"
	"  -h, --help    this help\n";

static const char bench_stress[] =
	"usage: " USAGE_STRESS "\n"
	"\n"
	"N threads take one mutex in turn and, holding it, read every ordered clock,\n"
	"each compared with the last value any thread read, while another thread\n"
	"forces re-ties of Unix time.  Exit status 1 on any inversion.\n"
	"\n"
	"options:\n"
	"  --threads N   threads (1..1024; default 16)\n"
	"  --seconds S   the run (0.1..86400; default 60)\n"
	"  -h, --help    this help\n";

static const char bench_latency[] =
	"usage: " USAGE_LATENCY "\n"
	"\n"
	"The distribution of one nc_now_ns() call, bracketed by ordered reads whose own\n"
	"cost is shown beside, and the cost of a refresh (a forced re-tie of Unix\n"
	"time), against the targets p99.9 <= 2x p50 and a refresh <= 2 us.\n"
	"\n"
	"options:\n"
	"  --calls N     calls (10000..100000000000; default 100000000)\n"
	"  -h, --help    this help\n";

static const char bench_trace[] =
	"usage: " USAGE_BTRACE "\n"
	"\n"
	"The cost of appending a trace event against a bare counter read, of the\n"
	"global and per-thread sequence numbers with one and two threads, of a sync\n"
	"record and of the thread CPU time.\n"
	"\n"
	"options:\n"
	"  --quick       fewer events\n"
	"  -h, --help    this help\n";

const char *tool_help_text(const char *topic)
{
	static const struct {
		const char *topic, *text;
	} t[] = {
		{"", top},
		{"info", info},
		{"now", now},
		{"check", check},
		{"bench", bench},
		{"bench init", bench_init},
		{"bench unix", bench_unix},
		{"bench sync", bench_sync},
		{"bench stress", bench_stress},
		{"bench latency", bench_latency},
		{"bench trace", bench_trace},
		{"daemon", daemon_help},
	};
	for (size_t i = 0; topic && i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(topic, t[i].topic))
			return t[i].text;
	return NULL;
}
