/* The seccomp profile of every server and sidecar (docs/seccomp.md), derived
 * by rule from the runtime's own default profile, never written by hand:
 *
 *  - rules that hold only with a capability are dropped (mcpgate's
 *    containers have none), and rules that hold without one lose that
 *    condition;
 *  - the calls below are taken out of every allowing rule and refused with
 *    EPERM: namespaces, tracing and other processes' memory, bpf and perf,
 *    io_uring, userfaultfd, the key store, file handles, fanotify, modules,
 *    kexec, mounting, and control of the host;
 *  - clone is allowed only without a namespace flag, and clone3 answers
 *    ENOSYS (its flags sit in memory where a filter cannot look; the C
 *    library then falls back to clone);
 *  - socket is allowed for every family but AF_PACKET and AF_VSOCK, keeping
 *    the default's refusal of the audit netlink socket;
 *  - only the machine's own architecture is in the filter: the base's
 *    sub-architectures (x86 and x32 beside x86-64, arm beside aarch64 ...)
 *    are left out, since no server needs them and an i386 socketcall
 *    carries its socket family in memory, where the rules above cannot
 *    look. A call of another architecture then gets the runtime's answer
 *    for one the filter does not know.
 *
 * The result is written once per base profile, named by the hash of both. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"
#include "internal/json/json.h"

/* Refused with EPERM whatever the base profile says */
static const char *const denied[] = {
    "unshare",
    "setns",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
    "bpf",
    "perf_event_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "name_to_handle_at",
    "open_by_handle_at",
    "fanotify_init",
    "fanotify_mark",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "query_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
    "settimeofday",
    "stime",
    "clock_settime",
    "clock_settime64",
    "clock_adjtime",
    "clock_adjtime64",
    "adjtimex",
    "nfsservctl",
    "uselib",
    "sysfs",
    "_sysctl",
    "vm86",
    "vm86old",
    NULL,
};

/* Handled by rules of their own below */
static const char *const own_rules[] = {"clone", "clone3", "socket", NULL};

#define NS_FLAGS      0x7E020080ull /* CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME} */
#define AF_NETLINK    16
#define AF_PACKET     17
#define AF_VSOCK      40
#define NETLINK_AUDIT 9

/* The architecture mcpgate was built for, as seccomp profiles name it;
 * NULL where it has no name here */
static const char *native_arch(void)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	return "SCMP_ARCH_X86_64";
#elif defined(__aarch64__)
	return "SCMP_ARCH_AARCH64";
#elif defined(__s390x__)
	return "SCMP_ARCH_S390X";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "SCMP_ARCH_PPC64LE";
#elif defined(__riscv) && __riscv_xlen == 64
	return "SCMP_ARCH_RISCV64";
#else
	return NULL;
#endif
}

/* archMap (docker's and containers-common's form): each architecture
 * without its subArchitectures; the runtime takes the machine's own entry */
static struct json_value *arch_map_alone(const struct json_value *map)
{
	struct json_value *out = json_copy(map);
	for (size_t i = 0; out->kind == JSON_ARRAY && i < out->u.arr.len; i++)
		if (out->u.arr.items[i]->kind == JSON_OBJECT)
			json_object_set(out->u.arr.items[i], "subArchitectures", json_new_array());
	return out;
}

/* architectures (the OCI form, one flat list): the machine's own alone */
static int architectures_alone(const struct json_value *list, struct json_value **out,
                               struct mg_err **err)
{
	const char *native = native_arch();
	bool listed_native = false;
	for (size_t i = 0; list->kind == JSON_ARRAY && i < list->u.arr.len; i++) {
		const struct json_value *a = list->u.arr.items[i];
		listed_native |=
		    native != NULL && a->kind == JSON_STRING && strcmp(a->u.str.ptr, native) == 0;
	}
	if (!listed_native)
		return mg_err_set(err,
		                  "the base seccomp profile's \"architectures\" do not name this "
		                  "machine's (%s)",
		                  native != NULL ? native : "one mcpgate has no name for");
	*out = json_new_array();
	json_array_push(*out, json_new_string(native));
	return 0;
}

