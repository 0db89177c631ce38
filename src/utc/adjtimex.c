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
 *   - nobody known (or STA_UNSYNC, TIME_ERROR, maxerror saturated at 16 s):
 *     nothing to trust.
 * NANOCLOCK_UTC_SOURCE=adjtimex makes the user vouch for the writer: then
 * maxerror + |offset| (both the PLL's and adjtime()'s) is taken, never
 * less than the offset still to slew, and the timesyncd pattern (maxerror
 * and esterror at zero under STA_PLL) is refused all the same.
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

void nc__utc_adjtimex_decode(const struct nc__kclock *k, enum nc__kwriter w, struct nc__utc_fix *f)
{
	memset(f, 0, sizeof(*f));
	f->status = NC_UTC_UNKNOWN;
	f->drift_ppm = KERNEL_DRIFT_PPM;
	double left = k->pll_offset_ns + k->adjtime_left_ns; /* still to be slewed */
	f->slew_ns = left;
	if (k->status & STA_UNSYNC) {
		nc__fmt(f->why, sizeof(f->why), "the system clock is not synchronised (adjtimex: STA_UNSYNC)");
		return;
	}
	if (k->state == TIME_ERROR) {
		nc__fmt(f->why, sizeof(f->why), "the system clock is not synchronised (adjtimex: TIME_ERROR)");
		return;
	}
	if (k->maxerror_us >= MAXERROR_LIMIT_US || k->maxerror_us < 0) {
		nc__fmt(f->why, sizeof(f->why), "the kernel's maximum error has saturated (16 s)");
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
static enum nc__kwriter writer;
static char writer_why[96];

/* Which NTP daemon runs: the first of the known names among the
 * processes' comm (15 characters: "systemd-timesyn"). */
static enum nc__kwriter find_writer(void)
{
	DIR *d = opendir("/proc");
	if (!d)
		return NC_KW_UNKNOWN;
	enum nc__kwriter w = NC_KW_UNKNOWN;
	struct dirent *e;
	while (w == NC_KW_UNKNOWN && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char path[64], comm[32];
		nc__fmt(path, sizeof(path), "/proc/%.20s/comm", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n <= 0)
			continue;
		comm[n] = 0;
		char *nl = strchr(comm, '\n');
		if (nl)
			*nl = 0;
		if (!strcmp(comm, "ntpd") || !strcmp(comm, "ntpsec"))
			w = NC_KW_NTPD;
		else if (!strcmp(comm, "chronyd"))
			w = NC_KW_CHRONYD;
		else if (!strcmp(comm, "systemd-timesyn"))
			w = NC_KW_TIMESYNCD;
	}
	closedir(d);
	return w;
}

static int kx_open(const char *arg, char *why, size_t len)
{
	struct nc__kclock k;
	if (nc__ref.kclock(&k) != 0) {
		nc__fmt(why, len, "adjtimex() is not available");
		return -1;
	}
	/* "trusted" is how core.c opens it when the user named it */
	writer = !strcmp(arg, "trusted") ? NC_KW_TRUSTED : find_writer();
	static const char *const names[] = {"nobody known", "ntpd", "chronyd", "systemd-timesyncd",
					    "the user (NANOCLOCK_UTC_SOURCE=adjtimex)"};
	nc__fmt(writer_why, sizeof(writer_why), "written by %s", names[writer]);
	return 0;
}

static int kx_ask(struct nc__utc_fix *f, double wait_ms)
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
	nc__utc_adjtimex_decode(&k, writer, f);
	f->q_tick = q;
	f->as_of_ns = real;
	return 1;
}

static void kx_close(void) {}
static void kx_where(char *out, size_t len) { nc__fmt(out, len, "%s", writer_why); }

const struct nc__utc_source nc__utc_adjtimex = {"adjtimex", NC_UTC_SRC_ADJTIMEX, kx_open, kx_ask,
						kx_close, kx_where};
