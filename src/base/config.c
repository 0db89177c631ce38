/* SPDX-License-Identifier: MIT */
/* The environment, read once, at initialisation (nc__config_read), and
 * the parsers of its values.  A bad value is never fatal: it is refused
 * with the reason kept for `nanoclock info`, nc_init() reports an error
 * code, and the library runs on its defaults.
 *
 *   NANOCLOCK_COUNTER      force a counter by name (set but empty, or longer
 *                          than any name: refused)
 *   NANOCLOCK_HZ           the counter's rate, e.g. 2.1G, 24MHz
 *   NANOCLOCK_HZ_FORCE=1   use NANOCLOCK_HZ even where measurement disagrees
 *                          (0: do not; anything else is refused)
 *   NANOCLOCK_CALIB_PPM    target uncertainty of the first calibration
 *   NANOCLOCK_CALIB_MAX_MS cap on its length
 *   NANOCLOCK_UNIX_REFRESH_MS  period of the tie to CLOCK_REALTIME
 *
 * Read with secure_getenv: a program running with raised privileges
 * (setuid, setgid, file capabilities) ignores them all, so that its
 * caller cannot slow its clock or change its counter; that they were set
 * and ignored is said (config.ignored). */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The user's text in a reason: at most 40 bytes, control and non-ASCII
 * bytes as '?' (a value with a newline must not break `nanoclock info`'s
 * lines or the tool's one-line error), "..." when cut.  The tool quotes
 * its own arguments by the same rule (tool_arg_quote, tools/args.c). */
const char *nc__quote(const char *s, char *out, size_t outlen)
{
	size_t n = 0, i = 0;
	if (outlen == 0)
		return out;
	if (!s)
		s = "";
	for (; s[i] && i < 40 && n + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (s[i])
		for (int k = 0; k < 3 && n + 1 < outlen; k++)
			out[n++] = '.';
	out[n] = 0;
	return out;
}

/* The one strict reading of a setting's number: leading spaces, an
 * optional '+', a decimal number strtod reads (no hex, "inf", "nan" or
 * other sign), finite; then, where units is set, k, M or G and Hz (as in
 * "2.1G", "2100MHz", "24 MHz"); trailing spaces and nothing else.  0 and
 * *out set, or NC_EINVAL with why[]. */
static int parse_decimal(const char *s, int units, double *out, char *why, size_t whylen)
{
	char q[48];
	if (!s || !*s) {
		snprintf(why, whylen, "empty value");
		return NC_EINVAL;
	}
	const char *p = s;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '+')
		p++;
	if (!(isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1])))) {
		snprintf(why, whylen, "'%s' is not a positive decimal number", nc__quote(s, q, sizeof(q)));
		return NC_EINVAL;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		snprintf(why, whylen, "'%s': hexadecimal is not accepted", nc__quote(s, q, sizeof(q)));
		return NC_EINVAL;
	}
	char *end;
	errno = 0;
	double v = strtod(p, &end);
	if (end == p || errno == ERANGE || !isfinite(v)) {
		snprintf(why, whylen, "'%s' is not a finite number", nc__quote(s, q, sizeof(q)));
		return NC_EINVAL;
	}
	while (isspace((unsigned char)*end))
		end++;
	if (units) {
		switch (*end) {
		case 'k': case 'K': v *= 1e3; end++; break;
		case 'M': v *= 1e6; end++; break;
		case 'G': v *= 1e9; end++; break;
		default: break;
		}
		if ((end[0] == 'H' || end[0] == 'h') && (end[1] == 'z' || end[1] == 'Z'))
			end += 2;
		while (isspace((unsigned char)*end))
			end++;
	}
	if (*end) {
		char q2[48];
		snprintf(why, whylen, "'%s': unexpected text '%.16s'", nc__quote(s, q, sizeof(q)),
			 nc__quote(end, q2, sizeof(q2)));
		return NC_EINVAL;
	}
	*out = v;
	return 0;
}

int nc__parse_hz(const char *s, double *hz, char *why, size_t whylen)
{
	double v;
	int rc = parse_decimal(s, 1, &v, why, whylen);
	if (rc != 0)
		return rc;
	if (!nc__hz_valid(v)) {
		snprintf(why, whylen, "%.6g Hz is outside 1 kHz .. 100 GHz", v);
		return NC_ERANGE;
	}
	*hz = v;
	return 0;
}

