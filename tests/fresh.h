/* SPDX-License-Identifier: MIT */
/* A function run in a fresh process (a fork of this one, which has not
 * initialised the library) whose answer, a block of bytes, comes back: the
 * tests' way to ask a process that starts the library under settings of
 * its own.  The answer is written whole before the child exits, read
 * whole (EINTR retried), and the child reaped. */
#ifndef NC_TEST_FRESH_H
#define NC_TEST_FRESH_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* fn(arg, out, size), in the child, fills out and returns how many of its
 * bytes to send (at most size; it may also _exit, sending nothing).  In
 * the parent out holds what came, the rest zeroed.  Returns the number of
 * bytes that came, *status (if given) the child's wait status (-1 if it
 * could not be reaped); -1 if no child could be made.  The child has 300 s
 * (alarm) unless fn sets its own. */
static inline ssize_t in_fresh_process(size_t (*fn)(void *arg, void *out, size_t size), void *arg,
				       void *out, size_t size, int *status)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL); /* nothing buffered here is written twice */
	memset(out, 0, size); /* the child's fn starts from zeros too */
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		alarm(300); /* never a parent waiting for ever (fn may set its own) */
		size_t n = fn(arg, out, size), o = 0;
		if (n > size)
			n = size;
		while (o < n) {
			ssize_t k = write(p[1], (char *)out + o, n - o);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				_exit(1);
			o += (size_t)k;
		}
		_exit(0);
	}
	close(p[1]);
	size_t got = 0;
	while (got < size) {
		ssize_t k = read(p[0], (char *)out + got, size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(p[0]);
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (status) /* -1: not reaped (no exit status of 0 claimed) */
		*status = w == pid ? st : -1;
	return (ssize_t)got;
}

#endif
