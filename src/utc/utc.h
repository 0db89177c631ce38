/* SPDX-License-Identifier: MIT */
/* Bounds on UTC (src/utc/): the machine's time sources behind one small
 * interface, one file each (adjtimex.c, chrony.c, ...; phc.c reads a PTP
 * hardware clock for ptp.c), and core.c, which chooses one, asks it at each refresh of nc_unix_ns's tie and publishes
 * the bound beside the tie's epoch for nc_utc_now (nanoclock_impl.h).
 * Its place in the layers, and what a new source must provide:
 * docs/architecture.md.  core.c owns the state, guarded by nc__lib_lock. */
#ifndef NC_UTC_UTC_H
#define NC_UTC_UTC_H

#include "../base/compiler.h"
#include "../base/config.h"
#include "../base/lock.h"
#include "../base/refclock.h"
#include "nanoclock.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What a source knows at one moment. */
struct nc__utc_fix {
	int status;          /* NC_UTC_SYNCHRONISED; NC_UTC_FREE_RUNNING (a bound, the
				source itself free-running); NC_UTC_UNKNOWN or
				NC_UTC_DISRUPTED (no bound) with why */
	double bound_ns;     /* |CLOCK_REALTIME - UTC| at most when the figures held */
	double slew_ns;      /* what the source may still slew CLOCK_REALTIME by: the
				Unix-time line follows REALTIME's rate a period late, so
				this is allowed for between the line and REALTIME */
	double drift_ppm;    /* how fast bound_ns grows after (< 0: the default) */
	int64_t as_of_ns;    /* the source's own time of its figures (Unix ns) */
	double horizon_ns;   /* the source's own: its figures void this long after
				they held (0: NANOCLOCK_UTC_HORIZON_S) */
	double fresh_ns;     /* ... and fresh this long (0: four refresh periods, or
				four of cadence_ns where that is longer) */
	double cadence_ns;   /* how often the source renews its figures (ptp4l: its
				sync interval; 0: as often as it is asked) */
	int drop;            /* no bound, and the figures before are void too */
	int on_line;         /* bound_ns is on |nc_unix_ns - UTC| itself (VMClock), not
				on CLOCK_REALTIME: as ClockBound's, the tie is added */
	uint64_t watch_addr, watch_val; /* a word the fast path watches (VMClock's
				disruption marker): 0, or its address and value */
	uint64_t q_tick;     /* a counter value at or before the moment they held */
	int q_by_realtime;   /* q_tick was found from a difference of CLOCK_REALTIME
				times: a step of the clock between them may have moved
				it later by as much as the step */
	char why[320];       /* unknown: why; else a short description */
};

/* Each source's state is guarded by nc__lib_lock: core.c calls these with
 * it held (each function behind them is annotated where it is defined). */
struct nc__utc_source {
	const char *name; /* as NANOCLOCK_UTC_SOURCE names it */
	int id;           /* NC_UTC_SRC_* */
	/* Ready it (arg: what followed "name:" in NANOCLOCK_UTC_SOURCE, or
	 * ""): 0, or -1 with why (not on this machine). */
	int (*open)(const char *arg, char *why, size_t len);
	/* Ask: 1 with *f filled, 0 when no answer came (yet; why in f->why
	 * when there is a reason).  wait_ms 0: never waits (a refresh, maybe
	 * in a signal handler: async-signal-safe calls only); more: waits at
	 * most that long (nc_utc_start). */
	int (*ask)(struct nc__utc_fix *f, double wait_ms);
	void (*close)(void);
	/* where it is asked ("127.0.0.1:323"), for nc_utc_status */
	void (*where)(char *out, size_t len);
};

/* A descriptor a source keeps between refreshes (chrony's socket, the
 * ClockBound segment) is still the one it opened: a program may close
 * descriptors it does not own (closefrom when it daemonises) and open its
 * own under the same number, which the library must never write to, read
 * as its source or close.  fstat's device and inode tell (a socket has an
 * inode of its own). */
static inline int nc__utc_fd_ours(int fd, dev_t dev, ino_t ino)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

