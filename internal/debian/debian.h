/* Debian packages as image layers (docs/2026-12-02-packages.md).
 *
 * A set of package names becomes one layer: apt resolves its closure from
 * Debian's signed archive against a private, empty dpkg status (or the
 * base's packages, for a set that goes over the base), with a private
 * cache, so nothing of the host's installed set shapes it; the .debs are
 * downloaded (apt checks them against the signed index) and unpacked here
 * with libarchive, never running a maintainer script; what those scripts
 * would have made that a server needs is made instead (deb_fixups). The
 * resolved set (package, version, architecture, sha256) is kept in a lock,
 * so the same set gives the same layer, byte for byte, wherever and
 * whenever it is built again from the same .debs.
 *
 * Ownership: every struct is freed by its _free function, which takes NULL
 * or a zeroed struct; strings in it are its own. */
#ifndef MG_DEBIAN_DEBIAN_H
#define MG_DEBIAN_DEBIAN_H

#include <stdbool.h>
#include <stddef.h>

#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/pack/pack.h"

/* The set every image shares below node: a shell, coreutils, the CA
 * certificates, and the C++ runtime node loads */
extern const char *const deb_base_set[];

/* At most this many names in one set, and packages in one lock */
#define DEB_SET_MAX  64
#define DEB_LOCK_MAX 4096

/* A Debian package's name: [a-z0-9][a-z0-9+.-]+, at most 100 bytes */
bool deb_name_valid(const char *name);

/* Whether s can be a value of a sources line and of apt's configuration
 * (an archive's URL, a keyring's path) as it is: no space, control
 * character, quote, semicolon or brace, and no comma or bracket
 * (signed-by= takes a comma as a second keyring, "]" ends the options) */
bool deb_source_value_safe(const char *s);

/* names checked, sorted, without duplicates (out, appended). what names
 * them in messages ("--with"). */
int deb_set_normalise(const char *const *names, size_t n, const char *what, struct strv *out,
                      struct mg_err **err);

/* ---- a lock: one set, resolved ---------------------------------------- */

struct deb_pkg {
	char *name;
	char *version;
	char *arch;   /* "amd64", "all" */
	char *sha256; /* 64 lower-case hex of the .deb */
};

struct deb_lock {
	struct strv set;      /* what was asked for, sorted */
	char *suite;          /* the archive's suite it was resolved from */
	char *arch;           /* dpkg's name of the machine */
	char *below;          /* sha256 hex of the lock of the layer it goes over; "" for none */
	struct deb_pkg *pkgs; /* sorted by name */
	size_t n;
};

void deb_lock_free(struct deb_lock *l);
/* The lock as text (JSON, members and packages in a fixed order): the same
 * lock gives the same bytes. Allocated. */
char *deb_lock_render(const struct deb_lock *l, size_t *len);
/* text of the file path (named in messages) into out */
int deb_lock_parse(const char *text, size_t len, const char *path, struct deb_lock *out,
                   struct mg_err **err);

/* ---- one .deb --------------------------------------------------------- */

/* Its control file (the stanza dpkg's status holds), allocated */
int deb_read_control(const char *deb, char **control, size_t *len, struct mg_err **err);
/* A field of a control stanza (allocated), or NULL */
char *deb_control_field(const char *control, const char *field);
/* Its data unpacked below rootfd (a folder of mcpgate's own): folders 0755,
 * files 0644 or 0755 (no setuid), links as they are, a hard link as a copy;
 * no path leaves the folder and no link is followed on the way; a device or
 * pipe is refused. Nothing of the package runs. */
int deb_unpack(const char *deb, int rootfd, struct mg_err **err);
/* "sha256 hex" of a file */
int deb_file_sha256(const char *path, char hex[65], struct mg_err **err);

/* What the maintainer scripts of pkgs (the packages in the layer root) would
 * have made that a contained server needs: the CA bundle, the commands that
 * update-alternatives would have linked. Described in the note. */
int deb_fixups(int rootfd, const struct deb_lock *l, struct mg_err **err);

/* ---- a layer ---------------------------------------------------------- */

/* Where the archive is and what it keeps */
struct deb_store {
	char *dir;      /* DATA/debian: apt's private state, the .debs, locks, layers */
	char *arch;     /* dpkg's name: amd64, arm64 */
	char *suite;    /* "bookworm" */
	char *mirror;   /* "http://deb.debian.org/debian" */
	char *security; /* "http://deb.debian.org/debian-security" */
	char *keyring;  /* the archive's signing keys */
	char *apt_get;  /* apt-get's path */
	bool quiet;     /* no progress lines on stderr */
};

/* Which archive: Debian's own unless the person names another (config.toml's
 * [debian]); a field NULL is Debian's. apt checks the archive's Release
 * against the keyring whatever it is: unsigned, insecure or signed by
 * another key is refused. */
struct deb_archive {
	const char *mirror;   /* URL of the archive: SUITE and SUITE-updates */
	const char *security; /* URL of its security archive: SUITE-security */
	const char *keyring;  /* the keys that sign both */
};
#define DEB_DEFAULT_MIRROR   "http://deb.debian.org/debian"
#define DEB_DEFAULT_SECURITY "http://deb.debian.org/debian-security"
#define DEB_DEFAULT_KEYRING  "/usr/share/keyrings/debian-archive-keyring.gpg"

/* The store under data (DATA), for this machine, taking packages from
 * archive (NULL: Debian's); apt-get from PATH */
int deb_store_open(const char *data, const struct deb_archive *archive, struct deb_store *out,
                   struct mg_err **err);
void deb_store_free(struct deb_store *s);

struct deb_layer {
	struct deb_lock lock;
	char *lock_path; /* DATA/debian/locks/KEY.lock */
	char *lock_hex;  /* sha256 of the lock's bytes */
	char *blob;      /* DATA/debian/layers/LOCKHEX.tar.gz */
	struct pack_layer_info info;
};
void deb_layer_free(struct deb_layer *l);

/* The layer of names (normalised; NULL with 0: the base set) over below
 * (NULL: nothing; the base set itself goes over nothing). The lock is used
 * when there is one for the same set over the same below; else apt resolves
 * the set anew (refresh forces it). The layer is built once and kept. */
int deb_layer_get(const struct deb_store *s, const struct strv *names,
                  const struct deb_layer *below, bool refresh, struct deb_layer *out,
                  struct mg_err **err);

/* ---- what a missing command is ---------------------------------------- */

struct deb_hint {
	const char *command; /* as a server names it */
	const char *package; /* the Debian package that gives it */
};

/* The command a server's message says is missing (ENOENT of a spawn,
 * "command not found", "not found" from sh, playwright's browser), and
 * the package that gives it, from a table kept small and checked against
 * Debian's Contents index (deb_hints[]). 1 when text names one (*out set),
 * 0 when not. */
int deb_hint_find(const char *text, size_t len, struct deb_hint *out);
extern const struct deb_hint deb_hints[];

#endif
