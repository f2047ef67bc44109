/* confirm_state: a requestState is good for one call, once, before its
 * deadline, in the session it was made for; every other use is refused and
 * says why. */
#include <stdlib.h>
#include <string.h>

#include "internal/base/err.h"
#include "internal/base/testing.h"
#include "internal/gateway/confirm_state.h"

static struct json_value *parse(const char *text)
{
	struct json_value *v = NULL;
	if (json_parse(text, strlen(text), &json_default_limits, &v, NULL) < 0)
		abort();
	return v;
}

/* take, and the refusal's text ("" on success) */
static char *take(struct confirm_keeper *k, const char *state, const char *session,
                  const char *tool, const struct json_value *args, int64_t now)
{
	struct mg_err *err = NULL;
	if (confirm_state_take(k, state, strlen(state), session, tool, args, now, &err) == 0)
		return strdup("");
	char *text = strdup(mg_err_msg(err));
	mg_err_free(err);
	return text;
}

static char *make(struct confirm_keeper *k, const char *session, const char *tool,
                  const struct json_value *args, int64_t deadline)
{
	char *state = NULL;
	if (confirm_state_make(k, session, tool, args, deadline, &state, NULL) < 0)
		abort();
	return state;
}

/* take must refuse, saying words */
static void refused(struct confirm_keeper *k, const char *state, const char *session,
                    const char *tool, const struct json_value *args, int64_t now, const char *words,
                    const char *what)
{
	char *got = take(k, state, session, tool, args, now);
	T_OK(got[0] != '\0' && strstr(got, words) != NULL, "%s: refused (%s)", what, got);
	free(got);
}

/* take must accept */
static void taken(struct confirm_keeper *k, const char *state, const char *session,
                  const char *tool, const struct json_value *args, int64_t now, const char *what)
{
	char *got = take(k, state, session, tool, args, now);
	T_STR(got, "", "%s", what);
	free(got);
}

int main(void)
{
	struct confirm_keeper *k = NULL, *other = NULL;
	T_OK(confirm_keeper_new(&k, NULL) == 0 && confirm_keeper_new(&other, NULL) == 0,
	     "keepers are made");
	struct json_value *args = parse("{\"path\":\"a.txt\",\"text\":\"hi\",\"n\":[1,2]}");
	struct json_value *reordered = parse("{\"n\":[1,2],\"text\":\"hi\",\"path\":\"a.txt\"}");
	struct json_value *changed = parse("{\"path\":\"b.txt\",\"text\":\"hi\",\"n\":[1,2]}");
	struct json_value *extra =
	    parse("{\"path\":\"a.txt\",\"text\":\"hi\",\"n\":[1,2],\"x\":1}");

	char *s = make(k, "sess-1", "fs__write", args, 1000);
	T_OK(strncmp(s, CONFIRM_STATE_PREFIX, strlen(CONFIRM_STATE_PREFIX)) == 0 &&
	         strlen(s) == strlen(CONFIRM_STATE_PREFIX) + 96,
	     "a state is the prefix and 96 characters: %s", s);
	taken(k, s, "sess-1", "fs__write", reordered, 999,
	      "taken for the same call (key order does not matter: canonical JSON)");

	refused(k, s, "sess-1", "fs__write", args, 999, "used already", "replayed");
	free(s);

	s = make(k, "sess-1", "fs__write", args, 1000);
	refused(k, s, "sess-1", "fs__write", args, 1000, "expired", "expired at its deadline");
	refused(k, s, "sess-1", "fs__write", args, 10, "used already",
	        "and an expired state is gone, even with an earlier clock");
	free(s);

	s = make(k, "sess-1", "fs__write", args, 1000);
	refused(k, s, "sess-1", "fs__write", changed, 10, "not valid for this call",
	        "other arguments");
	refused(k, s, "sess-1", "fs__write", extra, 10, "not valid for this call",
	        "one more argument");
	refused(k, s, "sess-1", "fs__delete", args, 10, "other arguments, or forged",
	        "another tool");
	refused(k, s, "sess-2", "fs__write", args, 10, "not valid in this session",
	        "another session");
	refused(other, s, "sess-1", "fs__write", args, 10, "forged",
	        "another keeper's key (another process), as forged");
	taken(k, s, "sess-1", "fs__write", args, 10,
	      "a refused try with the wrong call does not use the state up");
	free(s);

	/* altered: every character of the encoded part, changed in turn */
	s = make(k, "sess-1", "fs__write", args, 1000);
	size_t prefix = strlen(CONFIRM_STATE_PREFIX), bad = 0, len = strlen(s);
	for (size_t i = prefix; i < len; i++) {
		char *t = strdup(s);
		t[i] = t[i] == 'A' ? 'B' : 'A';
		char *r = take(k, t, "sess-1", "fs__write", args, 10);
		bad += r[0] != '\0';
		free(r);
		free(t);
	}
	T_INT((long long)bad, (long long)(len - prefix), "every altered character is refused");
	taken(k, s, "sess-1", "fs__write", args, 10, "and the unaltered state still works once");
	free(s);

	const char *forged[] = {"",
	                        "mcs1.",
	                        "mcs1.AAAA",
	                        "mcs2.xxxx",
	                        "not a state at all",
	                        "mcs1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	                        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"};
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		char *got = take(k, forged[i], "sess-1", "fs__write", args, 10);
		T_OK(got[0] != '\0' &&
		         (strstr(got, "not one mcpgate makes") != NULL ||
		          strstr(got, "forged") != NULL || strstr(got, "not valid") != NULL),
		     "forged \"%.20s\": refused (%s)", forged[i], got);
		free(got);
	}
	char *zero = make(k, "sess-1", "fs__write", NULL, 1000);
	struct json_value *empty = parse("{}");
	taken(k, zero, "sess-1", "fs__write", empty, 10, "no arguments and {} are the same call");
	free(zero);

	/* bounded: the oldest outstanding question is refused once more are asked */
	char *first = make(k, "sess-1", "fs__write", args, 1000);
	char *last = NULL;
	for (int i = 0; i < CONFIRM_PENDING_MAX; i++) {
		free(last);
		last = make(k, "sess-1", "fs__write", args, 1000);
	}
	refused(k, first, "sess-1", "fs__write", args, 10, "used already",
	        "past CONFIRM_PENDING_MAX outstanding, the oldest");
	taken(k, last, "sess-1", "fs__write", args, 10, "the newest still works");
	free(first);
	free(last);

	json_free(args);
	json_free(reordered);
	json_free(changed);
	json_free(extra);
	json_free(empty);
	confirm_keeper_free(k);
	confirm_keeper_free(other);
	confirm_keeper_free(NULL);
	return t_done();
}
