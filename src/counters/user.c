/* A counter supplied by the application (nc_set_counter), and the extra
 * candidates the tests inject (nc__test_add_candidate).  Both must be in
 * place before initialisation: afterwards the tick domain is fixed. */
#include "../internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct nc__counter user;
static char user_name[32];
static int have_user;

#define MAX_TEST 6
static struct nc__counter tests[MAX_TEST];
static char test_names[MAX_TEST][32];
static int ntests;

static uint64_t user_read(void *ctx)
{
	const struct nc_counter_spec *s = ctx;
	return s->read(s->ctx);
}

static struct nc_counter_spec user_spec, test_specs[MAX_TEST];

static int fill(struct nc__counter *c, struct nc_counter_spec *keep, char *name,
		const struct nc_counter_spec *spec)
{
	if (!spec || !spec->read || !spec->name || !spec->name[0] || spec->bits < 1 ||
	    spec->bits > 64)
		return NC_EINVAL;
	if (spec->hz != 0 && !(spec->hz >= 1e3 && spec->hz <= 1e11))
		return NC_ERANGE;
	*keep = *spec;
	snprintf(name, 32, "%s", spec->name);
	keep->name = name;
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->what = "application-supplied counter";
	c->kind = NC__KIND_CALL;
	c->read = user_read;
	c->read_ordered = user_read;
	c->ctx = keep;
	c->bits = spec->bits;
	c->penalty_ns = 0;
	/* a stated rate is cross-checked like any other, not taken on faith;
	 * exact only in the sense that no hardware source disputes it */
	c->fixed_hz = 0;
	return 0;
}

/* The user's stated rate is offered as the counter's stated source. */
static int user_stated(struct nc_hz_source *out, int max)
{
	if (max < 1)
		return 0;
	if (user_spec.hz > 0)
		nc__src_set(&out[0], "application", user_spec.hz, 0, "nc_set_counter hz");
	else
		nc__src_set(&out[0], "application", 0, 0, "hz 0: calibrate");
	return 1;
}

int nc_set_counter(const struct nc_counter_spec *spec)
{
	pthread_mutex_lock(&mu);
	int rc = nc__initialised() ? NC_EBUSY : fill(&user, &user_spec, user_name, spec);
	if (rc == 0) {
		user.stated = user_stated;
		have_user = 1;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

const struct nc__counter *nc__user_counter(void)
{
	pthread_mutex_lock(&mu);
	const struct nc__counter *c = have_user ? &user : NULL;
	pthread_mutex_unlock(&mu);
	return c;
}

/* Tests only (hidden): an extra candidate in the normal selection. A
 * stated hz makes it a fixed-rate counter, so tests need no calibration. */
int nc__test_add_candidate(const struct nc_counter_spec *spec)
{
	pthread_mutex_lock(&mu);
	int rc = nc__initialised() ? NC_EBUSY : ntests >= MAX_TEST ? NC_ERANGE : 0;
	if (rc == 0)
		rc = fill(&tests[ntests], &test_specs[ntests], test_names[ntests], spec);
	if (rc == 0) {
		tests[ntests].what = "test candidate";
		tests[ntests].fixed_hz = spec->hz;
		ntests++;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

int nc__test_candidates(const struct nc__counter **out, int max)
{
	pthread_mutex_lock(&mu);
	int n = ntests < max ? ntests : max;
	for (int i = 0; i < n; i++)
		out[i] = &tests[i];
	pthread_mutex_unlock(&mu);
	return n;
}
