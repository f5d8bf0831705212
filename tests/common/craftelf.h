/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* craftelf.h - shared by the unit and the integration tests: a hostile mapped file. */
#ifndef RK_TEST_CRAFTELF_H
#define RK_TEST_CRAFTELF_H

#include <stddef.h>

/*
 * craft_elf() - write at @path an ELF64 shared object whose .symtab has
 * @nsyms function symbols (at 0x1000, 0x1010, ...) that all name one string
 * of @namelen bytes: a small file (24 bytes a symbol) whose symbols cost a
 * naive reader @nsyms x @namelen bytes. Return: 0, or -1 (errno set).
 */
int craft_elf(const char *path, unsigned int nsyms, size_t namelen);

#endif /* RK_TEST_CRAFTELF_H */