static bool listed(const char *const *list, const char *name)
{
	for (size_t i = 0; list[i] != NULL; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

static bool has_members(const struct json_value *v)
{
	return v != NULL && ((v->kind == JSON_ARRAY && v->u.arr.len > 0) ||
	                     (v->kind == JSON_OBJECT && v->u.obj.len > 0));
}

static struct json_value *names_of(const char *const *names)
{
	struct json_value *a = json_new_array();
	for (size_t i = 0; names[i] != NULL; i++)
		json_array_push(a, json_new_string(names[i]));
	return a;
}

static struct json_value *arg(unsigned index, unsigned long long value, const char *op)
{
	struct json_value *o = json_new_object();
	json_object_set(o, "index", json_new_int(index));
	json_object_set(o, "value", json_new_int((int64_t)value));
	json_object_set(o, "valueTwo", json_new_int(0));
	json_object_set(o, "op", json_new_string(op));
	return o;
}

static struct json_value *rule(const char *name, const char *action, int errno_ret,
                               struct json_value *args)
{
	struct json_value *r = json_new_object();
	struct json_value *names = json_new_array();
	json_array_push(names, json_new_string(name));
	json_object_set(r, "names", names);
	json_object_set(r, "action", json_new_string(action));
	if (errno_ret != 0)
		json_object_set(r, "errnoRet", json_new_int(errno_ret));
	json_object_set(r, "args", args != NULL ? args : json_new_array());
	return r;
}

static void add_own_rules(struct json_value *calls)
{
	struct json_value *deny = json_new_object();
	json_object_set(deny, "names", names_of(denied));
	json_object_set(deny, "action", json_new_string("SCMP_ACT_ERRNO"));
	json_object_set(deny, "errnoRet", json_new_int(EPERM));
	json_object_set(deny, "args", json_new_array());
	json_array_push(calls, deny);

	/* clone without a namespace flag: (flags & NS_FLAGS) == 0 */
	struct json_value *a = json_new_array();
	json_array_push(a, arg(0, NS_FLAGS, "SCMP_CMP_MASKED_EQ"));
	json_array_push(calls, rule("clone", "SCMP_ACT_ALLOW", 0, a));
	json_array_push(calls, rule("clone3", "SCMP_ACT_ERRNO", ENOSYS, NULL));

	/* socket: every family but AF_PACKET and AF_VSOCK (one comparison per
	 * argument and rule, so the families are ranges and single values) */
	a = json_new_array();
	json_array_push(a, arg(0, AF_NETLINK, "SCMP_CMP_LT"));
	json_array_push(calls, rule("socket", "SCMP_ACT_ALLOW", 0, a));
	a = json_new_array();
	json_array_push(a, arg(0, AF_NETLINK, "SCMP_CMP_EQ"));
	json_array_push(a, arg(2, NETLINK_AUDIT, "SCMP_CMP_NE"));
	json_array_push(calls, rule("socket", "SCMP_ACT_ALLOW", 0, a));
	for (unsigned f = AF_PACKET + 1; f < AF_VSOCK; f++) {
		a = json_new_array();
		json_array_push(a, arg(0, f, "SCMP_CMP_EQ"));
		json_array_push(calls, rule("socket", "SCMP_ACT_ALLOW", 0, a));
	}
	a = json_new_array();
	json_array_push(a, arg(0, AF_VSOCK, "SCMP_CMP_GT"));
	json_array_push(calls, rule("socket", "SCMP_ACT_ALLOW", 0, a));
}

int ctr_seccomp_derive(const char *base, size_t len, struct mg_buf *out, struct mg_err **err)
{
	struct json_limits lim = {.max_bytes = 4u << 20, .max_depth = 16, .max_values = 1u << 20};
	struct json_value *in = NULL;
	if (json_parse(base, len, &lim, &in, err) < 0)
		return mg_err_wrap(err, "the base seccomp profile");
	const struct json_value *calls = json_get(in, "syscalls");
	if (in->kind != JSON_OBJECT || json_get_string(in, "defaultAction") == NULL ||
	    calls == NULL || calls->kind != JSON_ARRAY) {
		json_free(in);
		return mg_err_set(err,
		                  "the base seccomp profile has no defaultAction and syscalls");
	}
	struct json_value *prof = json_new_object();
	for (size_t i = 0; i < in->u.obj.len; i++) {
		const struct json_member *m = &in->u.obj.items[i];
		struct json_value *v = NULL;
		if (strcmp(m->key, "syscalls") == 0)
			continue;
		if (strcmp(m->key, "archMap") == 0)
			v = arch_map_alone(m->value);
		else if (strcmp(m->key, "architectures") == 0 &&
		         architectures_alone(m->value, &v, err) < 0) {
			json_free(prof);
			json_free(in);
			return -1;
		}
		json_object_set(prof, m->key, v != NULL ? v : json_copy(m->value));
	}
	struct json_value *outcalls = json_new_array();
	size_t kept = 0;
	for (size_t i = 0; i < calls->u.arr.len; i++) {
		const struct json_value *r = calls->u.arr.items[i];
		const struct json_value *inc = json_get(r, "includes");
		const struct json_value *exc = json_get(r, "excludes");
		/* only with a capability: none of ours has one */
		if (has_members(json_get(inc, "caps")))
			continue;
		struct json_value *copy = json_copy(r);
		if (has_members(json_get(exc, "caps"))) {
			/* without the capability: that is always, here */
			struct json_value *e = json_copy(exc);
			json_object_set(e, "caps", json_new_array());
			json_object_set(copy, "excludes", e);
		}
		const struct json_value *names = json_get(r, "names");
		struct json_value *kept_names = json_new_array();
		for (size_t k = 0;
		     names != NULL && names->kind == JSON_ARRAY && k < names->u.arr.len; k++) {
			const struct json_value *n = names->u.arr.items[k];
			if (n->kind != JSON_STRING)
				continue;
			/* ours decide these, whatever the base allowed or refused */
			if (listed(denied, n->u.str.ptr) || listed(own_rules, n->u.str.ptr))
				continue;
			json_array_push(kept_names, json_copy(n));
		}
		if (kept_names->u.arr.len == 0) {
			json_free(kept_names);
			json_free(copy);
			continue;
		}
		json_object_set(copy, "names", kept_names);
		json_array_push(outcalls, copy);
		kept++;
	}
	add_own_rules(outcalls);
	json_object_set(prof, "syscalls", outcalls);
	json_free(in);
	int r = json_generate(prof, out, err);
	json_free(prof);
	if (r == 0 && kept == 0)
		return mg_err_set(err, "the base seccomp profile allowed nothing that is kept");
	return r;
}

/* Where the runtime's own default lives: MCPGATE_SECCOMP_BASE (tests), or
 * the file containers-common installs (podman's, in docker's format too) */
static const char *base_path(void)
{
	const char *env = getenv("MCPGATE_SECCOMP_BASE");
	if (env != NULL && env[0] == '/')
		return env;
	static const char *const places[] = {"/usr/share/containers/seccomp.json",
	                                     "/etc/containers/seccomp.json", NULL};
	for (size_t i = 0; places[i] != NULL; i++)
		if (access(places[i], R_OK) == 0)
			return places[i];
	return NULL;
}

/* What a profile derived from base depends on: base's text, and the rules
 * above, which are this mcpgate's (its binary's identity) */
static int derive_key(const char *base, const char *text, size_t len, char *key, size_t key_len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct stat st;
	if (n <= 0)
		return -1;
	self[n] = '\0';
	if (stat(self, &st) < 0)
		return -1;
	unsigned char h[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof(h) + 1];
	crypto_hash_sha256(h, (const unsigned char *)text, len);
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	int w = snprintf(key, key_len, "base %s sha256=%s self %s %llu %llu %lld %lld.%09ld", base,
	                 hex, self, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	                 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	return w < 0 || (size_t)w >= key_len ? -1 : 0;
}

/* The profile kept for key, when its file is still this user's own, not
 * writable by others, and holds exactly what was derived */
static char *kept_profile(const struct ctr_driver *d, const char *key)
{
	struct json_value *body = NULL;
	if (d == NULL || ctr_cache_get(d, "seccomp.json", key, &body) != 1)
		return NULL;
	const char *path = json_get_string(body, "profile");
	const char *want = json_get_string(body, "sha256");
	char *found = NULL;
	char *text = NULL;
	size_t len = 0;
	/* the runtime reads it too: others may read it, only the user write it */
	if (path != NULL && want != NULL &&
	    mg_read_own_file(path, 8u << 20, 022, &text, &len, NULL) == 0) {
		unsigned char h[crypto_hash_sha256_BYTES];
		char hex[2 * sizeof(h) + 1];
		crypto_hash_sha256(h, (const unsigned char *)text, len);
		sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
		if (strcmp(hex, want) == 0)
			found = xstrdup(path);
		free(text);
	}
	json_free(body);
	return found;
}

int ctr_seccomp_prepare(const struct ctr_driver *d, const char *data_dir, char **path_out,
                        struct mg_err **err)
{
	*path_out = NULL;
	const char *base = base_path();
	if (base == NULL)
		return mg_err_set(err, "no default seccomp profile to derive from "
		                       "(/usr/share/containers/seccomp.json): install "
		                       "golang-github-containers-common (scripts/setup does)");
	struct mg_buf out = MG_BUF_INIT(8u << 20);
	char *text = NULL;
	size_t tlen = 0;
	int r = mg_read_file(base, 4u << 20, &text, &tlen, err);
	char key[PATH_MAX * 2 + 256];
	bool keyed = r == 0 && derive_key(base, text, tlen, key, sizeof(key)) == 0;
	if (keyed && (*path_out = kept_profile(d, key)) != NULL) {
		free(text);
		return 0;
	}
	if (r == 0)
		r = ctr_seccomp_derive(text, tlen, &out, err);
	free(text);
	if (r < 0) {
		mg_buf_free(&out);
		return mg_err_wrap(err, "deriving mcpgate's seccomp profile from %s", base);
	}
	unsigned char digest[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(digest, (const unsigned char *)out.data, out.len);
	char full[2 * sizeof(digest) + 1];
	sodium_bin2hex(full, sizeof(full), digest, sizeof(digest));
	char hex[17];
	sodium_bin2hex(hex, sizeof(hex), digest, 8);
	cleanup_free char *dir = xasprintf("%s/seccomp", data_dir);
	char *path = xasprintf("%s/mcpgate-%s.json", dir, hex);
	/* one already there is used only when it holds exactly this profile */
	char *there = NULL;
	size_t there_len = 0;
	bool same = mg_read_file(path, 8u << 20, &there, &there_len, NULL) == 0 &&
	            there_len == out.len && memcmp(there, out.data, out.len) == 0;
	free(there);
	if (!same)
		unlink(path);
	if (!same && (mg_mkdir_p(dir, 0700, err) < 0 ||
	              mg_write_file_atomic(path, out.data, out.len, 0644, err) < 0)) {
		mg_buf_free(&out);
		free(path);
		return mg_err_wrap(err, "writing mcpgate's seccomp profile");
	}
	mg_buf_free(&out);
	if (keyed && d != NULL) {
		struct json_value *body = json_new_object();
		json_object_set(body, "profile", json_new_string(path));
		json_object_set(body, "sha256", json_new_string(full));
		ctr_cache_put(d, "seccomp.json", key, body);
	}
	*path_out = path;
	return 0;
}
