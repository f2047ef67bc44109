/* A package as a local gzipped tar, read here without running any of it:
 * npm pack's output (npm:./PACKAGE.tgz: its package.json and its integrity,
 * as npm writes it in a lockfile, sha512 and base64), and a Python source
 * distribution (pypi:./NAME-VERSION.tar.gz: its pyproject.toml). */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cmd/mcpgate/add.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"

#define TARBALL_MAX (256u << 20)

/* "TOP/BASE" with one folder above it, as npm and Python pack a package */
static bool is_member(const char *name, const char *base)
{
	const char *slash = strchr(name, '/');
	return slash != NULL && slash != name && strcmp(slash + 1, base) == 0;
}

int add_tar_member(const char *path, const char *data, size_t len, const char *base, size_t max,
                   char **text, size_t *text_len, struct mg_err **err)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_format_tar(a);
	int r = 0;
	*text = NULL;
	*text_len = 0;
	if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
		r = mg_err_set(err, "%s is not a gzipped tar: %s", path, archive_error_string(a));
		goto out;
	}
	struct archive_entry *e;
	int h;
	while ((h = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		if (name == NULL || !is_member(name, base) || archive_entry_filetype(e) != AE_IFREG)
			continue;
		if (archive_entry_size(e) < 0 || (size_t)archive_entry_size(e) > max) {
			r = mg_err_set(err, "%s: its %s is larger than %zu bytes", path, name, max);
			goto out;
		}
		size_t size = (size_t)archive_entry_size(e);
		*text = xmalloc(size + 1);
		la_ssize_t got = archive_read_data(a, *text, size);
		if (got < 0 || (size_t)got != size) {
			r = mg_err_set(err, "%s: reading %s: %s", path, name,
			               archive_error_string(a));
			goto out;
		}
		(*text)[size] = '\0';
		*text_len = size;
		r = 1;
		break;
	}
	if (r == 0 && h != ARCHIVE_EOF)
		r = mg_err_set(err, "%s: %s", path, archive_error_string(a));
out:
	if (r < 0) {
		free(*text);
		*text = NULL;
	}
	archive_read_free(a);
	return r;
}

int add_read_tarball(const char *path, struct json_value **package, char **integrity,
                     struct mg_err **err)
{
	cleanup_free char *data = NULL, *text = NULL;
	size_t len = 0, n = 0;
	if (mg_read_file(path, TARBALL_MAX, &data, &len, err) < 0)
		return mg_err_wrap(err, "the package tarball");
	unsigned char sum[crypto_hash_sha512_BYTES];
	crypto_hash_sha512(sum, (const unsigned char *)data, len);
	char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha512_BYTES,
	                                   sodium_base64_VARIANT_ORIGINAL)];
	sodium_bin2base64(b64, sizeof(b64), sum, sizeof(sum), sodium_base64_VARIANT_ORIGINAL);
	int r = add_tar_member(path, data, len, "package.json", 1u << 20, &text, &n, err);
	if (r < 0)
		return mg_err_wrap(err, "npm pack's output");
	if (r == 0)
		return mg_err_set(
		    err, "%s holds no package.json below one folder (as npm pack makes it)", path);
	if (json_parse(text, n, NULL, package, err) < 0 || (*package)->kind != JSON_OBJECT) {
		if (*package != NULL) {
			json_free(*package);
			*package = NULL;
			mg_err_set(err, "%s: its package.json is not an object", path);
		}
		return mg_err_wrap(err, "%s: its package.json", path);
	}
	*integrity = xasprintf("sha512-%s", b64);
	return 0;
}
