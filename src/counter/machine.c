/* SPDX-License-Identifier: MIT */
/* What the machine and the kernel tell about the clocks, for the report
 * and for the counters' own rules: the start reads only what choosing the
 * counter needs (nc__machine_read), the rest once, when first asked.  Files
 * come from /sys and /proc (nothing is required: in a container without
 * them every field says "unknown", the stated rates they carry are absent,
 * the rate is measured, and the policy line says so), CPU facts from
 * cpuid.c. */
#include "counter.h"
#include "base/fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

/* The whole of a small file into buf (at most len-1 bytes, terminated):
 * bytes read, or -1.  open/read, not stdio: a cold start's first fopen()
 * also sets up malloc and a 4 KB buffer, and with stdio the machine's
 * files were a large share of a first start. */
static ssize_t read_text(const char *path, char *buf, size_t len)
{
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC); /* no fd leaks into a child another thread execs */
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The first line of a small file, trailing blanks cut. */
static int read_line(const char *path, char *buf, size_t len)
{
	if (read_text(path, buf, len) < 0)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	/* trailing blanks (available_clocksource ends with one) */
	size_t n = strlen(buf);
	while (n && buf[n - 1] == ' ')
		buf[--n] = 0;
	return 0;
}

/* "2596.146" as a double, whatever the locale's decimal point (strtod
 * follows the application's setlocale); 0 unless the text is digits with
 * at most one '.' between blanks. */
static double parse_decimal(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	while (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
		p++; /* leading zeros are not precision */
	/* the digits as one integer, divided once by an exact power of ten:
	 * one rounding, as strtod's (up to 15 significant digits) */
	unsigned long long mant = 0;
	double scale = 1;
	int digits = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		if (digits < 15)
			mant = mant * 10 + (unsigned)(*p - '0');
		else
			return 0; /* more than 15 digits before the point: no rate */
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (digits < 15) {
				mant = mant * 10 + (unsigned)(*p - '0');
				scale *= 10;
				digits++;
			}
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	return digits && *p == 0 ? (double)mant / scale : 0;
}

static int has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = list; (p = strstr(p, w)) != NULL; p += n) {
		int start = p == list || p[-1] == ' ' || p[-1] == '\t';
		int end = p[n] == 0 || p[n] == ' ' || p[n] == '\t' || p[n] == '\n';
		if (start && end)
			return 1;
	}
	return 0;
}

/* /proc/cpuinfo: the first CPU's TSC flags and "cpu MHz" (x86 prints the
 * kernel's TSC rate there when it has no APERF/MPERF: a stated source,
 * cross-checked like the others).  Only the first block is read. */
const char *nc__cpuinfo_path = "/proc/cpuinfo";

/* The start's buffer when the files are read during it (nc__machine_read
 * with full, under nc__lib_lock): kept off the stack of a first call. */
NC_COLD static char cpuinfo_text[NC_CPUINFO_BUF] NC_GUARDED_BY(nc__lib_lock);
NC_COLD static struct nc__machine_files start_files NC_GUARDED_BY(nc__lib_lock);

/* The whole line that starts with key, read so far? */
static int have_line(const char *text, const char *key)
{
	size_t k = strlen(key);
	for (const char *p = text; (p = strstr(p, key)) != NULL; p += k)
		if ((p == text || p[-1] == '\n') && strchr(p, '\n'))
			return 1;
	return 0;
}

