/* The manifest pin: a golden hash (testdata/mcp/), stable across key order
 * and tool order, blind to fields outside the pin, and the diff review shows. */
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"
#include "internal/jsonrpc/jsonrpc.h"
#include "internal/mcp/manifest.h"
#include "internal/mcp/mcp.h"

static struct json_value *load(const char *path)
{
	size_t len = 0;
	cleanup_free char *text = t_read_file(path, &len);
	struct json_value *v = NULL;
	struct mg_err *err = NULL;
	if (json_parse(text, len, NULL, &v, &err) < 0) {
		t_note("%s: %s", path, mg_err_msg(err));
		mg_err_free(err);
		exit(1);
	}
	return v;
}

static void hash_of(const struct json_value *tools, char out[MANIFEST_HASH_LEN])
{
	struct mg_err *err = NULL;
	if (manifest_hash(tools, out, &err) < 0) {
		t_note("%s", mg_err_msg(err));
		mg_err_free(err);
		out[0] = '\0';
	}
}

static char *sampling_fit(enum mcp_rev rev, const char *answer, char **after)
{
	struct json_value *v = NULL;
	json_parse(answer, strlen(answer), NULL, &v, NULL);
	char *why = mcp_rev_sampling_answer(rev, v);
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	json_generate(v, &b, NULL);
	*after = xstrdup(mg_buf_str(&b));
	mg_buf_free(&b);
	json_free(v);
	return why;
}