int nc__parse_positive(const char *s, double lo, double hi, double *out, char *why, size_t whylen)
{
	double v;
	int rc = parse_decimal(s, 0, &v, why, whylen);
	if (rc != 0)
		return rc;
	if (!(v >= lo && v <= hi)) {
		snprintf(why, whylen, "%.6g is outside %g .. %g", v, lo, hi);
		return NC_ERANGE;
	}
	*out = v;
	return 0;
}

#define DEFAULT_CALIB_PPM 1.0
#define DEFAULT_CALIB_MAX_MS 20.0

static const char *const env_names[] = {"NANOCLOCK_COUNTER",      "NANOCLOCK_HZ",
					"NANOCLOCK_HZ_FORCE",     "NANOCLOCK_CALIB_PPM",
					"NANOCLOCK_CALIB_MAX_MS", "NANOCLOCK_UNIX_REFRESH_MS",
					"NANOCLOCK_LOG",          "NANOCLOCK_SHARED",
					"NANOCLOCK_UTC_SOURCE",   "NANOCLOCK_UTC_DRIFT_PPM",
					"NANOCLOCK_UTC_HORIZON_S"};
#define N_ENV (sizeof(env_names) / sizeof(env_names[0]))

/* Which of env_names the environment holds (bit i: env_names[i]), in one
 * pass over it: a getenv for each name, twice, scanned it 22 times at
 * every start, a large share of an adopting start's work.  Only the names
 * present are then asked of secure_getenv, whose rule (a program with
 * raised privileges sees none) stays the libc's. */
NC_START static unsigned env_present(void)
{
	unsigned m = 0;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "NANOCLOCK_", 10) != 0)
			continue;
		for (size_t i = 0; i < N_ENV; i++) {
			size_t l = strlen(env_names[i]);
			if (strncmp(*e, env_names[i], l) == 0 && (*e)[l] == '=')
				m |= 1u << i;
		}
	}
	return m;
}

NC_START static const char *from_environ(const char *name, void *ctx)
{
	unsigned m = *(const unsigned *)ctx;
	for (size_t i = 0; i < N_ENV; i++)
		if (strcmp(name, env_names[i]) == 0)
			return m >> i & 1 ? secure_getenv(name) : NULL;
	return secure_getenv(name);
}

NC_START void nc__config_read(struct nc__config *c, double app_ppm, double app_ms)
{
	unsigned m = env_present();
	nc__config_read_from(c, app_ppm, app_ms, from_environ, &m);
	for (size_t i = 0; i < N_ENV; i++)
		if ((m >> i & 1) && !secure_getenv(env_names[i])) { /* set, not seen */
			size_t l = strlen(c->ignored);
			snprintf(c->ignored + l, sizeof(c->ignored) - l, "%s%s", l ? ", " : "",
				 env_names[i]);
			c->hz_ignored |= strcmp(env_names[i], "NANOCLOCK_HZ") == 0;
		}
}

typedef const char *getter(const char *name, void *ctx);

/* A numeric setting NAME in [lo, hi]: 1 and *x set where it is valid, 0
 * where it is unset or refused; the first refusal's reason is kept in
 * why[] ("NAME refused<note>: ..."). */
NC_START
static int number_setting(getter *get, void *ctx, const char *name, double lo, double hi,
			  double *x, char *why, size_t whylen, const char *note)
{
	const char *v = get(name, ctx);
	char r[96];
	if (!v)
		return 0;
	if (nc__parse_positive(v, lo, hi, x, r, sizeof(r)) == 0)
		return 1;
	if (!why[0])
		snprintf(why, whylen, "%s refused%s: %.90s", name, note, r);
	return 0;
}

