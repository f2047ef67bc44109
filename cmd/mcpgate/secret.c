/* mcpgate secret set|list|rm|bind|unbind: the person's hand on the keychain.
 * A value comes from standard input only, never from an argument, and no
 * output or message of this command holds one. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/suggest.h"
#include "internal/base/xalloc.h"
#include "internal/config/config.h"
#include "internal/keychain/keychain.h"

#define SECRET_HOSTS_MAX 64 /* --host options in one command */

struct secret_args {
	const char *verb;
	const char *name;
	const char *data_dir;
	const char *position; /* as written */
	const char *hosts[SECRET_HOSTS_MAX];
	size_t nhosts;
};

static void kc_freep(struct kc **kc)
{
	kc_free(*kc);
}

static void kc_secret_freep(struct kc_secret **s)
{
	kc_secret_free(*s);
}

#define cleanup_kc     __attribute__((cleanup(kc_freep)))
#define cleanup_secret __attribute__((cleanup(kc_secret_freep)))

/* Read the value: all of standard input, or one line typed without echo at
 * a terminal. One trailing newline is dropped. */
static int read_value(const char *name, struct kc_secret **out, struct mg_err **err)
{
	/* the longest value, its newline, and one byte to see that there is more */
	size_t cap = KC_SECRET_MAX + 2, n = 0;
	cleanup_secret struct kc_secret *v = kc_secret_new(cap);
	struct termios saved, quiet;
	bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
	if (tty) {
		quiet = saved;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		quiet.c_lflag |= ECHONL;
		fprintf(stderr, "value of %s (not shown; Enter ends it): ", name);
		fflush(stderr);
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) < 0)
			return mg_err_sys(err, errno, "turning off the terminal's echo");
	}
	int read_errno = 0;
	while (n < cap) {
		ssize_t r = read(STDIN_FILENO, v->bytes + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			read_errno = errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (tty && v->bytes[n - 1] == '\n')
			break;
	}
	if (tty)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
	if (read_errno != 0)
		return mg_err_sys(err, read_errno, "reading the value from standard input");
	if (n > 0 && v->bytes[n - 1] == '\n')
		n--;
	if (n == 0)
		return mg_err_set(err, "no value on standard input: %s was not stored", name);
	if (n > KC_SECRET_MAX)
		return mg_err_set(err,
		                  "the value on standard input is longer than %u bytes: %s was "
		                  "not stored",
		                  KC_SECRET_MAX, name);
	if (memchr(v->bytes, '\0', n) != NULL)
		return mg_err_set(err,
		                  "the value holds a NUL byte, which no environment variable or "
		                  "header can carry: %s was not stored",
		                  name);
	sodium_memzero(v->bytes + n, v->len + 1 - n);
	v->len = n;
	*out = steal_pointer(&v);
	return 0;
}

static int secret_set(struct kc *kc, const char *name, struct mg_err **err)
{
	const char *pfd = getenv(KC_PASSPHRASE_FD);
	int64_t fd = -1;
	if (pfd != NULL && mg_parse_i64(pfd, 0, INT_MAX, KC_PASSPHRASE_FD, &fd, NULL) == 0 &&
	    fd == STDIN_FILENO)
		return mg_err_set(err,
		                  "standard input carries the value: give the passphrase on "
		                  "another descriptor (%s)",
		                  KC_PASSPHRASE_FD);
	cleanup_secret struct kc_secret *v = NULL;
	if (read_value(name, &v, err) < 0 || v == NULL)
		return -1;
	int r = kc_set(kc, name, v->bytes, v->len, err);
	if (r < 0)
		return -1;
	const struct kc_info *info = kc_find(kc, name);
	printf("%s %s in %s\n", r == 1 ? "replaced" : "stored", name, kc_path(kc));
	if (info != NULL && info->nbindings == 0)
		printf("%s is bound nowhere: it reaches no server until `mcpgate secret bind %s "
		       "--host HOST --position env:VAR|header:NAME`\n",
		       name, name);
	return 0;
}

/* NAME  env:VAR -> host, host:port
 *       header:X -> host */
