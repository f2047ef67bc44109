/* The unified diff that `mcpgate client --dry-run` shows. The lines both
 * texts begin and end with are set aside first (an edit here is one place
 * in a file), and the rest is matched by longest common subsequence while
 * that fits in DIFF_CELLS_MAX cells; past that, the middle is shown as all
 * removed, then all added, which is still a true diff. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"
#include "internal/clients/clients.h"

#define DIFF_CONTEXT   3
#define DIFF_CELLS_MAX ((size_t)1 << 22)

struct dline {
	const char *p;
	size_t n; /* with its '\n' when it has one */
};

struct dop {
	char op;   /* ' ', '-' or '+' */
	size_t ai; /* the line of before it stands at (or before, for '+') */
	size_t bi; /* the line of after (or before, for '-') */
};

static struct dline *split(const char *t, size_t len, size_t *n)
{
	struct dline *v = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t start = 0; start < len;) {
		const char *nl = memchr(t + start, '\n', len - start);
		size_t end = nl != NULL ? (size_t)(nl - t) + 1 : len;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		v[(*n)++] = (struct dline){t + start, end - start};
		start = end;
	}
	return v;
}

static bool same(const struct dline *x, const struct dline *y)
{
	return x->n == y->n && memcmp(x->p, y->p, x->n) == 0;
}

struct dops {
	struct dop *v;
	size_t n;
	size_t cap;
};

static void push(struct dops *ops, char op, size_t ai, size_t bi)
{
	if (ops->n == ops->cap) {
		ops->cap = ops->cap ? ops->cap * 2 : 64;
		ops->v = xreallocarray(ops->v, ops->cap, sizeof(*ops->v));
	}
	ops->v[ops->n++] = (struct dop){op, ai, bi};
}

/* The middle: a[a0, a1) against b[b0, b1) */
static void middle(const struct dline *a, size_t a0, size_t a1, const struct dline *b, size_t b0,
                   size_t b1, struct dops *ops)
{
	size_t ma = a1 - a0, mb = b1 - b0;
	if (ma == 0 || mb == 0 || (ma + 1) > DIFF_CELLS_MAX / (mb + 1)) {
		for (size_t i = a0; i < a1; i++)
			push(ops, '-', i, b0);
		for (size_t j = b0; j < b1; j++)
			push(ops, '+', a1, j);
		return;
	}
	/* lcs[i][j]: the longest common subsequence of a[a0+i..] and b[b0+j..] */
	size_t w = mb + 1;
	uint32_t *lcs = xcalloc((ma + 1) * w, sizeof(*lcs));
	for (size_t i = ma; i-- > 0;)
		for (size_t j = mb; j-- > 0;)
			lcs[i * w + j] = same(&a[a0 + i], &b[b0 + j]) ? lcs[(i + 1) * w + j + 1] + 1
			                 : lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]
			                     ? lcs[(i + 1) * w + j]
			                     : lcs[i * w + j + 1];
	size_t i = 0, j = 0;
	while (i < ma || j < mb) {
		if (i < ma && j < mb && same(&a[a0 + i], &b[b0 + j])) {
			push(ops, ' ', a0 + i, b0 + j);
			i++;
			j++;
		} else if (j == mb || (i < ma && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
			push(ops, '-', a0 + i, b0 + j);
			i++;
		} else {
			push(ops, '+', a0 + i, b0 + j);
			j++;
		}
	}
	free(lcs);
}

static int put_line(struct mg_buf *out, char op, const struct dline *l, struct mg_err **err)
{
	if (mg_buf_putc(out, op, err) < 0 || mg_buf_append(out, l->p, l->n, err) < 0)
		return -1;
	if (l->n == 0 || l->p[l->n - 1] != '\n')
		return mg_buf_puts(out, "\n\\ No newline at end of file\n", err);
	return 0;
}

static int put_hunk(struct mg_buf *out, const struct dop *ops, size_t from, size_t to,
                    const struct dline *a, const struct dline *b, struct mg_err **err)
{
	size_t na = 0, nb = 0;
	for (size_t k = from; k < to; k++) {
		na += ops[k].op != '+';
		nb += ops[k].op != '-';
	}
	size_t as = ops[from].ai + (na > 0), bs = ops[from].bi + (nb > 0);
	if (mg_buf_printf(out, err, "@@ -%zu,%zu +%zu,%zu @@\n", as, na, bs, nb) < 0)
		return -1;
	for (size_t k = from; k < to; k++) {
		const struct dline *l = ops[k].op == '+' ? &b[ops[k].bi] : &a[ops[k].ai];
		if (put_line(out, ops[k].op, l, err) < 0)
			return -1;
	}
	return 0;
}

int clients_diff(const char *before, size_t before_len, const char *after, size_t after_len,
                 const char *label, const char *after_label, struct mg_buf *out,
                 struct mg_err **err)
{
	if (before_len == after_len && memcmp(before, after, before_len) == 0)
		return 0;
	size_t na, nb;
	struct dline *a = split(before, before_len, &na);
	struct dline *b = split(after, after_len, &nb);
	size_t pre = 0, suf = 0;
	while (pre < na && pre < nb && same(&a[pre], &b[pre]))
		pre++;
	while (suf < na - pre && suf < nb - pre && same(&a[na - 1 - suf], &b[nb - 1 - suf]))
		suf++;
	/* of the lines both share at the ends, only the context can be shown */
	struct dops d = {0};
	for (size_t i = pre > DIFF_CONTEXT ? pre - DIFF_CONTEXT : 0; i < pre; i++)
		push(&d, ' ', i, i);
	middle(a, pre, na - suf, b, pre, nb - suf, &d);
	for (size_t k = suf; k > 0 && k + DIFF_CONTEXT > suf; k--)
		push(&d, ' ', na - k, nb - k);
	const struct dop *ops = d.v;
	size_t nops = d.n;

	int r = mg_buf_printf(out, err, "--- %s\n+++ %s\n", label, after_label);
	size_t k = 0, done = 0;
	while (r == 0) {
		while (k < nops && ops[k].op == ' ')
			k++;
		if (k == nops)
			break;
		size_t from = k >= done + DIFF_CONTEXT ? k - DIFF_CONTEXT : done;
		size_t end = k;
		while (end < nops) {
			if (ops[end].op != ' ') {
				end++;
				continue;
			}
			size_t run = 0;
			while (end + run < nops && ops[end + run].op == ' ')
				run++;
			if (end + run == nops || run > 2 * DIFF_CONTEXT)
				break;
			end += run;
		}
		size_t to = end + DIFF_CONTEXT < nops ? end + DIFF_CONTEXT : nops;
		r = put_hunk(out, ops, from, to, a, b, err);
		k = done = to;
	}
	free(d.v);
	free(a);
	free(b);
	return r;
}
