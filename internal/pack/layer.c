/* The image's one layer. libarchive writes the tar; its output goes through
 * a second libarchive writer (raw format, gzip filter without time stamp)
 * into a file, and both streams are hashed on the way: the tar's digest is
 * the diff_id, the gzip stream's the blob's name. Memory stays constant
 * whatever the layer's size. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/pack/pack-internal.h"

#define COPY_BUF   (64u * 1024u)
#define TAR_BLOCK  10240
#define GZIP_LEVEL "6"

struct layer_sink {
	struct archive *gz; /* raw format, gzip filter, writing to fd */
	int fd;
	crypto_hash_sha256_state tar_hash, gz_hash;
	uint64_t tar_size, gz_size;
	int write_errno; /* set when writing fd failed */
};

void pack_digest_final(crypto_hash_sha256_state *st, char out[PACK_DIGEST_LEN + 1])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(st, h);
	memcpy(out, "sha256:", 7);
	sodium_bin2hex(out + 7, PACK_DIGEST_LEN + 1 - 7, h, sizeof(h));
}

static la_ssize_t gzip_to_fd(struct archive *a, void *data, const void *buf, size_t len)
{
	struct layer_sink *s = data;
	if (pack_write_fd(a, s->fd, &s->write_errno, buf, len, "writing the layer") < 0)
		return -1;
	crypto_hash_sha256_update(&s->gz_hash, buf, len);
	s->gz_size += len;
	return (la_ssize_t)len;
}

static la_ssize_t tar_to_gzip(struct archive *a, void *data, const void *buf, size_t len)
{
	struct layer_sink *s = data;
	la_ssize_t w = archive_write_data(s->gz, buf, len);
	if (w < 0 || (size_t)w != len) {
		const char *why = archive_error_string(s->gz);
		archive_set_error(a, -1 /* not an errno */, "compressing: %s",
		                  why != NULL ? why : "short write");
		return -1;
	}
	crypto_hash_sha256_update(&s->tar_hash, buf, len);
	s->tar_size += len;
	return w;
}

/* The error of a failed libarchive call: the file's errno when writing it
 * failed, else libarchive's text. */
static int layer_fail(const struct layer_sink *s, struct archive *a, const char *what,
                      struct mg_err **err)
{
	if (s->write_errno != 0)
		return mg_err_sys(err, s->write_errno, "writing the layer");
	const char *why = archive_error_string(a);
	return mg_err_set(err, "%s: %s", what, why != NULL ? why : "libarchive failed");
}

