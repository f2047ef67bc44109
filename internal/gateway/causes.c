/* Why a contained server failed to start, in words a person can act on: the
 * last lines of its stderr as the one renderer shows them, and the usual
 * causes recognised with their fix in one line (docs/2026-12-02-start-failures.md).
 *
 * The server's stderr is a stranger's text. Its last lines go to the
 * person (mcpgate's log, review's terminal) escaped by mg_shown, never to
 * the model; a fix names only mcpgate's own words and the server's name. */
#define _GNU_SOURCE
#include <stdbool.h>
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

/* node's EROFS/EACCES, Python's Errno 30/13, coreutils' words */
static char *unwritable_hint(const struct cfg_server *s, const char *text, size_t len)
{
	static const struct {
		const char *marker, *why;
	} markers[] = {
	    {"EROFS", "a read-only file system"},
	    {"read-only file system", "a read-only file system"},
	    {"EACCES", "permission denied"},
	    {"permission denied", "permission denied"},
	};
	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
		const char *at = find_ci(text, len, markers[i].marker);
		if (at == NULL)
			continue;
		/* the path is the server's text: the lines shown to the person
		 * have it, the reason (which the client hears) does not */
		char *hint = xasprintf(
		    "server %s could not write a path its stderr names (%s): in its container only "
		    "its home (" CFG_HOME_PATH "), /tmp and the mounts its entry lists with :write "
		    "can be written; point it at its home in its entry (args or env, e.g. a path "
		    "under " CFG_HOME_PATH "), or mount a folder there with :write",
		    s->name, markers[i].why);
		return hint;
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
		hint = unwritable_hint(s, text, len);
	return hint;
}
