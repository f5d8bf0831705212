// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* craftelf.c - an ELF file whose symbols all name one long string (see craftelf.h). */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "craftelf.h"

static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab";

int craft_elf(const char *path, unsigned int nsyms, size_t namelen)
{
	size_t str_off = sizeof(Elf64_Ehdr), str_size = namelen + 2;
	size_t shs_off = str_off + str_size, sym_off = (shs_off + sizeof(shstr) + 7) & ~7ul;
	size_t sym_size = ((size_t)nsyms + 1) * sizeof(Elf64_Sym), sh_off = sym_off + sym_size;
	size_t total = sh_off + 4 * sizeof(Elf64_Shdr), i;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	Elf64_Sym *sy;
	char *f = calloc(1, total);
	int fd, ok;

	if (!f)
		return -1;
	eh = (Elf64_Ehdr *)f;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shoff = sh_off;
	eh->e_shnum = 4;
	eh->e_shstrndx = 3;
	memset(f + str_off + 1, 'f', namelen);
	memcpy(f + shs_off, shstr, sizeof(shstr));
	sy = (Elf64_Sym *)(f + sym_off);
	for (i = 1; i <= nsyms; i++) {
		sy[i].st_name = 1;
		sy[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		sy[i].st_shndx = 1;
		sy[i].st_value = 0x1000 + 16 * (i - 1);
		sy[i].st_size = 16;
	}
	sh = (Elf64_Shdr *)(f + sh_off);
	sh[1] = (Elf64_Shdr){ .sh_name = 1,
			      .sh_type = SHT_SYMTAB,
			      .sh_offset = sym_off,
			      .sh_size = sym_size,
			      .sh_link = 2,
			      .sh_info = 1,
			      .sh_addralign = 8,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[2] = (Elf64_Shdr){ .sh_name = 9,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = str_off,
			      .sh_size = str_size,
			      .sh_addralign = 1 };
	sh[3] = (Elf64_Shdr){ .sh_name = 17,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = shs_off,
			      .sh_size = sizeof(shstr),
			      .sh_addralign = 1 };
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok = fd >= 0 && write(fd, f, total) == (ssize_t)total;
	if (fd >= 0 && close(fd))
		ok = 0;
	free(f);
	return ok ? 0 : -1;
}
