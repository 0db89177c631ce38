/* SPDX-License-Identifier: MIT */
/* Counters the application registers (nc_set_counter), the extra
 * candidates the tests inject (nc__test_add_candidate), and the
 * calibration target set through the API.  Registration flows one way:
 * init calls nc__registry_freeze() once, which hands everything to
 * selection and closes the registry; later registrations get NC_EBUSY,
 * because ticks already handed out belong to the selected counter. */
#include "counter.h"
#include "../base/lock.h"

#include <stdio.h>
#include <string.h>

struct slot {
	struct nc__counter c;
	struct nc_counter_spec spec; /* the application's, name copied */
	char name[32];
};

/* The registrations: this file owns them.  registry_lock guards them
 * (before initialisation freezes them; nothing else takes it); read-only
 * once frozen.  Apart, not one block: the tests' slots are large and kept
 * in the cold section (compiler.h). */
static struct nc__mutex registry_lock = NC_MUTEX_INIT;
static int frozen NC_GUARDED_BY(registry_lock);
static struct slot app NC_GUARDED_BY(registry_lock);
static int have_app NC_GUARDED_BY(registry_lock);
NC_COLD static struct slot tests[NC_MAX_REGISTERED - 1] NC_GUARDED_BY(registry_lock);
static int ntests NC_GUARDED_BY(registry_lock);
static double app_ppm NC_GUARDED_BY(registry_lock);
static double app_ms NC_GUARDED_BY(registry_lock);

static uint64_t spec_read(void *ctx)
{
	const struct nc_counter_spec *s = ctx;
	return s->read(s->ctx);
}

/* The application's stated rate is offered as the counter's stated source:
 * cross-checked like any other, not taken on faith.  Unchecked by design:
 * selection asks it, after the freeze (read-only from then on). */
static int app_stated(const struct nc__machine *m, struct nc_hz_source *out, int max) NC_NO_TSA
{
	(void)m;
	if (max < 1)
		return 0;
	if (app.spec.hz > 0)
		nc__stated_set(&out[0], "application", app.spec.hz, 0, "nc_set_counter hz");
	else
		nc__stated_set(&out[0], "application", 0, 0, "hz 0: calibrate");
	return 1;
}

static int fill(struct slot *s, const struct nc_counter_spec *spec, const char *what)
{
	if (!spec || !spec->read || !spec->name || !spec->name[0] || spec->bits < 1 ||
	    spec->bits > 64)
		return NC_EINVAL;
	if (spec->hz != 0 && !nc__hz_valid(spec->hz))
		return NC_ERANGE;
	memset(s, 0, sizeof(*s));
	s->spec = *spec;
	nc__copy(s->name, sizeof(s->name), spec->name);
	s->spec.name = s->name;
	s->c.name = s->name;
	s->c.what = what;
	s->c.kind = NC_IMPL_KIND_CALL;
	s->c.read = spec_read;
	s->c.read_ordered = spec_read;
	s->c.ctx = &s->spec;
	s->c.bits = spec->bits;
	s->c.trap = 1; /* nothing can tell in advance whether its read faults */
	return 0;
}

int nc_set_counter(const struct nc_counter_spec *spec)
{
	nc__mutex_lock(&registry_lock);
	int rc = frozen ? NC_EBUSY : fill(&app, spec, "application-supplied counter");
	if (rc == 0) {
		app.c.stated = app_stated;
		have_app = 1;
	}
	nc__mutex_unlock(&registry_lock);
	return rc;
}

int nc_set_calibration_target(double target_ppm, double max_ms)
{
	if (!(target_ppm >= 0.001 && target_ppm <= 1000) || !(max_ms >= 0.1 && max_ms <= 10000))
		return NC_ERANGE;
	nc__mutex_lock(&registry_lock);
	int rc = frozen ? NC_EBUSY : 0;
	if (rc == 0) {
		app_ppm = target_ppm;
		app_ms = max_ms;
	}
	nc__mutex_unlock(&registry_lock);
	return rc;
}

/* Tests only (hidden): an extra candidate in the normal selection.  A
 * stated hz makes it a fixed-rate counter, so tests need no calibration. */
int nc__test_add_candidate(const struct nc_counter_spec *spec)
{
	nc__mutex_lock(&registry_lock);
	int rc = frozen ? NC_EBUSY : ntests >= NC_MAX_REGISTERED - 1 ? NC_ERANGE : 0;
	if (rc == 0)
		rc = fill(&tests[ntests], spec, "test candidate");
	if (rc == 0)
		tests[ntests++].c.fixed_hz = spec->hz;
	nc__mutex_unlock(&registry_lock);
	return rc;
}

NC_START void nc__registry_freeze(struct nc__registered *out)
{
	nc__mutex_lock(&registry_lock);
	frozen = 1;
	memset(out, 0, sizeof(*out));
	out->app = have_app ? &app.c : NULL;
	for (int i = 0; i < ntests; i++)
		out->test[i] = &tests[i].c;
	out->ntest = ntests;
	out->app_ppm = app_ppm;
	out->app_ms = app_ms;
	nc__mutex_unlock(&registry_lock);
}
