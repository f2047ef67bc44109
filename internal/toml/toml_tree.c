/* Trees a caller builds, copies and changes: the values mcpgate means to
 * write, and the tree a file should hold after an edit (toml_change.c). */
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"
#include "internal/toml/toml.h"

static struct toml_value *value_of(enum toml_kind kind)
{
	struct toml_value *v = xcalloc(1, sizeof(*v));
	v->kind = kind;
	return v;
}

struct toml_value *toml_new_table(void)
{
	return value_of(TOML_TABLE);
}

struct toml_value *toml_new_array(void)
{
	return value_of(TOML_ARRAY);
}

struct toml_value *toml_new_stringn(const char *s, size_t len)
{
	struct toml_value *v = value_of(TOML_STRING);
	v->u.str.ptr = xmalloc(len + 1);
	memcpy(v->u.str.ptr, s, len);
	v->u.str.ptr[len] = '\0';
	v->u.str.len = len;
	return v;
}

struct toml_value *toml_new_string(const char *s)
{
	return toml_new_stringn(s, strlen(s));
}

struct toml_value *toml_new_bool(bool b)
{
	struct toml_value *v = value_of(TOML_BOOL);
	v->u.boolean = b;
	return v;
}

struct toml_value *toml_new_integer(int64_t i)
{
	struct toml_value *v = value_of(TOML_INTEGER);
	v->u.integer = i;
	return v;
}

static struct toml_kv *find(struct toml_value *t, const char *key, size_t len)
{
	for (size_t i = 0; i < t->u.table.len; i++)
		if (t->u.table.items[i].keylen == len &&
		    memcmp(t->u.table.items[i].key, key, len) == 0)
			return &t->u.table.items[i];
	return NULL;
}

static struct toml_kv *append(struct toml_value *t, const char *key, size_t len,
                              struct toml_value *v)
{
	if (t->u.table.len == t->u.table.cap) {
		t->u.table.cap = t->u.table.cap != 0 ? t->u.table.cap * 2 : 4;
		t->u.table.items =
		    xreallocarray(t->u.table.items, t->u.table.cap, sizeof(*t->u.table.items));
	}
	struct toml_kv *kv = &t->u.table.items[t->u.table.len++];
	kv->key = xmalloc(len + 1);
	memcpy(kv->key, key, len);
	kv->key[len] = '\0';
	kv->keylen = len;
	kv->keypos = (struct toml_pos){0, 0};
	kv->value = v;
	return kv;
}

void toml_table_set(struct toml_value *t, const char *key, size_t len, struct toml_value *v)
{
	struct toml_kv *kv = find(t, key, len);
	if (kv != NULL) {
		toml_free(kv->value);
		kv->value = v;
		return;
	}
	append(t, key, len, v);
}

bool toml_table_remove(struct toml_value *t, const char *key, size_t len)
{
	struct toml_kv *kv = find(t, key, len);
	if (kv == NULL)
		return false;
	size_t i = (size_t)(kv - t->u.table.items);
	free(kv->key);
	toml_free(kv->value);
	memmove(kv, kv + 1, (t->u.table.len - i - 1) * sizeof(*kv));
	t->u.table.len--;
	return true;
}

void toml_array_push(struct toml_value *a, struct toml_value *v)
{
	if (a->u.array.len == a->u.array.cap) {
		a->u.array.cap = a->u.array.cap != 0 ? a->u.array.cap * 2 : 4;
		a->u.array.items =
		    xreallocarray(a->u.array.items, a->u.array.cap, sizeof(*a->u.array.items));
	}
	a->u.array.items[a->u.array.len++] = v;
}

void toml_array_remove(struct toml_value *a, size_t i)
{
	toml_free(a->u.array.items[i]);
	memmove(a->u.array.items + i, a->u.array.items + i + 1,
	        (a->u.array.len - i - 1) * sizeof(*a->u.array.items));
	a->u.array.len--;
}

struct toml_value *toml_copy(const struct toml_value *v)
{
	struct toml_value *c = value_of(v->kind);
	c->pos = v->pos;
	c->flags = v->flags;
	switch (v->kind) {
	case TOML_TABLE:
		for (size_t i = 0; i < v->u.table.len; i++) {
			const struct toml_kv *kv = &v->u.table.items[i];
			/* the keys of a tree are distinct already */
			append(c, kv->key, kv->keylen, toml_copy(kv->value))->keypos = kv->keypos;
		}
		break;
	case TOML_ARRAY:
		for (size_t i = 0; i < v->u.array.len; i++)
			toml_array_push(c, toml_copy(v->u.array.items[i]));
		break;
	case TOML_STRING:
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		c->u.str.ptr = xmalloc(v->u.str.len + 1);
		memcpy(c->u.str.ptr, v->u.str.ptr, v->u.str.len + 1);
		c->u.str.len = v->u.str.len;
		break;
	case TOML_INTEGER:
		c->u.integer = v->u.integer;
		break;
	case TOML_FLOAT:
		c->u.flt = v->u.flt;
		break;
	case TOML_BOOL:
		c->u.boolean = v->u.boolean;
		break;
	}
	return c;
}
