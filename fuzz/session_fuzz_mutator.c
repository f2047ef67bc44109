/* The session fuzzer's mutations at the grain of its input (session_fuzz.c:
 * two header bytes, then ops of four): most mutations change one field of
 * one op, or add, drop, copy or swap whole ops, so a program stays aligned
 * (a byte inserted by libFuzzer shifts every op after it into another);
 * the rest are libFuzzer's own, which bring the values it saw compared.
 * Crossover splices two programs at op boundaries. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HEAD 2
#define OP   4

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2,
                                 size_t size2, uint8_t *out, size_t max_out_size,
                                 unsigned int seed);

static uint32_t next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static size_t ops_of(size_t size)
{
	return size > HEAD ? (size - HEAD) / OP : 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	uint32_t s = seed | 1;
	if (size < HEAD || max_size < HEAD + OP || next(&s) % 4 == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	size = HEAD + ops_of(size) * OP; /* a partial op at the end counts for nothing */
	size_t n = ops_of(size), cap = ops_of(max_size);
	uint8_t *ops = data + HEAD;
	switch (next(&s) % 8) {
	case 0: /* a header bit */
		data[next(&s) % HEAD] ^= (uint8_t)(1u << (next(&s) % 8));
		break;
	case 1:
	case 2: /* one field of one op */
		if (n > 0)
			ops[(next(&s) % n) * OP + next(&s) % OP] = (uint8_t)next(&s);
		break;
	case 3: /* a new op, anywhere */
		if (n < cap) {
			size_t at = next(&s) % (n + 1);
			memmove(ops + (at + 1) * OP, ops + at * OP, (n - at) * OP);
			for (size_t k = 0; k < OP; k++)
				ops[at * OP + k] = (uint8_t)next(&s);
			n++;
		}
		break;
	case 4: /* an op dropped */
		if (n > 0) {
			size_t at = next(&s) % n;
			memmove(ops + at * OP, ops + (at + 1) * OP, (n - at - 1) * OP);
			n--;
		}
		break;
	case 5: /* an op copied elsewhere, one field changed (another edit, say) */
		if (n > 0 && n < cap) {
			size_t from = next(&s) % n, at = next(&s) % (n + 1);
			uint8_t op[OP];
			memcpy(op, ops + from * OP, OP);
			op[1 + next(&s) % (OP - 1)] = (uint8_t)next(&s);
			memmove(ops + (at + 1) * OP, ops + at * OP, (n - at) * OP);
			memcpy(ops + at * OP, op, OP);
			n++;
		}
		break;
	case 6: /* two ops swapped */
		if (n > 1) {
			size_t a = next(&s) % n, b = next(&s) % n;
			uint8_t t[OP];
			memcpy(t, ops + a * OP, OP);
			memcpy(ops + a * OP, ops + b * OP, OP);
			memcpy(ops + b * OP, t, OP);
		}
		break;
	default: /* a run of ops repeated */
		if (n > 0) {
			size_t from = next(&s) % n, len = 1 + next(&s) % (n - from);
			if (len > cap - n)
				len = cap - n;
			memmove(ops + (from + 2 * len) * OP, ops + (from + len) * OP,
			        (n - from - len) * OP);
			memcpy(ops + (from + len) * OP, ops + from * OP, len * OP);
			n += len;
		}
	}
	return HEAD + n * OP;
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2,
                                 size_t size2, uint8_t *out, size_t max_out_size, unsigned int seed)
{
	uint32_t s = seed | 1;
	size_t n1 = ops_of(size1), n2 = ops_of(size2), cap = ops_of(max_out_size);
	if (size1 < HEAD || max_out_size < HEAD)
		return 0;
	/* data1's head and first ops, then data2's ops from some point */
	size_t a = n1 > 0 ? next(&s) % (n1 + 1) : 0;
	size_t b = n2 > 0 ? next(&s) % (n2 + 1) : 0;
	if (a > cap)
		a = cap;
	size_t rest = n2 - b < cap - a ? n2 - b : cap - a;
	memcpy(out, data1, HEAD);
	memcpy(out + HEAD, data1 + HEAD, a * OP);
	if (rest > 0)
		memcpy(out + HEAD + a * OP, data2 + HEAD + b * OP, rest * OP);
	return HEAD + (a + rest) * OP;
}
