/* JSON-RPC 2.0 messages: parse and classify one line, build one line. */
#include "internal/jsonrpc/jsonrpc.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"

/* A member by exact key (keys are compared by length, so "id\u0000x" is not
 * "id"). json_parse() refuses duplicate keys, so the first is the only one. */
static const struct json_value *member(const struct json_value *obj, const char *key)
{
	size_t keylen = strlen(key);
	for (size_t i = 0; i < obj->u.obj.len; i++) {
		const struct json_member *m = &obj->u.obj.items[i];
		if (m->keylen == keylen && memcmp(m->key, key, keylen) == 0)
			return m->value;
	}
	return NULL;
}

static bool is_string(const struct json_value *v, const char *s)
{
	size_t n = strlen(s);
	return v != NULL && v->kind == JSON_STRING && v->u.str.len == n &&
	       memcmp(v->u.str.ptr, s, n) == 0;
}

/* A string, or an integer number in int64 range. */
static bool id_usable(const struct json_value *id)
{
	int64_t n;
	if (id->kind == JSON_STRING)
		return true;
	return id->kind == JSON_NUMBER && json_number_int64(id, &n) == 0;
}

static int id_refused(const struct json_value *id, struct mg_err **err)
{
	const char *head = "id must be a string or an integer";
	switch (id->kind) {
	case JSON_NULL:
		return mg_err_set(err, "%s, not null", head);
	case JSON_BOOL:
		return mg_err_set(err, "%s, not a boolean", head);
	case JSON_ARRAY:
		return mg_err_set(err, "%s, not an array", head);
	case JSON_OBJECT:
		return mg_err_set(err, "%s, not an object", head);
	case JSON_NUMBER: {
		/* a JSON number literal holds no characters that need care */
		int shown = id->u.num.len > 32 ? 32 : (int)id->u.num.len;
		return mg_err_set(err, "%s in the 64-bit range, not %.*s%s", head, shown,
		                  id->u.num.ptr, id->u.num.len > 32 ? "..." : "");
	}
	case JSON_STRING:
		break;
	}
	return mg_err_set(err, "%s", head);
}

static int classify_call(struct rpc_msg *m, const struct json_value *method,
                         const struct json_value *id, struct mg_err **err)
{
	const struct json_value *root = m->root;
	if (method->kind != JSON_STRING)
		return mg_err_set(err, "method must be a string");
	if (method->u.str.len == 0)
		return mg_err_set(err, "method must not be empty");
	if (memchr(method->u.str.ptr, '\0', method->u.str.len) != NULL)
		return mg_err_set(err, "method must not contain NUL");
	if (member(root, "result") != NULL || member(root, "error") != NULL)
		return mg_err_set(err, "a request or notification cannot carry result or error");
	const struct json_value *params = member(root, "params");
	if (params != NULL && params->kind != JSON_OBJECT && params->kind != JSON_ARRAY)
		return mg_err_set(err, "params must be an object or an array");
	if (id != NULL && !id_usable(id))
		return id_refused(id, err);
	m->method = method->u.str.ptr;
	m->params = params;
	m->kind = id != NULL ? RPC_REQUEST : RPC_NOTIFICATION;
	return 0;
}

static int classify_error(struct rpc_msg *m, const struct json_value *error,
                          const struct json_value *id, struct mg_err **err)
{
	if (id->kind != JSON_NULL && !id_usable(id))
		return id_refused(id, err);
	if (error->kind != JSON_OBJECT)
		return mg_err_set(err, "error must be an object");
	const struct json_value *code = member(error, "code");
	const struct json_value *message = member(error, "message");
	if (code == NULL)
		return mg_err_set(err, "missing error.code");
	if (code->kind != JSON_NUMBER || json_number_int64(code, &m->error_code) < 0)
		return mg_err_set(err, "error.code must be an integer");
	if (message == NULL)
		return mg_err_set(err, "missing error.message");
	if (message->kind != JSON_STRING)
		return mg_err_set(err, "error.message must be a string");
	m->error_message = message->u.str.ptr;
	m->error_message_len = message->u.str.len;
	m->error_data = member(error, "data");
	m->id = id;
	m->kind = RPC_ERROR;
	return 0;
}

