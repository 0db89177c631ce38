/* SPDX-License-Identifier: MIT */
/* Running a program the suite built (the tool, a test's own copy) as the
 * tests run: NC_TEST_RUN's words (qemu-user for a cross build, from `make
 * check-cross`) before it, and no shell between (under valgrind every
 * program exec'd is traced, a shell and what it starts too, and their
 * descriptors counted).  Its standard output comes back in a buffer. */
#ifndef NC_TEST_RUN_H
#define NC_TEST_RUN_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* $(B)/tests/../REL, REL relative to the build folder ("nanoclock"):
 * 0, or -1 when this test's own path is unreadable or REL not there */
static inline int run_built(const char *rel, char *out, size_t len)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = 0;
	int w = snprintf(out, len, "%s/../%s", self, rel);
	return w > 0 && (size_t)w < len && access(out, X_OK) == 0 ? 0 : -1;
}

/* Runs prog with args (NULL-ended) under NC_TEST_RUN's runner in a child,
 * with envp (NULL: this process's environment); in_child(arg), if given,
 * runs in the child after its standard output went to the pipe and before
 * the exec (it may _exit).  The output, NUL-ended, in buf (what does not
 * fit is read and dropped, so the child never blocks on a full pipe).
 * The exit status (127 also when the exec failed), 128 + the signal that
 * ended it, or -1 when no child could be started (or len is 0).  At most
 * 16 runner words and 62 arguments are passed. */
static inline int run_capture(const char *prog, const char *const *args, char *const *envp,
			      void (*in_child)(void *), void *arg, char *buf, size_t len)
{
	char words[512] = "", *argv[64];
	int n = 0;
	const char *r = getenv("NC_TEST_RUN");
	snprintf(words, sizeof(words), "%s", r ? r : "");
	for (char *save = NULL, *t = strtok_r(words, " ", &save); t && n < 16;
	     t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	argv[n++] = (char *)prog;
	for (int i = 0; args && args[i] && n < 63; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	int fd[2];
	/* close-on-exec: another thread's child must not hold the write end
	 * (the read would wait for it); dup2 clears it on the child's fd 1 */
	if (len == 0 || pipe2(fd, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		if (in_child)
			in_child(arg);
		if (envp)
			execvpe(argv[0], argv, envp);
		else
			execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	char sink[4096];
	ssize_t k;
	for (;;) {
		char *to = got < len - 1 ? buf + got : sink;
		size_t room = got < len - 1 ? len - 1 - got : sizeof(sink);
		if ((k = read(fd[0], to, room)) < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (to != sink)
			got += (size_t)k;
	}
	buf[got] = 0;
	close(fd[0]);
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
