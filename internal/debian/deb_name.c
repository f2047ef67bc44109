/* A Debian package's name (Debian policy 5.6.1) and the base set, on their
 * own so that the configuration and the gateway have them without the rest
 * of internal/debian. */
#include <string.h>

#include "internal/debian/debian.h"

#define NAME_MAX_LEN 100

const char *const deb_base_set[] = {"dash",      "coreutils",       "grep",       "sed",
                                    "findutils", "ca-certificates", "libstdc++6", NULL};

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

bool deb_name_valid(const char *name)
{
	size_t n = name != NULL ? strlen(name) : 0;
	if (n < 2 || n > NAME_MAX_LEN)
		return false;
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(name[i]))
			return false;
	return true;
}

bool deb_source_value_safe(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p <= 0x20 || *p == 0x7f || strchr("\"';{},[]", *p) != NULL)
			return false;
	return true;
}