static void print_info(const struct kc_info *info, int width)
{
	if (info->nbindings == 0) {
		printf("%-*s  (bound nowhere)\n", width, info->name);
		return;
	}
	bool first = true;
	for (size_t i = 0; i < info->nbindings; i++) {
		const struct kc_binding *b = &info->bindings[i];
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = info->bindings[j].position == b->position &&
			       strcmp(info->bindings[j].position_name, b->position_name) == 0;
		if (seen)
			continue;
		cleanup_free char *pos = kc_position_text(b->position, b->position_name);
		printf("%-*s  %s ->", width, first ? info->name : "", pos);
		const char *sep = " ";
		for (size_t k = i; k < info->nbindings; k++) {
			const struct kc_binding *o = &info->bindings[k];
			if (o->position != b->position ||
			    strcmp(o->position_name, b->position_name) != 0)
				continue;
			cleanup_free char *host = kc_host_text(o->host, o->port);
			printf("%s%s", sep, host);
			sep = ", ";
		}
		printf("\n");
		first = false;
	}
}

static int secret_list(struct kc *kc)
{
	size_t n;
	const struct kc_info *infos = kc_list(kc, &n);
	if (n == 0) {
		fprintf(stderr, "mcpgate secret: no secrets in %s\n", kc_path(kc));
		return 0;
	}
	int width = 0;
	for (size_t i = 0; i < n; i++)
		if ((int)strlen(infos[i].name) > width)
			width = (int)strlen(infos[i].name);
	for (size_t i = 0; i < n; i++)
		print_info(&infos[i], width);
	return 0;
}

static int secret_bind(struct kc *kc, const struct command *self, const struct secret_args *a,
                       struct mg_err **err)
{
	struct cfg_host hosts[SECRET_HOSTS_MAX] = {{0}};
	enum cfg_position position;
	cleanup_free char *position_name = NULL;
	cleanup_err struct mg_err *e = NULL;
	int status = EXIT_USAGE;
	if (cfg_parse_position(a->position, "--position", &position, &position_name, &e) < 0) {
		usage_error(self, "%s", mg_err_msg(e));
		goto out;
	}
	for (size_t i = 0; i < a->nhosts; i++) {
		if (cfg_parse_host(a->hosts[i], "--host", &hosts[i], &e) < 0 ||
		    cfg_check_wildcard_host(hosts[i].host, "--host", &e) < 0) {
			usage_error(self, "%s", mg_err_msg(e));
			goto out;
		}
	}
	status = EXIT_FAIL;
	int added = kc_bind(kc, a->name, hosts, a->nhosts, position, position_name, err);
	if (added < 0)
		goto out;
	printf("%s may go to", a->name);
	for (size_t i = 0; i < a->nhosts; i++) {
		cleanup_free char *h = kc_host_text(hosts[i].host, hosts[i].port);
		printf("%s%s", i == 0 ? " " : ", ", h);
	}
	printf(" in %s (%d new binding%s)\n", a->position, added, added == 1 ? "" : "s");
	status = EXIT_OK;
out:
	for (size_t i = 0; i < a->nhosts; i++)
		free(hosts[i].host);
	return status;
}

static int secret_unbind(struct kc *kc, const struct command *self, const struct secret_args *a,
                         struct mg_err **err)
{
	if (a->nhosts == 0) {
		int removed = kc_unbind(kc, a->name, NULL, 0, err);
		if (removed < 0)
			return EXIT_FAIL;
		printf("%s: %d binding%s removed; it is bound nowhere\n", a->name, removed,
		       removed == 1 ? "" : "s");
		return EXIT_OK;
	}
	for (size_t i = 0; i < a->nhosts; i++) {
		cleanup_err struct mg_err *e = NULL;
		struct cfg_host h = {0};
		if (cfg_parse_host(a->hosts[i], "--host", &h, &e) < 0)
			return usage_error(self, "%s", mg_err_msg(e));
		int removed = kc_unbind(kc, a->name, h.host, h.port, err);
		cleanup_free char *text = kc_host_text(h.host, h.port);
		free(h.host);
		if (removed < 0)
			return EXIT_FAIL;
		if (removed == 0) {
			mg_err_set(err, "%s is not bound to %s (see: mcpgate secret list)", a->name,
			           text);
			return EXIT_FAIL;
		}
		printf("%s: %d binding%s to %s removed\n", a->name, removed,
		       removed == 1 ? "" : "s", text);
	}
	return EXIT_OK;
}

