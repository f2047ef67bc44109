/* mcpgate list [--json]: one line per server: transport, image, manifest. */
#include <stdio.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/buf.h"
#include "internal/json/json.h"

/* "present", "missing (mcpgate pull NAME)", "unknown: why" or "-" (remote) */
/* The limits that do not hold here: "accepted" (in accept_unenforced) and
 * "refused" (the server will not start), each an array of names */
static void limits_entry(struct json_value *o, const struct cfg_server *s,
                         const struct ctr_platform *p, const char *platform_error)
{
	if (platform_error != NULL) {
		json_object_set(o, "platform_error", json_new_string(platform_error));
		return;
	}
	struct json_value *acc = json_new_array(), *ref = json_new_array();
	for (unsigned b = 0; b < CFG_PROP_COUNT; b++) {
		if (!(p->unenforced & (1u << b)))
			continue;
		json_array_push(s->accept_unenforced & (1u << b) ? acc : ref,
		                json_new_string(cfg_property_name(1u << b)));
	}
	json_object_set(o, "unenforced_accepted", acc);
	json_object_set(o, "unenforced_refused", ref);
}

static struct json_value *server_entry(const struct cfg_server *s, struct ctr_driver *d,
                                       const char *driver_error, const struct ctr_platform *p,
                                       const char *platform_error)
{
	struct json_value *o = json_new_object();
	json_object_set(o, "name", json_new_string(s->name));
	const char *image_state = "-";
	char why[512] = "";
	if (s->transport == CFG_TRANSPORT_CONTAINER) {
		json_object_set(o, "transport", json_new_string("container"));
		json_object_set(o, "image", json_new_string(s->image));
		if (d == NULL) {
			image_state = "unknown";
			snprintf(why, sizeof(why), "%s", driver_error);
		} else {
			struct mg_err *err = NULL;
			int present = d->ops->image_present(d, s->image, &err);
			image_state = present > 0    ? "present"
			              : present == 0 ? "missing"
			                             : "unknown";
			if (present < 0)
				snprintf(why, sizeof(why), "%s", mg_err_msg(err));
			mg_err_free(err);
			limits_entry(o, s, p, platform_error);
		}
	} else {
		json_object_set(o, "transport", json_new_string("remote"));
		json_object_set(o, "url", json_new_string(s->url));
	}
	json_object_set(o, "image_state", json_new_string(image_state));
	if (why[0] != '\0')
		json_object_set(o, "image_error", json_new_string(why));
	json_object_set(o, "manifest",
	                s->manifest != NULL ? json_new_string(s->manifest) : json_new_null());
	size_t on = 0;
	for (size_t i = 0; i < s->ntools; i++)
		on += s->tools[i].on;
	json_object_set(o, "tools_on", json_new_int((int64_t)on));
	struct json_value *unasked = json_new_array();
	for (size_t i = 0; i < s->ntools; i++)
		if (s->tools[i].effect == CFG_EFFECT_WRITE && !s->tools[i].confirm)
			json_array_push(unasked, json_new_string(s->tools[i].name));
	json_object_set(o, "write_without_confirmation", unasked);
	return o;
}

static void print_line(const struct json_value *o)
{
	const char *name = json_get_string(o, "name");
	const char *transport = json_get_string(o, "transport");
	const char *state = json_get_string(o, "image_state");
	const char *manifest = json_get_string(o, "manifest");
	int64_t on = 0;
	json_number_int64(json_get(o, "tools_on"), &on);
	char image[160];
	if (strcmp(transport, "remote") == 0)
		snprintf(image, sizeof(image), "%s", json_get_string(o, "url"));
	else if (strcmp(state, "missing") == 0)
		snprintf(image, sizeof(image), "image missing (mcpgate pull %s)", name);
	else
		snprintf(image, sizeof(image), "image %s", state);
	printf("%-16s %-9s %-40s %s, %lld tool%s on", name, transport, image,
	       manifest != NULL ? "manifest approved" : "manifest unapproved", (long long)on,
	       on == 1 ? "" : "s");
	const char *const keys[] = {"unenforced_accepted", "unenforced_refused"};
	for (size_t k = 0; k < 2; k++) {
		const struct json_value *a = json_get(o, keys[k]);
		if (a == NULL || a->kind != JSON_ARRAY || a->u.arr.len == 0)
			continue;
		char names[64] = "";
		for (size_t i = 0; i < a->u.arr.len; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			         i ? " and " : "", a->u.arr.items[i]->u.str.ptr);
		const char *plural = a->u.arr.len > 1 ? "s" : "";
		if (k == 0)
			printf("; runs without its %s limit%s (accepted)", names, plural);
		else
			printf("; will not start: its %s limit%s cannot hold here", names, plural);
	}
	const struct json_value *unasked = json_get(o, "write_without_confirmation");
	for (size_t i = 0; unasked != NULL && i < unasked->u.arr.len; i++)
		printf("%s%s", i == 0 ? "; write, no confirmation: " : ", ",
		       unasked->u.arr.items[i]->u.str.ptr);
	if (json_get_string(o, "platform_error") != NULL)
		printf("; will not start: cannot tell what the runtime enforces");
	printf("\n");
	/* whenever it cannot tell, it says why */
	const char *why = json_get_string(o, "image_error");
	if (why != NULL)
		printf("%-16s why the image is unknown: %s\n", "", why);
}

int cmd_list(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("list");
	const char *dir = NULL;
	bool as_json = false;
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0 || opt_flag(argv, i, "json", &as_json))
			continue;
		return usage_error(self, "unexpected argument \"%s\"", argv[i]);
	}
	struct cfg *cfg = NULL;
	if (setup_config(dir, &cfg, err) < 0)
		return EXIT_FAIL;
	struct ctr_driver *d = NULL;
	struct mg_err *derr = NULL;
	bool need_driver = false;
	for (size_t i = 0; i < cfg->nservers; i++)
		need_driver |= cfg->servers[i].transport == CFG_TRANSPORT_CONTAINER;
	if (need_driver)
		setup_driver(cfg, &d, &derr);
	struct ctr_platform platform = {0};
	struct mg_err *perr = NULL;
	bool kept = false;
	if (d != NULL && ctr_platform_get(d, &platform, &kept, &perr) < 0)
		fprintf(stderr, "mcpgate list: %s\n", mg_err_msg(perr));
	struct json_value *all = json_new_array();
	for (size_t i = 0; i < cfg->nservers; i++)
		json_array_push(all, server_entry(&cfg->servers[i], d, mg_err_msg(derr), &platform,
		                                  perr != NULL ? mg_err_msg(perr) : NULL));
	mg_err_free(perr);
	ctr_platform_free(&platform);
	int status = EXIT_OK;
	if (as_json) {
		struct mg_buf out = MG_BUF_INIT(16u << 20);
		if (json_generate(all, &out, err) < 0)
			status = EXIT_FAIL;
		else
			printf("%s\n", mg_buf_str(&out));
		mg_buf_free(&out);
	} else {
		for (size_t i = 0; i < all->u.arr.len; i++)
			print_line(all->u.arr.items[i]);
		if (derr != NULL)
			fprintf(stderr, "mcpgate list: %s\n", mg_err_msg(derr));
	}
	json_free(all);
	mg_err_free(derr);
	ctr_driver_free(d);
	cfg_free(cfg);
	return status;
}