static int classify(struct rpc_msg *m, struct mg_err **err)
{
	const struct json_value *root = m->root;
	if (root->kind == JSON_ARRAY)
		return mg_err_set(err, "batches are not supported (MCP 2025-06-18 removed "
		                       "JSON-RPC batches)");
	if (root->kind != JSON_OBJECT)
		return mg_err_set(err, "a message must be a JSON object");

	/* the id first, so that a refusal can still name it */
	const struct json_value *id = member(root, "id");
	if (id != NULL && id_usable(id))
		m->id = id;

	const struct json_value *version = member(root, "jsonrpc");
	if (version == NULL)
		return mg_err_set(err, "missing \"jsonrpc\": \"2.0\"");
	if (!is_string(version, "2.0"))
		return mg_err_set(err, "\"jsonrpc\" must be \"2.0\"");

	const struct json_value *method = member(root, "method");
	if (method != NULL)
		return classify_call(m, method, id, err);

	const struct json_value *result = member(root, "result");
	const struct json_value *error = member(root, "error");
	if (result == NULL && error == NULL)
		return mg_err_set(err, "missing method (and no result or error for a response)");
	if (result != NULL && error != NULL)
		return mg_err_set(err, "a response cannot have both result and error");
	if (id == NULL)
		return mg_err_set(err, "a response needs an id");
	if (error != NULL)
		return classify_error(m, error, id, err);
	if (!id_usable(id))
		return id_refused(id, err);
	m->result = result;
	m->kind = RPC_RESULT;
	return 0;
}

int rpc_parse(const char *line, size_t len, size_t max_depth, struct rpc_msg *out,
              struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (max_depth == 0)
		max_depth = RPC_MAX_DEPTH_DEFAULT;
	struct json_limits limits = {
	    .max_bytes = len,
	    .max_depth = max_depth > UINT_MAX ? UINT_MAX : (unsigned)max_depth,
	};
	struct json_value *root = NULL;
	if (json_parse(line, len, &limits, &root, err) < 0)
		return mg_err_wrap(err, "not JSON");
	out->root = root;
	if (classify(out, err) < 0) {
		const struct json_value *id = out->id;
		struct json_value *keep = out->root;
		memset(out, 0, sizeof(*out));
		out->root = keep;
		out->id = id;
		return -1;
	}
	return 0;
}

void rpc_msg_free(struct rpc_msg *msg)
{
	if (msg == NULL)
		return;
	json_free(msg->root);
	memset(msg, 0, sizeof(*msg));
}

void rpc_msg_move(struct rpc_msg *dst, struct rpc_msg *src)
{
	*dst = *src;
	memset(src, 0, sizeof(*src));
}

char *rpc_id_key_int(int64_t id)
{
	return xasprintf("n:%" PRId64, id);
}

char *rpc_id_key(const struct json_value *id)
{
	if (id == NULL)
		return NULL;
	if (id->kind == JSON_NUMBER) {
		int64_t n;
		if (json_number_int64(id, &n) < 0)
			return NULL;
		return rpc_id_key_int(n);
	}
	if (id->kind != JSON_STRING)
		return NULL;
	const char *s = id->u.str.ptr;
	size_t len = id->u.str.len;
	size_t extra = 0;
	for (size_t i = 0; i < len; i++)
		extra += s[i] == '\0' || s[i] == '\\';
	char *key = xmalloc(2 + len + extra + 1);
	char *p = key;
	*p++ = 's';
	*p++ = ':';
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\0') {
			*p++ = '\\';
			*p++ = '0';
		} else if (s[i] == '\\') {
			*p++ = '\\';
			*p++ = '\\';
		} else {
			*p++ = s[i];
		}
	}
	*p = '\0';
	return key;
}

/* ---- builders ------------------------------------------------------------ */