static int copy_file(struct archive *tar, const struct layer_sink *s, const struct pack_entry *pe,
                     char *buf, struct mg_err **err)
{
	cleanup_close int fd =
	    open(pe->src, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (pe->follow ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", pe->src);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return mg_err_sys(err, errno, "%s", pe->src);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != pe->size)
		return mg_err_set(err, "%s changed while it was being packed", pe->src);
	uint64_t left = pe->size;
	while (left > 0) {
		ssize_t n = read(fd, buf, left < COPY_BUF ? (size_t)left : COPY_BUF);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return mg_err_sys(err, errno, "reading %s", pe->src);
		}
		if (n == 0)
			return mg_err_set(err, "%s shrank while it was being packed", pe->src);
		la_ssize_t w = archive_write_data(tar, buf, (size_t)n);
		if (w < 0 || w != n)
			return layer_fail(s, tar, pe->src, err);
		left -= (uint64_t)n;
	}
	ssize_t more;
	do
		more = read(fd, buf, 1);
	while (more < 0 && errno == EINTR);
	if (more != 0)
		return mg_err_set(err, "%s grew while it was being packed", pe->src);
	return 0;
}

static int write_entry(struct archive *tar, const struct layer_sink *s, const struct pack_entry *pe,
                       uint64_t mtime, char *buf, struct mg_err **err)
{
	struct archive_entry *e = archive_entry_new();
	if (e == NULL)
		abort();
	archive_entry_set_pathname(e, pe->path);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, (time_t)mtime, 0);
	switch (pe->kind) {
	case PACK_DIR:
		archive_entry_set_filetype(e, AE_IFDIR);
		archive_entry_set_size(e, 0);
		break;
	case PACK_FILE:
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_size(e, (la_int64_t)pe->size);
		break;
	case PACK_SYMLINK:
		archive_entry_set_filetype(e, AE_IFLNK);
		archive_entry_set_symlink(e, pe->target);
		archive_entry_set_size(e, 0);
		break;
	}
	archive_entry_set_perm(e, pe->mode);
	int r = archive_write_header(tar, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return layer_fail(s, tar, pe->src, err);
	if (pe->kind == PACK_FILE && copy_file(tar, s, pe, buf, err) < 0)
		return -1;
	return 0;
}

/* The gzip stream: one raw entry whose data is the whole tar */
static int open_gzip(struct archive *gz, struct layer_sink *s, struct mg_err **err)
{
	if (archive_write_set_format_raw(gz) != ARCHIVE_OK ||
	    archive_write_add_filter_gzip(gz) != ARCHIVE_OK ||
	    archive_write_set_filter_option(gz, "gzip", "timestamp", NULL) != ARCHIVE_OK ||
	    archive_write_set_filter_option(gz, "gzip", "compression-level", GZIP_LEVEL) !=
	        ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(gz, 0) != ARCHIVE_OK ||
	    archive_write_open(gz, s, NULL, gzip_to_fd, NULL) != ARCHIVE_OK)
		return layer_fail(s, gz, "starting the gzip stream", err);
	struct archive_entry *e = archive_entry_new();
	if (e == NULL)
		abort();
	archive_entry_set_pathname(e, "layer.tar");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	int r = archive_write_header(gz, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return layer_fail(s, gz, "starting the gzip stream", err);
	return 0;
}

static int open_tar(struct archive *tar, struct layer_sink *s, struct mg_err **err)
{
	if (archive_write_set_format_pax_restricted(tar) != ARCHIVE_OK ||
	    archive_write_add_filter_none(tar) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(tar, TAR_BLOCK) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(tar, 1) != ARCHIVE_OK ||
	    archive_write_open(tar, s, NULL, tar_to_gzip, NULL) != ARCHIVE_OK)
		return layer_fail(s, tar, "starting the layer", err);
	return 0;
}

static int write_layer(const struct pack_tree *t, uint64_t mtime, int fd,
                       struct pack_layer_info *info, struct mg_err **err)
{
	struct layer_sink s = {.fd = fd};
	crypto_hash_sha256_init(&s.tar_hash);
	crypto_hash_sha256_init(&s.gz_hash);
	struct archive *gz = archive_write_new();
	struct archive *tar = archive_write_new();
	if (gz == NULL || tar == NULL)
		abort();
	s.gz = gz;
	cleanup_free char *buf = xmalloc(COPY_BUF);
	int r = -1;
	if (open_gzip(gz, &s, err) < 0 || open_tar(tar, &s, err) < 0)
		goto out;
	for (size_t i = 0; i < t->n; i++)
		if (write_entry(tar, &s, &t->v[i], mtime, buf, err) < 0)
			goto out;
	if (archive_write_close(tar) != ARCHIVE_OK) {
		layer_fail(&s, tar, "ending the layer", err);
		goto out;
	}
	if (archive_write_close(gz) != ARCHIVE_OK) {
		layer_fail(&s, gz, "ending the gzip stream", err);
		goto out;
	}
	pack_digest_final(&s.tar_hash, info->diff_id);
	pack_digest_final(&s.gz_hash, info->digest);
	info->tar_size = s.tar_size;
	info->size = s.gz_size;
	r = 0;
out:
	archive_write_free(tar);
	archive_write_free(gz);
	return r;
}

/* libarchive's pax writer converts names from the locale's character set
 * to UTF-8, and fails on every non-ASCII name in the C locale; so names are
 * read as UTF-8 while the layer is written (this thread only), and a name
 * that is not UTF-8 is refused rather than written as raw bytes. */
int pack_write_layer(const struct pack_tree *t, uint64_t mtime, int fd,
                     struct pack_layer_info *info, struct mg_err **err)
{
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	if (utf8 == (locale_t)0)
		return mg_err_sys(err, errno, "the locale C.UTF-8, for names in the layer");
	locale_t previous = uselocale(utf8);
	int r = write_layer(t, mtime, fd, info, err);
	uselocale(previous);
	freelocale(utf8);
	return r;
}
