/*
 * tune_tables.c: the tables one compile reads, in precedence order: the user's measured table
 * (tune.txt in the kernel cache folder, written by `portc tune` and max-autotune), the site
 * tables in $PORTC_TUNE_PATH, and the tables shipped inside libportc. Writing an entry
 * replaces the line with the same device and kernel match, so a table stays one line per key.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "tune.h"

portc_status tune_user_path(char *out, size_t len) {
  char dir[4096];
  portc_status st = cache_dir(dir, sizeof dir);
  if (st) return st;
  if ((size_t)snprintf(out, len, "%s/tune.txt", dir) >= len) return err_set(PORTC_ERR_IO, "tune: the cache folder's path is too long");
  return PORTC_OK;
}

char *tune_read_file(const char *path) {
  char why[160];
  FILE *f = file_open_read(path, why, sizeof why); /* a FIFO or a device would block or never end */
  if (!f) return NULL; /* errno says why (ENOENT: there is none) */
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

bool tune_table_read(tune_table *t, const char *path, const char *origin) {
  char *text = tune_read_file(path);
  if (!text) return false;
  tune_table_load(t, path, origin, text);
  free(text);
  return true;
}

static void note(tune_set *s, const char *fmt, const char *a, const char *b) {
  size_t u = strlen(s->unread);
  if (u + 1 < sizeof s->unread) snprintf(s->unread + u, sizeof s->unread - u, fmt, a, b);
}

static void add_file(tune_set *s, const char *path, const char *origin, bool must_exist) {
  if (s->n == TUNE_MAX_TABLES) return note(s, "%s: more than %s tables; ignored\n", path, "16");
  if (tune_table_read(&s->t[s->n], path, origin)) s->n++;
  else if (must_exist || errno != ENOENT) note(s, "%s: cannot read (%s)\n", path, strerror(errno));
}

void tune_set_load(tune_set *s) {
  memset(s, 0, sizeof *s);
  char path[4096];
  if (tune_user_path(path, sizeof path) == PORTC_OK) add_file(s, path, "user", false);
  const char *site = getenv("PORTC_TUNE_PATH");
  for (const char *p = site; p && *p;) {
    const char *c = strchr(p, ':');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    if (n && n < sizeof path) {
      memcpy(path, p, n);
      path[n] = 0;
      add_file(s, path, "site", true);
    }
    p = c ? c + 1 : NULL;
  }
  for (int i = 0; tune_shipped_name[i]; i++) {
    char name[300];
    snprintf(name, sizeof name, "shipped:%s", tune_shipped_name[i]);
    if (s->n == TUNE_MAX_TABLES) note(s, "%s: more than %s tables; ignored\n", name, "16");
    else tune_table_load(&s->t[s->n++], name, "shipped", tune_shipped_text[i]);
  }
}

void tune_set_free(tune_set *s) {
  for (int i = 0; i < s->n; i++) tune_table_free(&s->t[i]);
  s->n = 0;
}

/* whether two entries have the same device and kernel match */
static bool same_key(const tune_entry *a, const tune_entry *b) {
  tune_entry x = *a, y = *b;
  x.knobs = y.knobs = (tune_knobs){0};
  x.prov = y.prov = PROV_MEASURED;
  x.why[0] = y.why[0] = 0;
  char lx[1024], ly[1024];
  tune_format(&x, lx, sizeof lx);
  tune_format(&y, ly, sizeof ly);
  return strcmp(lx, ly) == 0;
}

portc_status tune_store(const char *path, const tune_entry *e) {
  char *old = tune_read_file(path);
  if (!old && errno != ENOENT) return err_set(PORTC_ERR_IO, "tune: cannot read %s: %s", path, strerror(errno));
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    free(old);
    return err_set(PORTC_ERR_IO, "tune: cannot write %s: %s", tmp, strerror(errno));
  }
  if (!old || !*old) fprintf(f, "# portc tune table: measured entries (portc tune, --mode max-autotune); one entry per line\n");
  for (const char *p = old; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);
    char line[2048];
    tune_table one = {.name = "line"};
    bool drop = false;
    if (n < sizeof line) {
      memcpy(line, p, n);
      line[n] = 0;
      drop = tune_parse(line, &one, NULL, 0) == 0 && one.n == 1 && same_key(&one.e[0], e);
    }
    tune_table_free(&one);
    if (!drop) fwrite(p, 1, n, f);
    if (!drop && !nl) fputc('\n', f);
    p = nl ? nl + 1 : NULL;
  }
  free(old);
  char line[2048];
  tune_format(e, line, sizeof line);
  fputs(line, f);
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    unlink(tmp);
    return err_set(PORTC_ERR_IO, "tune: cannot write %s: %s", path, strerror(errno));
  }
  return PORTC_OK;
}
