/* SPDX-License-Identifier: MIT */
/*
 * An LTTng-UST clock plugin: events of a traced process are stamped with
 * nanoclock's counter (the TSC, CNTVCT_EL0, ...) read inline, instead of
 * LTTng's default clock_gettime(CLOCK_MONOTONIC).
 *
 *   LTTNG_UST_CLOCK_PLUGIN=/path/liblttng-ust-clock-nanoclock.so lttng-sessiond ...
 *   LTTNG_UST_CLOCK_PLUGIN=/path/liblttng-ust-clock-nanoclock.so your-app
 *
 * liblttng-ust(-common) dlopen()s the file named by LTTNG_UST_CLOCK_PLUGIN
 * in every process that links it, lttng-sessiond included (which writes the
 * trace's metadata: the clock's name, uuid, frequency, description and its
 * offset to CLOCK_REALTIME come from the sessiond's copy of this plugin),
 * and calls lttng_ust_clock_plugin_init().  That is the only symbol this
 * object exports: nanoclock is linked in from its static archive with its
 * symbols made local, so the plugin is self-contained and does not clash
 * with a libnanoclock the application may use itself.
 *
 * Like the library it never prints and never exits: a plugin runs inside
 * somebody else's process.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <lttng/ust-clock.h>
#include <nanoclock.h>

#define NC_EXPORT __attribute__((visibility("default")))

/* Everything the callbacks return is computed once, at init: LTTng asks
 * for the frequency, uuid and description when it writes metadata, and
 * the answers must not change during a trace (the metadata's frequency is
 * fixed once written; a later, better estimate of the rate would not be
 * used anyway). */
static uint64_t plugin_hz;
static char plugin_uuid[LTTNG_UST_UUID_STR_LEN]; /* "" when there is none */
static char plugin_description[256];

static uint64_t read64_cb(void)
{
	/* The unordered read, the cheapest: ordering it would cost an LFENCE
	 * per event, and a stamp needs no more than the kernel's own tracing
	 * clock (ftrace's "local", sched_clock: a bare RDTSC) gives.  It may
	 * execute a few instructions early, never before an earlier ordered
	 * read (tests/tool/test_lttng.sh checks each stamp lies between the traced
	 * program's ordered reads around it). */
	return nc_ticks();
}

static uint64_t freq_cb(void)
{
	return plugin_hz;
}

static int uuid_cb(char *uuid)
{
	/* No uuid rather than a made-up one: a uuid tells trace readers that
	 * two traces share a clock, which without the boot id we cannot
	 * claim.  LTTng then writes the clock without one. */
	if (plugin_uuid[0] == '\0')
		return -1;
	memcpy(uuid, plugin_uuid, LTTNG_UST_UUID_STR_LEN);
	return 0;
}

static const char *name_cb(void)
{
	return "nanoclock";
}

static const char *description_cb(void)
{
	return plugin_description;
}

/* The boot id, 36 characters and a NUL, or -1.  read() rather than stdio:
 * nothing buffered, nothing to clean up in a host process. */
static int read_boot_id(char out[37])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, out, 36);
	close(fd);
	if (n != 36)
		return -1;
	out[36] = '\0';
	return 0;
}

/* 64-bit FNV-1a over s, continuing from h. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* A final mix (splitmix64's) so that every output bit depends on every
 * input bit: FNV-1a alone leaves its last bytes' influence in the low bits. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* The clock's uuid: a name-based UUID (RFC 9562 version 8, "custom") of
 * "nanoclock:" + boot id + ":" + counter name.  Every process of one boot
 * reading the same counter gets the same one, so a reader may place their
 * traces on one time line; it differs from LTTng's default monotonic
 * clock, whose uuid is the boot id itself, and from a process that fell
 * back to another counter.  Not SHA-1 (version 5): a 128-bit hash needs no
 * library and nothing here is secret. */
