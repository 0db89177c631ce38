/* SPDX-License-Identifier: MIT */
/* A producer/consumer pipeline, traced: producers checksum blocks of
 * pseudo-random data (CRC-32), consumers check them; a bounded queue with a
 * mutex and two condition variables between them.  Each stage is a
 * begin/end pair, each wait for the queue too, and the queue's depth a
 * counter, so the trace shows who worked, who waited and how full the
 * queue was.
 *   trace_pc [FILE]     writes FILE (default: a temporary file, removed at
 *                       the end), then reads it back and prints a summary.
 *   nanoclock trace export --format chrome -o pc.json FILE
 * Build: cc trace_pc.c $(pkg-config --cflags --libs nanoclock) -pthread */
#include <nanoclock_trace.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EV_PRODUCE = 1, EV_CONSUME, EV_WAIT_SPACE, EV_WAIT_ITEM, EV_DEPTH };

#define PRODUCERS 2
#define CONSUMERS 2
#define ITEMS 2000 /* per producer */
#define QCAP 16
#define BLOCK 256  /* bytes checksummed per item */

struct item {
	uint32_t seed, crc;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	struct item q[QCAP];
	unsigned head, count;
	int producers_left;
	long bad; /* checksums that did not match: must stay 0 */
} Q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0, 0}},
       0, 0, PRODUCERS, 0};

static struct nc_trace *trace;

static uint32_t crc32(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

static void fill(unsigned char *p, uint32_t seed)
{
	for (size_t i = 0; i < BLOCK; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

static void *producer(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	struct nc_trace_buf *b = NULL;
	nc_trace_thread_start(trace, "producer", &b); /* on failure b stays NULL: no tracing */
	unsigned char buf[BLOCK];
	for (uint32_t i = 0; i < ITEMS; i++) {
		struct item it = {id * 1000003u + i, 0};
		nc_trace_begin(b, EV_PRODUCE, i);
		fill(buf, it.seed);
		it.crc = crc32(buf, BLOCK);
		nc_trace_end(b, EV_PRODUCE, i);
		pthread_mutex_lock(&Q.mu);
		if (Q.count == QCAP) {
			nc_trace_begin(b, EV_WAIT_SPACE, 0);
			while (Q.count == QCAP)
				pthread_cond_wait(&Q.not_full, &Q.mu);
			nc_trace_end(b, EV_WAIT_SPACE, 0);
		}
		Q.q[(Q.head + Q.count++) % QCAP] = it;
		nc_trace_counter(b, EV_DEPTH, Q.count);
		pthread_cond_signal(&Q.not_empty);
		pthread_mutex_unlock(&Q.mu);
	}
	pthread_mutex_lock(&Q.mu);
	Q.producers_left--;
	pthread_cond_broadcast(&Q.not_empty);
	pthread_mutex_unlock(&Q.mu);
	nc_trace_thread_end(b);
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	struct nc_trace_buf *b = NULL;
	nc_trace_thread_start(trace, "consumer", &b);
	unsigned char buf[BLOCK];
	for (;;) {
		pthread_mutex_lock(&Q.mu);
		if (Q.count == 0 && Q.producers_left > 0) {
			nc_trace_begin(b, EV_WAIT_ITEM, 0);
			while (Q.count == 0 && Q.producers_left > 0)
				pthread_cond_wait(&Q.not_empty, &Q.mu);
			nc_trace_end(b, EV_WAIT_ITEM, 0);
		}
		if (Q.count == 0) {
			pthread_mutex_unlock(&Q.mu);
			break;
		}
		struct item it = Q.q[Q.head];
		Q.head = (Q.head + 1) % QCAP;
		Q.count--;
		nc_trace_counter(b, EV_DEPTH, Q.count);
		pthread_cond_signal(&Q.not_full);
		pthread_mutex_unlock(&Q.mu);
		nc_trace_begin(b, EV_CONSUME, it.seed);
		fill(buf, it.seed);
		int ok = crc32(buf, BLOCK) == it.crc;
		nc_trace_end(b, EV_CONSUME, it.seed);
		if (!ok)
			__atomic_fetch_add(&Q.bad, 1, __ATOMIC_RELAXED);
	}
	nc_trace_thread_end(b);
	return NULL;
}

int main(int argc, char **argv)
{
	char tmp[256];
	const char *path = argc > 1 ? argv[1] : NULL;
	if (!path) {
		const char *dir = getenv("TMPDIR");
		snprintf(tmp, sizeof(tmp), "%s/trace_pc-%d.nctrace", dir && *dir ? dir : "/tmp",
			 (int)getpid());
		path = tmp;
	}
	int rc = nc_trace_open(&trace, path, NULL); /* defaults: 10 ms sync period, flushed every 10 ms */
	if (rc) {
		fprintf(stderr, "trace_pc: %s: %s\n", path, nc_trace_strerror(rc));
		return 1;
	}
	nc_trace_name(trace, EV_PRODUCE, "produce");
	nc_trace_name(trace, EV_CONSUME, "consume");
	nc_trace_name(trace, EV_WAIT_SPACE, "wait for space");
	nc_trace_name(trace, EV_WAIT_ITEM, "wait for an item");
	nc_trace_name(trace, EV_DEPTH, "queue depth");
	pthread_t th[PRODUCERS + CONSUMERS];
	for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
		if (pthread_create(&th[i], NULL, i < PRODUCERS ? producer : consumer,
				   (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "trace_pc: cannot start a thread\n");
			return 1;
		}
	for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
		pthread_join(th[i], NULL);
	rc = nc_trace_close(trace);
	if (rc) {
		fprintf(stderr, "trace_pc: %s: %s\n", path, nc_trace_strerror(rc));
		return 1;
	}
	/* read it back: what the tool's stats would say, in short */
	struct nc_trace_reader *r;
	char why[256];
	rc = nc_trace_read_file(&r, path, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "trace_pc: %s: %s\n", path, why);
		return 1;
	}
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	printf("trace_pc: %ld bad checksums; %s: %llu events from %u threads over %.3f ms, %llu "
	       "missing\n",
	       Q.bad, argc > 1 ? path : "(temporary file)", (unsigned long long)in.events, in.threads,
	       (double)(in.last_mono_ns - in.first_mono_ns) / 1e6, (unsigned long long)in.missing);
	nc_trace_read_close(r);
	if (argc <= 1)
		unlink(path);
	return Q.bad == 0 ? 0 : 1;
}
