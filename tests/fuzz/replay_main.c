/*
 * replay_main.c: runs a libFuzzer target's checks over files without libFuzzer, so that the
 * corpora in tests/fuzz/corpus/ (seeds, and the hostile inputs of past defects) are part of the
 * ordinary test run, under the release build and under ASan+UBSan.
 *   replay_T FILE_OR_FOLDER...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  size_t cap = 1 << 16, n = 0, got;
  uint8_t *buf = malloc(cap);
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0)
    if ((n += got) == cap) buf = realloc(buf, cap *= 2);
  fclose(f);
  if (!buf) return 1;
  LLVMFuzzerTestOneInput(buf, n); /* a failed check aborts */
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      DIR *d = opendir(argv[i]);
      for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
        bad += replay_file(path), files++;
      }
      if (d) closedir(d);
    } else {
      bad += replay_file(argv[i]), files++;
    }
  }
  printf("replayed %d inputs\n", files);
  return bad || files == 0;
}
