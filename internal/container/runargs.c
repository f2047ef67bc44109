/* The arguments of `run` built from data (docs/contained-servers.md):
 *
 *  - every --mount value, written field by field and quoted the way podman
 *    and docker read it (Go's encoding/csv), so that a path with a comma, a
 *    colon or a double quote is carried whole, and one that cannot be
 *    carried (a control character, bytes that are not UTF-8) is refused
 *    with what it came from named;
 *  - the places a contained process may write, each a tmpfs of its own,
 *    capped, noexec, nosuid, nodev, and owned by the process's user;
 *  - on docker, a read-only tmpfs over each VOLUME of the image, or a
 *    refusal naming the VOLUME mcpgate cannot cover: never a skip, which
 *    lets docker make a writable volume on the host's disk. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"

/* Every place a contained process can write, and nothing else: a tmpfs of
 * its own each. The mode is the one asked unless the image has that folder:
 * runc gives a tmpfs the mode of the folder it covers (runc 1.1,
 * mountToRootfs), so each belongs to the process's user, which can write it
 * whatever that mode. */
static const struct ctr_place {
	const char *path, *mode, *size;
} places[] = {
    {"/tmp", "1777", "64m"},
    {"/var/tmp", "1777", "64m"},
    {"/run", "0755", "16m"},
};
/* /dev/shm is the runtime's own mount (noexec, nosuid, nodev, 1777), capped
 * here; /dev/mqueue holds only message queues, capped by RLIMIT_MSGQUEUE */
#define SHM_SIZE "64m"
/* over a VOLUME of the image: nothing fits in it */
#define COVER_SIZE "4096"

static bool is_place(const char *path)
{
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++)
		if (strcmp(places[i].path, path) == 0)
			return true;
	return false;
}

/* Why s cannot be in a runtime's option value, or NULL */
static const char *uncarried(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			return "it holds a control character";
	if (mg_utf8_check(s, strlen(s)) != strlen(s))
		return "it is not UTF-8";
	return NULL;
}

int ctr_push_mount(struct strv *a, const char *const *fields, size_t n, const char *what,
                   struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	for (size_t i = 0; i < n; i++) {
		const char *f = fields[i];
		const char *why = uncarried(f);
		if (why != NULL) {
			/* it may be an image's words: rendered where it goes in */
			cleanup_free char *shown = mg_shown(f, strlen(f));
			mg_buf_free(&b);
			return mg_err_set(err, "%s cannot be given to the runtime (--mount %s): %s",
			                  what, shown, why);
		}
		if (i > 0)
			mg_buf_putc(&b, ',', NULL);
		/* a field with a comma or a quote is one CSV field in quotes,
		 * its quotes doubled; podman and docker both read --mount so */
		if (strpbrk(f, ",\"") == NULL) {
			mg_buf_puts(&b, f, NULL);
			continue;
		}
		mg_buf_putc(&b, '"', NULL);
		for (const char *p = f; *p != '\0'; p++) {
			if (*p == '"')
				mg_buf_putc(&b, '"', NULL);
			mg_buf_putc(&b, *p, NULL);
		}
		mg_buf_putc(&b, '"', NULL);
	}
	strv_push(a, "--mount");
	strv_push_owned(a, mg_buf_steal(&b, NULL));
	return 0;
}

int ctr_push_places(const struct ctr_driver *d, struct strv *a, const char *user,
                    struct mg_err **err)
{
	unsigned uid = 0, gid = 0;
	char tail = '\0';
	if (user == NULL || sscanf(user, "%u:%u%c", &uid, &gid, &tail) != 2)
		return mg_err_set(err, "the user %s is not UID:GID",
		                  user != NULL ? user : "(none)");
	if (d->kind == CTR_PODMAN)
		/* podman's own tmpfs on /run, /tmp and /var/tmp of a read-only
		 * container: writable, executable and without a size */
		strv_push(a, "--read-only-tmpfs=false");
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		const struct ctr_place *p = &places[i];
		strv_push(a, "--tmpfs");
		/* the owner: podman takes it from --user (U), docker as options */
		if (d->kind == CTR_PODMAN)
			strv_pushf(a, "%s:rw,noexec,nosuid,nodev,mode=%s,size=%s,U", p->path,
			           p->mode, p->size);
		else
			strv_pushf(a, "%s:rw,noexec,nosuid,nodev,mode=%s,size=%s,uid=%u,gid=%u",
			           p->path, p->mode, p->size, uid, gid);
	}
	strv_push(a, "--shm-size=" SHM_SIZE);
	return 0;
}

/* path as Go's filepath.Clean writes it, which is how docker keys an
 * image's VOLUMEs: no empty, "." or ".." component, no trailing slash
 * (an absolute path's ".." at the root stays at the root) */
static char *clean_path(const char *path)
{
	size_t len = strlen(path);
	char *out = xmalloc(len + 2);
	size_t o = 0;
	out[o++] = '/';
	for (const char *p = path; *p != '\0';) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 1 && out[o - 1] != '/')
				o--;
			if (o > 1)
				o--;
		} else {
			if (o > 1)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n + (p[n] == '/');
	}
	out[o] = '\0';
	return out;
}

int ctr_push_volume_covers(const struct ctr_driver *d, struct strv *a,
                           const struct ctr_image_config *image, const struct strv *targets,
                           const char *server, struct mg_err **err)
{
	/* podman is told to ignore them (--image-volume=ignore) */
	if (d->kind != CTR_DOCKER || image == NULL)
		return 0;
	for (size_t i = 0; i < image->volumes.n; i++) {
		const char *v = image->volumes.v[i];
		/* the image's words, rendered where they go into mcpgate's text */
		cleanup_free char *shown = mg_shown(v, strlen(v));
		if (v[0] != '/')
			return mg_err_set(
			    err,
			    "server %s: its image declares VOLUME %s, which is not an "
			    "absolute path: mcpgate cannot cover it, and docker would "
			    "make a writable volume for it on the host's disk. Rebuild "
			    "the image without it, or run the server with podman (which "
			    "ignores an image's volumes)",
			    server, shown);
		cleanup_free char *clean = clean_path(v);
		if (strcmp(clean, "/") == 0)
			return mg_err_set(
			    err,
			    "server %s: its image declares VOLUME %s, the root itself: "
			    "rebuild the image without it, or run the server with podman",
			    server, shown);
		/* a writable place of mcpgate's, or a mount of mcp.toml's, is on
		 * that very path already: docker makes no volume there, and a
		 * second mount would be refused as a duplicate */
		bool covered = is_place(clean);
		for (size_t k = 0; targets != NULL && k < targets->n && !covered; k++)
			covered = strcmp(targets->v[k], clean) == 0;
		if (covered)
			continue;
		const char *why = uncarried(clean);
		if (why != NULL)
			return mg_err_set(
			    err,
			    "server %s: its image declares VOLUME %s, which mcpgate cannot "
			    "give docker to cover (%s), and docker would make a writable "
			    "volume for it on the host's disk. Rebuild the image without "
			    "it, or run the server with podman (which ignores an image's "
			    "volumes)",
			    server, shown, why);
		cleanup_free char *dest = xasprintf("destination=%s", clean);
		cleanup_free char *what =
		    xasprintf("server %s: its image's VOLUME %s", server, shown);
		const char *fields[] = {"type=tmpfs", dest, "tmpfs-size=" COVER_SIZE, "readonly"};
		if (ctr_push_mount(a, fields, 4, what, err) < 0)
			return -1;
	}
	return 0;
}
