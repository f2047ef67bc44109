/* Why a contained server failed to start, in words a person can act on: the
 * last lines of its stderr as the one renderer shows them, and the usual
 * causes recognised with their fix in one line (docs/2026-12-02-start-failures.md).
 *
 * The server's stderr is a stranger's text. Its last lines go to the
 * person (mcpgate's log, review's terminal) escaped by mg_shown, never to
 * the model; a fix names only mcpgate's own words and the server's name. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal/base/buf.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/config/config.h"
#include "internal/gateway/launch.h"
#include "internal/mcp/mcp.h"

/* what one shown line of stderr may take (after its escapes) */
#define TAIL_LINE_SHOWN 240
#define TAIL_LINE_RAW   200

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

char *gw_stderr_tail(const char *text, size_t len, size_t max_lines, size_t *nshown)
{
	*nshown = 0;
	if (text == NULL || max_lines == 0)
		return NULL;
	/* the starts of the last max_lines lines that are not blank, last first */
	size_t starts[GW_TAIL_LINES_MAX], ends[GW_TAIL_LINES_MAX];
	if (max_lines > GW_TAIL_LINES_MAX)
		max_lines = GW_TAIL_LINES_MAX;
	size_t n = 0, end = len;
	while (end > 0 && n < max_lines) {
		size_t start = end;
		while (start > 0 && text[start - 1] != '\n')
			start--;
		if (!blank(text + start, end - start)) {
			starts[n] = start;
			ends[n] = end;
			n++;
		}
		end = start > 0 ? start - 1 : 0;
	}
	if (n == 0)
		return NULL;
	struct mg_buf b = MG_BUF_INIT(max_lines * (TAIL_LINE_SHOWN + 16));
	for (size_t k = n; k > 0; k--) {
		size_t s = starts[k - 1], e = ends[k - 1];
		while (e > s && (text[e - 1] == '\r' || text[e - 1] == ' '))
			e--;
		bool cut = e - s > TAIL_LINE_RAW;
		char *shown = mg_shown(text + s, cut ? TAIL_LINE_RAW : e - s);
		size_t sl = strlen(shown);
		if (sl > TAIL_LINE_SHOWN) {
			sl = TAIL_LINE_SHOWN;
			cut = true;
		}
		mg_buf_puts(&b, "  | ", NULL);
		mg_buf_append(&b, shown, sl, NULL);
		if (cut)
			mg_buf_puts(&b, " [cut]", NULL);
		if (k > 1)
			mg_buf_putc(&b, '\n', NULL);
		free(shown);
	}
	*nshown = n;
	return mg_buf_steal(&b, NULL);
}

static const char *find_ci(const char *text, size_t len, const char *what)
{
	size_t wl = strlen(what);
	for (size_t i = 0; i + wl <= len; i++)
		if (strncasecmp(text + i, what, wl) == 0)
			return text + i;
	return NULL;
}

struct marker {
	const char *marker, *why;
};

/* node's EROFS/EACCES, Python's Errno 30/13, coreutils' words */
static const struct marker unwritable_stderr[] = {
    {"EROFS", "a read-only file system"},
    {"read-only file system", "a read-only file system"},
    {"EACCES", "permission denied"},
    {"permission denied", "permission denied"},
    {NULL, NULL},
};

/* in a call's answer only the file system's own words: a database's
 * "permission denied for table" or a server's own refusal is no path's */
static const struct marker unwritable_call[] = {
    {"EROFS", "a read-only file system"},
    {"read-only file system", "a read-only file system"},
    {"EACCES", "permission denied"},
    {"[Errno 13]", "permission denied"},
    {NULL, NULL},
};

/* where: "its stderr" or "its answer" */
static char *unwritable_hint(const struct cfg_server *s, const char *text, size_t len,
                             const struct marker *markers, const char *where)
{
	for (size_t i = 0; markers[i].marker != NULL; i++) {
		if (find_ci(text, len, markers[i].marker) == NULL)
			continue;
		/* the path is the server's text: the lines shown to the person
		 * have it, the reason (which the client hears) does not */
		return xasprintf(
		    "server %s could not write a path %s names (%s): in its container only "
		    "its home (" CFG_HOME_PATH "), /tmp and the mounts its entry lists with :write "
		    "can be written; point it at its home in its entry (args or env, e.g. a path "
		    "under " CFG_HOME_PATH "), or mount a folder there with :write",
		    s->name, where, markers[i].why);
	}
	return NULL;
}

