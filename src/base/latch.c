/* SPDX-License-Identifier: MIT */
/* The latch writer and reader (latch.h).  Every fence names its pair:
 * the writer's release fence after each change of seq pairs with the
 * reader's acquire fence between its field loads and its second load of
 * seq (nanoclock_impl.h's nc_impl_read does the same inline): a reader
 * that saw any field value written after a change of seq sees that
 * change, and tries again.  The release store of seq pairs with the
 * reader's acquire load of it: a reader that sees the new seq sees every
 * field written before it. */
#include "latch.h"

struct nc_impl_state nc_impl_g;

void nc__latch_write(uint64_t *seq, void *obj, void (*store)(void *obj, int i, const void *src),
		     const void *src)
{
	/* The copy readers are not on is written first, then they are moved
	 * to it, then the other is written.  So a writer that stopped anywhere
	 * (its thread gone with a fork that ran no handler) leaves readers on
	 * an intact copy, and the next write repairs the other.  Every write
	 * ends with seq even: readers on copy 0, which the inline reads use. */
	uint64_t s = __atomic_load_n(seq, __ATOMIC_RELAXED); /* only writers change it */
	if (!(s & 1)) {
		store(obj, 1, src);
		__atomic_store_n(seq, ++s, __ATOMIC_RELEASE); /* readers to copy 1 */
		NC_WFENCE();
	}
	store(obj, 0, src);
	__atomic_store_n(seq, s + 1, __ATOMIC_RELEASE);      /* readers to copy 0 */
	NC_WFENCE();
	store(obj, 1, src);
}

uint64_t nc__latch_read(const uint64_t *seq, const void *obj,
			void (*load)(const void *obj, int i, void *dst), void *dst)
{
	/* A retry means a writer changed seq during the read: at most twice
	 * per write, and a writer never leaves seq changing, so this ends. */
	for (;;) {
		uint64_t s = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		load(obj, (int)(s & 1), dst);
		NC_RFENCE();
		if (s == NC_LD(*seq))
			return s;
	}
}

/* ---- the timelines ---- */
NC_START static void line_store(void *obj, int i, const void *src)
{
	struct nc_impl_copy *d = &((struct nc_impl_line *)obj)->copy[i];
	const struct nc_impl_copy *c = src;
	NC_ST(d->kind, c->kind);
	NC_ST(d->t0, c->t0);
	NC_ST(d->len, c->len);
	NC_ST(d->c0, c->c0);
	NC_ST(d->mul_int, c->mul_int);
	NC_ST(d->mul_frac, c->mul_frac);
	NC_ST(d->span, c->span);
}
static void line_load(const void *obj, int i, void *dst)
{
	const struct nc_impl_copy *c = &((const struct nc_impl_line *)obj)->copy[i];
	struct nc_impl_copy *o = dst;
	o->kind = NC_LD(c->kind);
	o->t0 = NC_LD(c->t0);
	o->len = NC_LD(c->len);
	o->c0 = NC_LD(c->c0);
	o->mul_int = NC_LD(c->mul_int);
	o->mul_frac = NC_LD(c->mul_frac);
	o->span = NC_LD(c->span);
}

NC_START void nc__latch_write_line(struct nc_impl_line *l, const struct nc_impl_copy *c)
{
	nc__latch_write(&l->seq, l, line_store, c);
}
uint64_t nc__latch_read_line(const struct nc_impl_line *l, struct nc_impl_copy *o)
{
	return nc__latch_read(&l->seq, l, line_load, o);
}
uint64_t nc__latch_seq(const struct nc_impl_line *l)
{
	return __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
}

/* ---- the conversion ---- */
static void conv_store(void *obj, int i, const void *src)
{
	struct nc_impl_conv_copy *d = &((struct nc_impl_conv *)obj)->copy[i];
	const struct nc_impl_conv_copy *c = src;
	NC_ST(d->ns_int, c->ns_int);
	NC_ST(d->ns_frac, c->ns_frac);
}
static void conv_load(const void *obj, int i, void *dst)
{
	const struct nc_impl_conv_copy *c = &((const struct nc_impl_conv *)obj)->copy[i];
	struct nc_impl_conv_copy *o = dst;
	o->ns_int = NC_LD(c->ns_int);
	o->ns_frac = NC_LD(c->ns_frac);
}

NC_START void nc__latch_write_conv(uint64_t ns_int, uint64_t ns_frac)
{
	struct nc_impl_conv *c = &nc_impl_g.conv;
	struct nc_impl_conv_copy v = {ns_int, ns_frac};
	/* the one-word form is cleared first when the new rate does not fit it */
	if (ns_int != 0)
		__atomic_store_n(&c->fast, 0, __ATOMIC_RELEASE);
	nc__latch_write(&c->seq, c, conv_store, &v);
	if (ns_int == 0)
		__atomic_store_n(&c->fast, ns_frac, __ATOMIC_RELEASE);
}

int nc__latch_read_conv(uint64_t *ns_int, uint64_t *ns_frac)
{
	struct nc_impl_conv_copy v;
	nc__latch_read(&nc_impl_g.conv.seq, &nc_impl_g.conv, conv_load, &v);
	*ns_int = v.ns_int;
	*ns_frac = v.ns_frac;
	return (v.ns_int | v.ns_frac) ? 0 : -1;
}
