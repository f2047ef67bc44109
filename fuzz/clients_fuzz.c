/* libFuzzer target: any bytes as a client's file (the first byte picks the
 * client), through add, a second add, remove after add, and remove. Beyond
 * the sanitizers' memory errors and leaks it traps when an operation that
 * succeeded breaks the contract: a second add that changes anything, or a
 * remove after add that fails or leaves a text without the entry that does
 * not parse. (That add then remove gives the bytes back is the golden
 * cases' to show: an empty object's inner spaces, say, are not kept.) */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/strv.h"
#include "internal/clients/clients.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const args[] = {"serve", "--workspace", "/home/dev/project"};
static const struct clients_entry entry = {"mcpgate", "/usr/local/bin/mcpgate", args, 3};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	size_t nclients = 0;
	while (clients_table[nclients].name != NULL)
		nclients++;
	const struct clients_client *c = &clients_table[data[0] % nclients];
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	struct mg_err *err = NULL;

	char *added = NULL, *again = NULL, *back = NULL, *removed = NULL;
	size_t added_len = 0, again_len = 0, back_len = 0, removed_len = 0;
	if (clients_add(c, text, len, "f", &entry, &added, &added_len, &err) >= 0) {
		if (clients_add(c, added, added_len, "f", &entry, &again, &again_len, NULL) !=
		        CLIENTS_UNCHANGED ||
		    again_len != added_len || memcmp(again, added, added_len) != 0)
			__builtin_trap();
		if (clients_remove(c, added, added_len, "f", "mcpgate", &back, &back_len, NULL) !=
		    CLIENTS_REMOVED)
			__builtin_trap();
		/* and what it leaves still parses, without the entry */
		struct strv left = STRV_INIT;
		if (clients_find_entries(c, back, back_len, "f", &left, NULL) < 0 ||
		    strv_find(&left, "mcpgate") >= 0)
			__builtin_trap();
		strv_free(&left);
	} else if (err == NULL || added != NULL) {
		__builtin_trap();
	}
	mg_err_clear(&err);
	clients_remove(c, text, len, "f", "mcpgate", &removed, &removed_len, &err);
	mg_err_clear(&err);
	free(added);
	free(again);
	free(back);
	free(removed);
	return 0;
}
