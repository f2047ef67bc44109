/* The listener's bearer token: one file of its own in mcpgate's state
 * folder, made at first use, 0600, never logged. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/listen/listen.h"

void lst_token_free(char *token)
{
	if (token != NULL)
		sodium_free(token);
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* 1: read; 0: there is no file; -1: refused or failed */
static int read_token(const char *path, char *token, struct mg_err **err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return mg_err_sys(err, errno, "%s", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return mg_err_sys(err, errno, "%s", path);
	if (!S_ISREG(st.st_mode))
		return mg_err_set(err, "%s is not a regular file", path);
	if (st.st_uid != geteuid())
		return mg_err_set(err, "%s belongs to another user (uid %u)", path,
		                  (unsigned)st.st_uid);
	if ((st.st_mode & 077) != 0)
		return mg_err_set(err,
		                  "%s can be read by others (mode %04o); remove it and mcpgate "
		                  "makes a new token (0600), or chmod 600 it",
		                  path, (unsigned)(st.st_mode & 07777));
	char buf[LST_TOKEN_HEX + 2];
	ssize_t n;
	do
		n = read(fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return mg_err_sys(err, errno, "reading %s", path);
	bool ok = (n == LST_TOKEN_HEX || (n == LST_TOKEN_HEX + 1 && buf[LST_TOKEN_HEX] == '\n')) &&
	          all_hex(buf, LST_TOKEN_HEX);
	if (ok)
		memcpy(token, buf, LST_TOKEN_HEX);
	sodium_memzero(buf, sizeof(buf));
	if (!ok)
		return mg_err_set(err,
		                  "%s does not hold a token (64 hex digits); remove it and mcpgate "
		                  "makes a new one",
		                  path);
	token[LST_TOKEN_HEX] = '\0';
	return 1;
}

/* 1: made; 0: another process made it first; -1: failed */
static int make_token(const char *path, struct mg_err **err)
{
	cleanup_free char *copy = xstrdup(path);
	const char *dir = dirname(copy);
	if (mg_mkdir_p(dir, 0700, err) < 0)
		return -1;
	cleanup_free char *tmp = xasprintf("%s.tmp-XXXXXX", path);
	/* mkostemp: O_EXCL and mode 0600 */
	cleanup_close int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return mg_err_sys(err, errno, "creating a file beside %s", path);
	unsigned char raw[LST_TOKEN_BYTES];
	char hex[LST_TOKEN_HEX + 2];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(hex, LST_TOKEN_HEX + 1, raw, sizeof(raw));
	sodium_memzero(raw, sizeof(raw));
	hex[LST_TOKEN_HEX] = '\n';
	ssize_t w = write(fd, hex, LST_TOKEN_HEX + 1);
	int e = errno;
	sodium_memzero(hex, sizeof(hex));
	if (w != LST_TOKEN_HEX + 1 || fsync(fd) < 0) {
		unlink(tmp);
		return mg_err_sys(err, w < 0 ? e : errno != 0 ? errno : EIO, "writing %s", tmp);
	}
	/* link() never replaces: a token another listener made first stays */
	int r = link(tmp, path);
	e = errno;
	unlink(tmp);
	if (r < 0 && e == EEXIST)
		return 0;
	if (r < 0)
		return mg_err_sys(err, e, "making %s", path);
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
	return 1;
}

int lst_token_load(const char *path, char **token, bool *created, struct mg_err **err)
{
	if (sodium_init() < 0)
		return mg_err_set(err, "libsodium cannot start");
	char *t = sodium_malloc(LST_TOKEN_HEX + 1);
	if (t == NULL)
		abort();
	*created = false;
	for (int attempt = 0; attempt < 2; attempt++) {
		int r = read_token(path, t, err);
		if (r == 1) {
			*token = t;
			return 0;
		}
		if (r < 0)
			break;
		r = make_token(path, err);
		if (r < 0)
			break;
		*created = r == 1;
	}
	sodium_free(t);
	if (err != NULL && *err == NULL)
		mg_err_set(err, "%s: cannot read or make the token", path);
	return -1;
}

bool lst_token_matches(const char *token, const char *authorization)
{
	static const char prefix[] = "Bearer ";
	if (authorization == NULL || strncasecmp(authorization, prefix, sizeof(prefix) - 1) != 0)
		return false;
	const char *given = authorization + sizeof(prefix) - 1;
	/* the length is no secret: every token has the same */
	if (strlen(given) != LST_TOKEN_HEX)
		return false;
	return sodium_memcmp(given, token, LST_TOKEN_HEX) == 0;
}