NC_HIDDEN extern const struct nc__utc_source nc__utc_adjtimex;
NC_HIDDEN extern const struct nc__utc_source nc__utc_chrony;
NC_HIDDEN extern const struct nc__utc_source nc__utc_clockbound;
NC_HIDDEN extern const struct nc__utc_source nc__utc_vmclock;
NC_HIDDEN extern const struct nc__utc_source nc__utc_ptp;

/* ptp.c: what ptp4l's answers to one exchange said (pure: the tests build
 * answers and check the bound) */
enum {
	NC__PTP_PORT,
	NC__PTP_PROPS,
	NC__PTP_CURRENT,
	NC__PTP_PARENT,
	NC__PTP_HWCLOCK, /* optional: linuxptp 4 answers it, 3 refuses it */
	NC__PTP_TIMEPROPS,
	NC__PTP_STATUS,
	NC__PTP_NQ
};
struct nc__ptp_figs {
	unsigned got;          /* the answers in, a bit each */
	unsigned port_state;   /* the best port's: SLAVE, else UNCALIBRATED, else the first's */
	unsigned port_num;     /* ... its number */
	int got_props;
	unsigned timestamping; /* that port's: 0 software */
	char iface[17];        /* ... and its interface */
	int utc_offset;        /* TIME_PROPERTIES_DATA_SET's currentUtcOffset (s) ... */
	unsigned time_flags;   /* ... and flags (bits 0-1 leap, 2 offset valid, 3 PTP timescale) */
	int hw_n;              /* PORT_HWCLOCK_NP's answers: each port's PHC */
	struct {
		unsigned port;
		int phc_index;     /* (-1: none) */
		unsigned flags;    /* bit 0: a virtual clock */
	} hw[8];
	int64_t leap_at_ns;    /* set by the caller (nc__utc_ptp_leap): the end of
				  the UTC day a leap second was announced for (0:
				  none) ... */
	int64_t leap_until_ns; /* ... and until when after it the grandmaster's
				  UTC offset may still be the old one */
	double cadence_ns;     /* set by the caller: how often ptp4l measures */
	unsigned steps_removed;
	double offset_cur_ns, delay_ns; /* CURRENT_DATA_SET's */
	unsigned gm_class, gm_accuracy;
	unsigned char gm_id[8];
	double offset_ns;      /* TIME_STATUS_NP's master_offset ... */
	int64_t ingress_ns;    /* ... measured then (CLOCK_REALTIME, ns) */
	int gm_present;
};
/* GET request q (NC__PTP_*) as pmc sends it: its length, 0 if len is short */
NC_HIDDEN size_t nc__utc_ptp_request(unsigned char *p, size_t len, int q, uint16_t seq,
				     uint16_t port);
/* One answer of the exchange whose first request had sequence seq0 taken
 * into *g: 0; 1 another exchange's (ignored); -1 refused, with why */
NC_HIDDEN int nc__utc_ptp_take(struct nc__ptp_figs *g, const unsigned char *p, size_t n,
			       uint16_t seq0, char *why, size_t len);
/* phc.c: the system clock read against a PTP hardware clock */
struct nc__phc_meas {
	char dev[80];     /* the PHC's device, /dev/ptpN */
	double off_ns;    /* CLOCK_REALTIME - the PHC, at the reading ... */
	double half_ns;   /* ... within this (half the bracket of system reads) */
	int64_t at_ns;    /* CLOCK_REALTIME then */
	uint64_t at_tick; /* the counter then */
	char why[160];    /* why there is no reading */
};
/* Pure: the narrowest of n readings (CLOCK_REALTIME before, the PHC,
 * CLOCK_REALTIME after; ns) into *m: 0, or -1 with m->why */
NC_HIDDEN int nc__utc_phc_pick(const int64_t (*s)[3], int n, struct nc__phc_meas *m);
/* The PHC ptp4l uses for its port on iface, read: phc_index as ptp4l
 * states it, or -1 where it does not (the kernel's for the interface
 * then).  0, or -1 with m->why. */
