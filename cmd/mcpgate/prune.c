/* mcpgate prune: what mcpgate keeps that no entry of mcp.toml uses, with
 * its size, and then removed (--dry-run: only shown). Only what this
 * mcpgate made is looked at: the images whose archives are in its data
 * folder (a runtime may hold other people's), the archives, npm trees,
 * review and approval records of servers that are not in mcp.toml, the
 * review logs of those, and audit and review logs older than the days the
 * person keeps them (keep_logs_days in config.toml, or --keep-logs). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"
#include "cmd/mcpgate/store.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/num.h"
#include "internal/base/tree.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"

/* A review's log older than this goes whatever keep_logs_days says */
#define PRUNE_KEEP_DAYS_MAX CFG_KEEP_LOGS_MAX

static bool is_entry(const struct cfg *cfg, const char *name, size_t len)
{
	for (size_t i = 0; i < cfg->nservers; i++)
		if (strlen(cfg->servers[i].name) == len &&
		    strncmp(cfg->servers[i].name, name, len) == 0)
			return true;
	return false;
}

/* The names in dir (a folder that is not there has none) */
static void names_in(const char *dir, struct strv *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			strv_push(out, e->d_name);
	if (d != NULL)
		closedir(d);
}

/* What is kept beside an image's archive sha256-HEX.tar, by the archive */
static const struct {
	const char *suffix, *what;
} beside[] = {
    {".tar", "image archive"},
    {".manifest", "image manifest"},
    {".debian.lock", "image's Debian locks"},
};

/* HEX of "sha256-HEX" and one of beside's suffixes, into hex, and what the
 * file is; NULL for another name */
static const char *archive_hex(const char *name, char hex[65])
{
	size_t n = strlen(name);
	const char *suffix = n > 7 + 64 ? name + 7 + 64 : "";
	const char *what = NULL;
	for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]) && what == NULL; i++)
		if (strcmp(suffix, beside[i].suffix) == 0)
			what = beside[i].what;
	if (strncmp(name, "sha256-", 7) != 0 || strspn(name + 7, "0123456789abcdef") != 64 ||
	    what == NULL)
		return NULL;
	memcpy(hex, name + 7, 64);
	hex[64] = '\0';
	return what;
}

static bool digest_used(const struct cfg *cfg, const char *hex)
{
	for (size_t i = 0; i < cfg->nservers; i++) {
		const char *digest = cfg->servers[i].image_digest;
		if (digest != NULL && strcmp(digest + 7, hex) == 0)
			return true;
	}
	return false;
}

/* The runtime's image made from the archive of manifest digest hex, in
 * list (podman keeps the digest; docker is found by the config the kept
 * manifest names) */
static const struct ctr_image_info *image_of(const struct ctr_driver *d,
                                             const struct ctr_images *list, const char *hex)
{
	cleanup_free char *pin = xasprintf("localhost/mcpgate@sha256:%s", hex);
	for (size_t i = 0; i < list->n; i++)
		if (ctr_image_is(d, &list->v[i], pin))
			return &list->v[i];
	return NULL;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void plan_images(struct store_plan *p, const struct cfg *cfg, const struct ctr_driver *d,
                        const char *data)
{
	cleanup_free char *dir = xasprintf("%s/images", data);
	struct strv names = STRV_INIT;
	names_in(dir, &names);
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v), by_name);
	struct ctr_images list = {0};
	static const char *const labels[] = {CTR_IMAGE_LABEL_NPM, CTR_IMAGE_LABEL_PYPI,
	                                     CTR_IMAGE_LABEL_SCRIPTS, CTR_IMAGE_LABEL_PYPI_BUILD};
	for (size_t l = 0; d != NULL && l < sizeof(labels) / sizeof(labels[0]); l++) {
		struct ctr_images some = {0};
		struct mg_err *err = NULL;
		if (d->ops->image_list(d, labels[l], &some, &err) < 0) {
			fprintf(stderr, "mcpgate prune: %s: its images are left as they are\n",
			        mg_err_msg(err));
			mg_err_free(err);
			continue;
		}
		list.v = xreallocarray(list.v, list.n + some.n + 1, sizeof(*list.v));
		if (some.n > 0)
			memcpy(list.v + list.n, some.v, some.n * sizeof(*some.v));
		list.n += some.n;
		free(some.v);
	}
	/* does an entry still run an image whose archive is kept here? */
	bool kept_archive = false;
	for (size_t k = 0; k < names.n && !kept_archive; k++) {
		char hex[65];
		const char *kind = archive_hex(names.v[k], hex);
		kept_archive = kind != NULL && digest_used(cfg, hex);
	}
	char last[65] = "";
	long with = -1;
	for (size_t k = 0; k < names.n; k++) {
		char hex[65];
		cleanup_free char *path = xasprintf("%s/%s", dir, names.v[k]);
		const char *kind = archive_hex(names.v[k], hex);
		size_t len = strlen(names.v[k]);
		if (kind == NULL && len > 4 && strcmp(names.v[k] + len - 4, ".new") == 0) {
			store_add_path(p, "unfinished image archive", path); /* a build cut short */
			continue;
		}
		/* what every image of add's is made over (node's layer,
		 * node-KEY.tar.gz and .json): kept while an entry runs one of them,
		 * since the next add uses it again; with none, nothing uses it */
		if (kind == NULL) {
			if (strncmp(names.v[k], "node-", 5) == 0 && !kept_archive)
				store_add_path(p, "node's layer, which no image kept uses", path);
			continue;
		}
		if (digest_used(cfg, hex))
			continue;
		/* sha256-HEX's files sort together: the image before them */
		if (strcmp(hex, last) != 0) {
			memcpy(last, hex, sizeof(last));
			with = -1;
			const struct ctr_image_info *i = d != NULL ? image_of(d, &list, hex) : NULL;
			if (i != NULL) {
				cleanup_free char *what =
				    xasprintf("image in %s %s", d->name,
				              i->tags.n > 0      ? i->tags.v[0]
				              : i->digests.n > 0 ? i->digests.v[0]
				                                 : "(no name)");
				with = store_add_image(p, what, i->id, i->size, i->size > 0);
			}
		}
		store_add_path_with(p, kind, path, with);
	}
	ctr_images_free(&list);
	strv_free(&names);
}

