/* SPDX-License-Identifier: MIT */
/*
 * The kernel's NTP state (adjtimex) as a bound on UTC, only as far as its
 * writer is known to write an honest one.  The kernel keeps what the NTP
 * daemon last wrote: maxerror (us), grown by 500 us a second since, and,
 * while its PLL runs, the offset it has still to slew.  Who wrote them
 * decides what they are worth:
 *   - ntpd: maxerror is its root distance, and it corrects through the
 *     kernel's PLL, so the offset still to slew is in the kernel too:
 *     maxerror + |offset| is a bound;
 *   - chronyd: maxerror = root delay / 2 + root dispersion, but it slews
 *     with the frequency, so the correction it has still to make is in no
 *     field here: not a bound (its command port has it: chrony.c);
 *   - systemd-timesyncd: maxerror = esterror = 0 at every correction,
 *     STA_UNSYNC cleared, and an offset of up to 0.4 s for the PLL to slew:
 *     right after a correction maxerror says 0 while milliseconds remain;
 *     not a bound;
 *   - nobody known, or daemons of several kinds (or STA_UNSYNC,
 *     TIME_ERROR, maxerror saturated at 16 s): nothing to trust.
 * The writer is a process with one of these names that holds CAP_SYS_TIME
 * (anyone can name a program ntpd).  It is looked for only while the
 * kernel says synchronised (no scan of /proc in a process that starts on
 * an unsynchronised machine), again when the state turns synchronised, and
 * every WRITER_RESCAN_S while it stays so (daemons are replaced).
 * NANOCLOCK_UTC_SOURCE=adjtimex makes the user vouch for the writer: then
 * maxerror + |offset| (both the PLL's and adjtime()'s) is taken, never
 * less than the offset still to slew, and the timesyncd pattern (maxerror
 * and esterror at zero under STA_PLL) is refused all the same.
 *
 * nc_unix_status's kernel figures are decoded here too (nc__utc_decode):
 * what the kernel says, whoever wrote it, with the same rule for "not
 * synchronised".
 */
#include "utc.h"
#include "../base/fmt.h"
#include "../counter/counter.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/timex.h>
#include <unistd.h>

/* the kernel's maxerror saturates here (NTP_PHASE_LIMIT): unsynchronised */
#define MAXERROR_LIMIT_US 16000000L
/* the kernel grows maxerror by this much a second (MAXFREQ) */
#define KERNEL_DRIFT_PPM 500.0

/* Why the kernel says it is not synchronised, or NULL */
static const char *unsynchronised(const struct nc__kclock *k)
{
	if (k->status & STA_UNSYNC)
		return "the system clock is not synchronised (adjtimex: STA_UNSYNC)";
	if (k->state == TIME_ERROR)
		return "the system clock is not synchronised (adjtimex: TIME_ERROR)";
	if (k->maxerror_us >= MAXERROR_LIMIT_US || k->maxerror_us < 0)
		return "the kernel's maximum error has saturated (16 s): not synchronised";
	return NULL;
}

/* nc_unix_status's figures: the kernel's own view, whoever wrote it, plus
 * nanoclock's tie to CLOCK_REALTIME */
void nc__utc_decode(const struct nc__kclock *k, int have_k, double tie_error_ns,
		    struct nc_unix_status *st)
{
	st->tie_error_ns = tie_error_ns;
	if (!have_k) {
		st->synchronised = -1;
		st->kernel_state = -1;
		st->utc_error_ns = -1;
		nc__fmt(st->why, sizeof(st->why), "adjtimex() is not available: UTC error unknown");
		return;
	}
	st->kernel_state = k->state;
	st->leap_pending = (k->status & STA_INS) ? 1 : (k->status & STA_DEL) ? -1 : 0;
	st->tai_offset_s = (int)k->tai_s;
	st->kernel_max_error_us = (double)k->maxerror_us;
	st->kernel_est_error_us = (double)k->esterror_us;
	st->kernel_freq_ppm = k->freq_ppm;
	const char *why = unsynchronised(k);
	if (why) {
		st->synchronised = 0;
		st->utc_error_ns = -1;
		nc__copy(st->why, sizeof(st->why), why);
		return;
	}
	st->synchronised = 1;
	st->utc_error_ns = (double)k->maxerror_us * 1e3 + tie_error_ns;
	st->why[0] = 0;
}