/* NANOCLOCK_COUNTER, NANOCLOCK_HZ and NANOCLOCK_HZ_FORCE */
static void read_counter(struct nc__config *c, getter *get, void *ctx)
{
	char q[48];
	const char *v = get("NANOCLOCK_COUNTER", ctx);
	if (v) {
		c->counter_set = 1;
		if (!*v)
			snprintf(c->counter_why, sizeof(c->counter_why),
				 "NANOCLOCK_COUNTER is set but empty");
		else if (strlen(v) >= sizeof(c->counter))
			snprintf(c->counter_why, sizeof(c->counter_why),
				 "NANOCLOCK_COUNTER is longer than any counter name (%zu characters): '%s'",
				 strlen(v), nc__quote(v, q, sizeof(q)));
		else
			nc__copy(c->counter, sizeof(c->counter), v);
	}
	v = get("NANOCLOCK_HZ", ctx);
	if (v) {
		c->hz_set = 1;
		nc__copy(c->hz_text, sizeof(c->hz_text), v);
		if (nc__parse_hz(v, &c->hz, c->hz_why, sizeof(c->hz_why)) != 0)
			c->hz = 0;
	}
	v = get("NANOCLOCK_HZ_FORCE", ctx);
	c->hz_force = v && strcmp(v, "1") == 0;
	if (v && strcmp(v, "1") != 0 && strcmp(v, "0") != 0)
		snprintf(c->force_why, sizeof(c->force_why),
			 "NANOCLOCK_HZ_FORCE refused: '%s' is not 0 or 1", nc__quote(v, q, sizeof(q)));
}

/* NANOCLOCK_CALIB_PPM and NANOCLOCK_CALIB_MAX_MS, over what the
 * application set */
static void read_calibration(struct nc__config *c, double app_ppm, double app_ms, getter *get,
			     void *ctx)
{
	c->calib_ppm = app_ppm > 0 ? app_ppm : DEFAULT_CALIB_PPM;
	c->calib_set = app_ppm > 0;
	c->calib_max_ms = app_ms > 0 ? app_ms : DEFAULT_CALIB_MAX_MS;
	if (number_setting(get, ctx, "NANOCLOCK_CALIB_PPM", 0.001, 1000, &c->calib_ppm, c->calib_why,
			   sizeof(c->calib_why), ""))
		c->calib_set = 1;
	number_setting(get, ctx, "NANOCLOCK_CALIB_MAX_MS", 0.1, 10000, &c->calib_max_ms, c->calib_why,
		       sizeof(c->calib_why), "");
}

/* NANOCLOCK_SHARED=off|/PATH */
static void read_shared(struct nc__config *c, getter *get, void *ctx)
{
	char q[48];
	const char *v = get("NANOCLOCK_SHARED", ctx);
	if (!v)
		return;
	if (strcmp(v, "off") == 0) {
		c->shared_off = 1;
	} else if (v[0] != '/' || strlen(v) >= sizeof(c->shared_path) - 8) {
		/* relative: it would depend on the working directory; the
		 * 8 bytes: the writer's ".new" suffix */
		c->shared_off = 1;
		snprintf(c->shared_why, sizeof(c->shared_why),
			 "NANOCLOCK_SHARED refused (sharing off): '%s' is not 'off' or an absolute "
			 "path of at most %zu bytes", nc__quote(v, q, sizeof(q)),
			 sizeof(c->shared_path) - 9);
	} else {
		nc__copy(c->shared_path, sizeof(c->shared_path), v);
	}
}

int nc__host_port(const char *arg, char *host, size_t hlen, unsigned long *port, char *why,
		  size_t len)
{
	const char *colon = strrchr(arg, ':');
	if (!colon || colon == arg || (size_t)(colon - arg) >= hlen) {
		snprintf(why, len, "'%.60s' is not HOST:PORT", arg);
		return -1;
	}
	char *end;
	*port = strtoul(colon + 1, &end, 10);
	if (*end || *port == 0 || *port > 65535 || !colon[1] || colon[1] == '-' || colon[1] == '+' ||
	    colon[1] == ' ') {
		snprintf(why, len, "'%.60s': not a port", colon + 1);
		return -1;
	}
	size_t hl = (size_t)(colon - arg);
	if (arg[0] == '[' && hl >= 2 && arg[hl - 1] == ']') { /* [::1]:323 */
		memcpy(host, arg + 1, hl - 2);
		host[hl - 2] = 0;
	} else {
		memcpy(host, arg, hl);
		host[hl] = 0;
	}
	unsigned char a[16];
	if (inet_pton(AF_INET, host, a) != 1 && inet_pton(AF_INET6, host, a) != 1) {
		snprintf(why, len, "'%.40s' is not a numeric address (no name is looked up)", host);
		return -1;
	}
	return 0;
}