NC_HIDDEN int nc__utc_phc_measure(const char *iface, int phc_index, struct nc__phc_meas *m)
	NC_REQUIRES(nc__lib_lock);
NC_HIDDEN void nc__utc_phc_close(void) NC_REQUIRES(nc__lib_lock);
/* Tests: a stand-in for ioctl() (SIOCETHTOOL on a socket, the PHC's
 * PTP_SYS_OFFSET_EXTENDED and PTP_SYS_OFFSET) and the folder the PHC's
 * device is in, where a file the test made stands for it (NULL: ioctl, /dev) */
NC_HIDDEN void nc__utc_phc_test(int (*fn)(int fd, unsigned long req, void *arg),
				const char *dev_dir) NC_REQUIRES(nc__lib_lock);

/* Pure: the leap second the source keeps in mind (*at, *until: 0 none),
 * after an answer at now_real_ns whose leap flags were `flagged`.  A flag
 * seen in the first 6 hours of a UTC day is for the midnight just past
 * (a grandmaster clears it at its first announces after), else for the
 * next; a leap in mind is never moved before it settled; after it, the
 * old UTC offset is allowed for while the flag stays up and LEAP_SETTLE
 * (16 s) after. */
NC_HIDDEN void nc__utc_ptp_leap(int64_t now_real_ns, int flagged, int64_t *at, int64_t *until);
/* Pure: how often ptp4l measures, from how far its measurement time moved
 * between two answers (moved_ns; 0 or less: not at all): *cadence, from
 * the smallest move of this window of 16 moves and the last. */
NC_HIDDEN void nc__utc_ptp_cadence(int64_t moved_ns, double *cadence, double win[2], int *n);
/* The fix the answers give (0, or -1 when refused: f->why says why).  m:
 * the PHC read when ptp4l time-stamps in hardware (NULL: not read). */
NC_HIDDEN int nc__utc_ptp_fix(const struct nc__ptp_figs *g, const struct nc__phc_meas *m,
			      int64_t now_real_ns, struct nc__utc_fix *f);

/* A ClockBound segment (version 2) as the daemon publishes it. */
struct nc__clockbound_out {
	int64_t as_of_ns, void_ns; /* CLOCK_MONOTONIC_COARSE */
	int64_t bound_ns;          /* on |CLOCK_REALTIME - UTC| at as_of */
	uint64_t marker;
	uint32_t drift_ppb;
	int32_t status;            /* 0 unknown, 1 synchronised, 2 free-running, 3 disrupted */
};
NC_HIDDEN size_t nc__utc_clockbound_size(void);
/* a ClockBound segment's magic at p (n bytes read) */
NC_HIDDEN int nc__utc_clockbound_is_segment(const unsigned char *p, size_t n);
/* *o written at path: updated in place, made where nothing is, anything
 * else left alone.  0, or -1 with why and errno. */
NC_HIDDEN int nc__utc_clockbound_publish(const char *path, const struct nc__clockbound_out *o,
					 char *why, size_t len);
/* The segment at path is this process's to publish: never opened as its
 * source (nc__lib_lock held). */
NC_HIDDEN void nc__utc_clockbound_own(const char *path) NC_REQUIRES(nc__lib_lock);
/* 1 if the ClockBound source in use reads the file at path (nc__lib_lock held) */
NC_HIDDEN int nc__utc_clockbound_reads(const char *path) NC_REQUIRES(nc__lib_lock);
/* core.c (nc__lib_lock held): the figures a ClockBound segment states now */
NC_HIDDEN void nc__utc_clockbound_figures(struct nc__clockbound_out *o) NC_REQUIRES(nc__lib_lock);

/* adjtimex's writer, as far as it can be known: the process that runs
 * (/proc/PID/comm).  Only some write an honest bound. */
