/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory a workload holds: anonymous pages, pages of a file's page cache, or
 * both, addressed as one run of pages (anonymous first).
 */
#ifndef BENCH_REGION_H
#define BENCH_REGION_H

#include <stdbool.h>
#include <stddef.h>

struct region {
	size_t page_size;
	char *anon;		/* anonymous mapping, or NULL */
	size_t anon_pages;
	int fd;			/* the file, or -1 */
	size_t file_pages;
	char *path;		/* a file we created and must remove, or NULL */
	char *iobuf;		/* one page, for reads */
};

/*
 * Set the region up with anon_bytes of anonymous memory and file_bytes of a
 * file. With path NULL the file is a sparse temporary file in dir, removed at
 * once (it lives as long as the descriptor); with a path that does not exist,
 * a sparse file is made there and removed by region_free(); an existing file
 * must be at least file_bytes long. Returns 0 or -errno, with a message.
 */
int region_init(struct region *r, size_t anon_bytes, size_t file_bytes,
		const char *path, const char *dir);
size_t region_pages(const struct region *r);
/* Touch page i: write to an anonymous page, read a file page. */
void region_touch(struct region *r, size_t i);
void region_free(struct region *r);

#endif