void nc__utc_adjtimex_decode(const struct nc__kclock *k, enum nc__kwriter w, struct nc__utc_fix *f)
{
	memset(f, 0, sizeof(*f));
	f->status = NC_UTC_UNKNOWN;
	f->drift_ppm = KERNEL_DRIFT_PPM;
	double left = k->pll_offset_ns + k->adjtime_left_ns; /* still to be slewed */
	f->slew_ns = left;
	const char *why = unsynchronised(k);
	if (why) {
		nc__copy(f->why, sizeof(f->why), why);
		return;
	}
	/* esterror 0 under the PLL: what timesyncd writes at every correction
	 * (maxerror 0 with it, grown by the kernel since), whoever runs */
	int timesyncd_pattern = (k->status & STA_PLL) && k->esterror_us == 0;
	switch (w) {
	case NC_KW_TIMESYNCD:
		nc__fmt(f->why, sizeof(f->why),
			"no honest bound: systemd-timesyncd writes the kernel's maximum error as 0 at "
			"each correction (%ld us now, %.0f us still to slew)",
			k->maxerror_us, left / 1e3);
		return;
	case NC_KW_CHRONYD:
		nc__fmt(f->why, sizeof(f->why),
			"chronyd's maximum error in the kernel (%ld us) leaves out the correction it "
			"slews itself: its command port has the bound, and did not answer",
			k->maxerror_us);
		return;
	case NC_KW_SEVERAL:
		nc__fmt(f->why, sizeof(f->why),
			"NTP daemons of more than one kind hold CAP_SYS_TIME: which one wrote the "
			"kernel's maximum error (%ld us) is unknown",
			k->maxerror_us);
		return;
	case NC_KW_UNKNOWN:
		nc__fmt(f->why, sizeof(f->why),
			"no known NTP daemon runs (ntpd, chronyd): the kernel's maximum error (%ld us) "
			"was written by someone unknown; NANOCLOCK_UTC_SOURCE=adjtimex trusts it",
			k->maxerror_us);
		return;
	case NC_KW_NTPD:
	case NC_KW_TRUSTED:
		break;
	}
	if (timesyncd_pattern) {
		nc__fmt(f->why, sizeof(f->why),
			"no honest bound: the kernel's estimated error is 0 under the PLL, "
			"systemd-timesyncd's pattern (maximum error %ld us, %.0f us still to slew)",
			k->maxerror_us, left / 1e3);
		return;
	}
	f->status = NC_UTC_SYNCHRONISED;
	/* never less than what is still to be slewed */
	f->bound_ns = (double)k->maxerror_us * 1e3 + left;
	nc__fmt(f->why, sizeof(f->why), "adjtimex: maximum error %ld us, %.0f us still to slew%s",
		k->maxerror_us, left / 1e3, w == NC_KW_NTPD ? " (written by ntpd)" : " (trusted: NANOCLOCK_UTC_SOURCE)");
}

/* ---- the source ---- */
/* re-scan /proc this often while the kernel says synchronised */
#define WRITER_RESCAN_S 60
#define CAP_SYS_TIME_BIT 25

/* Guarded by nc__lib_lock (core.c opens and asks under it). */
static struct {
	int trusted;          /* the user vouched: no scan */
	int known;            /* found since the kernel last said synchronised */
	enum nc__kwriter w;
	int64_t found_raw_ns; /* CLOCK_MONOTONIC_RAW of the last scan */
	char why[96];
} kw NC_GUARDED_BY(nc__lib_lock);

