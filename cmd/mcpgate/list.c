/* mcpgate list [--json]: one line per server: transport, image, manifest. */
#include <stdio.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/buf.h"
#include "internal/json/json.h"

/* "present", "missing (mcpgate pull NAME)", "unknown: why" or "-" (remote) */
static struct json_value *server_entry(const struct cfg_server *s, struct ctr_driver *d,
                                       const char *driver_error)
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
	printf("%-16s %-9s %-40s %s, %lld tool%s on\n", name, transport, image,
	       manifest != NULL ? "manifest approved" : "manifest unapproved", (long long)on,
	       on == 1 ? "" : "s");
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
	struct json_value *all = json_new_array();
	for (size_t i = 0; i < cfg->nservers; i++)
		json_array_push(all, server_entry(&cfg->servers[i], d, mg_err_msg(derr)));
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
