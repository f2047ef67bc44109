/* The operations that run the podman or docker command: image check, pull,
 * remove, sweep, and the network commands a topology is made of (topology.c). Each runtime process gets the driver's fixed environment
 * and a deadline. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"
#include "internal/json/json.h"
#include "internal/proc/proc.h"

/* Run the runtime with args (argv[0] is added) and capture its output. */
static int runtime_run_in(const struct ctr_driver *d, const char *const *args, int in_fd,
                          struct proc_result *res, struct mg_err **err)
{
	struct strv argv = STRV_INIT;
	strv_push(&argv, d->path);
	for (size_t i = 0; args[i] != NULL; i++)
		strv_push(&argv, args[i]);
	struct strv env = STRV_INIT;
	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&env, d->env.v[i]);
	int r = proc_run_in((const char *const *)strv_array(&argv),
	                    (const char *const *)strv_array(&env), in_fd, d->timeout_ms,
	                    CTR_OUTPUT_MAX, res, err);
	if (r < 0) {
		proc_result_free(res);
		mg_err_wrap(err, "%s %s", d->name, args[0]);
	}
	strv_free(&argv);
	strv_free(&env);
	return r;
}

static int runtime_run(const struct ctr_driver *d, const char *const *args, struct proc_result *res,
                       struct mg_err **err)
{
	return runtime_run_in(d, args, -1, res, err);
}

/* The runtime's complaint, trimmed to one readable line */
static void runtime_failed(const struct ctr_driver *d, const char *what,
                           const struct proc_result *res, struct mg_err **err)
{
	char status[PROC_STATUS_MAX];
	proc_status_describe(res->status, status, sizeof(status));
	const char *text = mg_buf_str(&res->err);
	size_t n = strcspn(text, "\n");
	if (n > 300)
		n = 300;
	mg_err_set(err, "%s %s %s: %.*s", d->name, what, status, (int)n, text);
}

static bool exited_ok(const struct proc_result *res)
{
	return WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0;
}

int ctr_cli_run_in(const struct ctr_driver *d, const char *what, const char *const *args, int in_fd,
                   struct proc_result *res, struct mg_err **err)
{
	if (runtime_run_in(d, args, in_fd, res, err) < 0)
		return -1;
	if (!exited_ok(res)) {
		runtime_failed(d, what, res, err);
		proc_result_free(res);
		return -1;
	}
	return 0;
}

static bool says_missing(const struct proc_result *res)
{
	const char *t = mg_buf_str(&res->err);
	return strstr(t, "image not known") != NULL || strstr(t, "No such image") != NULL ||
	       strstr(t, "no such image") != NULL;
}

static int cli_image_present(const struct ctr_driver *d, const char *image, struct mg_err **err)
{
	const char *at = strstr(image, "@sha256:");
	if (at == NULL)
		return mg_err_set(err, "image %s is not pinned by digest", image);
	const char *digest = at + 1;
	char id[CTR_ID_LEN + 1];
	if (ctr_local_image_id(d, image, id) != NULL) {
		/* docker keeps no digest for a loaded image: an image of mcpgate's
		 * own is the one whose ID is the config its kept manifest names */
		const char *by_id[] = {"image", "inspect", "--format", "{{.Id}}", id, NULL};
		struct proc_result res;
		if (runtime_run(d, by_id, &res, err) < 0)
			return -1;
		int r = exited_ok(&res) && strncmp(res.out.data, id, strlen(id)) == 0 ? 1 : 0;
		if (!exited_ok(&res) && !says_missing(&res))
			r = -1, runtime_failed(d, "image inspect", &res, err);
		proc_result_free(&res);
		return r;
	}
	const char *args[] = {"image", "inspect", "--format", "{{json .RepoDigests}}", image, NULL};
	struct proc_result res;
	if (runtime_run(d, args, &res, err) < 0)
		return -1;
	int r;
	if (!exited_ok(&res)) {
		if (says_missing(&res))
			r = 0;
		else
			r = -1, runtime_failed(d, "image inspect", &res, err);
		proc_result_free(&res);
		return r;
	}
	struct json_value *digests = NULL;
	if (json_parse(res.out.data, res.out.len, NULL, &digests, err) < 0) {
		proc_result_free(&res);
		return mg_err_wrap(err, "%s image inspect %s", d->name, image);
	}
	/* the reference resolved; the image must also carry the digest itself */
	r = 0;
	if (digests->kind == JSON_ARRAY) {
		size_t dl = strlen(digest);
		for (size_t i = 0; i < digests->u.arr.len; i++) {
			const struct json_value *v = digests->u.arr.items[i];
			if (v->kind != JSON_STRING || v->u.str.len <= dl)
				continue;
			const char *tail = v->u.str.ptr + v->u.str.len - dl;
			if (tail[-1] == '@' && strcmp(tail, digest) == 0)
				r = 1;
		}
	}
	json_free(digests);
	proc_result_free(&res);
	return r;
}

