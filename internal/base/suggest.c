#include "internal/base/suggest.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define DISTANCE_MAX 2

size_t mg_edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > MG_SUGGEST_WORD_MAX || m > MG_SUGGEST_WORD_MAX)
		return SIZE_MAX;
	/* d[i][j]: edits from a's first i characters to b's first j */
	size_t d[MG_SUGGEST_WORD_MAX + 1][MG_SUGGEST_WORD_MAX + 1];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++) {
		for (size_t j = 1; j <= m; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[n][m];
}

const char *mg_suggest(const char *word, const char *const *candidates)
{
	size_t len = strlen(word);
	if (len == 0)
		return NULL;
	const char *closest = NULL;
	size_t best = SIZE_MAX;
	bool tie = false;
	for (size_t i = 0; candidates[i] != NULL; i++) {
		size_t d = mg_edit_distance(word, candidates[i]);
		if (d > DISTANCE_MAX || d >= len)
			continue;
		if (d < best) {
			best = d;
			closest = candidates[i];
			tie = false;
		} else if (d == best) {
			tie = true;
		}
	}
	if (closest != NULL)
		return tie ? NULL : closest;
	const char *prefixed = NULL;
	for (size_t i = 0; candidates[i] != NULL; i++) {
		if (strncmp(candidates[i], word, len) != 0)
			continue;
		if (prefixed != NULL)
			return NULL;
		prefixed = candidates[i];
	}
	return prefixed;
}
