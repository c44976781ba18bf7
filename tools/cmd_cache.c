/*
 * cmd_cache.c: `portc cache` says where the kernel cache is, how many compiled entries it holds
 * and their size, and where the measured tune table is; `portc cache --clear` empties it (the
 * tune table stays).
 */
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_cache(int argc, char **argv) {
  bool clear = false;
  for (int i = 1; i < argc; i++) {
    if (is_help(argv[i])) {
      fputs("usage: portc cache [--clear]\n\nPrints the kernel cache's folder ($PORTC_CACHE_DIR, else ~/.cache/portc), its compiled\n"
            "entries and their size, and the measured tune table kept there (tune.txt); --clear removes the\n"
            "entries (the tune table stays). $PORTC_CACHE_MAX (bytes, or with K, M or G; 2G by default;\n"
            "unlimited for none) bounds the folder: the least recently used entries are evicted as new ones\n"
            "are stored.\n",
            stdout);
      return EXIT_OK;
    }
    if (strcmp(argv[i], "--clear") == 0) clear = true;
    else return usage_error("cache", "unknown option '%s'", argv[i]);
  }
  int64_t removed = 0, entries, bytes;
  char dir[4096];
  if ((clear && portc_cache_clear(&removed) != PORTC_OK) || portc_cache_info(dir, sizeof dir, &entries, &bytes) != PORTC_OK) {
    fprintf(stderr, "portc cache: %s\n", portc_last_error());
    return EXIT_FAIL;
  }
  if (clear) printf("removed %lld entries\n", (long long)removed);
  printf("kernel cache: %s\n%lld entries, %.1f MiB\n", dir, (long long)entries, (double)bytes / (1 << 20));
  char tune[4200];
  snprintf(tune, sizeof tune, "%s/tune.txt", dir);
  printf("measured tune table: %s%s\n", tune, access(tune, R_OK) == 0 ? "" : " (none yet)");
  return EXIT_OK;
}
