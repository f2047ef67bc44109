/* "Did you mean": the one known word closest to a mistyped one. */
#ifndef MG_BASE_SUGGEST_H
#define MG_BASE_SUGGEST_H

#include <stddef.h>

/* The longest word mg_edit_distance measures; longer ones are never close */
#define MG_SUGGEST_WORD_MAX 64

/* Edits (insert, delete, replace, or swap two neighbours: Damerau-Levenshtein
 * in its optimal-string-alignment form) that turn a into b; SIZE_MAX when
 * either is longer than MG_SUGGEST_WORD_MAX. */
size_t mg_edit_distance(const char *a, const char *b);

/* The candidate word most likely meant: the one closest to word when it is at
 * most 2 edits away and fewer edits than word has characters; else the only
 * candidate word is a prefix of. NULL when none is, or when two are equally
 * close. candidates ends with NULL; the result is one of them (borrowed). */
const char *mg_suggest(const char *word, const char *const *candidates);

#endif