/* The add line for server s again with what its entry has and more
 * (" --scripts"), into b */
static void add_line(struct mg_buf *b, const struct cfg_server *s, const char *source,
                     const char *more)
{
	mg_buf_printf(b, NULL, "`mcpgate add %s --name %s",
	              source != NULL ? source : "npm:PACKAGE@VERSION", s->name);
	for (size_t i = 0; i < s->npackages; i++)
		mg_buf_printf(b, NULL, " --with %s", s->packages[i]);
	mg_buf_printf(b, NULL, "%s` (remove its entry first)", more);
}

/* The line of text around at */
static void line_of(const char *text, size_t len, const char *at, const char **start,
                    const char **end)
{
	const char *a = at, *z = at;
	while (a > text && a[-1] != '\n')
		a--;
	while (z < text + len && *z != '\n')
		z++;
	*start = a;
	*end = z;
}

/* A native addon npm's install scripts would have built, missing: the
 * loaders' words (bindings, node-gyp-build, a require of a .node file) */
static char *native_hint(const struct cfg_server *s, const char *source, const char *text,
                         size_t len)
{
	/* --scripts is npm's: a Python image has no such step */
	if (source != NULL && strncmp(source, "npm:", 4) != 0)
		return NULL;
	bool found = find_ci(text, len, "Could not locate the bindings file") != NULL ||
	             find_ci(text, len, "No native build was found for") != NULL;
	const char *p = text;
	while (!found && (p = find_ci(p, len - (size_t)(p - text), "Cannot find module")) != NULL) {
		const char *a, *z;
		line_of(text, len, p, &a, &z);
		found = memmem(p, (size_t)(z - p), ".node'", 6) != NULL ||
		        memmem(p, (size_t)(z - p), ".node\"", 6) != NULL;
		p = z;
	}
	if (!found)
		return NULL;
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	mg_buf_printf(&b, NULL,
	              "server %s loads a native addon that was not built (add runs no package's "
	              "install script unless asked): make its image again with the addon built "
	              "from source in a contained step, ",
	              s->name);
	add_line(&b, s, source, " --scripts");
	return mg_buf_steal(&b, NULL);
}

/* "127.0.0.1:5432", "localhost:6379", "[::1]:80", "port 5432": the port
 * that follows, when it is one (1 to 65535, digits only), else 0 */
static unsigned port_after(const char *from, const char *end)
{
	static const char *const lead[] = {"127.0.0.1:", "localhost:", "::1]:", "::1:", "port "};
	for (size_t i = 0; i < sizeof(lead) / sizeof(lead[0]); i++) {
		const char *at = from;
		while ((at = find_ci(at, (size_t)(end - at), lead[i])) != NULL) {
			at += strlen(lead[i]);
			unsigned port = 0;
			size_t n = 0;
			while (at + n < end && n < 6 && at[n] >= '0' && at[n] <= '9')
				port = port * 10 + (unsigned)(at[n++] - '0');
			bool whole = at + n >= end || !(at[n] >= '0' && at[n] <= '9');
			if (n > 0 && whole && port >= 1 && port <= 65535)
				return port;
		}
	}
	return 0;
}

/* A connection to the loopback refused: in a container that is the
 * container's own, never the host's (docs/2026-12-02-connect.md) */
