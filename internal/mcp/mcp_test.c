/* The manifest pin: a golden hash (testdata/mcp/), stable across key order
 * and tool order, blind to fields outside the pin, and the diff review shows. */
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
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
	     "the versions mcpgate accepts from servers");

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