/* What each revision has, and what a server of it may ask and is given */
static void test_revisions(void)
{
	T_OK(mcp_rev_of("2024-11-05") == MCP_REV_2024_11_05 &&
	         mcp_rev_of("2026-07-28") == MCP_REV_2026_07_28 &&
	         mcp_rev_of("2024-10-07") == MCP_REV_UNKNOWN && mcp_rev_of(NULL) == MCP_REV_UNKNOWN,
	     "revisions by name");
	T_OK(!mcp_rev_has(MCP_REV_2024_11_05, MCP_HAS_BATCHES) &&
	         mcp_rev_has(MCP_REV_2025_03_26, MCP_HAS_BATCHES) &&
	         !mcp_rev_has(MCP_REV_2025_06_18, MCP_HAS_BATCHES) &&
	         !mcp_rev_has(MCP_REV_2026_07_28, MCP_HAS_BATCHES),
	     "batches: 2025-03-26 alone");
	T_OK(!mcp_rev_has(MCP_REV_2025_03_26, MCP_HAS_ELICITATION) &&
	         mcp_rev_has(MCP_REV_2025_06_18, MCP_HAS_ELICITATION) &&
	         !mcp_rev_has(MCP_REV_2025_06_18, MCP_HAS_URL_ELICITATION) &&
	         mcp_rev_has(MCP_REV_UNKNOWN, MCP_HAS_URL_ELICITATION) &&
	         !mcp_rev_has(MCP_REV_2024_11_05, MCP_HAS_COMPLETIONS_CAP) &&
	         mcp_rev_has(MCP_REV_2026_07_28, MCP_HAS_SAMPLING_TOOLS),
	     "elicitation from 2025-06-18, url mode from 2025-11-25, completions from 2025-03-26");
	struct json_value *url = NULL, *tools = NULL;
	json_parse("{\"mode\":\"url\"}", 14, NULL, &url, NULL);
	json_parse("{\"tools\":[]}", 12, NULL, &tools, NULL);
	cleanup_free char *a =
	    mcp_rev_request_refusal(MCP_REV_2025_03_26, "elicitation/create", NULL);
	cleanup_free char *b =
	    mcp_rev_request_refusal(MCP_REV_2025_06_18, "elicitation/create", url);
	cleanup_free char *c =
	    mcp_rev_request_refusal(MCP_REV_2025_06_18, "elicitation/create", NULL);
	cleanup_free char *d =
	    mcp_rev_request_refusal(MCP_REV_2025_06_18, "sampling/createMessage", tools);
	cleanup_free char *e =
	    mcp_rev_request_refusal(MCP_REV_2025_11_25, "sampling/createMessage", tools);
	T_STR(a, "it speaks MCP 2025-03-26, which has no elicitation",
	      "elicitation before 2025-06-18");
	T_STR(b, "it speaks MCP 2025-06-18, which has no URL-mode elicitation",
	      "url mode before 2025-11-25");
	T_OK(c == NULL && e == NULL,
	     "form elicitation from 2025-06-18, sampling tools from 2025-11-25");
	T_OK(d != NULL && strstr(d, "tools in sampling") != NULL, "sampling tools before: %s",
	     d ? d : "");
	json_free(url);
	json_free(tools);

	char *after = NULL;
	char *why = sampling_fit(
	    MCP_REV_2025_06_18,
	    "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"model\":\"m\"}", &after);
	T_OK(why == NULL, "a list of one block fits 2025-06-18");
	T_STR(after, "{\"content\":{\"type\":\"text\",\"text\":\"x\"},\"model\":\"m\"}",
	      "as the block");
	free(after);
	why = sampling_fit(
	    MCP_REV_2025_06_18,
	    "{\"content\":[{\"type\":\"text\",\"text\":\"x\"},{\"type\":\"text\",\"text\":\"y\"}]}",
	    &after);
	T_STR(why, "the client answered with 2 content blocks, and MCP 2025-06-18 carries one",
	      "two blocks do not");
	free(why);
	free(after);
	why = sampling_fit(MCP_REV_2024_11_05, "{\"content\":{\"type\":\"audio\"}}", &after);
	T_STR(why,
	      "the client answered with content of type \"audio\", which a sampling message of MCP "
	      "2024-11-05 cannot hold",
	      "audio before 2025-03-26");
	free(why);
	free(after);
	why = sampling_fit(MCP_REV_2025_03_26, "{\"content\":{\"type\":\"audio\"}}", &after);
	T_OK(why == NULL, "audio from 2025-03-26");
	free(after);
	why = sampling_fit(MCP_REV_2025_06_18, "{\"content\":{\"type\":\"tool_use\"}}", &after);
	T_OK(why != NULL, "tool_use before 2025-11-25 does not fit");
	free(why);
	free(after);
	why =
	    sampling_fit(MCP_REV_2025_11_25, "{\"content\":[{\"type\":\"tool_use\"},{}]}", &after);
	T_OK(why == NULL && strcmp(after, "{\"content\":[{\"type\":\"tool_use\"},{}]}") == 0,
	     "2025-11-25 gets the client's answer as it is");
	free(after);

	struct json_value *p = NULL;
	json_parse("{\"ref\":{},\"context\":{}}", 23, NULL, &p, NULL);
	mcp_rev_complete_params(MCP_REV_2025_06_18, p);
	T_OK(json_get(p, "context") != NULL, "a completion's context stays from 2025-06-18");
	mcp_rev_complete_params(MCP_REV_2025_03_26, p);
	T_OK(json_get(p, "context") == NULL && json_get(p, "ref") != NULL, "and goes before");
	json_free(p);
}