static void plan_data(struct store_plan *p, const struct cfg *cfg, const char *data)
{
	struct strv names = STRV_INIT;
	/* an entry's install trees: npm's, and Python's with its lock */
	static const char *const trees[][3] = {
	    {"npm", "npm tree", "npm tree of an update that did not finish"},
	    {"pypi", "python tree and lock", "python tree of an update that did not finish"}};
	for (size_t t = 0; t < 2; t++) {
		cleanup_free char *top = xasprintf("%s/%s", data, trees[t][0]);
		names_in(top, &names);
		for (size_t k = 0; k < names.n; k++) {
			const char *n = names.v[k];
			size_t len = strlen(n);
			bool update = len > 7 && strcmp(n + len - 7, ".update") == 0;
			if (!update && is_entry(cfg, n, len))
				continue;
			cleanup_free char *path = xasprintf("%s/%s", top, n);
			store_add_path(p, trees[t][update ? 2 : 1], path);
		}
		strv_free(&names);
	}
	cleanup_free char *reviews = xasprintf("%s/reviews", data);
	names_in(reviews, &names);
	for (size_t k = 0; k < names.n; k++) {
		size_t len = strlen(names.v[k]);
		if (len > 5 && strcmp(names.v[k] + len - 5, ".json") == 0 &&
		    is_entry(cfg, names.v[k], len - 5))
			continue;
		cleanup_free char *path = xasprintf("%s/%s", reviews, names.v[k]);
		store_add_path(p, "reviewed manifest", path);
	}
	strv_free(&names);
	cleanup_free char *manifests = xasprintf("%s/manifests", data);
	names_in(manifests, &names);
	for (size_t k = 0; k < names.n; k++) {
		cleanup_free char *path = xasprintf("%s/%s", manifests, names.v[k]);
		const struct cfg_server *s = cfg_find_server(cfg, names.v[k]);
		if (s == NULL) {
			store_add_path(p, "approved manifests", path);
			continue;
		}
		/* a server's records of pins it no longer has */
		struct strv pins = STRV_INIT;
		names_in(path, &pins);
		for (size_t j = 0; j < pins.n; j++) {
			cleanup_free char *mine =
			    s->manifest != NULL ? xasprintf("%s.json", s->manifest + 7) : NULL;
			if (mine != NULL && strcmp(pins.v[j], mine) == 0)
				continue;
			cleanup_free char *old = xasprintf("%s/%s", path, pins.v[j]);
			store_add_path(p, "an approved manifest it no longer has", old);
		}
		strv_free(&pins);
	}
	strv_free(&names);
}

/* The servers a log's session began with (its first record) */
static bool log_of_entries(const struct cfg *cfg, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[8192];
	bool any = false, ours = true;
	if (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		struct json_value *v = NULL;
		if (json_parse(line, strlen(line), NULL, &v, NULL) == 0) {
			const struct json_value *servers = json_get(v, "servers");
			ours = false;
			for (size_t i = 0; servers != NULL && servers->kind == JSON_ARRAY &&
			                   i < servers->u.arr.len;
			     i++) {
				const struct json_value *n = servers->u.arr.items[i];
				any = true;
				ours |= n->kind == JSON_STRING &&
				        is_entry(cfg, n->u.str.ptr, n->u.str.len);
			}
			json_free(v);
		}
	}
	if (f != NULL)
		fclose(f);
	return ours || !any;
}

