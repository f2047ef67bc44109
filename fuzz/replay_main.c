/* A fuzz target's inputs as a regression test, without libFuzzer: each file
 * named, or each file in a folder named, goes through
 * LLVMFuzzerTestOneInput in a child process of its own, one TAP line each.
 * What the child wrote (a target's logging, a sanitizer's report) is shown
 * only when it failed: it died, or exited other than 0, as the sanitizers
 * make it on a report, a leak included. With no argument: the folders in
 * FUZZ_REPLAY_DIRS (colon-separated), else testdata/fuzz/TARGET, TARGET
 * being this program's name less "_replay" (session_fuzz_replay runs
 * testdata/fuzz/session_fuzz). FUZZ_REPLAY_VERBOSE shows every child's
 * output. The children's TMPDIR is a folder of this program's, removed at
 * the end: what a child that died left there goes too.
 *
 *   replay [-n TIMES] FILE|FOLDER... */
#define _GNU_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/fs.h"
#include "internal/base/strv.h"
#include "internal/base/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX ((size_t)1 << 20)
#define SHOW_MAX  ((off_t)16 << 10) /* of a failed child's output, its end */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect(const char *path, struct strv *files)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		printf("not ok - %s: cannot be read\n", path);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		strv_push(files, path);
		return;
	}
	DIR *d = opendir(path);
	if (d == NULL) {
		printf("not ok - %s: cannot be read\n", path);
		return;
	}
	struct strv names = STRV_INIT;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (e->d_name[0] != '.')
			strv_pushf(&names, "%s/%s", path, e->d_name);
	closedir(d);
	if (names.n > 0)
		qsort(names.v, names.n, sizeof(names.v[0]), by_name);
	for (size_t i = 0; i < names.n; i++)
		strv_push(files, names.v[i]);
	strv_free(&names);
}

/* Run data through the target times times in a child; 0 when it passed.
 * Its output is left in out (a file). */
static int run_child(const char *data, size_t len, long times, int out, double *ms)
{
	fflush(stdout);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (getenv("FUZZ_REPLAY_VERBOSE") == NULL)
			dup2(out, 2);
		for (long k = 0; k < times; k++)
			LLVMFuzzerTestOneInput((const uint8_t *)data, len);
		exit(0);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* The end of what the child wrote, as TAP comments */
static void show(int out)
{
	off_t end = lseek(out, 0, SEEK_END);
	off_t from = end > SHOW_MAX ? end - SHOW_MAX : 0;
	char *text = xmalloc(SHOW_MAX + 1);
	ssize_t n = pread(out, text, SHOW_MAX, from);
	if (n < 0)
		n = 0;
	text[n] = '\0';
	for (char *line = text, *eol; *line != '\0'; line = eol) {
		eol = line + strcspn(line, "\n");
		if (*eol == '\n')
			*eol++ = '\0';
		printf("# %s\n", line);
	}
	free(text);
}

int main(int argc, char **argv)
{
	long times = 1;
	int first = 1;
	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		times = strtol(argv[2], NULL, 10);
		first = 3;
	}
	struct strv files = STRV_INIT;
	if (first < argc) {
		for (int i = first; i < argc; i++)
			collect(argv[i], &files);
	} else {
		const char *dirs = getenv("FUZZ_REPLAY_DIRS");
		const char *self =
		    strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 : argv[0];
		size_t n = strlen(self);
		if (n > 7 && strcmp(self + n - 7, "_replay") == 0)
			n -= 7;
		char *copy =
		    dirs != NULL ? xstrdup(dirs) : xasprintf("testdata/fuzz/%.*s", (int)n, self);
		for (char *d = copy, *end; *d != '\0'; d = end) {
			end = d + strcspn(d, ":");
			if (*end == ':')
				*end++ = '\0';
			if (*d != '\0')
				collect(d, &files);
		}
		free(copy);
	}
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s/fuzz_replay.XXXXXX",
	         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (mkdtemp(tmp) == NULL || setenv("TMPDIR", tmp, 1) < 0) {
		printf("not ok - a temporary folder\n");
		return 1;
	}
	size_t passed = 0;
	for (size_t i = 0; i < files.n; i++) {
		char *data = NULL;
		size_t len = 0;
		if (mg_read_file(files.v[i], INPUT_MAX, &data, &len, NULL) < 0) {
			printf("not ok - %s: cannot be read\n", files.v[i]);
			continue;
		}
		FILE *out = tmpfile();
		double ms = 0;
		int r = out != NULL ? run_child(data, len, times, fileno(out), &ms) : -1;
		if (r == 0) {
			printf("ok - %s runs without a finding (%.1f ms a run)\n", files.v[i],
			       ms / (double)times);
			passed++;
		} else {
			printf("not ok - %s: %s %d\n", files.v[i],
			       r > 128 ? "signal" : "exit status", r > 128 ? r - 128 : r);
			if (out != NULL)
				show(fileno(out));
		}
		if (out != NULL)
			fclose(out);
		free(data);
	}
	nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	printf("1..%zu\n%zu passed, %zu failed\n", files.n, passed, files.n - passed);
	int status = passed == files.n ? 0 : 1;
	strv_free(&files);
	return status;
}
