#include "internal/base/num.h"

#include <string.h>

int mg_parse_u64n(const char *s, size_t n, uint64_t min, uint64_t max, const char *what,
                  uint64_t *out, struct mg_err **err)
{
	if (n == 0)
		return mg_err_set(err, "%s: empty number", what);
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return mg_err_set(err, "%s: \"%.*s\" is not a decimal number", what,
			                  (int)(n > 64 ? 64 : n), s);
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return mg_err_set(err, "%s: %.*s is out of range", what,
			                  (int)(n > 64 ? 64 : n), s);
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return mg_err_set(err, "%s: %.*s is out of range %llu-%llu", what,
		                  (int)(n > 64 ? 64 : n), s, (unsigned long long)min,
		                  (unsigned long long)max);
	*out = v;
	return 0;
}

int mg_parse_u64(const char *s, uint64_t min, uint64_t max, const char *what, uint64_t *out,
                 struct mg_err **err)
{
	return mg_parse_u64n(s, strlen(s), min, max, what, out, err);
}

int mg_parse_i64(const char *s, int64_t min, int64_t max, const char *what, int64_t *out,
                 struct mg_err **err)
{
	size_t n = strlen(s);
	int neg = n > 0 && s[0] == '-';
	uint64_t mag;
	/* magnitude of INT64_MIN is INT64_MAX + 1 */
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	if (mg_parse_u64n(s + neg, n - (size_t)neg, 0, limit, what, &mag, err) < 0)
		return -1;
	int64_t v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	if (v < min || v > max)
		return mg_err_set(err, "%s: %s is out of range %lld-%lld", what, s, (long long)min,
		                  (long long)max);
	*out = v;
	return 0;
}
