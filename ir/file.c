/*
 * file.c: opening a file portc reads (a graph, weights, inputs, a model). Only a regular file
 * is read: a FIFO or a device would block the process forever or never end, and a folder is
 * no input; each is refused with a reason instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph.h"

FILE *file_open_read(const char *path, char *why, size_t len) {
  int fd = path ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1; /* O_NONBLOCK: opening a FIFO does not wait for a writer */
  struct stat st;
  if (fd < 0) {
    int err = path ? errno : EINVAL;
    snprintf(why, len, "%s", path ? strerror(err) : "no path");
    errno = err; /* ENOENT stays ENOENT, for callers to whom a missing file is no error */
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bool dir = S_ISDIR(st.st_mode);
    snprintf(why, len, "%s", dir ? "it is a folder" : "not a regular file (a FIFO, socket or device is not read)");
    close(fd);
    errno = dir ? EISDIR : EINVAL;
    return NULL;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    snprintf(why, len, "%s", strerror(errno));
    close(fd);
  }
  return f;
}
