/* Bindings: where a secret may go. A binding is one (host, port, position)
 * a person made with `mcpgate secret bind`; a session hands a secret to a
 * server only where kc_bound_for() says so. */
#include "internal/keychain/keychain.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/keychain/keychain-internal.h"

/* the longest host or position name a binding holds (one length byte) */
#define KC_BINDING_TEXT_MAX 255

void kc_binding_clear(struct kc_binding *b)
{
	free(b->host);
	free(b->position_name);
	memset(b, 0, sizeof(*b));
}

char *kc_position_text(enum cfg_position position, const char *position_name)
{
	const char *kind = "none";
	switch (position) {
	case CFG_POSITION_ENV:
		kind = "env";
		break;
	case CFG_POSITION_HEADER:
		kind = "header";
		break;
	case CFG_POSITION_NONE:
		break;
	}
	return xasprintf("%s:%s", kind, position_name != NULL ? position_name : "");
}

char *kc_host_text(const char *host, unsigned port)
{
	if (port == 0)
		return xstrdup(host);
	return xasprintf("%s:%u", host, port);
}

static bool position_name_eq(enum cfg_position position, const char *a, const char *b)
{
	return position == CFG_POSITION_HEADER ? strcasecmp(a, b) == 0 : strcmp(a, b) == 0;
}

/* a binding to port `bound` lets the secret go to port `asked` */
static bool port_covers(unsigned bound, unsigned asked)
{
	return bound == asked || (bound == 0 && (asked == 80 || asked == 443));
}

/* host must already be in cfg_parse_host()'s normal form, without a port */
static int check_host(const char *host, unsigned port, struct mg_err **err)
{
	if (host == NULL || host[0] == '\0')
		return mg_err_set(err, "a binding needs a host");
	if (strlen(host) > KC_BINDING_TEXT_MAX || port > 65535)
		return mg_err_set(err, "host %.64s... is too long for a binding", host);
	struct cfg_host h = {0};
	if (cfg_parse_host(host, "host", &h, err) < 0)
		return -1;
	bool normal = strcmp(h.host, host) == 0 && h.port == 0;
	free(h.host);
	if (!normal)
		return mg_err_set(err, "host \"%s\" is not in the form cfg_parse_host gives", host);
	return 0;
}

static int check_position(enum cfg_position position, const char *position_name,
                          struct mg_err **err)
{
	if ((position != CFG_POSITION_ENV && position != CFG_POSITION_HEADER) ||
	    position_name == NULL)
		return mg_err_set(err, "a binding needs a position: env:NAME or header:NAME");
	if (strlen(position_name) > KC_BINDING_TEXT_MAX)
		return mg_err_set(err, "the position's name is longer than %d characters",
		                  KC_BINDING_TEXT_MAX);
	cleanup_free char *text = kc_position_text(position, position_name);
	enum cfg_position parsed;
	cleanup_free char *name = NULL;
	return cfg_parse_position(text, "position", &parsed, &name, err);
}

struct bind_args {
	const char *name;
	const struct cfg_host *hosts;
	size_t nhosts;
	enum cfg_position position;
	const char *position_name;
};

static int apply_bind(struct kc_state *st, void *data, struct mg_err **err)
{
	const struct bind_args *a = data;
	long i = kc_state_find(st, a->name);
	if (i < 0)
		return mg_err_set(err,
		                  "there is no secret %s: store it first (mcpgate secret set %s)",
		                  a->name, a->name);
	struct kc_info *info = &st->info[i];
	int added = 0;
	for (size_t h = 0; h < a->nhosts; h++) {
		const struct cfg_host *host = &a->hosts[h];
		bool have = false;
		for (size_t b = 0; b < info->nbindings && !have; b++) {
			const struct kc_binding *bd = &info->bindings[b];
			have = bd->position == a->position && bd->port == host->port &&
			       strcmp(bd->host, host->host) == 0 &&
			       position_name_eq(a->position, bd->position_name, a->position_name);
		}
		if (have)
			continue;
		if (info->nbindings >= KC_BINDINGS_MAX)
			return mg_err_set(err, "secret %s has %d bindings, its most", a->name,
			                  KC_BINDINGS_MAX);
		info->bindings =
		    xreallocarray(info->bindings, info->nbindings + 1, sizeof(*info->bindings));
		info->bindings[info->nbindings++] = (struct kc_binding){
		    .host = xstrdup(host->host),
		    .port = host->port,
		    .position = a->position,
		    .position_name = xstrdup(a->position_name),
		};
		added++;
	}
	return added;
}

int kc_bind(struct kc *kc, const char *name, const struct cfg_host *hosts, size_t nhosts,
            enum cfg_position position, const char *position_name, struct mg_err **err)
{
	if (cfg_check_credential_name(name, "secret name", err) < 0)
		return -1;
	if (nhosts == 0)
		return mg_err_set(err, "binding %s: no host given", name);
	if (check_position(position, position_name, err) < 0)
		return mg_err_wrap(err, "binding %s", name);
	for (size_t i = 0; i < nhosts; i++)
		if (check_host(hosts[i].host, hosts[i].port, err) < 0)
			return mg_err_wrap(err, "binding %s", name);
	struct bind_args a = {name, hosts, nhosts, position, position_name};
	int added = kc_change(kc, apply_bind, &a, err);
	if (added < 0)
		return mg_err_wrap(err, "binding %s", name);
	return added;
}

struct unbind_args {
	const char *name;
	const char *host; /* NULL: every binding */
	unsigned port;
};

static int apply_unbind(struct kc_state *st, void *data, struct mg_err **err)
{
	const struct unbind_args *a = data;
	long i = kc_state_find(st, a->name);
	if (i < 0)
		return mg_err_set(err, "there is no secret %s", a->name);
	struct kc_info *info = &st->info[i];
	size_t kept = 0;
	int removed = 0;
	for (size_t b = 0; b < info->nbindings; b++) {
		struct kc_binding *bd = &info->bindings[b];
		if (a->host == NULL || (strcmp(bd->host, a->host) == 0 && bd->port == a->port)) {
			kc_binding_clear(bd);
			removed++;
		} else {
			info->bindings[kept++] = *bd;
		}
	}
	info->nbindings = kept;
	return removed;
}

int kc_unbind(struct kc *kc, const char *name, const char *host, unsigned port, struct mg_err **err)
{
	if (cfg_check_credential_name(name, "secret name", err) < 0)
		return -1;
	if (host != NULL && check_host(host, port, err) < 0)
		return mg_err_wrap(err, "unbinding %s", name);
	struct unbind_args a = {name, host, port};
	int removed = kc_change(kc, apply_unbind, &a, err);
	if (removed < 0)
		return mg_err_wrap(err, "unbinding %s", name);
	return removed;
}

bool kc_bound_for(const struct kc *kc, const char *name, const char *host, unsigned port,
                  enum cfg_position position, const char *position_name)
{
	if (name == NULL || host == NULL || position_name == NULL)
		return false;
	if (position != CFG_POSITION_ENV && position != CFG_POSITION_HEADER)
		return false;
	const struct kc_info *info = kc_find(kc, name);
	if (info == NULL)
		return false;
	for (size_t i = 0; i < info->nbindings; i++) {
		const struct kc_binding *b = &info->bindings[i];
		if (b->position == position && strcmp(b->host, host) == 0 &&
		    port_covers(b->port, port) &&
		    position_name_eq(position, b->position_name, position_name))
			return true;
	}
	return false;
}
