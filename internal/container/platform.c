/* What the runtime can enforce on this platform, from its own report
 * (`podman info`, `docker info`): mcpgate asks for a memory and a process
 * limit on every container, and a platform that would silently drop one
 * makes the server unavailable unless mcp.toml accepts it
 * (docs/unenforced.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/xalloc.h"
#include "internal/container/container.h"
#include "internal/json/json.h"

static bool is_true(const struct json_value *v)
{
	return v != NULL && v->kind == JSON_BOOL && v->u.boolean;
}

static bool is_false(const struct json_value *v)
{
	return v != NULL && v->kind == JSON_BOOL && !v->u.boolean;
}

static bool array_has(const struct json_value *arr, const char *s, bool prefix)
{
	if (arr == NULL || arr->kind != JSON_ARRAY)
		return false;
	size_t n = strlen(s);
	for (size_t i = 0; i < arr->u.arr.len; i++) {
		const struct json_value *v = arr->u.arr.items[i];
		if (v->kind != JSON_STRING)
			continue;
		if (prefix ? strncmp(v->u.str.ptr, s, n) == 0 : strcmp(v->u.str.ptr, s) == 0)
			return true;
	}
	return false;
}

static void unenforced(struct ctr_platform *p, unsigned bit, const char *why)
{
	for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
		if (bit == 1u << b && !(p->unenforced & bit)) {
			p->unenforced |= bit;
			p->why[b] = xstrdup(why);
		}
}

/* The controllers a limit needs, by property */
static const char *const controller[CFG_PROP_COUNT] = {"memory", "pids"};

static void from_podman(const struct json_value *info, struct ctr_platform *p)
{
	const struct json_value *host = json_get(info, "host");
	p->rootless = is_true(json_get(json_get(host, "security"), "rootless"));
	const char *v = json_get_string(host, "cgroupVersion");
	p->cgroup = v == NULL ? 0 : strcmp(v, "v2") == 0 ? 2 : strcmp(v, "v1") == 0 ? 1 : 0;
	const struct json_value *ctl = json_get(host, "cgroupControllers");
	if (p->rootless && p->cgroup == 1) {
		/* podman's own rule: it warns and runs the container without them */
		unenforced(p, CFG_PROP_MEMORY, "rootless podman on cgroup v1 ignores --memory");
		unenforced(p, CFG_PROP_PIDS, "rootless podman on cgroup v1 ignores --pids-limit");
		return;
	}
	if (p->cgroup != 0 && ctl != NULL && ctl->kind == JSON_ARRAY) {
		/* the controllers podman can use (rootless on v2: those delegated
		 * to the user) */
		for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
			if (!array_has(ctl, controller[b], false)) {
				char why[160];
				snprintf(why, sizeof(why),
				         "podman%s on cgroup v%d has no %s controller%s",
				         p->rootless ? " (rootless)" : "", p->cgroup, controller[b],
				         p->rootless ? " delegated to this user" : "");
				unenforced(p, 1u << b, why);
			}
	} else
		for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
			unenforced(
			    p, 1u << b,
			    "podman did not say which cgroup version and controllers it has");
}

static void from_docker(const struct json_value *info, struct ctr_platform *p)
{
	p->rootless = array_has(json_get(info, "SecurityOptions"), "name=rootless", true);
	const char *v = json_get_string(info, "CgroupVersion");
	p->cgroup = v == NULL ? 0 : strcmp(v, "2") == 0 ? 2 : strcmp(v, "1") == 0 ? 1 : 0;
	if (p->rootless && p->cgroup == 1) {
		unenforced(p, CFG_PROP_MEMORY, "rootless docker on cgroup v1 ignores --memory");
		unenforced(p, CFG_PROP_PIDS, "rootless docker on cgroup v1 ignores --pids-limit");
		return;
	}
	/* the daemon's own word on what its kernel and cgroups allow; absent
	 * counts as "no", as docker run would then discard the limit */
	if (!is_true(json_get(info, "MemoryLimit")))
		unenforced(p, CFG_PROP_MEMORY,
		           is_false(json_get(info, "MemoryLimit"))
		               ? "dockerd reports no memory limit support (MemoryLimit false)"
		               : "dockerd did not report memory limit support");
	if (!is_true(json_get(info, "PidsLimit")))
		unenforced(p, CFG_PROP_PIDS,
		           is_false(json_get(info, "PidsLimit"))
		               ? "dockerd reports no process limit support (PidsLimit false)"
		               : "dockerd did not report process limit support");
}

int ctr_platform_from_info(enum ctr_kind kind, const char *text, size_t len,
                           struct ctr_platform *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	struct json_value *info = NULL;
	if (json_parse(text, len, NULL, &info, err) < 0)
		return mg_err_wrap(err, "%s info", kind == CTR_PODMAN ? "podman" : "docker");
	if (info->kind != JSON_OBJECT) {
		json_free(info);
		return mg_err_set(err, "%s info: not a JSON object",
		                  kind == CTR_PODMAN ? "podman" : "docker");
	}
	if (kind == CTR_PODMAN)
		from_podman(info, out);
	else
		from_docker(info, out);
	json_free(info);
	out->known = true;
	return 0;
}

void ctr_platform_free(struct ctr_platform *p)
{
	for (unsigned b = 0; b < CFG_PROP_COUNT; b++) {
		free(p->why[b]);
		p->why[b] = NULL;
	}
	p->unenforced = 0;
	p->known = false;
}

/* "memory", "memory and pids" as a TOML array's entries */
static void push_names(struct mg_buf *b, unsigned bits, const char *quote, const char *sep)
{
	bool first = true;
	for (unsigned i = 0; i < CFG_PROP_COUNT; i++)
		if (bits & (1u << i)) {
			mg_buf_printf(b, NULL, "%s%s%s%s", first ? "" : sep, quote,
			              cfg_property_name(1u << i), quote);
			first = false;
		}
}

char *ctr_platform_refusal(const struct ctr_platform *p, const struct cfg_server *s)
{
	unsigned missing = p->unenforced & ~s->accept_unenforced;
	if (missing == 0)
		return NULL;
	struct mg_buf b = MG_BUF_INIT(4096);
	for (unsigned i = 0; i < CFG_PROP_COUNT; i++) {
		if (!(missing & (1u << i)))
			continue;
		mg_buf_printf(&b, NULL, "%sits %s limit cannot hold here: %s", b.len ? "; " : "",
		              cfg_property_name(1u << i), p->why[i]);
	}
	mg_buf_puts(&b, ". Run it where the runtime enforces ", NULL);
	push_names(&b, missing, "", " and ");
	mg_buf_puts(&b,
	            p->rootless ? " (as root, or on cgroup v2 with the controllers delegated),"
	                        : " (a kernel and cgroups that have the controller),",
	            NULL);
	mg_buf_puts(&b, " or accept it for this server in mcp.toml: accept_unenforced = [", NULL);
	push_names(&b, missing | (s->accept_unenforced & p->unenforced), "\"", ", ");
	mg_buf_puts(&b, "] (docs/unenforced.md)", NULL);
	return mg_buf_steal(&b, NULL);
}

struct json_value *ctr_platform_accepted_json(const struct ctr_platform *p,
                                              const struct cfg_server *s)
{
	unsigned bits = p->unenforced & s->accept_unenforced;
	if (bits == 0)
		return NULL;
	struct json_value *arr = json_new_array();
	for (unsigned i = 0; i < CFG_PROP_COUNT; i++)
		if (bits & (1u << i))
			json_array_push(arr, json_new_string(cfg_property_name(1u << i)));
	return arr;
}
