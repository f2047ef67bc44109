/* The unit-test harness: TAP lines, then "N passed, N failed".
 * A test binary calls the check macros from main() and ends with
 * `return t_done();` (exit 0 only when nothing failed). */
#ifndef MG_BASE_TESTING_H
#define MG_BASE_TESTING_H

#include <stddef.h>

int t_check(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int t_check_str(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int t_check_int(long long got, long long want, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* a comment line in the output ("# ...") */
void t_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* read a whole file under the limit; aborts the test binary when it cannot */
char *t_read_file(const char *path, size_t *len);
/* the names in dir that end in suffix ("" for every name), sorted, without
 * those starting with '.'; NULL (and *n 0) when there are none or dir cannot
 * be read. The caller frees each name and the array. */
char **t_list_dir(const char *dir, const char *suffix, size_t *n);
/* remove dir and everything below it (links are removed, never followed);
 * for a test's own temporary folder */
void t_remove_tree(const char *dir);
int t_done(void);

#define T_OK(cond, ...)       t_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define T_STR(got, want, ...) t_check_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define T_INT(got, want, ...) t_check_int((got), (want), __FILE__, __LINE__, __VA_ARGS__)

#endif
