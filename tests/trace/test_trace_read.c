/* SPDX-License-Identifier: MIT */
/* The reader against bad input: every prefix of a valid trace, every byte
 * of it corrupted, hand-made hostile records, random garbage — each one
 * refused with a one-line reason or read consistently, never a crash (the
 * sanitizer builds run this too) — and the forward-compatibility rules:
 * unknown record types, unknown in-block records, longer records and a
 * newer minor version are read; a newer major version is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "trace_util.h"

static unsigned char *valid;
static size_t valid_len;

/* A small trace with every kind of record: two threads, names, both
 * per-event options, several blocks, the totals. */
static int make_valid(void **state)
{
	(void)state;
	char *p = tmp_path("valid");
	struct nc_trace *t = open_small(p, 512, 16, NC_TRACE_DROP, NC_TRACE_GSEQ | NC_TRACE_CPUTIME);
	if (!t)
		return -1;
	struct nc_trace_buf *a, *b;
	if (nc_trace_thread_start(t, "alpha", &a) || nc_trace_thread_start(t, "beta", &b))
		return -1;
	nc_trace_name(t, 1, "one");
	nc_trace_name(t, 2, "two \"quoted\", with commas");
	for (int i = 0; i < 30; i++) {
		nc_trace_begin(i % 2 ? a : b, 1, (uint64_t)i);
		nc_trace_end(i % 2 ? a : b, 1, (uint64_t)i);
		nc_trace_counter(a, 2, (uint64_t)i * 3);
	}
	nc_trace_thread_end(a);
	nc_trace_thread_end(b);
	if (nc_trace_close(t))
		return -1;
	valid = slurp(p, &valid_len);
	unlink(p);
	free(p);
	return valid ? 0 : -1;
}

static int drop_valid(void **state)
{
	(void)state;
	free(valid);
	return 0;
}

/* Whether the last accepted read took in the whole input. */
static int last_complete;

/* Reads buf: 1 accepted (and fully iterated), 0 refused with one line. */
static int try_read(const unsigned char *buf, size_t len, struct nc_trace_info *info)
{
	struct nc_trace_reader *r;
	char why[256];
	memset(why, 'x', sizeof(why));
	int rc = nc_trace_read_mem(&r, buf, len, why, sizeof(why));
	if (rc != 0) {
		if (why[0] == 0 || memchr(why, 0, sizeof(why)) == NULL || strchr(why, '\n'))
			fail_msg("refused (%d) without a one-line reason", rc);
		return 0;
	}
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	struct nc_trace_merge *m;
	assert_int_equal(nc_trace_merge_open(&m, &r, 1), 0);
	struct nc_trace_rec e;
	uint64_t n = 0;
	while (nc_trace_merge_next(m, &e))
		n++;
	nc_trace_merge_close(m);
	assert_int_equal(n, in.events);
	for (unsigned i = 0; i < in.threads; i++) {
		struct nc_trace_thread_info ti;
		assert_int_equal(nc_trace_read_thread(r, i, &ti), 0);
	}
	if (info)
		*info = in;
	uint64_t used = 0;
	char stop[256];
	memset(stop, 'x', sizeof(stop));
	last_complete = nc_trace_read_complete(r, &used, stop, sizeof(stop));
	if (last_complete)
		assert_int_equal(used, len);
	else if (used >= len || !strstr(stop, "cut short") || strchr(stop, '\n'))
		fail_msg("incomplete read without a one-line reason: %s", stop);
	nc_trace_read_close(r);
	return 1;
}

static void test_valid(void **state)
{
	(void)state;
	struct nc_trace_info in;
	assert_int_equal(try_read(valid, valid_len, &in), 1);
	assert_true(in.closed);
	assert_int_equal(in.threads, 2);
	assert_int_equal(in.events, 90);
	assert_true(in.blocks_read >= 4);
	assert_int_equal(in.flags & (NC_TRACE_GSEQ | NC_TRACE_CPUTIME), NC_TRACE_GSEQ | NC_TRACE_CPUTIME);
}

/* Record boundaries of the valid file. */
static int is_boundary(size_t off)
{
	size_t o = NC__TR_FILE_HDR;
	while (o < valid_len) {
		if (o == off)
			return 1;
		o += nc__get32(valid + o + 4);
	}
	return off == valid_len;
}

