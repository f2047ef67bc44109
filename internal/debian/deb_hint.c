/* Which Debian package gives a command a server found missing.
 *
 * A small table, not the archive's whole Contents index: a server names a
 * command by its generic name (python3, java, awk), and the package a
 * person should add is often not the one whose file it is (python3-minimal
 * owns /usr/bin/python3; python3 is the interpreter with its library), or
 * no package owns the name at all and update-alternatives makes it (awk,
 * java, which). Each row was checked against bookworm's Contents-amd64 and
 * Contents-all (scripts/check-hints does it again); the commands are those
 * MCP servers are seen to spawn. */
#define _GNU_SOURCE
#include <ctype.h>
#include <string.h>

#include "internal/debian/debian.h"

const struct deb_hint deb_hints[] = {
    {"sh", "dash"},
    {"dash", "dash"},
    {"bash", "bash"},
    {"env", "coreutils"},
    {"ls", "coreutils"},
    {"cat", "coreutils"},
    {"grep", "grep"},
    {"sed", "sed"},
    {"find", "findutils"},
    {"xargs", "findutils"},
    {"awk", "mawk"},
    {"which", "debianutils"},
    {"diff", "diffutils"},
    {"patch", "patch"},
    {"file", "file"},
    {"tar", "tar"},
    {"gzip", "gzip"},
    {"xz", "xz-utils"},
    {"bzip2", "bzip2"},
    {"zip", "zip"},
    {"unzip", "unzip"},
    {"git", "git"},
    {"hg", "mercurial"},
    {"svn", "subversion"},
    {"ssh", "openssh-client"},
    {"scp", "openssh-client"},
    {"rsync", "rsync"},
    {"curl", "curl"},
    {"wget", "wget"},
    {"jq", "jq"},
    {"rg", "ripgrep"},
    {"fdfind", "fd-find"},
    {"tree", "tree"},
    {"ps", "procps"},
    {"lsof", "lsof"},
    {"openssl", "openssl"},
    {"gpg", "gpg"},
    {"python3", "python3"},
    {"python", "python-is-python3"},
    {"pip3", "python3-pip"},
    {"pip", "python3-pip"},
    {"perl", "perl"},
    {"ruby", "ruby"},
    {"java", "default-jre-headless"},
    {"make", "make"},
    {"gcc", "gcc"},
    {"cc", "gcc"},
    {"g++", "g++"},
    {"c++", "g++"},
    {"sqlite3", "sqlite3"},
    {"psql", "postgresql-client"},
    {"mysql", "mariadb-client"},
    {"mariadb", "mariadb-client"},
    {"pandoc", "pandoc"},
    {"pdftotext", "poppler-utils"},
    {"ffmpeg", "ffmpeg"},
    {"convert", "imagemagick"},
    {"chromium", "chromium"},
    {"dig", "bind9-dnsutils"},
    {NULL, NULL},
};

static const struct deb_hint *lookup(const char *cmd, size_t n)
{
	/* a path names the command by its last part: spawn /usr/bin/git */
	for (size_t i = n; i > 0; i--)
		if (cmd[i - 1] == '/') {
			cmd += i;
			n -= i;
			break;
		}
	char low[64];
	if (n == 0 || n >= sizeof(low))
		return NULL;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)cmd[i]);
	low[n] = '\0';
	for (size_t i = 0; deb_hints[i].command != NULL; i++)
		if (strcmp(deb_hints[i].command, low) == 0)
			return &deb_hints[i];
	return NULL;
}

static bool cmd_char(char c)
{
	return isalnum((unsigned char)c) || c == '/' || c == '+' || c == '-' || c == '_' ||
	       c == '.';
}

/* the command word that ends just before end (text..end), or NULL */
static const char *word_before(const char *text, const char *end, size_t *n)
{
	const char *p = end;
	while (p > text && cmd_char(p[-1]))
		p--;
	*n = (size_t)(end - p);
	return *n > 0 ? p : NULL;
}

/* the command after marker and before until; at_start: marker only where a
 * line or an "Error: " begins */
static const struct deb_hint *after_marker(const char *text, size_t len, const char *marker,
                                           const char *until, bool at_start)
{
	size_t ml = strlen(marker);
	for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), marker, ml)) != NULL;
	     p += ml) {
		if (at_start && !(p == text || p[-1] == '\n' ||
		                  (p - text >= 7 && memcmp(p - 7, "Error: ", 7) == 0)))
			continue;
		const char *w = p + ml;
		if (*w == '"')
			w++;
		size_t n = 0;
		while (w + n < text + len && cmd_char(w[n]))
			n++;
		const char *rest = w + n;
		if (*rest == '"')
			rest++;
		size_t ul = strlen(until);
		if (n > 0 && (size_t)(text + len - rest) >= ul && memcmp(rest, until, ul) == 0) {
			const struct deb_hint *h = lookup(w, n);
			if (h != NULL)
				return h;
		}
	}
	return NULL;
}

static const struct deb_hint *before_marker(const char *text, size_t len, const char *marker)
{
	size_t ml = strlen(marker);
	for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), marker, ml)) != NULL;
	     p += ml) {
		size_t n = 0;
		const char *w = word_before(text, p, &n);
		const struct deb_hint *h = w != NULL ? lookup(w, n) : NULL;
		if (h != NULL)
			return h;
	}
	return NULL;
}

int deb_hint_find(const char *text, size_t len, struct deb_hint *out)
{
	const struct deb_hint *h = NULL;
	/* node: "spawn git ENOENT", "spawnSync /bin/sh ENOENT" */
	if (h == NULL)
		h = after_marker(text, len, "spawn ", " ENOENT", false);
	if (h == NULL)
		h = after_marker(text, len, "spawnSync ", " ENOENT", false);
	/* bash: "git: command not found"; dash: "sh: 1: git: not found" */
	if (h == NULL)
		h = before_marker(text, len, ": command not found");
	if (h == NULL)
		h = before_marker(text, len, ": not found");
	/* a server's own words: "Git command not found", "git not found" */
	if (h == NULL)
		h = before_marker(text, len, " command not found");
	if (h == NULL)
		h = before_marker(text, len, " not found in PATH");
	/* Go: exec: "git": executable file not found in $PATH */
	if (h == NULL)
		h = after_marker(text, len, "exec: ", ": executable file not found", false);
	/* which (npm): "not found: git" */
	if (h == NULL)
		h = after_marker(text, len, "not found: ", "", true);
	/* playwright: its own browser is not in the image */
	if (h == NULL && memmem(text, len, "Executable doesn't exist at", 27) != NULL &&
	    memmem(text, len, "ms-playwright", 13) != NULL)
		h = lookup("chromium", 8);
	if (h == NULL)
		return 0;
	*out = *h;
	return 1;
}
