/* The one strict way to read a number from text (after bubblewrap):
 * decimal digits only, an optional leading '-' for signed values, no empty
 * string, no whitespace, no '+', no trailing junk, range checked.
 * `what` names the value in the error ("--memory", "port"). */
#ifndef MG_BASE_NUM_H
#define MG_BASE_NUM_H

#include <stddef.h>
#include <stdint.h>

#include "internal/base/err.h"

int mg_parse_u64n(const char *s, size_t n, uint64_t min, uint64_t max, const char *what,
                  uint64_t *out, struct mg_err **err);
int mg_parse_u64(const char *s, uint64_t min, uint64_t max, const char *what, uint64_t *out,
                 struct mg_err **err);
int mg_parse_i64(const char *s, int64_t min, int64_t max, const char *what, int64_t *out,
                 struct mg_err **err);

#endif
