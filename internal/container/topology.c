/* A server's egress topology on podman and docker (docs/egress.md): its
 * internal and outer networks, the check that the host's firewall passes
 * what stays on the inner bridge, the addresses the proxy must refuse, the
 * sidecar's join of what it could not start on, its address, and the
 * removal of it all. The gateway asks for each step through the driver's
 * table and never learns which runtime does it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"

void ctr_topology_free(struct ctr_topology *t)
{
	free(t->net_in);
	free(t->net_out);
	free(t->sidecar);
	strv_free(&t->deny);
	strv_free(&t->join);
	strv_free(&t->from);
	*t = (struct ctr_topology){.deny = STRV_INIT, .join = STRV_INIT, .from = STRV_INIT};
}

bool ctr_cli_starts_on_networks(const struct ctr_driver *d)
{
	return d->kind == CTR_PODMAN;
}

/* A host firewall that would drop what stays on the inner bridge is said at
 * once, not found out by a timeout. Rootless, the bridge lives in the
 * runtime's own namespace, away from the host's chains. */
static int check_forward(const struct ctr_driver *d, const char *net, struct mg_err **err)
{
	cleanup_free char *ifname = NULL, *problem = NULL;
	if (ctr_cli_network_interface(d, net, &ifname, err) < 0 ||
	    (ifname != NULL && ctr_forward_problem(ifname, &problem, err) < 0))
		return -1;
	if (problem != NULL)
		return mg_err_set(err, "%s", problem);
	return 0;
}

int ctr_cli_topology_create(const struct ctr_driver *d, const struct ctr_topology_spec *spec,
                            struct ctr_topology *out, struct mg_err **err)
{
	*out = (struct ctr_topology){.deny = STRV_INIT, .join = STRV_INIT, .from = STRV_INIT};
	const char *server = spec->server->name;
	char *in = xasprintf("%s-in", spec->container);
	if (ctr_cli_network_create(d, in, true, spec->session, server, spec->owner, err) < 0) {
		free(in);
		return -1;
	}
	out->net_in = in;
	if (!spec->rootless && check_forward(d, in, err) < 0)
		return -1;
	char *outer = xasprintf("%s-out", spec->container);
	if (ctr_cli_network_create(d, outer, false, spec->session, server, spec->owner, err) < 0) {
		free(outer);
		return -1;
	}
	out->net_out = outer;

	/* Always refused: the inner network whole (the server and the sidecar)
	 * and both gateways (the host). The outer subnet is a private range:
	 * refused like any other unless a listed host opts in (network_private),
	 * which is how a person lets a server reach a host next door. */
	struct strv out_addrs = STRV_INIT;
	if (ctr_cli_network_addresses(d, in, &out->deny, err) < 0 ||
	    ctr_cli_network_addresses(d, outer, &out_addrs, err) < 0) {
		strv_free(&out_addrs);
		return -1;
	}
	for (size_t i = 0; i < out->deny.n; i++)
		if (strchr(out->deny.v[i], '/') != NULL)
			strv_push(&out->from, out->deny.v[i]);
	/* a network of the person's is reached for one destination on it: its
	 * gateway is the host, as the outer one's is */
	for (size_t i = 0; spec->join != NULL && spec->join[i] != NULL; i++) {
		struct mg_err *e = NULL;
		if (ctr_cli_network_addresses(d, spec->join[i], &out_addrs, &e) < 0) {
			mg_err_set(err, "network %s, which a connect entry names: %s",
			           spec->join[i], mg_err_msg(e));
			mg_err_free(e);
			strv_free(&out_addrs);
			return -1;
		}
		strv_push(&out->join, spec->join[i]);
	}
	for (size_t i = 0; i < out_addrs.n; i++)
		if (strchr(out_addrs.v[i], '/') == NULL)
			strv_push(&out->deny, out_addrs.v[i]);
	strv_free(&out_addrs);
	out->sidecar = xasprintf("%s-egress", spec->container);
	return 0;
}

int ctr_cli_sidecar_ready(const struct ctr_driver *d, struct ctr_topology *t, char **address,
                          struct mg_err **err)
{
	struct mg_err *e = NULL;
	if (!t->joined) {
		/* started on the outer network alone: the inner one joins now */
		if (!ctr_cli_starts_on_networks(d) &&
		    ctr_cli_network_connect(d, t->net_in, t->sidecar, &e) < 0) {
			mg_err_set(err, "connecting the egress sidecar to %s: %s", t->net_in,
			           mg_err_msg(e));
			mg_err_free(e);
			return -1;
		}
		t->joined = true;
	}
	/* the person's networks, for the destinations on them */
	for (; t->joined_own < t->join.n; t->joined_own++)
		if (ctr_cli_network_connect(d, t->join.v[t->joined_own], t->sidecar, &e) < 0) {
			mg_err_set(err, "connecting the egress sidecar to %s: %s",
			           t->join.v[t->joined_own], mg_err_msg(e));
			mg_err_free(e);
			return -1;
		}
	if (ctr_cli_container_address(d, t->sidecar, t->net_in, address, &e) < 0) {
		mg_err_set(err, "the egress sidecar has no address: %s", mg_err_msg(e));
		mg_err_free(e);
		return -1;
	}
	return 0;
}

int ctr_cli_topology_remove(const struct ctr_driver *d, struct ctr_topology *t, struct mg_err **err)
{
	if (t->sidecar != NULL)
		d->ops->remove(d, t->sidecar, NULL);
	free(t->sidecar);
	t->sidecar = NULL;
	t->joined = false;
	t->joined_own = 0;
	/* the networks go last: nothing may be attached to them */
	int r = 0;
	char **nets[] = {&t->net_in, &t->net_out};
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++) {
		if (*nets[i] == NULL)
			continue;
		struct mg_err *e = NULL;
		if (ctr_cli_network_remove(d, *nets[i], &e) < 0) {
			if (r < 0 && err != NULL)
				mg_err_set(err, "%s; %s", mg_err_msg(*err), mg_err_msg(e));
			else
				mg_err_set(err, "%s", mg_err_msg(e));
			r = -1;
			mg_err_free(e);
		}
		free(*nets[i]);
		*nets[i] = NULL;
	}
	return r;
}