static int run_checked(const struct ctr_driver *d, const char *what, const char *const *args,
                       struct proc_result *res, struct mg_err **err);

/* The strings of a JSON array (null and absent are empty); -1 for anything else */
static int string_list(const struct json_value *v, struct strv *out)
{
	if (v == NULL || v->kind == JSON_NULL)
		return 0;
	if (v->kind != JSON_ARRAY)
		return -1;
	for (size_t i = 0; i < v->u.arr.len; i++) {
		const struct json_value *x = v->u.arr.items[i];
		if (x->kind != JSON_STRING || strlen(x->u.str.ptr) != x->u.str.len)
			return -1;
		strv_push(out, x->u.str.ptr);
	}
	return 0;
}

static int cli_image_config(const struct ctr_driver *d, const char *image, bool command,
                            struct ctr_image_config *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (d->kind == CTR_PODMAN && !command)
		return 0;
	/* the image is pinned by digest: what it declared once, it declares */
	struct json_value *v = ctr_cache_image_config(d, image);
	if (v == NULL) {
		char id[CTR_ID_LEN + 1];
		const char *args[] = {
		    "image", "inspect", "--format", "{{json .Config}}", ctr_run_ref(d, image, id),
		    NULL};
		struct proc_result res;
		if (run_checked(d, "image inspect", args, &res, err) < 0)
			return -1;
		int r = json_parse(res.out.data, res.out.len, NULL, &v, err);
		proc_result_free(&res);
		if (r < 0)
			return mg_err_wrap(err, "the configuration of image %s", image);
		if (v->kind == JSON_OBJECT)
			ctr_cache_keep_image_config(d, image, v);
	}
	const struct json_value *vol = v->kind == JSON_OBJECT ? json_get(v, "Volumes") : NULL;
	for (size_t i = 0; vol != NULL && vol->kind == JSON_OBJECT && i < vol->u.obj.len; i++)
		strv_push(&out->volumes, vol->u.obj.items[i].key);
	const struct json_value *lab = v->kind == JSON_OBJECT ? json_get(v, "Labels") : NULL;
	for (size_t i = 0; lab != NULL && lab->kind == JSON_OBJECT && i < lab->u.obj.len; i++)
		if (lab->u.obj.items[i].value->kind == JSON_STRING) {
			strv_push(&out->labels, lab->u.obj.items[i].key);
			strv_push(&out->labels, lab->u.obj.items[i].value->u.str.ptr);
		}
	if (v->kind != JSON_OBJECT ||
	    string_list(json_get(v, "Entrypoint"), &out->entrypoint) < 0 ||
	    string_list(json_get(v, "Cmd"), &out->cmd) < 0) {
		json_free(v);
		ctr_image_config_free(out);
		return mg_err_set(err, "image %s: its configuration is not what %s inspect gives",
		                  image, d->name);
	}
	json_free(v);
	return 0;
}