/* The first line of proc_root/pid/name starting with key: its value. */
static int proc_field(const char *proc_root, const char *pid, const char *name, const char *key,
		      char *out, size_t len)
{
	char path[288], buf[2048];
	nc__fmt(path, sizeof(path), "%.200s/%.20s/%s", proc_root, pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	size_t k = strlen(key);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (!strncmp(line, key, k)) {
			nc__fmt(out, len, "%s", line + k);
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

/* CapEff (hex) includes CAP_SYS_TIME */
static int has_sys_time(const char *proc_root, const char *pid)
{
	char v[64];
	if (proc_field(proc_root, pid, "status", "CapEff:", v, sizeof(v)) != 0)
		return 0;
	unsigned long long caps = 0;
	const char *p = v;
	while (*p == ' ' || *p == '\t')
		p++;
	for (; *p; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
		if (d < 0)
			break;
		caps = caps << 4 | (unsigned)d;
	}
	return (int)(caps >> CAP_SYS_TIME_BIT & 1);
}

enum nc__kwriter nc__utc_find_writer(const char *proc_root)
{
	DIR *d = opendir(proc_root);
	if (!d)
		return NC_KW_UNKNOWN;
	enum nc__kwriter w = NC_KW_UNKNOWN;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char comm[32];
		/* comm is one line, 15 characters at most ("systemd-timesyn") */
		if (proc_field(proc_root, e->d_name, "comm", "", comm, sizeof(comm)) != 0)
			continue;
		enum nc__kwriter this = NC_KW_UNKNOWN;
		if (!strcmp(comm, "ntpd") || !strcmp(comm, "ntpsec"))
			this = NC_KW_NTPD;
		else if (!strcmp(comm, "chronyd"))
			this = NC_KW_CHRONYD;
		else if (!strcmp(comm, "systemd-timesyn"))
			this = NC_KW_TIMESYNCD;
		if (this == NC_KW_UNKNOWN || this == w || !has_sys_time(proc_root, e->d_name))
			continue;
		if (w != NC_KW_UNKNOWN) {
			w = NC_KW_SEVERAL;
			break;
		}
		w = this;
	}
	closedir(d);
	return w;
}

static void name_writer(void) NC_REQUIRES(nc__lib_lock)
{
	static const char *const names[] = {"nobody known", "ntpd", "chronyd", "systemd-timesyncd",
					    "the user (NANOCLOCK_UTC_SOURCE=adjtimex)",
					    "one of several NTP daemons"};
	nc__fmt(kw.why, sizeof(kw.why), "written by %s", names[kw.w]);
}

static int kx_open(const char *arg, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	struct nc__kclock k;
	if (nc__ref.kclock(&k) != 0) {
		nc__fmt(why, len, "adjtimex() is not available");
		return -1;
	}
	memset(&kw, 0, sizeof(kw));
	/* "trusted" is how core.c opens it when the user named it */
	kw.trusted = !strcmp(arg, "trusted");
	kw.w = kw.trusted ? NC_KW_TRUSTED : NC_KW_UNKNOWN;
	kw.known = kw.trusted;
	if (kw.trusted)
		name_writer();
	else
		nc__fmt(kw.why, sizeof(kw.why), "writer not looked for: the kernel is not synchronised");
	return 0;
}

/* The writer, looked for only while it matters (the kernel says
 * synchronised: otherwise decode refuses whoever wrote it). */
static void update_writer(const struct nc__kclock *k) NC_REQUIRES(nc__lib_lock)
{
	if (kw.trusted)
		return;
	int synced = !(k->status & STA_UNSYNC) && k->state != TIME_ERROR &&
		     k->maxerror_us >= 0 && k->maxerror_us < MAXERROR_LIMIT_US;
	if (!synced) {
		kw.known = 0; /* looked for again when it turns synchronised */
		return;
	}
	int64_t now = nc__ref.raw();
	if (kw.known && now - kw.found_raw_ns < (int64_t)WRITER_RESCAN_S * 1000000000)
		return;
	kw.w = nc__utc_find_writer("/proc");
	kw.known = 1;
	kw.found_raw_ns = now;
	name_writer();
}

static int kx_ask(struct nc__utc_fix *f, double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	(void)wait_ms;
	struct nc__kclock k;
	uint64_t q = nc__counter_read();
	int64_t real = nc__ref.real();
	if (nc__ref.kclock(&k) != 0) {
		memset(f, 0, sizeof(*f));
		nc__fmt(f->why, sizeof(f->why), "adjtimex() failed");
		return 0;
	}
	update_writer(&k);
	nc__utc_adjtimex_decode(&k, kw.w, f);
	f->q_tick = q;
	f->as_of_ns = real;
	return 1;
}

static void kx_close(void) {}
static void kx_where(char *out, size_t len) NC_REQUIRES(nc__lib_lock)
{
	nc__fmt(out, len, "%s", kw.why);
}

const struct nc__utc_source nc__utc_adjtimex = {"adjtimex", NC_UTC_SRC_ADJTIMEX, kx_open, kx_ask,
						kx_close, kx_where};
