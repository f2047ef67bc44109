/* Scope-bound cleanup (GCC/Clang cleanup attribute), as crun and systemd do.
 * Ownership leaves a cleanup variable only through steal_pointer(). */
#ifndef MG_BASE_CLEANUP_H
#define MG_BASE_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal/base/err.h"

static inline void mg_cleanup_freep(void *p)
{
	free(*(void **)p);
}

static inline void mg_cleanup_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void mg_cleanup_fclosep(FILE **f)
{
	if (*f != NULL)
		fclose(*f);
}

static inline void mg_cleanup_errp(struct mg_err **e)
{
	mg_err_free(*e);
}

#define cleanup_free   __attribute__((cleanup(mg_cleanup_freep)))
#define cleanup_close  __attribute__((cleanup(mg_cleanup_closep)))
#define cleanup_fclose __attribute__((cleanup(mg_cleanup_fclosep)))
#define cleanup_err    __attribute__((cleanup(mg_cleanup_errp)))

/* Take the value out of *pp and leave NULL behind. */
#define steal_pointer(pp)                             \
	({                                            \
		__typeof__(*(pp)) steal_tmp_ = *(pp); \
		*(pp) = NULL;                         \
		steal_tmp_;                           \
	})

/* Take an fd out of *fdp and leave -1 behind. */
#define steal_fd(fdp)                       \
	({                                  \
		int steal_fd_tmp_ = *(fdp); \
		*(fdp) = -1;                \
		steal_fd_tmp_;              \
	})

#endif