static int cli_load(const struct ctr_driver *d, const char *archive, struct mg_err **err)
{
	const char *argv[] = {d->path, "load", "-i", archive, NULL};
	struct strv env = STRV_INIT;
	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&env, d->env.v[i]);
	struct proc_result res;
	/* a few hundred MB of layers: ten minutes at most */
	int r = proc_run(argv, (const char *const *)strv_array(&env), 600 * 1000, CTR_OUTPUT_MAX,
	                 &res, err);
	strv_free(&env);
	if (r == 0 && !exited_ok(&res)) {
		runtime_failed(d, "load", &res, err);
		r = -1;
	}
	proc_result_free(&res);
	return r < 0 ? mg_err_wrap(err, "loading %s", archive) : 0;
}

/* "sha256:HEX" whatever the runtime wrote (podman writes the hex alone) */
static char *full_id(const char *id)
{
	return strncmp(id, "sha256:", 7) == 0 ? xstrdup(id) : xasprintf("sha256:%s", id);
}

/* One object of `image inspect`'s array into i; false when it is not one */
static bool image_info_of(const struct json_value *o, struct ctr_image_info *i)
{
	memset(i, 0, sizeof(*i));
	const char *id = json_get_string(o, "Id");
	if (id == NULL)
		return false;
	i->id = full_id(id);
	const char *digest = json_get_string(o, "Digest");
	if (digest != NULL && strncmp(digest, "sha256:", 7) == 0)
		i->digest = xstrdup(digest);
	if (string_list(json_get(o, "RepoTags"), &i->tags) < 0)
		strv_free(&i->tags);
	if (string_list(json_get(o, "RepoDigests"), &i->digests) < 0)
		strv_free(&i->digests);
	const struct json_value *lab = json_get(o, "Labels");
	if (lab == NULL || lab->kind != JSON_OBJECT)
		lab = json_get(json_get(o, "Config"), "Labels");
	for (size_t k = 0; lab != NULL && lab->kind == JSON_OBJECT && k < lab->u.obj.len; k++)
		if (lab->u.obj.items[k].value->kind == JSON_STRING) {
			strv_push(&i->labels, lab->u.obj.items[k].key);
			strv_push(&i->labels, lab->u.obj.items[k].value->u.str.ptr);
		}
	int64_t size = 0;
	if (json_number_int64(json_get(o, "Size"), &size) == 0 && size > 0)
		i->size = (uint64_t)size;
	return true;
}

