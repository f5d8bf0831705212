// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the buffer file parser: page 0 validation, the ring
 * walk and every record printer of `show` (text and JSON), on arbitrary
 * bytes. Built with clang -fsanitize=fuzzer,address,undefined (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bufile.h"
#include "show.h"

static int touch(const struct perf_event_header *h, void *ctx)
{
	const volatile uint8_t *p = (const volatile uint8_t *)h;
	unsigned long *sum = ctx;
	size_t i;

	/* Every byte the walk hands out must be readable. */
	for (i = 0; i < h->size; i++)
		*sum += p[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct rk_bufile bf;
	unsigned long sum = 0;
	void *copy;

	if (!null)
		null = fopen("/dev/null", "w");
	/* The parser sees a file mapping: exactly `size` bytes, nothing after. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!rk_bufile__from_mem(&bf, copy, size, NULL)) {
		rk_bufile__for_each(&bf, touch, &sum);
		rk_show(null, &bf, "session/cpu-clock/1", 0, NULL, NULL);
		rk_show(null, &bf, "session/cpu-clock/1", 1, NULL, NULL);
	}
	free(copy);
	return 0;
}
