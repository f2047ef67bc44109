/* mcpgate remove NAME: the entry out of mcp.toml (the checked edit), then
 * what mcpgate keeps of it and nothing else uses: its image in the runtime,
 * the archive add kept, its npm tree, its review and approval records, and
 * with --forget-secret its credential's bindings (and the secret, when no
 * other entry names it). --dry-run shows what would go. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"
#include "cmd/mcpgate/store.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/tree.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/config/edit.h"
#include "internal/keychain/keychain.h"

/* How long remove waits for a serve to stop the removed server's container
 * before its image stays (prune takes it later) */
#define REMOVE_IMAGE_WAIT_MS 15000

/* The image's size, when the runtime lists it among mcpgate's own */
static bool image_size(const struct ctr_driver *d, const char *image, uint64_t *bytes)
{
	struct ctr_images list = {0};
	bool found = false;
	static const char *const labels[] = {CTR_IMAGE_LABEL_NPM, CTR_IMAGE_LABEL_PYPI};
	for (size_t l = 0; !found && l < 2; l++) {
		if (d->ops->image_list(d, labels[l], &list, NULL) == 0)
			for (size_t i = 0; !found && i < list.n; i++)
				if (ctr_image_is(d, &list.v[i], image)) {
					*bytes = list.v[i].size;
					found = true;
				}
		ctr_images_free(&list);
	}
	return found;
}

static void plan_image(struct store_plan *p, const struct cfg *cfg, const struct cfg_server *s,
                       const struct ctr_driver *d, const char *derr, const char *data)
{
	const char *other = store_image_user(cfg, s->image, s->name);
	cleanup_free char *archive = store_archive_path(data, s->image, ".tar");
	cleanup_free char *manifest = store_archive_path(data, s->image, ".manifest");
	cleanup_free char *locks = store_archive_path(data, s->image, ".debian.lock");
	if (other != NULL) {
		cleanup_free char *why = xasprintf("server %s runs it too", other);
		store_add_kept(p, STORE_IMAGE, "image", s->image, why);
		return;
	}
	long image = -1;
	if (d == NULL) {
		store_add_kept(p, STORE_IMAGE, "image", s->image, derr);
	} else {
		struct mg_err *err = NULL;
		int present = d->ops->image_present(d, s->image, &err);
		uint64_t bytes = 0;
		if (present < 0)
			store_add_kept(p, STORE_IMAGE, "image", s->image, mg_err_msg(err));
		else if (present > 0) {
			bool sized = image_size(d, s->image, &bytes);
			cleanup_free char *what = xasprintf("image in %s", d->name);
			image = store_add_image(p, what, s->image, bytes, sized);
		}
		mg_err_free(err);
	}
	if (archive != NULL) {
		store_add_path_with(p, "image archive", archive, image);
		store_add_path_with(p, "image manifest", manifest, image);
		store_add_path_with(p, "image's Debian locks", locks, image);
	}
}

/* A binding of port 0 serves the bare host, on 80 and 443 alike */
static bool bare(unsigned port)
{
	return port == 0 || port == 80 || port == 443;
}

static bool same_host(const char *h1, unsigned p1, const char *h2, unsigned p2)
{
	return strcmp(h1, h2) == 0 && (p1 == p2 || (bare(p1) && bare(p2)));
}

/* The credential's bindings to s's hosts that no other entry with it
 * reaches, and the secret itself when no other entry names it */
static int forget_secret(const struct cfg *cfg, const struct cfg_server *s, const char *data,
                         bool dry_run, struct mg_err **err)
{
	const char *name = s->credential;
	bool shared = false;
	for (size_t i = 0; i < cfg->nservers; i++)
		shared |= &cfg->servers[i] != s && cfg->servers[i].credential != NULL &&
		          strcmp(cfg->servers[i].credential, name) == 0;
	struct kc *kc = NULL;
	if (kc_open(data, &kc, err) < 0)
		return mg_err_wrap(err, "the keychain");
	int r = 0;
	if (kc_find(kc, name) == NULL) {
		printf("  credential %s is not in the keychain\n", name);
	} else if (!shared) {
		printf("  %-9s            secret %s and its bindings (no other entry names it)\n",
		       dry_run ? "would go" : "goes", name);
		if (!dry_run)
			r = kc_remove(kc, name, err);
	} else {
		size_t nh = s->transport == CFG_TRANSPORT_REMOTE ? 1 : s->nhosts;
		for (size_t h = 0; r >= 0 && h < nh; h++) {
			const char *host =
			    s->transport == CFG_TRANSPORT_REMOTE ? s->url_host : s->hosts[h].host;
			unsigned port =
			    s->transport == CFG_TRANSPORT_REMOTE ? s->url_port : s->hosts[h].port;
			bool other = false;
			for (size_t i = 0; i < cfg->nservers; i++) {
				const struct cfg_server *o = &cfg->servers[i];
				if (o == s || o->credential == NULL ||
				    strcmp(o->credential, name) != 0)
					continue;
				for (size_t k = 0; k < o->nhosts; k++)
					other |= same_host(o->hosts[k].host, o->hosts[k].port, host,
					                   port);
				other |= o->url_host != NULL &&
				         same_host(o->url_host, o->url_port, host, port);
			}
			cleanup_free char *where = kc_host_text(host, bare(port) ? 0 : port);
			if (other) {
				printf("  stays               binding of %s to %s: another entry "
				       "reaches it with it\n",
				       name, where);
				continue;
			}
			printf("  %-9s            binding of %s to %s\n",
			       dry_run ? "would go" : "goes", name, where);
			if (!dry_run)
				r = kc_unbind(kc, name, host, bare(port) ? 0 : port, err);
			if (!dry_run && r >= 0 && bare(port) && port != 0)
				r = kc_unbind(kc, name, host, port, err);
		}
	}
	kc_free(kc);
	return r < 0 ? -1 : 0;
}

