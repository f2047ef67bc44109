/* Plans of what goes from mcpgate's store, shown and carried out one way
 * for remove and prune (store.h). */
#define _GNU_SOURCE
#include "cmd/mcpgate/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/tree.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/proc/proc.h"

static struct store_item *add_item(struct store_plan *p, enum store_kind kind, const char *what,
                                   const char *target)
{
	p->v = xreallocarray(p->v, p->n + 1, sizeof(*p->v));
	struct store_item *i = &p->v[p->n++];
	memset(i, 0, sizeof(*i));
	i->kind = kind;
	i->what = xstrdup(what);
	i->target = xstrdup(target);
	i->with = -1;
	return i;
}

void store_add_path(struct store_plan *p, const char *what, const char *path)
{
	store_add_path_with(p, what, path, -1);
}

void store_add_path_with(struct store_plan *p, const char *what, const char *path, long with)
{
	struct mg_tree_size size = {0};
	struct mg_err *err = NULL;
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return;
	int r = mg_tree_size(path, &size, &err);
	struct store_item *i = add_item(p, STORE_PATH, what, path);
	i->with = with;
	if (r < 0) {
		/* what cannot be walked whole is not removed in part */
		i->kept = xstrdup(mg_err_msg(err));
		mg_err_free(err);
		return;
	}
	i->bytes = size.bytes;
	i->sized = true;
}

long store_add_image(struct store_plan *p, const char *what, const char *image, uint64_t bytes,
                     bool sized)
{
	struct store_item *i = add_item(p, STORE_IMAGE, what, image);
	i->bytes = bytes;
	i->sized = sized;
	return (long)(p->n - 1);
}

void store_add_kept(struct store_plan *p, enum store_kind kind, const char *what,
                    const char *target, const char *why)
{
	add_item(p, kind, what, target)->kept = xstrdup(why);
}

void store_show(const struct store_plan *p, bool dry_run)
{
	uint64_t total = 0;
	unsigned going = 0;
	for (size_t k = 0; k < p->n; k++) {
		const struct store_item *i = &p->v[k];
		char size[32] = "";
		if (i->sized)
			mg_size_text(i->bytes, size, sizeof(size));
		/* a path or an image name may hold a stranger's text (a package's
		 * name): shown as the one renderer shows it */
		cleanup_free char *target = mg_shown(i->target, strlen(i->target));
		if (i->kept != NULL) {
			cleanup_free char *why = mg_shown(i->kept, strlen(i->kept));
			printf("  stays     %9s  %s %s: %s\n", size, i->what, target, why);
			continue;
		}
		printf("  %-9s %9s  %s %s\n", dry_run ? "would go" : "goes", size, i->what, target);
		total += i->bytes;
		going++;
	}
	char size[32];
	if (going == 0)
		printf("nothing %s\n", dry_run ? "would go" : "goes");
	else
		printf("%u item%s, %s%s\n", going, going == 1 ? "" : "s",
		       mg_size_text(total, size, sizeof(size)),
		       dry_run ? " would be freed (--dry-run: nothing was removed)" : " to free");
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void remove_image(struct store_plan *p, struct store_item *i, const struct ctr_driver *d,
                         int64_t wait_ms)
{
	struct mg_err *err = NULL;
	int64_t until = proc_now_ms() + wait_ms;
	bool in_use = false, told = false;
	int r;
	while ((r = d->ops->image_remove(d, i->target, &in_use, &err)) < 0 && in_use &&
	       proc_now_ms() < until) {
		if (!told)
			fprintf(stderr,
			        "mcpgate: %s is in use by a container; waiting up to %lld s for it "
			        "to stop (a serve stops what mcp.toml no longer offers)\n",
			        i->target, (long long)(wait_ms / 1000));
		told = true;
		mg_err_clear(&err);
		sleep_ms(500);
	}
	if (r < 0) {
		cleanup_free char *why = mg_shown(mg_err_msg(err), strlen(mg_err_msg(err)));
		fprintf(stderr, "mcpgate: %s %s stays: %s%s\n", i->what, i->target, why,
		        in_use ? "; mcpgate prune removes it once that container is gone" : "");
		i->kept = xstrdup(mg_err_msg(err));
		p->failed++;
	} else {
		p->removed++;
		p->freed += i->bytes;
	}
	mg_err_free(err);
}

void store_carry_out(struct store_plan *p, const struct ctr_driver *d, int64_t wait_ms)
{
	/* images first: docker finds an image mcpgate loaded by the kept
	 * manifest, which is among the files */
	for (size_t k = 0; k < p->n; k++) {
		struct store_item *i = &p->v[k];
		if (i->kept != NULL || i->kind != STORE_IMAGE)
			continue;
		if (d == NULL) {
			i->kept = xstrdup("no container runtime to remove it from");
			p->failed++;
			continue;
		}
		remove_image(p, i, d, wait_ms);
	}
	for (size_t k = 0; k < p->n; k++) {
		struct store_item *i = &p->v[k];
		if (i->kept != NULL || i->kind != STORE_PATH)
			continue;
		if (i->with >= 0 && p->v[i->with].kept != NULL) {
			i->kept = xstrdup("its image stays, and prune knows it by this");
			continue;
		}
		struct mg_err *err = NULL;
		if (mg_tree_remove(i->target, &err) < 0) {
			cleanup_free char *why = mg_shown(mg_err_msg(err), strlen(mg_err_msg(err)));
			fprintf(stderr, "mcpgate: %s stays (in part): %s\n", i->what, why);
			i->kept = xstrdup(mg_err_msg(err));
			p->failed++;
		} else {
			p->removed++;
			p->freed += i->bytes;
		}
		mg_err_free(err);
	}
}

void store_plan_free(struct store_plan *p)
{
	for (size_t k = 0; k < p->n; k++) {
		free(p->v[k].what);
		free(p->v[k].target);
		free(p->v[k].kept);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}

const char *store_image_user(const struct cfg *cfg, const char *image, const char *except)
{
	const char *at = strstr(image, "@sha256:");
	for (size_t i = 0; at != NULL && i < cfg->nservers; i++) {
		const struct cfg_server *s = &cfg->servers[i];
		if (s->transport != CFG_TRANSPORT_CONTAINER || s->image_digest == NULL ||
		    (except != NULL && strcmp(s->name, except) == 0))
			continue;
		if (strcmp(s->image_digest, at + 1) == 0)
			return s->name;
	}
	return NULL;
}

char *store_archive_path(const char *data, const char *image, const char *suffix)
{
	const char *at = strstr(image, "@sha256:");
	if (at == NULL || strlen(at + 8) != 64)
		return NULL;
	return xasprintf("%s/images/sha256-%s%s", data, at + 8, suffix);
}