static int check_id(const struct json_value *id, struct mg_err **err)
{
	if (id == NULL)
		return mg_err_set(err, "missing id");
	if (!id_usable(id))
		return id_refused(id, err);
	return 0;
}

/* Close the object and the line; refuse a newline inside (none can come from
 * a correct generator, and one would split the message in two). */
static int build_end(struct mg_buf *out, size_t old, struct mg_err **err)
{
	if (mg_buf_putc(out, '}', err) < 0)
		return -1;
	if (memchr(out->data + old, '\n', out->len - old) != NULL)
		return mg_err_set(err, "generated JSON holds a newline");
	return mg_buf_putc(out, '\n', err);
}

static int build_failed(struct mg_buf *out, size_t old, const char *what, struct mg_err **err)
{
	out->len = old;
	if (out->data != NULL)
		out->data[old] = '\0';
	return mg_err_wrap(err, "building %s", what);
}

static int put_member(struct mg_buf *out, const char *name, const struct json_value *v,
                      struct mg_err **err)
{
	if (mg_buf_printf(out, err, ",\"%s\":", name) < 0)
		return -1;
	if (v == NULL)
		return mg_buf_puts(out, "null", err);
	return json_generate(v, out, err);
}

static int put_method(struct mg_buf *out, const char *method, struct mg_err **err)
{
	if (method == NULL || *method == '\0')
		return mg_err_set(err, "missing method");
	if (mg_buf_puts(out, ",\"method\":", err) < 0)
		return -1;
	return json_quote(method, strlen(method), out, err);
}

int rpc_build_request(const struct json_value *id, const char *method,
                      const struct json_value *params, struct mg_buf *out, struct mg_err **err)
{
	size_t old = out->len;
	if (check_id(id, err) < 0 || mg_buf_puts(out, "{\"jsonrpc\":\"2.0\"", err) < 0 ||
	    put_member(out, "id", id, err) < 0 || put_method(out, method, err) < 0 ||
	    (params != NULL && put_member(out, "params", params, err) < 0) ||
	    build_end(out, old, err) < 0)
		return build_failed(out, old, "a request", err);
	return 0;
}

int rpc_build_notification(const char *method, const struct json_value *params, struct mg_buf *out,
                           struct mg_err **err)
{
	size_t old = out->len;
	if (mg_buf_puts(out, "{\"jsonrpc\":\"2.0\"", err) < 0 || put_method(out, method, err) < 0 ||
	    (params != NULL && put_member(out, "params", params, err) < 0) ||
	    build_end(out, old, err) < 0)
		return build_failed(out, old, "a notification", err);
	return 0;
}

int rpc_build_result(const struct json_value *id, const struct json_value *result,
                     struct mg_buf *out, struct mg_err **err)
{
	size_t old = out->len;
	if (check_id(id, err) < 0 || mg_buf_puts(out, "{\"jsonrpc\":\"2.0\"", err) < 0 ||
	    put_member(out, "id", id, err) < 0 ||
	    (result != NULL ? put_member(out, "result", result, err)
	                    : mg_buf_puts(out, ",\"result\":{}", err)) < 0 ||
	    build_end(out, old, err) < 0)
		return build_failed(out, old, "a result", err);
	return 0;
}

int rpc_build_error(const struct json_value *id, int64_t code, const char *message,
                    const struct json_value *data, struct mg_buf *out, struct mg_err **err)
{
	size_t old = out->len;
	if (message == NULL)
		message = "";
	if ((id != NULL && id->kind != JSON_NULL && check_id(id, err) < 0) ||
	    mg_buf_puts(out, "{\"jsonrpc\":\"2.0\"", err) < 0 ||
	    put_member(out, "id", id, err) < 0 ||
	    mg_buf_printf(out, err, ",\"error\":{\"code\":%" PRId64 ",\"message\":", code) < 0 ||
	    json_quote(message, strlen(message), out, err) < 0 ||
	    (data != NULL && put_member(out, "data", data, err) < 0) ||
	    mg_buf_putc(out, '}', err) < 0 || build_end(out, old, err) < 0)
		return build_failed(out, old, "an error response", err);
	return 0;
}
