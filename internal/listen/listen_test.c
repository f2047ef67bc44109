/* The listener's parts that stand alone: addresses, the Host and Origin
 * checks, the token file, the metrics page. The HTTP side is
 * tests/listen_test.py's, against the real binary. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/listen/listen-internal.h"

static void test_address(void)
{
	struct lst_address a;
	cleanup_err struct mg_err *err = NULL;
	T_INT(lst_address_parse("127.0.0.1:8080", false, &a, &err), 0, "127.0.0.1:PORT");
	T_OK(a.family == LST_INET && a.port == 8080 && a.loopback, "  is loopback, port kept");
	T_INT(lst_address_parse("localhost:0", false, &a, &err), 0, "localhost:0");
	T_STR(a.host, "127.0.0.1", "  localhost is 127.0.0.1");
	T_INT(lst_address_parse("[::1]:9", false, &a, &err), 0, "[::1]:PORT");
	T_OK(a.family == LST_INET6 && a.loopback, "  v6 loopback");
	T_INT(lst_address_parse("unix:/tmp/x.sock", false, &a, &err), 0, "unix:PATH");
	T_OK(a.family == LST_UNIX && strcmp(a.path, "/tmp/x.sock") == 0, "  the path kept");
	T_INT(lst_address_parse("192.168.1.5:80", false, &a, &err), -1,
	      "another address without --listen-any is refused");
	T_OK(err != NULL && strstr(err->msg, "--listen-any") != NULL, "  naming the flag");
	mg_err_clear(&err);
	T_INT(lst_address_parse("192.168.1.5:80", true, &a, &err), 0, "  and taken with it");
	T_OK(!a.loopback, "  not loopback");
	T_INT(lst_address_parse("0.0.0.0:80", true, &a, &err), -1, "0.0.0.0 never");
	mg_err_clear(&err);
	T_INT(lst_address_parse("[::]:80", true, &a, &err), -1, ":: never");
	mg_err_clear(&err);
	T_INT(lst_address_parse("example.com:80", true, &a, &err), -1, "a name is refused");
	mg_err_clear(&err);
	T_INT(lst_address_parse("127.0.0.1:70000", false, &a, &err), -1, "a port over 65535");
	mg_err_clear(&err);
	T_INT(lst_address_parse("127.0.0.1", false, &a, &err), -1, "no port");
	mg_err_clear(&err);
	T_INT(lst_address_parse("unix:", false, &a, &err), -1, "an empty path");
	mg_err_clear(&err);
}

static void test_host_origin(void)
{
	struct lst_address a;
	lst_address_parse("127.0.0.1:8080", false, &a, NULL);
	T_OK(lst_check_host(&a, "127.0.0.1:8080") == NULL, "Host 127.0.0.1:PORT");
	T_OK(lst_check_host(&a, "localhost:8080") == NULL, "Host localhost:PORT");
	T_OK(lst_check_host(&a, "LOCALHOST:8080") == NULL, "Host names are case-blind");
	T_OK(lst_check_host(&a, "[::1]:8080") == NULL, "Host [::1]:PORT");
	T_OK(lst_check_host(&a, "evil.com:8080") != NULL, "Host evil.com refused (rebinding)");
	T_OK(lst_check_host(&a, "localhost.evil.com:8080") != NULL, "Host localhost.evil.com");
	T_OK(lst_check_host(&a, "localhost:8081") != NULL, "another port refused");
	T_OK(lst_check_host(&a, "localhost") != NULL, "no port is port 80: refused");
	T_OK(lst_check_host(&a, NULL) != NULL, "no Host refused");
	T_OK(lst_check_origin(&a, NULL) == NULL, "no Origin passes");
	T_OK(lst_check_origin(&a, "http://localhost:8080") == NULL, "Origin of this listener");
	T_OK(lst_check_origin(&a, "http://evil.com") != NULL, "Origin http://evil.com refused");
	T_OK(lst_check_origin(&a, "https://localhost:8080") != NULL, "https:// is another origin");
	T_OK(lst_check_origin(&a, "null") != NULL, "Origin null refused");
	lst_address_parse("192.168.1.5:80", true, &a, NULL);
	T_OK(lst_check_host(&a, "192.168.1.5") == NULL, "a --listen-any address: itself, port 80");
	T_OK(lst_check_host(&a, "localhost:80") != NULL, "  and not loopback names");
	lst_address_parse("unix:/tmp/s", false, &a, NULL);
	T_OK(lst_check_host(&a, "localhost") == NULL, "unix: Host localhost");
	T_OK(lst_check_host(&a, "127.0.0.1") != NULL, "unix: no other name");
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_mode & 07777 : 0;
}

static void test_token(void)
{
	char dir[] = "/tmp/mcpgate-listen-test-XXXXXX";
	T_OK(mkdtemp(dir) != NULL, "a folder");
	cleanup_free char *path = xasprintf("%s/state/mcpgate/listener-token", dir);
	char *token = NULL, *again = NULL;
	bool created = false;
	cleanup_err struct mg_err *err = NULL;
	T_INT(lst_token_load(path, &token, &created, &err), 0, "a token is made at first use");
	T_OK(created && token != NULL && strlen(token) == LST_TOKEN_HEX, "  64 hex digits");
	T_INT(mode_of(path), 0600, "  its file is 0600");
	T_INT(lst_token_load(path, &again, &created, &err), 0, "read again");
	T_OK(!created && again != NULL && strcmp(token, again) == 0, "  the same token, reused");
	cleanup_free char *bearer = xasprintf("Bearer %s", token);
	T_OK(lst_token_matches(token, bearer), "Bearer TOKEN matches");
	bearer[10] = bearer[10] == 'a' ? 'b' : 'a';
	T_OK(!lst_token_matches(token, bearer), "one digit off does not");
	T_OK(!lst_token_matches(token, NULL), "no header does not");
	T_OK(!lst_token_matches(token, "Bearer "), "an empty token does not");
	T_OK(!lst_token_matches(token, token), "the token without Bearer does not");
	lst_token_free(again);
	again = NULL;
	chmod(path, 0644);
	T_INT(lst_token_load(path, &again, &created, &err), -1,
	      "a token others can read is refused");
	T_OK(err != NULL && strstr(err->msg, "0644") != NULL, "  naming its mode");
	mg_err_clear(&err);
	unlink(path);
	cleanup_free char *elsewhere = xasprintf("%s/elsewhere", dir);
	int fd = open(elsewhere, O_CREAT | O_WRONLY, 0600);
	close(fd);
	T_INT(symlink(elsewhere, path), 0, "the token's name as a symbolic link");
	T_INT(lst_token_load(path, &again, &created, &err), -1, "  is refused (O_NOFOLLOW)");
	mg_err_clear(&err);
	unlink(path);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	T_INT(write(fd, "not a token\n", 12), 12, "a file that holds no token");
	close(fd);
	T_INT(lst_token_load(path, &again, &created, &err), -1, "  is refused");
	mg_err_clear(&err);
	lst_token_free(token);
	unlink(path);
	unlink(elsewhere);
	cleanup_free char *s1 = xasprintf("%s/state/mcpgate", dir);
	cleanup_free char *s2 = xasprintf("%s/state", dir);
	rmdir(s1);
	rmdir(s2);
	rmdir(dir);
}

static struct json_value *fields(const char *json)
{
	struct json_value *v = NULL;
	json_parse(json, strlen(json), &json_default_limits, &v, NULL);
	return v;
}

static void observe(struct lst_stats *st, const char *event, const char *json)
{
	struct json_value *f = fields(json);
	lst_metrics_observe(event, f, st);
	json_free(f);
}

static void test_metrics(void)
{
	struct lst_metrics *m = lst_metrics_new();
	struct lst_stats *a = lst_metrics_session(m), *b = lst_metrics_session(m);
	observe(a, "session.start", "{\"servers\":[\"alpha\",\"beta\"]}");
	observe(a, "server.ready", "{\"server\":\"alpha\"}");
	observe(b, "session.start", "{\"servers\":[\"alpha\"]}");
	observe(b, "server.ready", "{\"server\":\"alpha\"}");
	observe(a, "tool.call",
	        "{\"server\":\"alpha\",\"tool\":\"echo\",\"outcome\":\"ok\",\"ms\":3}");
	observe(b, "tool.call",
	        "{\"server\":\"alpha\",\"tool\":\"echo\",\"outcome\":\"ok\",\"ms\":70}");
	observe(
	    b, "tool.call",
	    "{\"server\":\"alpha\",\"tool\":\"bad\\\"name\\n\",\"outcome\":\"error\",\"ms\":1}");
	observe(a, "mcp.egress", "{\"server\":\"alpha\",\"allowed\":false}");
	lst_metrics_http(m, 200);
	lst_metrics_refused(m, "token");
	struct lst_gauges g = {.sessions_open = 2};
	struct mg_buf page = MG_BUF_INIT(1 << 20);
	cleanup_err struct mg_err *err = NULL;
	T_INT(lst_metrics_render(m, &g, &page, &err), 0, "the metrics page renders");
	const char *p = page.data != NULL ? page.data : "";
	T_OK(strstr(p, "mcpgate_sessions_open 2\n") != NULL, "sessions open");
	T_OK(strstr(p, "mcpgate_sessions_total 2\n") != NULL, "sessions begun");
	T_OK(
	    strstr(p,
	           "mcpgate_tool_calls_total{server=\"alpha\",tool=\"echo\",outcome=\"ok\"} 2\n") !=
	        NULL,
	    "calls by server, tool and outcome");
	T_OK(strstr(p, "tool=\"(other)\",outcome=\"error\"} 1\n") != NULL,
	     "a name that is no name is (other), never quoted text of a peer's");
	T_OK(strstr(
	         p,
	         "mcpgate_tool_call_duration_seconds_bucket{server=\"alpha\",le=\"0.005\"} 2\n") !=
	         NULL,
	     "latency: the 3 ms and 1 ms calls under 5 ms");
	T_OK(strstr(p,
	            "mcpgate_tool_call_duration_seconds_bucket{server=\"alpha\",le=\"0.1\"} 3\n") !=
	         NULL,
	     "latency buckets are cumulative");
	T_OK(strstr(p, "mcpgate_tool_call_duration_seconds_count{server=\"alpha\"} 3\n") != NULL,
	     "latency count");
	T_OK(strstr(p, "mcpgate_egress_attempts_total{server=\"alpha\",outcome=\"refused\"} 1\n") !=
	         NULL,
	     "egress by outcome");
	T_OK(strstr(p, "mcpgate_servers{server=\"alpha\",state=\"ready\"} 2\n") != NULL &&
	         strstr(p, "mcpgate_servers{server=\"beta\",state=\"starting\"} 1\n") != NULL,
	     "servers by state, over the open sessions");
	T_OK(strstr(p, "mcpgate_http_refused_total{reason=\"token\"} 1\n") != NULL, "refusals");
	lst_metrics_session_end(a);
	mg_buf_reset(&page);
	lst_metrics_render(m, &g, &page, &err);
	T_OK(strstr(page.data, "state=\"starting\"") == NULL,
	     "an ended session's servers leave the gauge");
	mg_buf_free(&page);
	lst_metrics_session_end(b);
	lst_metrics_free(m);
}

int main(void)
{
	test_address();
	test_host_origin();
	test_token();
	test_metrics();
	return t_done();
}