static char *loopback_hint(const struct cfg_server *s, const char *text, size_t len)
{
	static const char *const refused[] = {"ECONNREFUSED", "Connection refused"};
	static const char *const loopback[] = {"127.0.0.1", "localhost", "::1"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *p = text;
		while ((p = find_ci(p, len - (size_t)(p - text), refused[i])) != NULL) {
			const char *a, *z;
			line_of(text, len, p, &a, &z);
			bool local = false;
			for (size_t k = 0; k < sizeof(loopback) / sizeof(loopback[0]); k++)
				local = local || find_ci(a, (size_t)(z - a), loopback[k]) != NULL;
			if (local) {
				unsigned port = port_after(a, z);
				char num[16] = "PORT";
				if (port != 0)
					snprintf(num, sizeof(num), "%u", port);
				return xasprintf("server %s could not connect to a service on the "
				                 "loopback, which in "
				                 "its container is the container itself, not this "
				                 "machine: to let it "
				                 "reach a service on this machine, grant it in its "
				                 "entry, connect = "
				                 "{ NAME = \"127.0.0.1:%s\" }, and give it "
				                 "{connect.NAME} where it "
				                 "takes the address (args or env), which mcpgate "
				                 "replaces with the "
				                 "address it reaches it at",
				                 s->name, num);
			}
			p = z;
		}
	}
	return NULL;
}

/* a server that speaks MCP over HTTP by default says where it listens and
 * leaves initialize on its standard input unanswered */
static char *http_only_hint(const struct cfg_server *s, const char *text, size_t len,
                            const char *start_error)
{
	if (start_error == NULL || strstr(start_error, "waiting for initialize") == NULL)
		return NULL;
	static const char *const says[] = {"listening on",    "listening at", "running on http",
	                                   "running at http", "http://",      "https://"};
	for (size_t i = 0; i < sizeof(says) / sizeof(says[0]); i++)
		if (find_ci(text, len, says[i]) != NULL)
			return xasprintf(
			    "server %s seems to serve MCP over HTTP (its stderr says where it "
			    "listens) and never answered initialize on its standard input, the one "
			    "way mcpgate speaks to it: start it in its stdio mode with the "
			    "argument "
			    "its documentation names, often args = [\"--stdio\"] or [\"stdio\"] in "
			    "its entry",
			    s->name);
	return NULL;
}

static char *revision_hint(const struct cfg_server *s, const char *source, const char *start_error)
{
	if (start_error == NULL || strstr(start_error, "which mcpgate does not speak") == NULL)
		return NULL;
	/* the release pinned is the one that does not fit: another of the
	 * same package may */
	size_t pkg = 0;
	if (source != NULL) {
		const char *at = strrchr(source, '@');
		pkg = at != NULL && at > source + 4 ? (size_t)(at - source) : strlen(source);
	}
	return xasprintf("server %s speaks an MCP revision mcpgate does not (mcpgate speaks %s): "
	                 "add a release of it that speaks one of those, `mcpgate add %.*s@VERSION "
	                 "--name %s` (remove its entry first)",
	                 s->name, mcp_server_versions_text(), source != NULL ? (int)pkg : 11,
	                 source != NULL ? source : "npm:PACKAGE", s->name);
}

char *gw_start_cause(const struct cfg_server *s, const char *source, const char *text, size_t len,
                     const char *start_error)
{
	if (text == NULL) {
		text = "";
		len = 0;
	}
	char *hint = gw_missing_command_hint(s, source, text, len);
	if (hint == NULL && start_error != NULL)
		hint = gw_missing_command_hint(s, source, start_error, strlen(start_error));
	if (hint == NULL)
		hint = revision_hint(s, source, start_error);
	if (hint == NULL)
		hint = http_only_hint(s, text, len, start_error);
	if (hint == NULL)
		hint = native_hint(s, source, text, len);
	if (hint == NULL)
		hint = loopback_hint(s, text, len);
	if (hint == NULL)
		hint = unwritable_hint(s, text, len, unwritable_stderr, "its stderr");
	return hint;
}

char *gw_call_cause(const struct cfg_server *s, const char *source, const char *text, size_t len)
{
	if (text == NULL)
		return NULL;
	char *hint = gw_missing_command_hint(s, source, text, len);
	if (hint == NULL)
		hint = native_hint(s, source, text, len);
	if (hint == NULL)
		hint = loopback_hint(s, text, len);
	if (hint == NULL)
		hint = unwritable_hint(s, text, len, unwritable_call, "its answer");
	return hint;
}