/* NANOCLOCK_UTC_SOURCE=auto|off|adjtimex|chrony[:HOST:PORT]|clockbound[:/PATH]|
 * vmclock[:/PATH]|ptp[:/PATH]: a name this library knows, and for chrony an address
 * (checked when used); NANOCLOCK_UTC_DRIFT_PPM and NANOCLOCK_UTC_HORIZON_S */
static void read_utc(struct nc__config *c, getter *get, void *ctx)
{
	char q[48];
	nc__copy(c->utc_source, sizeof(c->utc_source), "auto");
	c->utc_drift_ppm = 15;
	c->utc_horizon_s = 1024;
	const char *v = get("NANOCLOCK_UTC_SOURCE", ctx);
	if (v) {
		static const char *const names[] = {"auto", "off", "adjtimex", "chrony", "clockbound",
						    "vmclock", "ptp"};
		const char *colon = strchr(v, ':');
		size_t nl = colon ? (size_t)(colon - v) : strlen(v);
		int known = 0;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			known |= strlen(names[i]) == nl && strncmp(v, names[i], nl) == 0;
		int is_cb = (nl == 10 && strncmp(v, "clockbound", 10) == 0) ||
			    (nl == 7 && strncmp(v, "vmclock", 7) == 0) ||
			    (nl == 3 && strncmp(v, "ptp", 3) == 0); /* a path follows */
		int takes_arg = (nl == 6 && strncmp(v, "chrony", 6) == 0) || is_cb;
		char host[64], addr_why[96] = "";
		unsigned long port;
		if (known && colon && !is_cb && takes_arg && strlen(colon + 1) < sizeof(c->utc_arg))
			(void)nc__host_port(colon + 1, host, sizeof(host), &port, addr_why, sizeof(addr_why));
		if (addr_why[0]) {
			snprintf(c->utc_why, sizeof(c->utc_why),
				 "NANOCLOCK_UTC_SOURCE refused (auto used): chrony's %s", addr_why);
		} else if (known && is_cb && colon && colon[1] != '/') {
			snprintf(c->utc_why, sizeof(c->utc_why),
				 "NANOCLOCK_UTC_SOURCE refused (auto used): '%.20s%s': a path must be "
				 "absolute", nc__quote(v, q, sizeof(q)), strlen(v) > 20 ? "..." : "");
		} else if (!known || (colon && !takes_arg) ||
			   (colon && strlen(colon + 1) >= sizeof(c->utc_arg)) || (colon && !colon[1]) ||
			   (colon && is_cb && colon[1] != '/')) {
			/* short: the whole line fits nc_info's calib_status (128) */
			snprintf(c->utc_why, sizeof(c->utc_why),
				 "NANOCLOCK_UTC_SOURCE refused (auto used): '%.20s%s' is no source: auto off "
				 "adjtimex chrony clockbound vmclock ptp", nc__quote(v, q, sizeof(q)),
				 strlen(v) > 20 ? "..." : "");
		} else {
			memcpy(c->utc_source, v, nl);
			c->utc_source[nl] = 0;
			if (colon)
				nc__copy(c->utc_arg, sizeof(c->utc_arg), colon + 1);
		}
	}
	number_setting(get, ctx, "NANOCLOCK_UTC_DRIFT_PPM", 0.001, 100000, &c->utc_drift_ppm,
		       c->utc_why, sizeof(c->utc_why), " (15 used)");
	number_setting(get, ctx, "NANOCLOCK_UTC_HORIZON_S", 1, 1e6, &c->utc_horizon_s, c->utc_why,
		       sizeof(c->utc_why), " (1024 used)");
}

NC_START
void nc__config_read_from(struct nc__config *c, double app_ppm, double app_ms, getter *get,
			  void *ctx)
{
	memset(c, 0, sizeof(*c));
	read_counter(c, get, ctx);
	read_calibration(c, app_ppm, app_ms, get, ctx);
	read_shared(c, get, ctx);
	read_utc(c, get, ctx);
	number_setting(get, ctx, "NANOCLOCK_UNIX_REFRESH_MS", 1, 60000, &c->unix_refresh_ms,
		       c->unix_why, sizeof(c->unix_why), "");
}
