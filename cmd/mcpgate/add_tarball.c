/* mcpgate add npm:./PACKAGE.tgz: a package from a local tarball (npm pack's
 * output), read here without npm and without running any of it: its
 * package.json (name, version, bin) and its integrity, as npm writes it in
 * a lockfile (sha512, base64). */
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

#define TARBALL_MAX      (256u << 20)
#define PACKAGE_JSON_MAX (1u << 20)

/* "TOP/package.json" with one folder above it, as npm packs a package */
static bool is_package_json(const char *name)
{
	const char *slash = strchr(name, '/');
	return slash != NULL && slash != name && strcmp(slash + 1, "package.json") == 0;
}

int add_read_tarball(const char *path, struct json_value **package, char **integrity,
                     struct mg_err **err)
{
	cleanup_free char *data = NULL;
	size_t len = 0;
	if (mg_read_file(path, TARBALL_MAX, &data, &len, err) < 0)
		return mg_err_wrap(err, "the package tarball");
	unsigned char sum[crypto_hash_sha512_BYTES];
	crypto_hash_sha512(sum, (const unsigned char *)data, len);
	char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha512_BYTES,
	                                   sodium_base64_VARIANT_ORIGINAL)];
	sodium_bin2base64(b64, sizeof(b64), sum, sizeof(sum), sodium_base64_VARIANT_ORIGINAL);

	struct archive *a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_format_tar(a);
	int r = 0;
	char *text = NULL;
	la_ssize_t got = 0;
	if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
		r = mg_err_set(err, "%s is not a gzipped tar (npm pack's output): %s", path,
		               archive_error_string(a));
		goto out;
	}
	struct archive_entry *e;
	int h;
	while ((h = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		if (name == NULL || !is_package_json(name) || archive_entry_filetype(e) != AE_IFREG)
			continue;
		if (archive_entry_size(e) > PACKAGE_JSON_MAX) {
			r = mg_err_set(err, "%s: its %s is larger than %u bytes", path, name,
			               PACKAGE_JSON_MAX);
			goto out;
		}
		size_t size = (size_t)archive_entry_size(e);
		text = xmalloc(size + 1);
		got = archive_read_data(a, text, size);
		if (got < 0 || (size_t)got != size) {
			r = mg_err_set(err, "%s: reading %s: %s", path, name,
			               archive_error_string(a));
			goto out;
		}
		text[size] = '\0';
		break;
	}
	if (text == NULL) {
		r = mg_err_set(
		    err, "%s holds no package.json below one folder (as npm pack makes it)%s%s",
		    path, h == ARCHIVE_OK || h == ARCHIVE_EOF ? "" : ": ",
		    h == ARCHIVE_OK || h == ARCHIVE_EOF ? "" : archive_error_string(a));
		goto out;
	}
	if (json_parse(text, (size_t)got, NULL, package, err) < 0 ||
	    (*package)->kind != JSON_OBJECT) {
		if (*package != NULL) {
			json_free(*package);
			*package = NULL;
			mg_err_set(err, "%s: its package.json is not an object", path);
		}
		r = mg_err_wrap(err, "%s: its package.json", path);
		goto out;
	}
	*integrity = xasprintf("sha512-%s", b64);
out:
	free(text);
	archive_read_free(a);
	return r;
}
