/* libFuzzer target: any bytes through toml_parse, then free whatever it
 * returned. The sanitizers report memory errors and leaks. */
#include <stddef.h>
#include <stdint.h>

#include "internal/toml/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct toml_value *root = NULL;
	struct mg_err *err = NULL;
	if (toml_parse((const char *)data, size, "fuzz.toml", &root, &err) < 0) {
		/* a failure always carries a message in the documented shape */
		if (err == NULL || err->msg == NULL || root != NULL)
			__builtin_trap();
	} else if (root == NULL || err != NULL) {
		__builtin_trap();
	}
	mg_err_free(err);
	toml_free(root);
	return 0;
}
