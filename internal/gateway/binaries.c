/* mcpgate's own binaries that run inside containers (mcpgate-egress,
 * mcpgate-launch): each is used from a private copy in the data folder named
 * by its content hash, so that a binary replaced on the host while a session
 * runs, or one a server could reach, is never what a container mounts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

static int hash_file(const char *path, char hex[65], struct mg_err **err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", path);
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	unsigned char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crypto_hash_sha256_update(&st, buf, (unsigned long long)n);
	int e = errno;
	close(fd);
	if (n < 0)
		return mg_err_sys(err, e, "reading %s", path);
	unsigned char digest[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&st, digest);
	sodium_bin2hex(hex, 65, digest, sizeof(digest));
	return 0;
}

static int copy_file(const char *from, const char *to, struct mg_err **err)
{
	cleanup_free char *tmp = xasprintf("%s.tmp.%d", to, (int)getpid());
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return mg_err_sys(err, errno, "%s", from);
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		int e = errno;
		close(in);
		return mg_err_sys(err, e, "creating %s", tmp);
	}
	char buf[65536];
	ssize_t n;
	int r = 0;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			r = mg_err_sys(err, errno, "writing %s", tmp);
			break;
		}
	if (n < 0)
		r = mg_err_sys(err, errno, "reading %s", from);
	close(in);
	if (fsync(out) < 0 && r == 0)
		r = mg_err_sys(err, errno, "writing %s", tmp);
	close(out);
	if (r == 0 && rename(tmp, to) < 0)
		r = mg_err_sys(err, errno, "renaming %s", tmp);
	if (r < 0)
		unlink(tmp);
	return r;
}

/* NAME in folder dir, when it is there and runnable */
static char *runnable_in(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	if (access(path, X_OK) == 0)
		return path;
	free(path);
	return NULL;
}

/* Where binary NAME is: configured, else beside mcpgate, else (a build tree:
 * build/san/mcpgate) two folders up, else beside the configured proxy */
static char *find_binary(const char *name, const char *configured, const char *egress)
{
	if (configured != NULL)
		return xstrdup(configured);
	cleanup_free char *up = xasprintf("../../%s", name);
	const char *const beside[] = {name, up, NULL};
	char *found = mg_find_beside_self(beside, X_OK);
	if (found == NULL && egress != NULL) {
		cleanup_free char *dir = xstrdup(egress);
		char *slash = strrchr(dir, '/');
		if (slash != NULL) {
			*slash = '\0';
			found = runnable_in(dir, name);
		}
	}
	return found;
}

int gw_binary_prepare(struct session *s, const char *name, const char *configured,
                      const char *folder, char **out, struct mg_err **err)
{
	*out = NULL;
	cleanup_free char *src = find_binary(name, configured, s->cfg->mcp.egress);
	if (src == NULL)
		return mg_err_set(err, "no %s beside mcpgate", name);
	char hex[65];
	if (hash_file(src, hex, err) < 0)
		return -1;
	cleanup_free char *dir = xasprintf("%s/%s", s->data_dir, folder);
	if (mg_mkdir_p(dir, 0700, err) < 0)
		return -1;
	char *dst = xasprintf("%s/%s-%s", dir, name, hex);
	char check[65];
	/* a copy that exists is used only if its content still has its name */
	if (access(dst, X_OK) != 0 || hash_file(dst, check, NULL) < 0 || strcmp(check, hex) != 0) {
		if (copy_file(src, dst, err) < 0) {
			free(dst);
			return mg_err_wrap(err, "copying %s", name);
		}
	}
	*out = dst;
	return 0;
}