/* Options anywhere; the first word is the verb, the second the name. */
static int parse_args(const struct command *self, int argc, char **argv, struct secret_args *a)
{
	const char *extra = NULL;
	for (int i = 1; i < argc; i++) {
		const char *host = NULL;
		int r;
		if ((r = opt_value(argc, argv, &i, "data", &a->data_dir)) != 0 ||
		    (r = opt_value(argc, argv, &i, "position", &a->position)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "host", &host)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			if (a->nhosts == SECRET_HOSTS_MAX)
				return usage_error(self, "more than %d --host options",
				                   SECRET_HOSTS_MAX);
			a->hosts[a->nhosts++] = host;
			continue;
		}
		if (argv[i][0] == '-')
			return usage_error(self, "unknown argument \"%s\"", argv[i]);
		if (a->verb == NULL)
			a->verb = argv[i];
		else if (a->name == NULL)
			a->name = argv[i];
		else if (extra == NULL)
			extra = argv[i];
	}
	if (a->verb == NULL)
		return usage_error(self, "which action? set, list, rm, bind or unbind");
	bool is_set = strcmp(a->verb, "set") == 0, is_list = strcmp(a->verb, "list") == 0;
	bool is_rm = strcmp(a->verb, "rm") == 0, is_bind = strcmp(a->verb, "bind") == 0;
	bool is_unbind = strcmp(a->verb, "unbind") == 0;
	if (!is_set && !is_list && !is_rm && !is_bind && !is_unbind) {
		static const char *const verbs[] = {"set", "list", "rm", "bind", "unbind", NULL};
		const char *meant = mg_suggest(a->verb, verbs);
		if (meant != NULL)
			return usage_error(self, "unknown action \"%s\"; did you mean \"%s\"?",
			                   a->verb, meant);
		return usage_error(self, "unknown action \"%s\": set, list, rm, bind or unbind",
		                   a->verb);
	}
	/* not repeated: it may be the value itself */
	if (is_set && extra != NULL)
		return usage_error(self, "set takes one name: a value is read from standard input, "
		                         "never from an argument");
	if (extra != NULL || (is_list && a->name != NULL))
		return usage_error(self, "unexpected argument \"%s\"",
		                   extra != NULL ? extra : a->name);
	if (!is_list && a->name == NULL)
		return usage_error(self, "%s: which secret?", a->verb);
	if (!is_bind && a->position != NULL)
		return usage_error(self, "--position belongs to bind");
	if (!is_bind && !is_unbind && a->nhosts > 0)
		return usage_error(self, "--host belongs to bind and unbind");
	if (is_bind && (a->nhosts == 0 || a->position == NULL))
		return usage_error(self, "bind needs --host HOST (one or more) and --position "
		                         "env:VAR|header:NAME");
	if (a->name != NULL) {
		cleanup_err struct mg_err *e = NULL;
		if (cfg_check_credential_name(a->name, "secret name", &e) < 0)
			return usage_error(self, "%s", mg_err_msg(e));
	}
	return EXIT_OK;
}

int cmd_secret(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("secret");
	struct secret_args a = {0};
	int status = parse_args(self, argc, argv, &a);
	if (status != EXIT_OK)
		return status;
	cleanup_free char *default_dir = NULL;
	if (a.data_dir == NULL) {
		if (cfg_default_data_dir(&default_dir, err) < 0)
			return EXIT_FAIL;
		a.data_dir = default_dir;
	}
	cleanup_kc struct kc *kc = NULL;
	if (kc_open(a.data_dir, &kc, err) < 0)
		return EXIT_FAIL;
	if (strcmp(a.verb, "set") == 0)
		return secret_set(kc, a.name, err) < 0 ? EXIT_FAIL : EXIT_OK;
	if (strcmp(a.verb, "list") == 0)
		return secret_list(kc) < 0 ? EXIT_FAIL : EXIT_OK;
	if (strcmp(a.verb, "rm") == 0) {
		if (kc_remove(kc, a.name, err) < 0)
			return EXIT_FAIL;
		printf("removed %s and its bindings from %s\n", a.name, kc_path(kc));
		return EXIT_OK;
	}
	if (strcmp(a.verb, "bind") == 0)
		return secret_bind(kc, self, &a, err);
	return secret_unbind(kc, self, &a, err);
}