static void make_uuid(const char *counter)
{
	char boot[37];
	if (read_boot_id(boot) != 0) {
		plugin_uuid[0] = '\0';
		return;
	}
	uint64_t h1 = fnv1a(0xcbf29ce484222325ULL, "nanoclock:");
	h1 = fnv1a(fnv1a(fnv1a(h1, boot), ":"), counter);
	/* the second half from a different starting point, so the two halves
	 * are independent */
	uint64_t h2 = fnv1a(mix64(h1 ^ 0x6e616e6f636c6f63ULL), boot);
	h2 = fnv1a(h2, counter);
	uint64_t hi = mix64(h1), lo = mix64(h2);
	hi = (hi & ~0xf000ULL) | 0x8000ULL;                /* version 8 */
	lo = (lo & ~(3ULL << 62)) | (2ULL << 62);          /* variant 10 */
	snprintf(plugin_uuid, sizeof plugin_uuid, "%08x-%04x-%04x-%04x-%012llx",
		 (unsigned)(hi >> 32), (unsigned)(hi >> 16) & 0xffffu, (unsigned)hi & 0xffffu,
		 (unsigned)(lo >> 48), (unsigned long long)(lo & 0xffffffffffffULL));
}

/* nanoclock's OS-clock fallbacks, read through a call rather than inline. */
static int is_os_clock(const char *name)
{
	return strcmp(name, "clock_monotonic_raw") == 0 || strcmp(name, "clock_monotonic") == 0 ||
	       strcmp(name, "gettimeofday") == 0;
}

NC_EXPORT void lttng_ust_clock_plugin_init(void);
NC_EXPORT void lttng_ust_clock_plugin_init(void)
{
	/* nc_init() never leaves the library unusable: on failure (a forced
	 * counter that is unusable, a calibration that failed) it runs on its
	 * own best counter, possibly an OS clock (nanoclock's fallback where
	 * no hardware counter can be trusted), and the description says so.
	 * Its ~1 ms of calibration is paid once per process, at load. */
	int err = nc_init();
	const char *counter = nc_counter_name();
	double hz = nc_ticks_per_second();
	double ppm = nc_ticks_per_second_uncertainty_ppm();
	/* Rounded to whole Hz, as CTF's clock frequency is an integer: at GHz
	 * rates that is below 0.001 ppm, far under the measurement's own
	 * uncertainty (~1 ppm). */
	plugin_hz = hz >= 1.0 ? (uint64_t)(hz + 0.5) : 1;
	make_uuid(counter);

	/* CTF metadata puts the description between double quotes: none of
	 * the strings below can contain one (counter names are identifiers). */
	const char *why = err ? "; nc_init failed (" : "", *what = err ? nc_strerror(err) : "",
		   *then = err ? "), nanoclock runs on its own choice" : "";
	int n;
	if (is_os_clock(counter))
		n = snprintf(plugin_description, sizeof plugin_description,
			     "nanoclock counter %s, an OS clock read through a call, not inline: "
			     "%llu Hz, +-%.3g ppm, rate %s%s%s%s",
			     counter, (unsigned long long)plugin_hz, ppm, nc_ticks_per_second_source(),
			     why, what, then);
	else
		n = snprintf(plugin_description, sizeof plugin_description,
			     "nanoclock counter %s read inline: %llu Hz (rounded to 1 Hz), "
			     "+-%.3g ppm, rate %s%s%s%s",
			     counter, (unsigned long long)plugin_hz, ppm, nc_ticks_per_second_source(),
			     why, what, then);
	if (n < 0)
		plugin_description[0] = '\0';

	/* A setter fails (-EBUSY) only when an override is already enabled
	 * (the program set one of its own first): then leave that clock
	 * alone rather than mix our callbacks into it. */
	if (lttng_ust_trace_clock_set_read64_cb(read64_cb) || lttng_ust_trace_clock_set_freq_cb(freq_cb) ||
	    lttng_ust_trace_clock_set_uuid_cb(uuid_cb) || lttng_ust_trace_clock_set_name_cb(name_cb) ||
	    lttng_ust_trace_clock_set_description_cb(description_cb))
		return;
	(void)lttng_ust_enable_trace_clock_override();
}