static void plan_logs(struct store_plan *p, const struct cfg *cfg, const char *state,
                      unsigned keep_days)
{
	time_t now = time(NULL);
	static const char *const where[] = {"sessions", "reviews/sessions"};
	for (size_t w = 0; w < 2; w++) {
		bool reviews = w == 1;
		cleanup_free char *dir = xasprintf("%s/%s", state, where[w]);
		struct strv names = STRV_INIT;
		names_in(dir, &names);
		for (size_t k = 0; k < names.n; k++) {
			cleanup_free char *path = xasprintf("%s/%s", dir, names.v[k]);
			struct stat st;
			size_t len = strlen(names.v[k]);
			if (len < 7 || strcmp(names.v[k] + len - 6, ".jsonl") != 0 ||
			    lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			bool old = keep_days > 0 && now - st.st_mtime > (time_t)keep_days * 86400;
			if (old)
				store_add_path(p,
				               reviews ? "review log, older than kept"
				                       : "audit log, older than kept",
				               path);
			else if (reviews && !log_of_entries(cfg, path))
				store_add_path(p, "review log of a server not in mcp.toml", path);
		}
		strv_free(&names);
	}
}

/* What the logs kept hold, when no retention says which go */
static void say_logs(const char *state)
{
	struct mg_tree_size a = {0}, r = {0};
	cleanup_free char *sessions = xasprintf("%s/sessions", state);
	cleanup_free char *reviews = xasprintf("%s/reviews/sessions", state);
	mg_tree_size(sessions, &a, NULL);
	mg_tree_size(reviews, &r, NULL);
	char size[32];
	printf("audit and review logs are all kept (%llu files, %s): set keep_logs_days in "
	       "config.toml, or give --keep-logs DAYS, and prune removes those older\n",
	       (unsigned long long)(a.files + r.files),
	       mg_size_text(a.bytes + r.bytes, size, sizeof(size)));
}

static bool yes_on_terminal(void)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return true;
	printf("remove them? [y/N] ");
	fflush(stdout);
	char buf[16];
	if (fgets(buf, sizeof(buf), stdin) == NULL)
		return false;
	buf[strcspn(buf, "\r\n")] = '\0';
	return strcmp(buf, "y") == 0 || strcmp(buf, "Y") == 0 || strcmp(buf, "yes") == 0;
}

int cmd_prune(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("prune");
	const char *dir = NULL, *keep = NULL;
	bool dry_run = false, yes = false;
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r == 0)
			r = opt_value(argc, argv, &i, "keep-logs", &keep);
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0 || opt_flag(argv, i, "dry-run", &dry_run) ||
		    opt_flag(argv, i, "yes", &yes))
			continue;
		return usage_error(self, "unexpected argument \"%s\"", argv[i]);
	}
	uint64_t keep_days = 0;
	if (keep != NULL &&
	    mg_parse_u64(keep, 1, PRUNE_KEEP_DAYS_MAX, "--keep-logs", &keep_days, NULL) < 0)
		return usage_error(self, "--keep-logs takes days, from 1 to %d, not \"%s\"",
		                   PRUNE_KEEP_DAYS_MAX, keep);
	struct cfg *cfg = NULL;
	struct ctr_driver *d = NULL;
	struct mg_err *derr = NULL;
	struct store_plan plan = {0};
	cleanup_free char *data = NULL, *state = NULL;
	int status = EXIT_FAIL;
	if (setup_config(dir, &cfg, err) < 0 || cfg_default_data_dir(&data, err) < 0 ||
	    cfg_default_state_dir(&state, err) < 0)
		goto out;
	if (keep == NULL)
		keep_days = cfg->mcp.keep_logs_days;
	if (setup_driver(cfg, &d, &derr) < 0) {
		fprintf(stderr, "mcpgate prune: %s: images in a runtime are left as they are\n",
		        mg_err_msg(derr));
		d = NULL;
	}
	plan_images(&plan, cfg, d, data);
	plan_data(&plan, cfg, data);
	plan_logs(&plan, cfg, state, (unsigned)keep_days);
	printf("%s what no entry of %s uses:\n", dry_run ? "prune --dry-run:" : "pruning",
	       cfg->mcp_path);
	store_show(&plan, dry_run);
	if (keep_days == 0)
		say_logs(state);
	bool going = false;
	for (size_t k = 0; k < plan.n; k++)
		going |= plan.v[k].kept == NULL;
	if (dry_run || !going) {
		status = EXIT_OK;
		goto out;
	}
	if (!yes && !yes_on_terminal()) {
		printf("nothing was removed\n");
		status = EXIT_OK;
		goto out;
	}
	store_carry_out(&plan, d, 0);
	char freed[32];
	printf("pruned %u item%s, %s freed%s\n", plan.removed, plan.removed == 1 ? "" : "s",
	       mg_size_text(plan.freed, freed, sizeof(freed)),
	       plan.failed > 0 ? "; what stays is said above" : "");
	status = plan.failed > 0 ? EXIT_FAIL : EXIT_OK;
out:
	store_plan_free(&plan);
	mg_err_free(derr);
	ctr_driver_free(d);
	cfg_free(cfg);
	return status;
}
