/* Shared helpers for the C attack programs of the escape corpus.
 * The runner compiles every attacks/*.c with `gcc -O1 -pthread -I lib`.
 * Output protocol: see escape_lib.py. */
#ifndef ESCAPE_LIB_H
#define ESCAPE_LIB_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static char targets_buf[16384];

/* Value of KEY in ./targets.env, or "" when absent. */
static const char *tget(const char *key) {
    static int loaded;
    if (!loaded) {
        loaded = 1;
        int fd = open("targets.env", O_RDONLY);
        if (fd >= 0) {
            ssize_t n = read(fd, targets_buf, sizeof targets_buf - 1);
            if (n > 0) targets_buf[n] = 0;
            close(fd);
        }
    }
    size_t klen = strlen(key);
    for (char *p = targets_buf; p && *p;) {
        char *eol = strchr(p, '\n');
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
            static char val[16][1024];
            static int slot;
            char *v = val[slot++ % 16];
            size_t len = eol ? (size_t)(eol - p - klen - 1) : strlen(p + klen + 1);
            if (len >= 1024) len = 1023;
            memcpy(v, p + klen + 1, len);
            v[len] = 0;
            return v;
        }
        p = eol ? eol + 1 : NULL;
    }
    return "";
}

static long tgetl(const char *key) { return atol(tget(key)); }
static int host_mode(void) { return strcmp(tget("HOST_MODE"), "1") == 0; }

static const char *ename(int e) {
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static void start(const char *name) { say("ATTACK-START %s", name); }
static void blocked(const char *what, const char *how) { say("BLOCKED %s: %s", what, how); }
static void blocked_errno(const char *what, int e) { say("BLOCKED %s: %s", what, ename(e)); }
static void escaped(const char *what, const char *detail) { say("ESCAPED %s: %s", what, detail); }

/* A raw syscall result: negative means blocked (with errno), else it got through. */
#define TRY(what, expr)                                          \
    do {                                                         \
        errno = 0;                                               \
        long _r = (long)(expr);                                  \
        if (_r < 0) {                                            \
            blocked_errno(what, errno);                          \
        } else {                                                 \
            char _d[64];                                         \
            snprintf(_d, sizeof _d, "returned %ld", _r);         \
            escaped(what, _d);                                   \
        }                                                        \
    } while (0)

/* Run fn in a child so that a seccomp kill (SIGSYS) is seen and reported as BLOCKED. */
static void in_child(const char *what, int (*fn)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        blocked_errno(what, errno);
        return;
    }
    if (pid == 0) _exit(fn());
    int st;
    if (waitpid(pid, &st, 0) < 0) {
        blocked_errno(what, errno);
        return;
    }
    if (WIFSIGNALED(st)) {
        char d[64];
        snprintf(d, sizeof d, "child killed by signal %d", WTERMSIG(st));
        blocked(what, d);
    }
    /* a child that exited has printed its own BLOCKED/ESCAPED line */
}

/* Print the content of an open fd (at most 4 KiB): a canary read this way reaches
 * the output, where the runner looks for it. */
static void leak_fd(const char *what, int fd) {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0) {
        blocked_errno(what, errno);
        return;
    }
    buf[n] = 0;
    escaped(what, buf);
}
#endif
