/* SPDX-License-Identifier: MIT */
/* The environment, read once by initialisation, and the parsers of its
 * values (config.c; also built alone into the fuzzers). */
#ifndef NC_BASE_CONFIG_H
#define NC_BASE_CONFIG_H

#include "compiler.h"

#include <stddef.h>

/* the one rule for a plausible counter frequency */
#define NC_HZ_MIN 1e3  /* 1 kHz */
#define NC_HZ_MAX 1e11 /* 100 GHz */
static inline int nc__hz_valid(double hz) { return hz >= NC_HZ_MIN && hz <= NC_HZ_MAX; }

struct nc__config {
	char counter[32];        /* NANOCLOCK_COUNTER ("" if unset or refused) */
	int counter_set;
	char counter_why[160];   /* set but empty or too long: refused, and why */
	char hz_text[96];        /* NANOCLOCK_HZ as found */
	int hz_set;
	double hz;               /* parsed value, 0 if unset or refused */
	char hz_why[128];        /* why refused */
	int hz_force;            /* NANOCLOCK_HZ_FORCE=1: use even if measurement disagrees */
	char force_why[96];      /* NANOCLOCK_HZ_FORCE neither 0 nor 1: refused, and why */
	double calib_ppm;        /* target uncertainty of the first calibration */
	double calib_max_ms;     /* its cap */
	int calib_set;           /* the target was asked for (nc_set_calibration_target,
				    NANOCLOCK_CALIB_PPM): the first calibration runs to it;
				    otherwise it states early and the refreshes reach it */
	char calib_why[128];     /* a refused calibration setting, if any */
	double unix_refresh_ms;  /* NANOCLOCK_UNIX_REFRESH_MS, 0 if unset */
	char unix_why[128];      /* ... refused, and why */
	int shared_off;          /* NANOCLOCK_SHARED=off, or a refused value */
	char shared_path[256];   /* NANOCLOCK_SHARED=PATH ("": the default places) */
	char shared_why[160];    /* a refused NANOCLOCK_SHARED, and why ("" if none) */
	char utc_source[16];     /* NANOCLOCK_UTC_SOURCE's name ("auto" if unset) ... */
	char utc_arg[128];       /* ... and what followed its ':' */
	char utc_why[200];       /* a refused UTC setting, and why ("" if none) */
	double utc_drift_ppm;    /* NANOCLOCK_UTC_DRIFT_PPM: the drift assumed where a
				    source states none (default 15) */
	double utc_horizon_s;    /* NANOCLOCK_UTC_HORIZON_S: a bound older than this is
				    unknown (default 1024) */
	char ignored[160];       /* variables set but ignored: the program runs with
				    raised privileges (secure_getenv) */
	int hz_ignored;          /* NANOCLOCK_HZ itself among them (not a name it begins) */
};
/* User text fit for a one-line reason: at most 40 bytes, control and
 * non-ASCII bytes as '?', "..." when cut.  Returns out. */
NC_HIDDEN const char *nc__quote(const char *s, char *out, size_t outlen);
/* Parse a NANOCLOCK_HZ value: a decimal number with an optional unit
 * ("2.1G", "24 MHz").  0 and *hz set, or NC_EINVAL/NC_ERANGE with a reason
 * in why[]. */
NC_HIDDEN int nc__parse_hz(const char *s, double *hz, char *why, size_t whylen);
/* A plain positive decimal in [lo, hi], read as strictly as NANOCLOCK_HZ
 * (no unit): 0, or NC_EINVAL/NC_ERANGE with why[]. */
/* chrony's HOST:PORT: a numeric IPv4 or [IPv6] address (no name is looked
 * up) into host, a port 1-65535; 0, or -1 with why */
NC_HIDDEN int nc__host_port(const char *arg, char *host, size_t hlen, unsigned long *port,
			    char *why, size_t len);
NC_HIDDEN int nc__parse_positive(const char *s, double lo, double hi, double *out, char *why,
				 size_t whylen);
/* Fill *c from the environment (secure_getenv) and from what the
 * application set before init (app_ppm/app_ms, 0 if not set). */
NC_HIDDEN void nc__config_read(struct nc__config *c, double app_ppm, double app_ms);
/* ... from another environment: get(name, ctx) returns a value or NULL
 * (the fuzzer's; nc__config_read passes secure_getenv). */
NC_HIDDEN void nc__config_read_from(struct nc__config *c, double app_ppm, double app_ms,
				    const char *(*get)(const char *name, void *ctx), void *ctx);

#endif
