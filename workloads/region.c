// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "region.h"

static int open_file(struct region *r, size_t bytes, const char *path,
		     const char *dir)
{
	char tmpl[4096];
	struct stat st;
	int err;

	if (!path) {
		if (snprintf(tmpl, sizeof(tmpl), "%s/bench-load.XXXXXX", dir) >=
		    (int)sizeof(tmpl))
			return -ENAMETOOLONG;
		r->fd = mkostemp(tmpl, O_CLOEXEC);
		if (r->fd < 0) {
			err = errno;
			err_msg(err, "cannot create a file in '%s'", dir);
			return -err;
		}
		unlink(tmpl);
		goto size;
	}
	if (stat(path, &st) == 0) {
		if ((size_t)st.st_size < bytes) {
			err_msg(0, "'%s' holds %lld bytes, fewer than the %zu asked for",
				path, (long long)st.st_size, bytes);
			return -EINVAL;
		}
		r->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0) {
			err = errno;
			err_msg(err, "cannot open '%s'", path);
			return -err;
		}
		return 0;
	}
	r->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		err = errno;
		err_msg(err, "cannot create '%s'", path);
		return -err;
	}
	r->path = strdup(path);
	if (!r->path)
		return -ENOMEM;
size:
	/* Sparse: reading it fills the page cache without disk I/O. */
	if (ftruncate(r->fd, bytes)) {
		err = errno;
		err_msg(err, "cannot size the file to %zu bytes", bytes);
		return -err;
	}
	return 0;
}

int region_init(struct region *r, size_t anon_bytes, size_t file_bytes,
		const char *path, const char *dir)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->page_size = sysconf(_SC_PAGESIZE);
	r->anon_pages = anon_bytes / r->page_size;
	r->file_pages = file_bytes / r->page_size;
	r->iobuf = malloc(r->page_size);
	if (!r->iobuf)
		return -ENOMEM;
	if (r->anon_pages) {
		r->anon = mmap(NULL, r->anon_pages * r->page_size,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r->anon == MAP_FAILED) {
			err = errno;
			r->anon = NULL;
			err_msg(err, "cannot map %zu bytes of anonymous memory",
				anon_bytes);
			return -err;
		}
	}
	if (r->file_pages) {
		err = open_file(r, r->file_pages * r->page_size, path, dir);
		if (err)
			return err;
	}
	return 0;
}

size_t region_pages(const struct region *r)
{
	return r->anon_pages + r->file_pages;
}

void region_touch(struct region *r, size_t i)
{
	if (i < r->anon_pages) {
		r->anon[i * r->page_size]++;
		return;
	}
	i -= r->anon_pages;
	/* A short read of a file that shrank under us is not worth a stop. */
	if (pread(r->fd, r->iobuf, r->page_size, (off_t)i * r->page_size) < 0)
		err_msg(errno, "read of page %zu failed", i);
}

void region_free(struct region *r)
{
	if (r->anon)
		munmap(r->anon, r->anon_pages * r->page_size);
	if (r->fd >= 0)
		close(r->fd);
	if (r->path) {
		unlink(r->path);
		free(r->path);
	}
	free(r->iobuf);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}
