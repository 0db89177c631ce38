/* SPDX-License-Identifier: MIT */
/* The kernel's clock is one for every process on the machine, and test
 * suites run side by side (make check-cross runs three architectures'
 * suites at once; a user may run two builds' make check).  A test that
 * changes the clock's state (adjtimex offsets and frequencies,
 * clock_settime) holds this lock exclusively; one that takes
 * CLOCK_REALTIME for the truth to microseconds holds it shared.  Each holds
 * it until its process exits (each case runs in a process of its own).
 * Seen without it: test_utc real_chronyd (chronyd's bound 5.5 us) missed
 * its truth by 266 ns under check-cross while another architecture's
 * kernel_slewing slewed the clock at ~250 ppm. */
#ifndef NC_TEST_CLOCKLOCK_H
#define NC_TEST_CLOCKLOCK_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* 0 once held (waits for the others); -1 if the lock file cannot be had
 * (said on stderr: the test runs without it) */
/* (flock needs no write access: any user opens it) */
static inline int clock_lock(int exclusive)
{
	static int fd = -1;
	if (fd < 0)
		fd = open("/tmp/nanoclock-tests-kernel-clock.lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		fprintf(stderr, "case: no clock lock (%s): other suites may change the clock meanwhile\n",
			strerror(errno));
		return -1;
	}
	int rc;
	while ((rc = flock(fd, exclusive ? LOCK_EX : LOCK_SH)) != 0 && errno == EINTR)
		;
	return rc;
}

#endif
