/* Enough of ELF to warn about a binary that cannot start as packed: its
 * machine, and its program interpreter (a dynamically linked program needs
 * the interpreter and its libraries in the image too). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/pack/pack-internal.h"

#define PT_INTERP_TYPE 3u
#define MAX_PHNUM      4096u

struct elf_reader {
	int fd;
	bool big_endian;
	uint64_t file_size;
};

/* n bytes (1-8) at off, in the file's byte order; 0 on success */
static int read_uint(const struct elf_reader *r, uint64_t off, unsigned n, uint64_t *out)
{
	unsigned char b[8];
	if (off > r->file_size || r->file_size - off < n)
		return -1;
	if (pread(r->fd, b, n, (off_t)off) != (ssize_t)n)
		return -1;
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[r->big_endian ? n - 1 - i : i] << (8 * i);
	*out = v;
	return 0;
}

static const char *machine_name(uint64_t machine, bool big_endian)
{
	switch (machine) {
	case 62:
		return "amd64";
	case 183:
		return "arm64";
	case 3:
		return "386";
	case 40:
		return "arm";
	case 21:
		return big_endian ? "ppc64" : "ppc64le";
	case 22:
		return "s390x";
	case 243:
		return "riscv64";
	default:
		return "";
	}
}

int pack_elf_inspect(const char *path, struct pack_elf *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return mg_err_sys(err, errno, "%s", path);
	unsigned char ident[16];
	if (!S_ISREG(st.st_mode) || pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident) ||
	    memcmp(ident, "\177ELF", 4) != 0 || (ident[4] != 1 && ident[4] != 2) ||
	    (ident[5] != 1 && ident[5] != 2))
		return 0;
	bool is64 = ident[4] == 2;
	struct elf_reader r = {fd, ident[5] == 2, (uint64_t)st.st_size};
	uint64_t machine, phoff, phentsize, phnum;
	if (read_uint(&r, 18, 2, &machine) < 0 ||
	    read_uint(&r, is64 ? 32 : 28, is64 ? 8 : 4, &phoff) < 0 ||
	    read_uint(&r, is64 ? 54 : 42, 2, &phentsize) < 0 ||
	    read_uint(&r, is64 ? 56 : 44, 2, &phnum) < 0)
		return 0;
	out->is_elf = true;
	const char *arch = machine_name(machine, r.big_endian);
	memcpy(out->arch, arch, strlen(arch) + 1);
	if (phnum > MAX_PHNUM || phentsize < (is64 ? 56u : 32u))
		return 0;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t ph = phoff + i * phentsize, type, off, size;
		if (read_uint(&r, ph, 4, &type) < 0)
			return 0;
		if (type != PT_INTERP_TYPE)
			continue;
		if (read_uint(&r, ph + (is64 ? 8 : 4), is64 ? 8 : 4, &off) < 0 ||
		    read_uint(&r, ph + (is64 ? 32 : 16), is64 ? 8 : 4, &size) < 0 || size == 0 ||
		    off > r.file_size || r.file_size - off < size)
			return 0;
		size_t n = size < sizeof(out->interp) ? (size_t)size : sizeof(out->interp) - 1;
		if (pread(fd, out->interp, n, (off_t)off) != (ssize_t)n) {
			out->interp[0] = '\0';
			return 0;
		}
		out->interp[n] = '\0';
		/* the segment holds the path and its NUL; keep the text before it */
		out->interp[strnlen(out->interp, n)] = '\0';
		if (out->interp[0] == '\0')
			memcpy(out->interp, "?", 2);
		return 0;
	}
	return 0;
}
