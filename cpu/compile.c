/*
 * compile.c: C source to a shared object with the system C compiler ($PORTC_CC, default cc),
 * run directly (no shell) with its messages captured, so a failure reports what the compiler
 * said and a missing compiler is named as such.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu.h"

extern char **environ;

static const char cflags[] = "-O3 -march=native -fno-math-errno -fno-trapping-math -fopenmp -shared -fPIC -w";

/* variables that change what gcc or clang makes of the same command line */
const char *const cpu_compiler_env[] = {"CPATH", "C_INCLUDE_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH", "LIBRARY_PATH", NULL};

static const char *compiler_name(void) {
  const char *cc = getenv("PORTC_CC");
  return cc && *cc ? cc : "cc";
}

/* runs argv with stdout and stderr into log_path; the exit status, or -1 when it could not start */
static int run(char *const *argv, const char *log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char version_line[256];
static bool version_ok;
static pthread_mutex_t version_lock = PTHREAD_MUTEX_INITIALIZER;
static char version_cc[256];

bool cpu_compiler(char *cc, size_t cclen, char *version, size_t vlen) {
  const char *name = compiler_name();
  snprintf(cc, cclen, "%s", name);
  pthread_mutex_lock(&version_lock);
  if (strcmp(version_cc, name) != 0) {
    char log[] = "/tmp/portc-ccver-XXXXXX";
    int fd = mkstemp(log);
    version_ok = false;
    if (fd >= 0) {
      close(fd);
      char *argv[] = {(char *)name, "--version", NULL};
      if (run(argv, log) == 0) {
        FILE *f = fopen(log, "r");
        if (f && fgets(version_line, sizeof version_line, f)) {
          version_line[strcspn(version_line, "\n")] = 0;
          version_ok = true;
        }
        if (f) fclose(f);
      }
      unlink(log);
    }
    snprintf(version_cc, sizeof version_cc, "%s", name);
  }
  snprintf(version, vlen, "%s", version_ok ? version_line : "");
  bool ok = version_ok;
  pthread_mutex_unlock(&version_lock);
  return ok;
}

void cpu_compile_options(build_args *a) {
  build_args_add(a, "%s", compiler_name());
  char flags[sizeof cflags];
  memcpy(flags, cflags, sizeof flags);
  for (char *save = NULL, *t = strtok_r(flags, " ", &save); t; t = strtok_r(NULL, " ", &save)) build_args_add(a, "%s", t);
  build_args_add(a, "-lm");
}

/* the instruction-set flags -march=native stands for on this machine, from the compiler
 * proper's command line that `cc -march=native -###` prints: gcc's -march=, -mtune= and -m<isa>
 * flags and its cache-size --params, clang's -target-cpu and -target-feature (file names and
 * other arguments, which change from run to run, are left out). Asked once per compiler. */
static char isa_line[4096], isa_cc[256];
static pthread_mutex_t isa_lock = PTHREAD_MUTEX_INITIALIZER;

static void keep_isa_flags(const char *line) {
  char copy[8192];
  snprintf(copy, sizeof copy, "%s", line);
  size_t used = 0;
  bool take_next = false;
  for (char *save = NULL, *t = strtok_r(copy, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
    const char *bare = t[0] == '"' ? t + 1 : t;
    bool pair = !strcmp(t, "--param") || !strncmp(bare, "-target-cpu", 11) || !strncmp(bare, "-target-feature", 15);
    if (take_next || pair || !strncmp(bare, "-m", 2))
      used += (size_t)snprintf(isa_line + used, used < sizeof isa_line ? sizeof isa_line - used : 0, "%s ", t);
    take_next = pair;
    if (used >= sizeof isa_line) break;
  }
}

const char *cpu_isa_flags(void) {
  const char *name = compiler_name();
  pthread_mutex_lock(&isa_lock);
  if (strcmp(isa_cc, name) != 0) {
    snprintf(isa_line, sizeof isa_line, "unknown");
    char log[] = "/tmp/portc-ccisa-XXXXXX";
    int fd = mkstemp(log);
    if (fd >= 0) {
      close(fd);
      char *argv[] = {(char *)name, "-march=native", "-###", "-x", "c", "-c", "/dev/null", "-o", "/dev/null", NULL};
      run(argv, log);
      FILE *f = fopen(log, "r");
      char line[8192];
      while (f && fgets(line, sizeof line, f))
        if ((strstr(line, "-march=") || strstr(line, "-target-cpu")) && strstr(line, "cc1")) {
          keep_isa_flags(line);
          break;
        }
      if (f) fclose(f);
      unlink(log);
    }
    snprintf(isa_cc, sizeof isa_cc, "%s", name);
  }
  pthread_mutex_unlock(&isa_lock);
  return isa_line;
}

portc_status cpu_compile(const char *source, const char *work_dir, const char *out_path) {
  char src[4200], log[4300];
  snprintf(src, sizeof src, "%s/kernels.c", work_dir);
  snprintf(log, sizeof log, "%s/kernels.log", work_dir);
  int fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return err_set(PORTC_ERR_IO, "cpu: cannot write kernel source in %s: %s", work_dir, strerror(errno));
  size_t n = strlen(source);
  ssize_t w = write(fd, source, n);
  int err = w < 0 ? errno : ENOSPC; /* a short write: the disk or the file size limit is full */
  bool ok = w == (ssize_t)n;
  if (close(fd) != 0 && ok) ok = false, err = errno;
  if (!ok) return err_set(PORTC_ERR_IO, "cpu: cannot write %s: %s", src, strerror(err));
  const char *cc = compiler_name();
  build_args opts = {0};
  cpu_compile_options(&opts);
  char *argv[BUILD_MAX_ARGS + 4];
  int a = 0;
  for (int i = 0; i < opts.n; i++) argv[a++] = (char *)opts.v[i];
  argv[a - 1] = "-o"; /* -lm goes after the source */
  argv[a++] = (char *)out_path;
  argv[a++] = src;
  argv[a++] = "-lm";
  argv[a] = NULL;
  int rc = run(argv, log);
  if (rc == -1 || rc == 127) return err_set(PORTC_ERR_IO, "cpu: C compiler '%s' not found: install gcc (apt-get install gcc) or set PORTC_CC", cc);
  if (rc == 0) return PORTC_OK;
  char msg[2048] = "";
  FILE *f = fopen(log, "r");
  if (f) {
    size_t got = fread(msg, 1, sizeof msg - 1, f);
    msg[got] = 0;
    fclose(f);
  }
  return err_set(PORTC_ERR_IO, "cpu: %s failed (exit %d) on the generated source:\n%s", cc, rc, msg);
}
