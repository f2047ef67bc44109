#include "cmd/mcpgate/opts.h"

#include <stdio.h>
#include <string.h>

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