int main(void)
{
	struct json_value *tools = load("testdata/mcp/tools.json");
	struct json_value *reordered = load("testdata/mcp/tools-reordered.json");
	char h1[MANIFEST_HASH_LEN], h2[MANIFEST_HASH_LEN], h3[MANIFEST_HASH_LEN];
	hash_of(tools, h1);
	cleanup_free char *golden = t_read_file("testdata/mcp/manifest-hash.txt", NULL);
	golden[strcspn(golden, "\n")] = '\0';
	T_STR(h1, golden, "the golden manifest hash (docs/trust.md's worked example)");

	struct json_value *m = manifest_of(tools);
	struct mg_buf canon = MG_BUF_INIT(1 << 20);
	json_canonical(m, &canon, NULL);
	cleanup_free char *want = t_read_file("testdata/mcp/manifest-canonical.txt", NULL);
	T_STR(mg_buf_str(&canon), want, "the manifest's canonical bytes");
	mg_buf_free(&canon);
	json_free(m);

	hash_of(reordered, h2);
	T_STR(h2, h1, "the same hash whatever the key order, tool order and unpinned fields");

	struct json_value *changed = json_copy(tools);
	json_object_set(changed->u.arr.items[1], "description", json_new_string("Returns it."));
	hash_of(changed, h3);
	T_OK(strcmp(h3, h1) != 0, "a changed description changes the hash");
	struct mg_buf diff = MG_BUF_INIT(1 << 16);
	T_INT((long long)manifest_diff(tools, changed, &diff), 1, "one difference");
	T_STR(mg_buf_str(&diff), "changed echo: description\n",
	      "named tool by tool, field by field");
	mg_buf_free(&diff);

	struct json_value *more = json_copy(tools);
	json_array_push(more, json_copy(tools->u.arr.items[0]));
	json_object_set(more->u.arr.items[2], "name", json_new_string("zzz"));
	json_free(more->u.arr.items[0]);
	more->u.arr.items[0] = more->u.arr.items[2];
	more->u.arr.len = 2;
	diff = (struct mg_buf)MG_BUF_INIT(1 << 16);
	manifest_diff(tools, more, &diff);
	T_STR(mg_buf_str(&diff), "added zzz\nremoved search\n", "tools added and removed");
	mg_buf_free(&diff);

	T_OK(mcp_tool_name_valid("a.b-c_D9", 8), "a valid tool name");
	T_OK(!mcp_tool_name_valid("a b", 3) && !mcp_tool_name_valid("", 0),
	     "spaces and empty names are not");
	T_OK(mcp_version_supported("2025-06-18") && !mcp_version_supported("2024-11-05"),
	     "the versions mcpgate answers clients with");
	T_OK(mcp_server_version_supported("2025-06-18") &&
	         mcp_server_version_supported("2024-11-05") &&
	         !mcp_server_version_supported("2024-10-07") &&
	         !mcp_server_version_supported(MCP_PROTOCOL_MODERN),
	     "the versions mcpgate accepts from servers' initialize");
	test_revisions();

	/* a method 2026-07-28 removed is not found in that revision, whatever
	 * its params: the shape does not answer before the dispatcher does */
	static const char *const removed[] = {"logging/setLevel", "resources/subscribe",
	                                      "resources/unsubscribe", "initialize"};
	struct json_value *bad_modern = NULL, *bad_old = NULL;
	struct mg_err *perr = NULL;
	const char *modern_text =
	    "{\"level\":7,\"uri\":7,\"capabilities\":7,\"_meta\":{\"" MCP_META_PROTOCOL_VERSION
	    "\":\"2026-07-28\"}}";
	const char *old_text = "{\"level\":7,\"uri\":7,\"capabilities\":7}";
	T_OK(json_parse(modern_text, strlen(modern_text), NULL, &bad_modern, &perr) == 0 &&
	         json_parse(old_text, strlen(old_text), NULL, &bad_old, &perr) == 0,
	     "the params parse");
	mg_err_free(perr);
	for (size_t i = 0; i < sizeof(removed) / sizeof(removed[0]); i++) {
		cleanup_free char *modern =
		    mcp_shape_from_client(RPC_REQUEST, removed[i], bad_modern);
		cleanup_free char *old = mcp_shape_from_client(RPC_REQUEST, removed[i], bad_old);
		T_OK(modern == NULL, "%s of 2026-07-28: no shape (it is not found)", removed[i]);
		T_OK(old != NULL && strncmp(old, removed[i], strlen(removed[i])) == 0,
		     "%s of an earlier revision: its params' shape is checked (%s)", removed[i],
		     old != NULL ? old : "none");
	}
	cleanup_free char *kept = mcp_shape_from_client(RPC_REQUEST, "tools/call", bad_modern);
	T_OK(kept != NULL, "a method 2026-07-28 has keeps its shape in that revision");
	json_free(bad_modern);
	json_free(bad_old);

	json_free(tools);
	json_free(reordered);
	json_free(changed);
	json_free(more);
	return t_done();
}
