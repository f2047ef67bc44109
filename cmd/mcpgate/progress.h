/* The long steps of a command, said on stderr as they go (npm install, the
 * image's build, the load into the runtime, a pull): on a terminal one line
 * that redraws itself with the step, how far it is (a bar where the total
 * is known) and how long it has taken; elsewhere (a log, CI) one line per
 * step once it ended, with what it made and how long it took. Every step's
 * text is mcpgate's own or shown by the one renderer. */
#ifndef MG_CMD_PROGRESS_H
#define MG_CMD_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct progress;

/* How far a step is: *done, and *total (0 when not known). Called on the
 * progress's own thread while the step runs, and once as it ends. */
typedef void (*progress_gauge)(void *data, uint64_t *done, uint64_t *total);

/* Steps of cmd ("add"), nsteps of them (0: not counted); on a terminal
 * when stderr is one, else line by line. */
struct progress *progress_new(const char *cmd, unsigned nsteps);
/* A step begins: what (mcpgate's words and a name, shown as the renderer
 * shows it), and its gauge (NULL: only the time it takes) */
void progress_begin(struct progress *p, const char *what, progress_gauge gauge, void *data);
/* A line of the command's said while a step may be drawn ("mcpgate CMD:
 * TEXT"): the step's line is cleared first and drawn again below it. Who
 * has no progress object at hand (add's steps) says its lines so. */
void progress_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What the step made, in bytes, for its last line (when its gauge cannot
 * see it any more: an archive renamed once whole) */
void progress_made(struct progress *p, uint64_t bytes);
/* A step whose child draws its own progress on stderr (a runtime's pull):
 * nothing drawn over it, only its line at the end */
void progress_begin_quiet(struct progress *p, const char *what);
/* It ended; ok false: it failed (the error is said by the command) */
void progress_end(struct progress *p, bool ok);
/* The total of steps, when a command learns it late (--scripts adds one) */
void progress_steps(struct progress *p, unsigned nsteps);
/* One step more than the total said (a swarm's push) */
void progress_one_more(struct progress *p);
void progress_free(struct progress *p);

/* Gauges. A folder's size as it grows (npm install): total unknown */
struct progress_tree {
	const char *path;
};
void progress_gauge_tree(void *data, uint64_t *done, uint64_t *total);

/* A file as it is written (an archive being packed), of about total bytes */
struct progress_file {
	const char *path;
	uint64_t total;
};
void progress_gauge_file(void *data, uint64_t *done, uint64_t *total);

/* How far a process of ours (any descendant: the runtime and what it
 * starts) has read path, total its size: a load into the runtime */
struct progress_read {
	const char *path;
	uint64_t total;
};
void progress_gauge_read(void *data, uint64_t *done, uint64_t *total);

#endif