int ctr_cli_image_list(const struct ctr_driver *d, const char *label, struct ctr_images *out,
                       struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_free char *filter = xasprintf("label=%s", label);
	const char *args[] = {"images",   "--filter", filter, "--no-trunc",
	                      "--format", "{{.ID}}",  NULL};
	struct proc_result res;
	if (run_checked(d, "images", args, &res, err) < 0)
		return -1;
	struct strv ids = STRV_INIT;
	strv_push(&ids, "image");
	strv_push(&ids, "inspect");
	for (char *line = res.out.data; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		bool seen = false;
		for (size_t k = 2; k < ids.n; k++)
			seen |= strcmp(ids.v[k], line) == 0;
		if (*line != '\0' && !seen)
			strv_push(&ids, line); /* an image of several names is listed once a name */
		line = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	int r = 0;
	if (ids.n > 2) {
		struct json_value *v = NULL;
		if (run_checked(d, "image inspect", (const char *const *)strv_array(&ids), &res,
		                err) < 0)
			r = -1;
		else if (json_parse(res.out.data, res.out.len, NULL, &v, err) < 0)
			r = mg_err_wrap(err, "%s image inspect", d->name), proc_result_free(&res);
		else {
			proc_result_free(&res);
			if (v->kind == JSON_ARRAY && v->u.arr.len > 0)
				out->v = xcalloc(v->u.arr.len, sizeof(*out->v));
			for (size_t k = 0; v->kind == JSON_ARRAY && k < v->u.arr.len; k++)
				if (image_info_of(v->u.arr.items[k], &out->v[out->n]))
					out->n++;
		}
		json_free(v);
	}
	strv_free(&ids);
	return r;
}

int ctr_cli_image_remove(const struct ctr_driver *d, const char *image, bool *in_use,
                         struct mg_err **err)
{
	*in_use = false;
	char local[CTR_ID_LEN + 1];
	const char *ref = strstr(image, "@sha256:") != NULL ? ctr_run_ref(d, image, local) : image;
	const char *inspect[] = {"image", "inspect", ref, NULL};
	struct proc_result res;
	if (runtime_run(d, inspect, &res, err) < 0)
		return -1;
	if (!exited_ok(&res)) {
		int r =
		    says_missing(&res) ? 0 : (runtime_failed(d, "image inspect", &res, err), -1);
		proc_result_free(&res);
		return r;
	}
	struct json_value *v = NULL;
	struct ctr_image_info info = {0};
	bool ok = json_parse(res.out.data, res.out.len, NULL, &v, NULL) == 0 &&
	          v->kind == JSON_ARRAY && v->u.arr.len == 1 &&
	          image_info_of(v->u.arr.items[0], &info);
	json_free(v);
	proc_result_free(&res);
	if (!ok) {
		ctr_image_info_free(&info);
		return mg_err_set(err, "%s image inspect %s: not one image", d->name, ref);
	}
	/* never forced: a container of it (a session that runs now, or one
	 * that ended and was kept) keeps it, and says so */
	cleanup_free char *ancestor = xasprintf("ancestor=%s", info.id);
	const char *ps[] = {"ps", "-a", "--filter", ancestor, "--format", "{{.Names}}", NULL};
	int r = run_checked(d, "ps", ps, &res, err);
	if (r == 0) {
		size_t n = res.out.len;
		while (n > 0 && res.out.data[n - 1] == '\n')
			n--;
		for (size_t k = 0; k < n; k++)
			if (res.out.data[k] == '\n')
				res.out.data[k] = ' ';
		if (n > 0) {
			*in_use = true;
			r = mg_err_set(err, "image %s is in use by %s container %.*s: it stays",
			               image, d->name, (int)(n > 200 ? 200 : n), res.out.data);
		}
		proc_result_free(&res);
	}
	/* each name, then the image by its ID if it is still there */
	struct strv rmi = STRV_INIT;
	strv_push(&rmi, "rmi");
	for (size_t k = 0; k < info.tags.n; k++)
		if (strstr(info.tags.v[k], "<none>") == NULL)
			strv_push(&rmi, info.tags.v[k]);
	if (r == 0 && rmi.n > 1)
		r = run_checked(d, "rmi", (const char *const *)strv_array(&rmi), &res, err) < 0
		        ? -1
		        : (proc_result_free(&res), 0);
	strv_free(&rmi);
	if (r == 0) {
		const char *by_id[] = {"rmi", info.id, NULL};
		if (runtime_run(d, by_id, &res, err) < 0)
			r = -1;
		else {
			if (!exited_ok(&res) && !says_missing(&res))
				r = (runtime_failed(d, "rmi", &res, err), -1);
			proc_result_free(&res);
		}
	}
	ctr_image_info_free(&info);
	return r < 0 ? -1 : 1;
}

int ctr_cli_transfer(const struct ctr_driver *d, const char *verb, const char *image,
                     struct mg_err **err)
{
	const char *argv[] = {d->path, verb, image, NULL};
	struct strv env = STRV_INIT;
	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&env, d->env.v[i]);
	/* the runtime's own progress goes to our stderr; stdout stays clean */
	struct proc_spec spec = {
	    .path = d->path,
	    .argv = argv,
	    .envp = (const char *const *)strv_array(&env),
	    .stdio = {{PROC_STDIO_NULL, -1, false},
	              {PROC_STDIO_FD, STDERR_FILENO, false},
	              {PROC_STDIO_FD, STDERR_FILENO, false}},
	};
	struct proc p = PROC_INIT;
	int r = proc_spawn(&spec, &p, err);
	strv_free(&env);
	if (r < 0)
		return mg_err_wrap(err, "%s %s", d->name, verb);
	int status = 0;
	/* a large image on a slow link: an hour at most */
	if (proc_wait(&p, proc_now_ms() + 3600 * 1000, &status, err) < 0) {
		proc_stop(&p, 1000, &status);
		proc_close(&p);
		return mg_err_wrap(err, "%s %s %s", d->name, verb, image);
	}
	proc_close(&p);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char why[PROC_STATUS_MAX];
		proc_status_describe(status, why, sizeof(why));
		return mg_err_set(err, "%s %s %s %s", d->name, verb, image, why);
	}
	return 0;
}