static void test_every_prefix(void **state)
{
	(void)state;
	size_t domain_end = NC__TR_FILE_HDR + NC__TR_DOMAIN_BYTES;
	for (size_t n = 0; n < valid_len; n++) {
		struct nc_trace_info in;
		int ok = try_read(valid, n, &in);
		/* any cut after the clock-domain record is a trace whose writer
		 * stopped: readable up to the cut, says it was not closed, and
		 * is complete only when cut between records */
		if (ok != (n >= domain_end))
			fail_msg("prefix of %zu bytes: %s", n, ok ? "accepted" : "refused");
		if (ok) {
			assert_false(in.closed);
			if (last_complete != is_boundary(n))
				fail_msg("prefix of %zu bytes: complete %d", n, last_complete);
		}
	}
}

static void test_every_byte(void **state)
{
	(void)state;
	unsigned char *b = malloc(valid_len);
	static const unsigned char vals[] = {0x00, 0xff, 0x80, 0x01};
	long accepted = 0, refused = 0;
	for (size_t i = 0; i < valid_len; i++)
		for (size_t v = 0; v < sizeof(vals) + 1; v++) {
			memcpy(b, valid, valid_len);
			b[i] = v < sizeof(vals) ? vals[v] : (unsigned char)(b[i] ^ 0x5a);
			if (try_read(b, valid_len, NULL))
				accepted++;
			else
				refused++;
		}
	assert_true(refused > 0 && accepted > 0);
	free(b);
}

static void test_garbage(void **state)
{
	(void)state;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned char *b = malloc(8192);
	for (int k = 0; k < 3000; k++) {
		size_t n = (size_t)(x % 8192);
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (unsigned char)x;
		}
		/* half of them keep a valid header and clock-domain record, so
		 * the garbage reaches the record and block parsers */
		if (k % 2 && n > 272)
			memcpy(b, valid, 272);
		/* refused, or (a record running past the end) read as cut short
		 * with nothing in it */
		struct nc_trace_info in;
		if (try_read(b, n, &in)) {
			assert_false(last_complete);
			assert_int_equal(in.events, 0);
		}
	}
	free(b);
}

/* A copy of the valid trace with `len` bytes inserted at `at` (filled
 * with fill); *n its length. */
static unsigned char *with_insert(size_t at, const void *fill, size_t len, size_t *n)
{
	unsigned char *b = malloc(valid_len + len);
	memcpy(b, valid, at);
	memcpy(b + at, fill, len);
	memcpy(b + at + len, valid + at, valid_len - at);
	*n = valid_len + len;
	return b;
}

/* The first record of a type, its offset. */
static size_t find_rec(const unsigned char *b, size_t len, uint32_t type)
{
	for (size_t o = NC__TR_FILE_HDR; o + 8 <= len; o += nc__get32(b + o + 4))
		if (nc__get32(b + o) == type)
			return o;
	return 0;
}

static void expect_refused(const unsigned char *b, size_t n, int rc_want, const char *word)
{
	struct nc_trace_reader *r;
	char why[256];
	int rc = nc_trace_read_mem(&r, b, n, why, sizeof(why));
	if (rc != rc_want || !strstr(why, word))
		fail_msg("expected %d with '%s', got %d: %s", rc_want, word, rc, rc ? why : "accepted");
}

