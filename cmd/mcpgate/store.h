/* What mcpgate keeps of its servers, and what of it goes: remove (one
 * server's) and prune (what no entry uses) make a plan of the same items,
 * show it the same way (what, where, its size; why an item stays) and carry
 * it out the same way, images in the runtime before the files that name
 * them. Nothing outside mcpgate's own folders and the images it names is
 * ever in a plan. */
#ifndef MG_CMD_STORE_H
#define MG_CMD_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "internal/base/err.h"
#include "internal/config/config.h"
#include "internal/container/container.h"

enum store_kind {
	STORE_IMAGE, /* an image in the runtime's store (a pin, or an ID) */
	STORE_PATH,  /* a file or a folder of mcpgate's own, all of it */
};

struct store_item {
	enum store_kind kind;
	char *what;   /* what a person is shown: "npm tree", "image archive" */
	char *target; /* the image, or the path */
	uint64_t bytes;
	bool sized; /* bytes is known */
	char *kept; /* why it stays (shown), or NULL: it goes */
	/* the item (an image) it goes with, or -1: an archive stays while its
	 * image does, so that prune still knows the image for mcpgate's */
	long with;
};

struct store_plan {
	struct store_item *v;
	size_t n;
	unsigned removed, failed;
	uint64_t freed;
};

/* path when it is there (measured, links not followed); nothing when not */
void store_add_path(struct store_plan *p, const char *what, const char *path);
/* an image of the runtime's; bytes 0 with sized false when not known.
 * Returns its index, for store_add_path_with */
long store_add_image(struct store_plan *p, const char *what, const char *image, uint64_t bytes,
                     bool sized);
/* path, which goes only when the item at index with (an image) went */
void store_add_path_with(struct store_plan *p, const char *what, const char *path, long with);
/* An item that stays, and why (both shown) */
void store_add_kept(struct store_plan *p, enum store_kind kind, const char *what,
                    const char *target, const char *why);

/* The plan on stdout, one item a line with its size, and the total: "goes"
 * or, with dry_run, "would go" */
void store_show(const struct store_plan *p, bool dry_run);

/* Every item that goes, images first: an image in use by a container is
 * waited for (a serve that stops its server on the change of mcp.toml)
 * until wait_ms passed, then it stays and says why. Each failure is
 * printed on stderr and counted (p->failed); the rest goes on. */
void store_carry_out(struct store_plan *p, const struct ctr_driver *d, int64_t wait_ms);

void store_plan_free(struct store_plan *p);

/* Another server of cfg than except (NULL: any) runs image (by digest) */
const char *store_image_user(const struct cfg *cfg, const char *image, const char *except);

/* DATA/images/sha256-HEX.tar and .manifest: the archive add kept of image,
 * whose pin's digest is HEX (allocated; NULL when image is not pinned) */
char *store_archive_path(const char *data, const char *image, const char *suffix);

#endif