static int cli_pull(const struct ctr_driver *d, const char *image, struct mg_err **err)
{
	if (strstr(image, "@sha256:") == NULL)
		return mg_err_set(err, "image %s is not pinned by digest", image);
	return ctr_cli_transfer(d, "pull", image, err);
}

int ctr_cli_remove(const struct ctr_driver *d, const char *name, struct mg_err **err)
{
	/* --volumes: whatever volume the container made goes with it (an
	 * image's VOLUME docker was not stopped from making, at any end) */
	const char *podman_args[] = {"rm", "--force", "--time=0", "--volumes", name, NULL};
	const char *docker_args[] = {"rm", "--force", "--volumes", name, NULL};
	struct proc_result res;
	if (runtime_run(d, d->kind == CTR_PODMAN ? podman_args : docker_args, &res, err) < 0)
		return -1;
	int r = 0;
	/* gone already, or going: docker's own --rm may be removing it right now */
	const char *t = mg_buf_str(&res.err);
	if (!exited_ok(&res) && strstr(t, "No such container") == NULL &&
	    strstr(t, "no such container") == NULL && strstr(t, "already in progress") == NULL) {
		runtime_failed(d, "rm", &res, err);
		r = -1;
	}
	proc_result_free(&res);
	return r;
}

/* "ID<TAB>OWNER" lines of containers that carry the owner label */
static int list_labelled_containers(const struct ctr_driver *d, struct proc_result *res,
                                    struct mg_err **err)
{
	const char *fmt = d->kind == CTR_PODMAN ? "{{.ID}}\t{{index .Labels \"" CTR_LABEL_OWNER
	                                          "\"}}"
	                                        : "{{.ID}}\t{{.Label \"" CTR_LABEL_OWNER "\"}}";
	const char *args[] = {"ps",       "-a", "--filter", "label=" CTR_LABEL_PID,
	                      "--format", fmt,  NULL};
	if (runtime_run(d, args, res, err) < 0)
		return -1;
	if (!exited_ok(res)) {
		runtime_failed(d, "ps", res, err);
		proc_result_free(res);
		return -1;
	}
	return 0;
}

/* Only what is proved dead goes: another pid namespace, or a label without
 * the owner's identity (an older mcpgate's), is left alone */
bool ctr_owner_dead(const char *label, unsigned *left)
{
	enum ctr_owner_verdict v = label != NULL && *label != '\0' && strcmp(label, "<no value>")
	                               ? ctr_owner_judge(label)
	                               : CTR_OWNER_UNKNOWN;
	if (v == CTR_OWNER_UNKNOWN)
		(*left)++;
	return v == CTR_OWNER_DEAD;
}