static int read_cpuinfo(struct nc__machine_files *f, char *text, size_t size)
{
	/* Only the first CPU's block, and of it only up to the lines wanted
	 * ("cpu MHz" and "flags" on x86), or to the first blank line.  The
	 * kernel formats a CPU's block when a read reaches it, which is slow
	 * in a VM, and a read that empties one block goes on into the next:
	 * so 1 KB first, then 128 bytes at a time, which stop inside the first
	 * block. */
	text[0] = 0;
	int fd = open(nc__cpuinfo_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < size) {
		size_t want = size - 1 - n, chunk = n < 1024 ? 1024 - n : 128;
		ssize_t r = read(fd, text + n, want < chunk ? want : chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		text[n] = 0;
		if (strstr(text, "\n\n") || (have_line(text, "cpu MHz") && have_line(text, "flags")))
			break;
	}
	close(fd);
	text[n] = 0;
	int have_flags = 0, have_mhz = 0;
	for (char *line = text, *next; line && *line && !(have_flags && have_mhz); line = next) {
		next = strchr(line, '\n');
		if (!next)
			break; /* cut short by the buffer: not a whole line */
		*next++ = 0;
		char *p = strchr(line, ':');
		if (!p)
			continue;
		if (!have_mhz && strncmp(line, "cpu MHz", 7) == 0) {
			have_mhz = 1;
			double v = parse_decimal(p + 1);
			if (v > 0 && v < 1e6)
				f->cpuinfo_mhz = v;
		} else if (!have_flags && strncmp(line, "flags", 5) == 0) {
			have_flags = 1;
			static const char *const want[] = {"constant_tsc", "nonstop_tsc",
							   "tsc_reliable", "tsc_known_freq",
							   "tsc_adjust", "rdtscp"};
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
				if (has_word(p + 1, want[i])) {
					size_t l = strlen(f->flags);
					nc__fmt(f->flags + l, sizeof(f->flags) - l, "%s%s",
						 l ? " " : "", want[i]);
				}
			f->tsc_known_freq = has_word(p + 1, "tsc_known_freq");
			f->cpuinfo_rdtscp = has_word(p + 1, "rdtscp");
		} else if (strncmp(line, "processor", 9) == 0 && (have_flags || have_mhz)) {
			break; /* the second CPU's block */
		}
		if (*next == '\n' && (have_flags || have_mhz))
			break; /* the blank line that ends the first CPU's block */
	}
	return 0;
}

/* The kernel's own opinion of the TSC: reported, never obeyed (see the
 * TSC policy in x86_tsc.c). */
static void tsc_distrust(struct nc_kernel_view *kv, const struct nc__machine_files *f)
{
	kv->tsc_unstable = -1;
	if (kv->cpuid_tsc != 1)
		return;
	/* read even where the tsc clocksource is listed: kernels before the
	 * tsc-early rework (~4.19) register it with tsc=unstable too */
	if (f->cmd_tsc_unstable) {
		kv->tsc_unstable = 1;
		nc__fmt(kv->tsc_unstable_why, sizeof(kv->tsc_unstable_why),
			 "boot parameter tsc=unstable");
	} else if (kv->available_clocksources[0] && !has_word(kv->available_clocksources, "tsc")) {
		kv->tsc_unstable = 1;
		nc__fmt(kv->tsc_unstable_why, sizeof(kv->tsc_unstable_why),
			 "tsc is not among the kernel's clocksources");
	} else if (kv->available_clocksources[0]) {
		kv->tsc_unstable = 0;
		nc__fmt(kv->tsc_unstable_why, sizeof(kv->tsc_unstable_why),
			 "tsc is a registered clocksource");
	} else if (!f->have_cmd) {
		nc__fmt(kv->tsc_unstable_why, sizeof(kv->tsc_unstable_why),
			 "/proc/cmdline and the clocksource list are not readable");
	}
}

void nc__machine_files_read(struct nc__machine_files *f, char *buf, size_t len)
{
	memset(f, 0, sizeof(*f));
	f->cpuinfo_rdtscp = -1;
	/* the current clocksource is read when asked (nc__machine_clocksource):
	 * it can change while the process runs, and reading it is not free */
	f->sys_ok = read_line("/sys/devices/system/clocksource/clocksource0/available_clocksource",
			      f->available_clocksources, sizeof(f->available_clocksources)) == 0;
	f->proc_ok = read_cpuinfo(f, buf, len) == 0;
#if defined(__x86_64__) || defined(__i386__)
	char khz[32];
	if (read_line("/sys/devices/system/cpu/cpu0/tsc_freq_khz", khz, sizeof(khz)) == 0) {
		char *end;
		unsigned long long v = strtoull(khz, &end, 10);
		f->sysfs_tsc_khz = end == khz || v == 0 || v > 1000000000ull ? -1 : (long long)v;
	}
#endif
	/* the buffer is free again: the command line goes in it */
	f->have_cmd = read_line("/proc/cmdline", buf, len < 2048 ? len : 2048) == 0;
	f->cmd_tsc_unstable = f->have_cmd && has_word(buf, "tsc=unstable");
}

void nc__machine_complete(struct nc__machine *m, const struct nc__machine_files *f)
{
	NC_LOCK_HELD();
	if (m->kernel_read)
		return;
	struct nc_kernel_view *kv = &m->kv;
	const struct nc__cpuid *c = nc__cpuid_full(); /* m->cpuid: this record, completed */
	kv->cpuid_rdtscp = c->valid ? c->rdtscp : -1;
	nc__copy(kv->hypervisor, sizeof(kv->hypervisor), c->hv_sig);
	nc__copy(kv->available_clocksources, sizeof(kv->available_clocksources),
		 f->available_clocksources);
	nc__copy(kv->cpuinfo_tsc_flags, sizeof(kv->cpuinfo_tsc_flags), f->flags);
	m->cpuinfo_mhz = f->cpuinfo_mhz;
	m->tsc_known_freq = f->tsc_known_freq;
	m->cpuinfo_rdtscp = f->cpuinfo_rdtscp;
	m->sysfs_tsc_khz = f->sysfs_tsc_khz;
	tsc_distrust(kv, f);
	/* A minimal container: said in the policy line (current.c), so that
	 * `nanoclock info` explains the unknowns and the measured rate. */
	if (!f->sys_ok || !f->proc_ok)
		nc__fmt(m->unreadable, sizeof(m->unreadable), "%s not readable",
			 !f->sys_ok && !f->proc_ok ? "/proc and /sys" : !f->sys_ok ? "/sys" : "/proc");
	m->kernel_read = 1;
}

/* The start reads CPUID's three leaves and nothing of /proc or /sys
 * (the files and the rest of CPUID are a large share of a first start on a
 * VM): the kernel's files feed only reports, cross-checks of the
 * measured rate, RDTSCP for nc_ticks_end and a shared record's facts, all
 * after the start (nc__machine_complete).  Read now (full) when asked, or
 * when the TSC policy needs the kernel's flags: no invariant-TSC bit. */
NC_START void nc__machine_read(struct nc__machine *m, int full)
{
	memset(m, 0, sizeof(*m));
	m->cpuinfo_rdtscp = -1;
	struct nc_kernel_view *kv = &m->kv;
	const struct nc__cpuid *c = nc__cpuid();
	m->cpuid = c;
	kv->cpuid_tsc = c->valid ? c->tsc : -1;
	kv->cpuid_rdtscp = -1; /* read with the rest */
	kv->cpuid_invariant_tsc = c->valid ? c->invariant : -1;
	kv->cpuid_hypervisor = c->valid ? c->hypervisor : -1;
	kv->tsc_unstable = -1;
#if defined(__x86_64__) || defined(__i386__)
	if (c->valid && c->tsc && !c->invariant)
		full = 1; /* constant_tsc + nonstop_tsc decide */
#endif
	if (full) {
		nc__machine_files_read(&start_files, cpuinfo_text, sizeof(cpuinfo_text));
		nc__machine_complete(m, &start_files);
	}
	nc__machine_process(m);
}

void nc__machine_clocksource(char *buf, size_t len)
{
	if (read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", buf,
		      len) != 0)
		buf[0] = 0;
}

NC_START void nc__machine_process(struct nc__machine *m)
{
	m->tsc_user_disabled = 0;
#if defined(__linux__) && defined(PR_GET_TSC) && (defined(__x86_64__) || defined(__i386__))
	/* RDTSC disabled for this thread (a sandbox, a record/replay tool):
	 * the TSC is not a candidate.  Asking beats executing and trapping. */
	int mode = 0;
	if (prctl(PR_GET_TSC, &mode, 0, 0, 0) == 0 && mode == PR_TSC_SIGSEGV)
		m->tsc_user_disabled = 1;
#endif
}
