/*
 * SYMM_DEBUG_FILE opens only a regular file of this user, never through a
 * symbolic link someone planted (runtime/base/log.c, linked in directly).
 * Each case runs in a child (the log opens its file once per process), with
 * stderr sent to a file the parent reads:
 *   symlink   the path is a symbolic link to a file of this user: refused,
 *             the target untouched, the line on stderr with the reason
 *   foreign   the path is a file of another user (uid 65534; needs root to
 *             make, skipped otherwise): refused, the file untouched
 *   hardlink  the path is a second hard link to a file: refused
 *   fifo      the path is a FIFO nobody reads: refused at once (no hang)
 *   plain     a new file: created with mode 0600, the line in it
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symm_test.h"
#include "base/log.h"

static char dir[64];

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return strdup("");
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

/* Log one line in a child whose SYMM_DEBUG_FILE is path; returns its stderr. */
static char *log_in_child(const char *path) {
    char err_path[128];
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    unlink(err_path);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10); /* a FIFO that blocked open would hang */
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(e, 2);
        setenv("SYMM_DEBUG_FILE", path, 1);
        setenv("SYMM_DEBUG", "WARN", 1);
        SYMM_WARN(SYMM_LOG_INIT, "the line that must land somewhere safe");
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        TEST_FAIL_("the logging child for %s failed (status 0x%x)", path, st);
    return slurp(err_path);
}

static void expect_refused(const char *path, const char *why, const char *untouched) {
    char *err = log_in_child(path);
    if (!strstr(err, "refusing") || !strstr(err, why))
        TEST_FAIL_("%s: stderr lacks \"refusing ... %s\": %s", path, why, err);
    if (!strstr(err, "the line that must land somewhere safe"))
        TEST_FAIL_("%s: the log line did not go to stderr: %s", path, err);
    free(err);
    if (untouched) {
        char *t = slurp(untouched);
        if (strcmp(t, "precious\n") != 0)
            TEST_FAIL_("%s was written through %s: %s", untouched, path, t);
        free(t);
    }
}

static void make_file(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, "precious\n", 9), 9);
    close(fd);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    snprintf(dir, sizeof dir, "/tmp/symm-log-test-XXXXXX");
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char target[128], link_path[128];
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(link_path, sizeof link_path, "%s/log", dir);
    int rc = 0;
    if (!strcmp(mode, "symlink")) {
        make_file(target);
        ASSERT_EQ(symlink(target, link_path), 0);
        expect_refused(link_path, "symbolic link", target);
    } else if (!strcmp(mode, "foreign")) {
        if (geteuid() != 0) {
            printf("foreign: needs root to make a file of another user; skipped\n");
            rc = 77;
        } else {
            make_file(target);
            ASSERT_EQ(chown(target, 65534, 65534), 0);
            expect_refused(target, "belongs to uid 65534", target);
        }
    } else if (!strcmp(mode, "hardlink")) {
        make_file(target);
        ASSERT_EQ(link(target, link_path), 0);
        expect_refused(link_path, "hard links", target);
    } else if (!strcmp(mode, "fifo")) {
        ASSERT_EQ(mkfifo(link_path, 0666), 0);
        expect_refused(link_path, "FIFO", NULL);
    } else if (!strcmp(mode, "plain")) {
        char *err = log_in_child(link_path);
        if (strstr(err, "refusing")) TEST_FAIL_("a plain new file was refused: %s", err);
        free(err);
        char *t = slurp(link_path);
        if (!strstr(t, "the line that must land somewhere safe"))
            TEST_FAIL_("the log file lacks the line: %s", t);
        free(t);
        struct stat st;
        ASSERT_EQ(stat(link_path, &st), 0);
        ASSERT_EQ(st.st_mode & 0777, 0600);
    } else {
        fprintf(stderr, "usage: test_log_file symlink|foreign|hardlink|fifo|plain\n");
        rc = 2;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    if (rc == 0) printf("log_file %s: ok\n", mode);
    return rc;
}