int cmd_remove(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("remove");
	const char *dir = NULL, *name = NULL;
	bool dry_run = false, forget = false;
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0 || opt_flag(argv, i, "dry-run", &dry_run) ||
		    opt_flag(argv, i, "forget-secret", &forget))
			continue;
		if (usage_server_name(self, argv[i], &name) < 0)
			return EXIT_USAGE;
	}
	if (name == NULL)
		return usage_error(self, "which server? (see: mcpgate list)");
	struct cfg *cfg = NULL;
	struct ctr_driver *d = NULL;
	struct mg_err *derr = NULL;
	struct store_plan plan = {0};
	cleanup_free char *data = NULL, *text = NULL, *after = NULL;
	cleanup_free char *npm = NULL, *npm_update = NULL, *review = NULL, *approved = NULL;
	cleanup_free char *python = NULL, *python_update = NULL;
	int status = EXIT_FAIL;
	const struct cfg_server *s = NULL;
	if (setup_config(dir, &cfg, err) < 0 || (s = setup_server(cfg, name, err)) == NULL ||
	    cfg_default_data_dir(&data, err) < 0)
		goto out;
	size_t len = 0, after_len = 0;
	unsigned first = 0, last = 0;
	/* the edit is composed and checked first: nothing goes when it cannot be made */
	if (mg_read_file(cfg->mcp_path, CFG_FILE_MAX, &text, &len, err) < 0 ||
	    cfg_remove_server_text(text, len, cfg->mcp_path, name, &after, &after_len, &first,
	                           &last, err) < 0)
		goto out;
	if (s->transport == CFG_TRANSPORT_CONTAINER) {
		if (setup_driver(cfg, &d, &derr) < 0)
			d = NULL;
		plan_image(&plan, cfg, s, d, derr != NULL ? mg_err_msg(derr) : NULL, data);
	}
	npm = xasprintf("%s/npm/%s", data, name);
	npm_update = xasprintf("%s/npm/%s.update", data, name);
	review = xasprintf("%s/reviews/%s.json", data, name);
	approved = xasprintf("%s/manifests/%s", data, name);
	store_add_path(&plan, "npm tree", npm);
	store_add_path(&plan, "npm tree of an update", npm_update);
	python = xasprintf("%s/pypi/%s", data, name);
	python_update = xasprintf("%s/pypi/%s.update", data, name);
	store_add_path(&plan, "python tree and lock", python);
	store_add_path(&plan, "python tree and lock of an update", python_update);
	store_add_path(&plan, "reviewed manifest", review);
	store_add_path(&plan, "approved manifests", approved);

	printf("%s server %s:\n", dry_run ? "remove --dry-run:" : "removing", name);
	printf("  %-9s            its [[server]] in %s (lines %u to %u, with the comment "
	       "above it)\n",
	       dry_run ? "would go" : "goes", cfg->mcp_path, first, last);
	store_show(&plan, dry_run);
	if (s->credential != NULL && !forget)
		printf("its credential %s stays in the keychain (--forget-secret removes its "
		       "bindings, and the secret when no other entry names it)\n",
		       s->credential);
	if (dry_run) {
		if (s->credential != NULL && forget && forget_secret(cfg, s, data, true, err) < 0)
			goto out;
		status = EXIT_OK;
		goto out;
	}
	const struct toml_step step = {"server", "name", name};
	const struct toml_change change = {TOML_CHANGE_REMOVE, &step, 1, NULL};
	if (cfg_write_checked(cfg->mcp_path, text, len, after, after_len, &change, 1, err) < 0)
		goto out;
	int64_t wait = ((int64_t)cfg->mcp.stop_timeout + 10) * 1000;
	if (wait < REMOVE_IMAGE_WAIT_MS)
		wait = REMOVE_IMAGE_WAIT_MS;
	store_carry_out(&plan, d, wait);
	if (s->credential != NULL && forget && forget_secret(cfg, s, data, false, err) < 0)
		goto out;
	char freed[32];
	printf("removed server %s from %s; %u item%s removed, %s freed%s\n", name, cfg->mcp_path,
	       plan.removed, plan.removed == 1 ? "" : "s",
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