static void test_hostile(void **state)
{
	(void)state;
	unsigned char *b = malloc(valid_len + 64);
	size_t blk = find_rec(valid, valid_len, NC__TR_BLOCK);
	size_t dom = find_rec(valid, valid_len, NC__TR_DOMAIN);
	assert_true(blk > 0 && dom > 0);

	expect_refused(valid, 0, NC_TRACE_EFORMAT, "empty");
	expect_refused((const unsigned char *)"hello, world: not a trace at all", 32,
		       NC_TRACE_EFORMAT, "not a nanoclock trace");
	memcpy(b, valid, valid_len);
	b[8] = 2; /* major version 2 */
	expect_refused(b, valid_len, NC_TRACE_EVERSION, "version 2.");
	memcpy(b, valid, valid_len);
	b[16] = 1; /* byte-order mark of a big-endian writer */
	b[23] = 8;
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "byte-order");
	/* record lengths: zero, not a multiple of 8, past the end */
	memcpy(b, valid, valid_len);
	nc__put32(b + blk + 4, 0);
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "length 0");
	nc__put32(b + blk + 4, 12);
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "length 12");
	nc__put32(b + blk + 4, (uint32_t)(valid_len - blk + 8)); /* past the end: cut short */
	struct nc_trace_info in;
	assert_int_equal(try_read(b, valid_len, &in), 1);
	assert_false(last_complete);
	assert_int_equal(in.events, 0);
	/* a block of an undeclared thread */
	memcpy(b, valid, valid_len);
	nc__put32(b + blk + 8, 0xffffffffu);
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "undeclared thread");
	/* an in-block record of length 0 words, and one running past the block */
	memcpy(b, valid, valid_len);
	b[blk + NC__TR_BLOCK_HDR + 7] = 0;
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "length 0 words");
	b[blk + NC__TR_BLOCK_HDR + 7] = 255;
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "bytes remain");
	/* an event before any sync record */
	memcpy(b, valid, valid_len);
	b[blk + NC__TR_BLOCK_HDR + 6] = 0; /* the sync record becomes an event */
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "sync");
	/* the header's event count lies */
	memcpy(b, valid, valid_len);
	b[blk + 40]++;
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "header says");
	/* the clock-domain record: a rate that does not match its conversion */
	memcpy(b, valid, valid_len);
	b[dom + 8 + 33] ^= 0x10;
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "rate and conversion");
	/* no clock-domain record first */
	memcpy(b, valid, NC__TR_FILE_HDR);
	memcpy(b + NC__TR_FILE_HDR, valid + blk, valid_len - blk);
	expect_refused(b, NC__TR_FILE_HDR + valid_len - blk, NC_TRACE_EFORMAT, "before the clock-domain");
	/* stray bytes after the last record: a cut-short record */
	memcpy(b, valid, valid_len);
	memset(b + valid_len, 0x55, 4);
	assert_int_equal(try_read(b, valid_len + 4, &in), 1);
	assert_false(last_complete);
	assert_int_equal(in.events, 90);
	/* a block larger than any writer makes */
	memcpy(b, valid, valid_len);
	nc__put32(b + blk + 4, NC__TR_MAX_BLOCK + 8);
	expect_refused(b, valid_len, NC_TRACE_EFORMAT, "at most");
	free(b);
}

static void test_forward_compatible(void **state)
{
	(void)state;
	struct nc_trace_info in;
	size_t n, dom = find_rec(valid, valid_len, NC__TR_DOMAIN);
	size_t blk = find_rec(valid, valid_len, NC__TR_BLOCK);
	/* a record type of a later version, after the clock-domain record */
	unsigned char rec[24] = {0};
	nc__put32(rec, 99);
	nc__put32(rec + 4, sizeof(rec));
	unsigned char *b = with_insert(blk, rec, sizeof(rec), &n);
	assert_int_equal(try_read(b, n, &in), 1);
	assert_int_equal(in.events, 90);
	free(b);
	/* a longer clock-domain record (fields appended later) */
	unsigned char pad[16] = {0};
	b = with_insert(dom + NC__TR_DOMAIN_BYTES, pad, sizeof(pad), &n);
	nc__put32(b + dom + 4, NC__TR_DOMAIN_BYTES + sizeof(pad));
	assert_int_equal(try_read(b, n, &in), 1);
	assert_int_equal(in.events, 90);
	free(b);
	/* an unknown in-block record (kind 0x81) after the block's sync record */
	uint64_t w[2] = {0, 0};
	unsigned char inrec[16];
	w[0] = (uint64_t)0x81 << 48 | (uint64_t)2 << 56;
	nc__put64(inrec, w[0]);
	nc__put64(inrec + 8, w[1]);
	b = with_insert(blk + NC__TR_BLOCK_HDR + NC__TR_SYNC_WORDS_UTC * 8, inrec, sizeof(inrec), &n);
	nc__put32(b + blk + 4, nc__get32(valid + blk + 4) + 16);
	assert_int_equal(try_read(b, n, &in), 1);
	assert_int_equal(in.events, 90);
	free(b);
	/* a newer minor version */
	b = malloc(valid_len);
	memcpy(b, valid, valid_len);
	b[10] = 7;
	assert_int_equal(try_read(b, valid_len, &in), 1);
	assert_int_equal(in.version_minor, 7);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_forward_compatible),
	};
	return cmocka_run_group_tests(tests, make_valid, drop_valid);
}
