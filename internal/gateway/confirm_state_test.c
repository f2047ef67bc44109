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
	struct confirm_call call = {CONFIRM_QUESTION, session, tool, args};
	if (confirm_state_take(k, state, strlen(state), &call, now, NULL, NULL, &err) == 0)
		return strdup("");
	char *text = strdup(mg_err_msg(err));
	mg_err_free(err);
	return text;
}

static char *make(struct confirm_keeper *k, const char *session, const char *tool,
                  const struct json_value *args, int64_t deadline)
{
	char *state = NULL;
	struct confirm_call call = {CONFIRM_QUESTION, session, tool, args};
	if (confirm_state_make(k, &call, NULL, 0, deadline, &state, NULL) < 0)
		abort();
	return state;
}

/* A round's state carrying the server's carried */
static char *make_round(struct confirm_keeper *k, const char *session, const char *tool,
                        const struct json_value *args, const char *carried, int64_t deadline)
{
	char *state = NULL;
	struct confirm_call call = {CONFIRM_ROUND, session, tool, args};
	if (confirm_state_make(k, &call, carried, strlen(carried), deadline, &state, NULL) < 0)
		abort();
	return state;
}

/* take a round's state: the server's state it carries ("" too), or NULL with
 * the refusal in *why */
static char *take_round(struct confirm_keeper *k, const char *state, const char *session,
                        const char *tool, const struct json_value *args, int64_t now, char **why)
{
	struct mg_err *err = NULL;
	struct confirm_call call = {CONFIRM_ROUND, session, tool, args};
	const char *carried = NULL;
	size_t n = 0;
	*why = NULL;
	if (confirm_state_take(k, state, strlen(state), &call, now, &carried, &n, &err) == 0)
		return strndup(carried, n);
	*why = strdup(mg_err_msg(err));
	mg_err_free(err);
	return NULL;
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

/* Rounds: the server's state rides inside ours, bound with the call */
static void test_rounds(struct confirm_keeper *k, const struct json_value *args,
                        const struct json_value *changed)
{
	char *why = NULL;
	const char *server_state = "opaque.server-state/with.dots+and=signs";
	char *s = make_round(k, "sess-1", "fs__write", args, server_state, 1000);
	T_OK(strncmp(s, CONFIRM_ROUND_PREFIX, strlen(CONFIRM_ROUND_PREFIX)) == 0 &&
	         strlen(s) == strlen(CONFIRM_ROUND_PREFIX) + 96 + 1 + strlen(server_state),
	     "a round's state is the prefix, 96 characters, a dot and the server's: %s", s);
	T_INT(confirm_state_kind(s, strlen(s)), CONFIRM_ROUND, "its prefix names a round");
	char *got = take_round(k, s, "sess-1", "fs__write", args, 10, &why);
	T_STR(got != NULL ? got : why, server_state, "taken, it gives back the server's state");
	free(got);
	got = take_round(k, s, "sess-1", "fs__write", args, 10, &why);
	T_OK(got == NULL && strstr(why, "used already") != NULL, "a round is taken once (%s)",
	     why != NULL ? why : got);
	free(got);
	free(why);
	free(s);

	/* the server's part is bound too: altered, cut or grown, refused */
	s = make_round(k, "sess-1", "fs__write", args, server_state, 1000);
	const char *tails[] = {"opaque.server-state/with.dots+and=signX", "", "opaque",
	                       "opaque.server-state/with.dots+and=signs."};
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		size_t ours = strlen(s) - strlen(server_state);
		char *t = malloc(ours + strlen(tails[i]) + 1);
		memcpy(t, s, ours);
		memcpy(t + ours, tails[i], strlen(tails[i]) + 1);
		got = take_round(k, t, "sess-1", "fs__write", args, 10, &why);
		T_OK(got == NULL && strstr(why, "forged or altered") != NULL,
		     "the server's state altered to \"%s\": refused (%s)", tails[i],
		     why != NULL ? why : got);
		free(got);
		free(why);
		free(t);
	}
	got = take_round(k, s, "sess-1", "fs__write", changed, 10, &why);
	T_OK(got == NULL && strstr(why, "not valid for this call") != NULL,
	     "a round for other arguments: refused (%s)", why != NULL ? why : got);
	free(got);
	free(why);
	got = take_round(k, s, "sess-2", "fs__write", args, 10, &why);
	T_OK(got == NULL && strstr(why, "not valid in this session") != NULL,
	     "a round in another session: refused (%s)", why != NULL ? why : got);
	free(got);
	free(why);
	got = take_round(k, s, "sess-1", "fs__write", args, 1000, &why);
	T_OK(got == NULL && strstr(why, "expired") != NULL,
	     "a round past its deadline: refused (%s)", why != NULL ? why : got);
	free(got);
	free(why);
	free(s);

	/* a question never stands for a round, nor a round for a question */
	s = make(k, "sess-1", "fs__write", args, 1000);
	got = take_round(k, s, "sess-1", "fs__write", args, 10, &why);
	T_OK(got == NULL && strstr(why, "not a server's round") != NULL,
	     "a question's state as a round: refused (%s)", why != NULL ? why : got);
	free(got);
	free(why);
	taken(k, s, "sess-1", "fs__write", args, 10, "and the question is still good once");
	free(s);
	s = make_round(k, "sess-1", "fs__write", args, "", 1000);
	refused(k, s, "sess-1", "fs__write", args, 10, "not one of mcpgate's questions",
	        "a round's state as a confirmation");
	/* the same bytes under the other prefix: the MAC's domain says which */
	char *swapped = strdup(s);
	memcpy(swapped, CONFIRM_STATE_PREFIX, strlen(CONFIRM_STATE_PREFIX));
	swapped[strlen(swapped) - 1] = '\0'; /* the dot */
	refused(k, swapped, "sess-1", "fs__write", args, 10, "forged or altered",
	        "a round's bytes relabelled as a question");
	free(swapped);
	got = take_round(k, s, "sess-1", "fs__write", args, 10, &why);
	T_STR(got != NULL ? got : why, "", "a round with no server state gives back \"\"");
	free(got);
	free(why);
	free(s);

	/* the server's state is bounded */
	char *big = malloc(CONFIRM_CARRIED_MAX + 2);
	memset(big, 'x', CONFIRM_CARRIED_MAX + 1);
	big[CONFIRM_CARRIED_MAX + 1] = '\0';
	struct confirm_call call = {CONFIRM_ROUND, "sess-1", "fs__write", args};
	struct mg_err *err = NULL;
	char *none = NULL;
	T_OK(confirm_state_make(k, &call, big, strlen(big), 1000, &none, &err) < 0 &&
	         strstr(mg_err_msg(err), "longer than") != NULL,
	     "a server state over %zu bytes is refused (%s)", CONFIRM_CARRIED_MAX,
	     err != NULL ? mg_err_msg(err) : "made");
	mg_err_free(err);
	free(none);
	free(big);
	T_INT(confirm_state_kind("mcs9.x", 6), -1, "another prefix names no kind");

	/* a parked call's state: its own kind, never a round's */
	struct confirm_call parked = {CONFIRM_PARKED, "sess-1", "fs__write", args};
	char *ps = NULL;
	T_OK(confirm_state_make(k, &parked, "42", 2, 1000, &ps, NULL) == 0 &&
	         strncmp(ps, CONFIRM_PARKED_PREFIX, strlen(CONFIRM_PARKED_PREFIX)) == 0,
	     "a parked call's state has its prefix: %s", ps != NULL ? ps : "-");
	got = take_round(k, ps, "sess-1", "fs__write", args, 10, &why);
	T_OK(got == NULL && strstr(why, "not a server's round") != NULL,
	     "a parked call's state as a round: refused (%s)", why != NULL ? why : got);
	free(got);
	free(why);
	char *relabelled = strdup(ps);
	memcpy(relabelled, CONFIRM_ROUND_PREFIX, strlen(CONFIRM_ROUND_PREFIX));
	got = take_round(k, relabelled, "sess-1", "fs__write", args, 10, &why);
	T_OK(got == NULL && strstr(why, "forged or altered") != NULL,
	     "its bytes relabelled as a round's: refused (%s)", why != NULL ? why : got);
	free(got);
	free(why);
	free(relabelled);
	const char *carried = NULL;
	size_t carried_len = 0;
	T_OK(confirm_state_take(k, ps, strlen(ps), &parked, 10, &carried, &carried_len, NULL) ==
	             0 &&
	         carried_len == 2 && memcmp(carried, "42", 2) == 0,
	     "taken as a parked call's, it gives back the park id");
	free(ps);
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

	test_rounds(k, args, changed);

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