enum nc__kwriter {
	NC_KW_UNKNOWN,
	NC_KW_NTPD,      /* the kernel PLL's offset and maxerror = root distance */
	NC_KW_CHRONYD,   /* maxerror without the correction it slews itself */
	NC_KW_TIMESYNCD, /* maxerror and esterror 0 at every correction */
	NC_KW_TRUSTED,   /* NANOCLOCK_UTC_SOURCE=adjtimex: the user vouches */
	NC_KW_SEVERAL,   /* daemons of more than one kind hold CAP_SYS_TIME */
};
/* Who can write the kernel's NTP state: the known daemons among the
 * processes under proc_root ("/proc"; tests give a tree of their own)
 * whose effective capabilities include CAP_SYS_TIME (one without it cannot
 * call adjtimex to set: a program merely named ntpd vouches for nothing).
 * Reads every PID's comm and status: run where a read never waits. */
NC_HIDDEN enum nc__kwriter nc__utc_find_writer(const char *proc_root);
/* The VMClock page's disruption marker and the address of its word (for
 * the reads to watch), mapping the device (path NULL: /dev/vmclock0) if not
 * mapped yet; 0, or -1 with why.  Under nc__lib_lock. */
NC_HIDDEN int nc__utc_vmclock_marker(const char *path, uint64_t *marker, uint64_t *addr, char *why,
				     size_t len) NC_REQUIRES(nc__lib_lock);
/* Tests: the VMClock page a ClockBound segment's disruption marker is
 * compared with (NULL: /dev/vmclock0; nc__lib_lock held). */
NC_HIDDEN void nc__utc_clockbound_test_vmclock(const char *path) NC_REQUIRES(nc__lib_lock);
/* Tests: a page of the test's memory read as a device's mapping (a file
 * is read with pread at each refresh instead: a disruption is seen then,
 * where a device's is seen by the very next read; nc__lib_lock held). */
NC_HIDDEN void nc__utc_vmclock_test_page(const volatile unsigned char *page)
	NC_REQUIRES(nc__lib_lock);
/* Tests: what reads the ClockBound segment instead of pread (NULL: pread
 * again), to put a writer between a read's loads (nc__lib_lock held). */
NC_HIDDEN void nc__utc_clockbound_test_read(ssize_t (*fn)(int fd, void *buf, size_t n, off_t off))
	NC_REQUIRES(nc__lib_lock);
/* nc_unix_status's figures from the kernel's (have_k 0: no adjtimex) and
 * the tie's error (pure: the tests feed it recorded adjtimex results) */
NC_HIDDEN void nc__utc_decode(const struct nc__kclock *k, int have_k, double tie_error_ns,
			      struct nc_unix_status *st);
/* Pure (tests feed it recorded adjtimex results): what adjtimex says,
 * written by w, as a fix (q_tick, as_of_ns left for the caller). */
NC_HIDDEN void nc__utc_adjtimex_decode(const struct nc__kclock *k, enum nc__kwriter w,
				       struct nc__utc_fix *f);
/* Pure: chrony's tracking reply (n bytes) to the request with sequence
 * seq, as a fix; 0, or -1 with why (not a good reply).  now_real_ns:
 * CLOCK_REALTIME, for the plausibility of its times. */
NC_HIDDEN int nc__utc_chrony_decode(const unsigned char *p, size_t n, uint32_t seq,
				    int64_t now_real_ns, struct nc__utc_fix *f);
/* chrony's request for the tracking report, sequence seq: its length */
NC_HIDDEN size_t nc__utc_chrony_request(unsigned char *p, size_t len, uint32_t seq);

/* core.c (nc__lib_lock held unless said): choose the source and ask it
 * (nc_utc_start); 0 or NC_EUNKNOWN. */
NC_HIDDEN int nc__utc_start(const struct nc__config *cfg) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN int nc__utc_started(void); /* any thread: start has run */
NC_HIDDEN void nc__utc_stop(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN void nc__utc_status(struct nc_utc_status *st) NC_REQUIRES(nc__lib_lock);
/* The interval from the library's side (a read that left the inline
 * path): never waits. */
NC_HIDDEN int nc__utc_read(struct nc_utc *u);
/* How fast the published bound grows (ns per second, rounded up; 0 when
 * unknown, UINT32_MAX at most): wait-free, for a trace's sync records. */
NC_HIDDEN uint32_t nc__utc_growth_ppb(void);

#endif
