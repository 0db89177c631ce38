/* SPDX-License-Identifier: MIT */
/* The latch writer and reader (latch.h).  Every fence names its pair:
 * the writer's release fence after each change of seq pairs with the
 * reader's acquire fence between its field loads and its second load of
 * seq (nanoclock_impl.h's nc_impl_read, and nc__latch_read_* here): a
 * reader that saw any field value written after a change of seq sees that
 * change, and tries again.  The release store of seq pairs with the
 * reader's acquire load of it: a reader that sees the new seq sees every
 * field written before it. */
#include "latch.h"

struct nc_impl_state nc_impl_g;

static void store_copy(struct nc_impl_copy *d, const struct nc_impl_copy *s)
{
	NC_ST(d->kind, s->kind);
	NC_ST(d->t0, s->t0);
	NC_ST(d->len, s->len);
	NC_ST(d->c0, s->c0);
	NC_ST(d->mul_int, s->mul_int);
	NC_ST(d->mul_frac, s->mul_frac);
	NC_ST(d->span, s->span);
}

void nc__latch_write_line(struct nc_impl_line *l, const struct nc_impl_copy *c)
{
	uint64_t s = __atomic_load_n(&l->seq, __ATOMIC_RELAXED); /* even: only writers change it */
	__atomic_store_n(&l->seq, s + 1, __ATOMIC_RELEASE);      /* readers to copy 1 */
	NC_WFENCE();
	store_copy(&l->copy[0], c);
	__atomic_store_n(&l->seq, s + 2, __ATOMIC_RELEASE);      /* readers back to copy 0 */
	NC_WFENCE();
	store_copy(&l->copy[1], c);
}

uint64_t nc__latch_read_line(const struct nc_impl_line *l, struct nc_impl_copy *o)
{
	/* A retry means a writer changed seq during the read: at most twice
	 * per write, and a writer never leaves seq changing, so this ends. */
	for (;;) {
		uint64_t s = __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
		const struct nc_impl_copy *c = &l->copy[s & 1];
		o->kind = NC_LD(c->kind);
		o->t0 = NC_LD(c->t0);
		o->len = NC_LD(c->len);
		o->c0 = NC_LD(c->c0);
		o->mul_int = NC_LD(c->mul_int);
		o->mul_frac = NC_LD(c->mul_frac);
		o->span = NC_LD(c->span);
		NC_RFENCE();
		if (s == NC_LD(l->seq))
			return s;
	}
}

uint64_t nc__latch_seq(const struct nc_impl_line *l)
{
	return __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
}

void nc__latch_write_conv(uint64_t ns_int, uint64_t ns_frac)
{
	struct nc_impl_conv *c = &nc_impl_g.conv;
	/* the one-word form is cleared first when the new rate does not fit it */
	if (ns_int != 0)
		__atomic_store_n(&c->fast, 0, __ATOMIC_RELEASE);
	uint64_t s = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&c->seq, s + 1, __ATOMIC_RELEASE);
	NC_WFENCE();
	NC_ST(c->ns_int[0], ns_int);
	NC_ST(c->ns_frac[0], ns_frac);
	__atomic_store_n(&c->seq, s + 2, __ATOMIC_RELEASE);
	NC_WFENCE();
	NC_ST(c->ns_int[1], ns_int);
	NC_ST(c->ns_frac[1], ns_frac);
	if (ns_int == 0)
		__atomic_store_n(&c->fast, ns_frac, __ATOMIC_RELEASE);
}

int nc__latch_read_conv(uint64_t *ns_int, uint64_t *ns_frac)
{
	const struct nc_impl_conv *c = &nc_impl_g.conv;
	for (;;) {
		uint64_t s = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		*ns_int = NC_LD(c->ns_int[s & 1]);
		*ns_frac = NC_LD(c->ns_frac[s & 1]);
		NC_RFENCE();
		if (s == NC_LD(c->seq))
			return (*ns_int | *ns_frac) ? 0 : -1;
	}
}