static int sweep_containers(const struct ctr_driver *d, unsigned *removed, unsigned *left,
                            struct mg_err **err)
{
	struct proc_result res;
	if (list_labelled_containers(d, &res, err) < 0)
		return -1;
	int r = 0;
	char *line = res.out.data;
	while (line != NULL && *line != '\0') {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		char *tab = strchr(line, '\t');
		if (tab != NULL && ctr_owner_dead(tab + 1, left)) {
			*tab = '\0';
			if (ctr_cli_remove(d, line, err) < 0)
				r = -1;
			else
				(*removed)++;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	return r;
}

/* The owner label of network name, from `network inspect` (podman writes
 * "labels", docker "Labels"); NULL when it has none. */
static char *network_owner_label(const struct ctr_driver *d, const char *name, struct mg_err **err)
{
	const char *args[] = {"network", "inspect", name, NULL};
	struct proc_result res;
	if (runtime_run(d, args, &res, err) < 0)
		return NULL;
	char *pid = NULL;
	struct json_value *v = NULL;
	if (exited_ok(&res) && json_parse(res.out.data, res.out.len, NULL, &v, err) == 0) {
		if (v->kind == JSON_ARRAY && v->u.arr.len == 1) {
			const struct json_value *net = v->u.arr.items[0];
			const struct json_value *labels = json_get(net, "labels");
			if (labels == NULL)
				labels = json_get(net, "Labels");
			const char *p = json_get_string(labels, CTR_LABEL_OWNER);
			if (p != NULL)
				pid = xstrdup(p);
		}
		json_free(v);
	}
	mg_err_clear(err);
	proc_result_free(&res);
	return pid;
}

static int sweep_networks(const struct ctr_driver *d, unsigned *removed, unsigned *left,
                          struct mg_err **err)
{
	const char *args[] = {"network",  "ls",        "--filter", "label=" CTR_LABEL_PID,
	                      "--format", "{{.Name}}", NULL};
	struct proc_result res;
	if (runtime_run(d, args, &res, err) < 0)
		return -1;
	if (!exited_ok(&res)) {
		runtime_failed(d, "network ls", &res, err);
		proc_result_free(&res);
		return -1;
	}
	int r = 0;
	char *line = res.out.data;
	while (line != NULL && *line != '\0') {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		cleanup_free char *owner = network_owner_label(d, line, NULL);
		if (ctr_owner_dead(owner, left)) {
			const char *rm[] = {"network", "rm", line, NULL};
			struct proc_result rres;
			if (runtime_run(d, rm, &rres, err) < 0) {
				r = -1;
			} else {
				if (exited_ok(&rres))
					(*removed)++;
				else
					runtime_failed(d, "network rm", &rres, err), r = -1;
				proc_result_free(&rres);
			}
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	return r;
}

int ctr_cli_sweep(const struct ctr_driver *d, unsigned *removed, struct mg_err **err)
{
	*removed = 0;
	unsigned left = 0;
	/* containers first: a network in use cannot be removed */
	if (sweep_containers(d, removed, &left, err) < 0)
		return mg_err_wrap(err, "sweeping containers");
	if (sweep_networks(d, removed, &left, err) < 0)
		return mg_err_wrap(err, "sweeping networks");
	if (left > 0)
		mg_info("sweep: left %u container(s) and network(s) whose owner it cannot judge "
		        "(another pid namespace, or no owner label)",
		        left);
	return 0;
}

static int run_checked(const struct ctr_driver *d, const char *what, const char *const *args,
                       struct proc_result *res, struct mg_err **err)
{
	if (runtime_run(d, args, res, err) < 0)
		return -1;
	if (!exited_ok(res)) {
		runtime_failed(d, what, res, err);
		proc_result_free(res);
		return -1;
	}
	return 0;
}

bool ctr_can_unshare(const struct ctr_driver *d)
{
	if (d->kind != CTR_PODMAN)
		return false;
	/* a podman that talks to a service elsewhere has no namespace here */
	for (size_t i = 0; i < d->env.n; i++)
		if (strncmp(d->env.v[i], "CONTAINER_HOST=", 15) == 0 ||
		    strncmp(d->env.v[i], "CONTAINER_CONNECTION=", 21) == 0)
			return false;
	return true;
}

int ctr_cli_unshare(const struct ctr_driver *d, const char *const *args, int in_fd,
                    struct mg_err **err)
{
	if (d->kind != CTR_PODMAN)
		return mg_err_set(err, "%s has no unshare", d->name);
	struct strv a = STRV_INIT;
	strv_push(&a, "unshare");
	for (size_t i = 0; args[i] != NULL; i++)
		strv_push(&a, args[i]);
	struct proc_result res;
	int r = runtime_run_in(d, (const char *const *)strv_array(&a), in_fd, &res, err);
	strv_free(&a);
	if (r == 0 && !exited_ok(&res)) {
		runtime_failed(d, "unshare", &res, err);
		r = -1;
	}
	proc_result_free(&res);
	return r;
}

int ctr_cli_network_create(const struct ctr_driver *d, const char *name, bool internal,
                           const char *session, const char *server, pid_t owner,
                           struct mg_err **err)
{
	struct strv args = STRV_INIT;
	strv_push(&args, "network");
	strv_push(&args, "create");
	if (internal) {
		strv_push(&args, "--internal");
		if (d->kind == CTR_PODMAN)
			strv_push(&args, "--disable-dns");
		else if (d->kind == CTR_DOCKER)
			/* docker gives an internal bridge the gateway address on the
			 * host, where any host service on 0.0.0.0 answered the server
			 * directly; without it the host is not on that network */
			strv_push(&args, "--opt=com.docker.network.bridge.inhibit_ipv4=true");
	}
	if (d->kind == CTR_SWARM) {
		/* across the swarm's nodes, and open to the relay and the sidecar,
		 * which are containers on the manager (docs/2026-12-02-swarm.md) */
		strv_push(&args, "--driver=overlay");
		strv_push(&args, "--attachable");
	}
	ctr_push_labels(&args, session, server, owner);
	strv_push(&args, name);
	struct proc_result res;
	int r = run_checked(d, "network create", (const char *const *)strv_array(&args), &res, err);
	strv_free(&args);
	if (r < 0)
		return -1;
	proc_result_free(&res);
	return 0;
}

int ctr_cli_network_remove(const struct ctr_driver *d, const char *name, struct mg_err **err)
{
	const char *args[] = {"network", "rm", name, NULL};
	struct proc_result res;
	if (runtime_run(d, args, &res, err) < 0)
		return -1;
	int r = 0;
	const char *t = mg_buf_str(&res.err);
	if (!exited_ok(&res) && strstr(t, "not found") == NULL && strstr(t, "No such") == NULL &&
	    strstr(t, "unable to find") == NULL) {
		runtime_failed(d, "network rm", &res, err);
		r = -1;
	}
	proc_result_free(&res);
	return r;
}

int ctr_cli_network_connect(const struct ctr_driver *d, const char *network, const char *container,
                            struct mg_err **err)
{
	const char *args[] = {"network", "connect", network, container, NULL};
	struct proc_result res;
	if (run_checked(d, "network connect", args, &res, err) < 0)
		return -1;
	proc_result_free(&res);
	return 0;
}

/* inspect NAME (a network or a container): the first element of its array */
static struct json_value *inspect_one(const struct ctr_driver *d, const char *kind,
                                      const char *name, struct mg_err **err)
{
	const char *net_args[] = {"network", "inspect", name, NULL};
	const char *ctr_args[] = {"container", "inspect", name, NULL};
	struct proc_result res;
	if (run_checked(d, kind, strcmp(kind, "network") == 0 ? net_args : ctr_args, &res, err) < 0)
		return NULL;
	struct json_value *v = NULL;
	int r = json_parse(res.out.data, res.out.len, NULL, &v, err);
	proc_result_free(&res);
	if (r < 0)
		return NULL;
	if (v->kind != JSON_ARRAY || v->u.arr.len != 1) {
		json_free(v);
		mg_err_set(err, "%s %s inspect %s: not one object", d->name, kind, name);
		return NULL;
	}
	struct json_value *one = v->u.arr.items[0];
	v->u.arr.len = 0;
	json_free(v);
	return one;
}

static void take_address(struct strv *out, const struct json_value *o, const char *a, const char *b)
{
	const char *v = json_get_string(o, a);
	if (v == NULL)
		v = json_get_string(o, b);
	if (v != NULL && *v != '\0')
		strv_push(out, v);
}

int ctr_cli_network_addresses(const struct ctr_driver *d, const char *name, struct strv *out,
                              struct mg_err **err)
{
	struct json_value *net = inspect_one(d, "network", name, err);
	if (net == NULL)
		return -1;
	/* podman: "subnets": [{subnet, gateway}]; docker: "IPAM": {"Config": [{Subnet, Gateway}]} */
	const struct json_value *list = json_get(net, "subnets");
	if (list == NULL)
		list = json_get(json_get(net, "IPAM"), "Config");
	size_t before = out->n;
	for (size_t i = 0; list != NULL && list->kind == JSON_ARRAY && i < list->u.arr.len; i++) {
		take_address(out, list->u.arr.items[i], "subnet", "Subnet");
		take_address(out, list->u.arr.items[i], "gateway", "Gateway");
	}
	json_free(net);
	if (out->n == before)
		return mg_err_set(err, "%s network %s has no subnet", d->name, name);
	return 0;
}

int ctr_cli_network_interface(const struct ctr_driver *d, const char *name, char **ifname,
                              struct mg_err **err)
{
	*ifname = NULL;
	if (d->kind != CTR_PODMAN)
		return 0; /* docker accepts what stays on each of its bridges itself */
	struct json_value *net = inspect_one(d, "network", name, err);
	if (net == NULL)
		return -1;
	const char *v = json_get_string(net, "network_interface");
	if (v != NULL && *v != '\0')
		*ifname = xstrdup(v);
	json_free(net);
	return 0;
}

int ctr_cli_container_address(const struct ctr_driver *d, const char *container,
                              const char *network, char **address, struct mg_err **err)
{
	struct json_value *c = inspect_one(d, "container", container, err);
	if (c == NULL)
		return -1;
	const struct json_value *nets = json_get(json_get(c, "NetworkSettings"), "Networks");
	const char *ip = json_get_string(json_get(nets, network), "IPAddress");
	int r = 0;
	if (ip != NULL && *ip != '\0')
		*address = xstrdup(ip);
	else
		r = mg_err_set(err, "container %s has no address on %s yet", container, network);
	json_free(c);
	return r;
}

static int cli_platform(const struct ctr_driver *d, struct ctr_platform *out, struct mg_err **err)
{
	const char *podman_args[] = {"info", "--format", "json", NULL};
	const char *docker_args[] = {"info", "--format", "{{json .}}", NULL};
	struct proc_result res;
	if (run_checked(d, "info", d->kind == CTR_PODMAN ? podman_args : docker_args, &res, err) <
	    0)
		return -1;
	int r = ctr_platform_from_info(d->kind, res.out.data, res.out.len, out, err);
	proc_result_free(&res);
	return r;
}

const struct ctr_ops ctr_cli_ops = {
    .platform = cli_platform,
    .platform_key = ctr_cli_platform_key,
    .run_command = ctr_cli_run_command,
    .topology_create = ctr_cli_topology_create,
    .sidecar_command = ctr_cli_sidecar_command,
    .sidecar_ready = ctr_cli_sidecar_ready,
    .topology_remove = ctr_cli_topology_remove,
    .image_present = cli_image_present,
    .image_config = cli_image_config,
    .pull = cli_pull,
    .load = cli_load,
    .image_list = ctr_cli_image_list,
    .image_remove = ctr_cli_image_remove,
    .remove = ctr_cli_remove,
    .sweep = ctr_cli_sweep,
};
