// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgutil.h"

static ssize_t read_path(const char *path, char *buf, size_t size)
{
	ssize_t len = 0, n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if ((size_t)len >= size - 1) {
			close(fd);
			return -EFBIG;
		}
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return len;
}

static int cg_path(const char *root, const char *cgroup, const char *file,
		   char *path, size_t size)
{
	int n;

	if (!root)
		root = CGROUP_ROOT_DEFAULT;
	if (cgroup && *cgroup)
		n = snprintf(path, size, "%s/%s/%s", root, cgroup, file);
	else
		n = snprintf(path, size, "%s/%s", root, file);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

ssize_t cg_read(const char *root, const char *cgroup, const char *file,
		char *buf, size_t size)
{
	char path[4096];
	int err;

	err = cg_path(root, cgroup, file, path, sizeof(path));
	if (err)
		return err;
	return read_path(path, buf, size);
}

int cg_write(const char *root, const char *cgroup, const char *file,
	     const char *text)
{
	char path[4096];
	size_t len = strlen(text);
	ssize_t n;
	int fd, err;

	err = cg_path(root, cgroup, file, path, sizeof(path));
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	err = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
	close(fd);
	return err;
}

ssize_t file_read(const char *path, char *buf, size_t size)
{
	return read_path(path, buf, size);
}

ssize_t proc_read(const char *proc_root, const char *file,
		  char *buf, size_t size)
{
	return cg_read(proc_root ? proc_root : PROC_ROOT_DEFAULT, NULL, file,
		       buf, size);
}

int is_number(const char *s)
{
	int dots = 0;

	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s == '.') {
			if (++dots > 1)
				return 0;
		} else if (!isdigit((unsigned char)*s)) {
			return 0;
		}
	}
	return 1;
}

int kv_foreach(char *buf, kv_fn fn, void *arg)
{
	char *line, *save = NULL, *key, *value, *extra;
	int bad = 0, ret;

	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *fsave = NULL;

		key = strtok_r(line, " \t", &fsave);
		value = strtok_r(NULL, " \t", &fsave);
		extra = strtok_r(NULL, " \t", &fsave);
		if (!key || !value || extra || !is_number(value)) {
			bad++;
			continue;
		}
		ret = fn(key, value, arg);
		if (ret)
			return ret;
	}
	return bad;
}

int psi_foreach(char *buf, kv_fn fn, void *arg)
{
	char *line, *save = NULL, *kind, *field, *eq;
	char key[64];
	int bad = 0, ret;

	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *fsave = NULL;

		kind = strtok_r(line, " ", &fsave);
		if (!kind || (strcmp(kind, "some") && strcmp(kind, "full"))) {
			bad++;
			continue;
		}
		while ((field = strtok_r(NULL, " ", &fsave))) {
			eq = strchr(field, '=');
			if (!eq || !is_number(eq + 1) ||
			    (size_t)(eq - field) + strlen(kind) + 2 > sizeof(key)) {
				bad++;
				continue;
			}
			*eq = '\0';
			snprintf(key, sizeof(key), "%s_%s", kind, field);
			ret = fn(key, eq + 1, arg);
			if (ret)
				return ret;
		}
	}
	return bad;
}

const char *single_value(char *buf)
{
	size_t len = strlen(buf);

	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	if (!strcmp(buf, "max") || is_number(buf))
		return buf;
	return NULL;
}

int proc_meminfo_total(const char *proc_root, unsigned long long *bytes)
{
	char buf[8192], *p;
	ssize_t n;

	n = proc_read(proc_root, "meminfo", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strstr(buf, "MemTotal:");
	if (!p)
		return -EINVAL;
	*bytes = strtoull(p + strlen("MemTotal:"), NULL, 10) * 1024;
	return *bytes ? 0 : -EINVAL;
}
