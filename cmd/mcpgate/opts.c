#include "cmd/mcpgate/opts.h"

#include <stdio.h>
#include <string.h>

#include "internal/base/suggest.h"

int opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *a = argv[*i];
	if (strncmp(a, "--", 2) != 0)
		return 0;
	size_t n = strlen(name);
	if (strncmp(a + 2, name, n) != 0)
		return 0;
	if (a[2 + n] == '=') {
		*value = a + 3 + n;
		return 1;
	}
	if (a[2 + n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "mcpgate: option --%s needs a value\n", name);
		return -1;
	}
	*i += 1;
	*value = argv[*i];
	return 1;
}

int opt_flag(char **argv, int i, const char *name, bool *flag)
{
	const char *a = argv[i];
	if (strncmp(a, "--", 2) != 0 || strcmp(a + 2, name) != 0)
		return 0;
	*flag = true;
	return 1;
}

/* Whether the option spec has NAME (name[0..len)); *takes_value tells
 * whether it is written with "=" */
static bool spec_has(const char *spec, const char *name, size_t len, bool *takes_value)
{
	for (const char *w = spec; *w != '\0';) {
		size_t n = strcspn(w, " =");
		bool value = w[n] == '=';
		if (n == len && strncmp(w, name, len) == 0) {
			*takes_value = value;
			return true;
		}
		w += n + value;
		w += strspn(w, " ");
	}
	return false;
}

/* The option of spec (or "help") closest to name, as "--NAME", into out */
static bool spec_suggest(const char *spec, const char *name, char *out, size_t size)
{
	char words[1024];
	const char *list[64];
	size_t n = 0;
	int w = snprintf(words, sizeof(words), "%s", spec);
	if (w < 0 || (size_t)w >= sizeof(words))
		return false;
	for (char *p = words; *p != '\0' && n + 2 < sizeof(list) / sizeof(list[0]);) {
		list[n++] = p;
		p += strcspn(p, " =");
		if (*p == '\0')
			break;
		*p++ = '\0';
		p += strspn(p, " =");
	}
	list[n++] = "help";
	list[n] = NULL;
	const char *meant = mg_suggest(name, list);
	if (meant == NULL)
		return false;
	int r = snprintf(out, size, "--%s", meant);
	return r > 0 && (size_t)r < size;
}

int opts_scan(const struct command *cmd, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return 1;
		if (strncmp(a, "--", 2) != 0)
			continue;
		const char *name = a + 2;
		size_t len = strcspn(name, "=");
		bool takes_value = false;
		if (len > 0 && spec_has(cmd->options, name, len, &takes_value)) {
			/* its value is the next argument, whatever it looks like */
			if (takes_value && name[len] == '\0')
				i++;
			continue;
		}
		char typed[MG_SUGGEST_WORD_MAX + 1];
		char meant[MG_SUGGEST_WORD_MAX + 3];
		if (len <= MG_SUGGEST_WORD_MAX &&
		    snprintf(typed, sizeof(typed), "%.*s", (int)len, name) == (int)len &&
		    spec_suggest(cmd->options, typed, meant, sizeof(meant)))
			usage_error(cmd, "unknown option \"--%s\"; did you mean \"%s\"?", typed,
			            meant);
		else
			usage_error(cmd, "unknown option \"--%.*s\"", (int)len, name);
		return -1;
	}
	return 0;
}
