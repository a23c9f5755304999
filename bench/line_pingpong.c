/* What a reduction into a buffer costs when another core read that buffer
 * since the last reduction: the cost model's --forward (docs/SCALING.md,
 * "Calibration"). In back-to-back collectives on the same buffers, a
 * block a rank reduces and a peer then reads (a ring's or a tree's
 * forwarded block) goes back and forth between two cores' caches: before
 * writing it again the writer must take every line back from the
 * reader. This measures the writer's pass, dst = dst + src over S bytes of
 * float32, with a second process on another core reading dst after each
 * pass (process_vm_readv, as xcoll's shared memory does) or leaving it
 * alone, and prints the medians of both and their ratio.
 *
 * Usage: bench/line_pingpong [-n ROUNDS] [SIZE...]  (default 32K 128K 512K 2M)
 * Needs 2 cores and permission to read its own child (ptrace scope).
 * Exit status: 0, or 1 when something it needs is refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pin(int core)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(core, &s);
    return sched_setaffinity(0, sizeof(s), &s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int full_io(int fd, char *c, int wr)
{
    ssize_t n = wr ? write(fd, c, 1) : read(fd, c, 1);
    return n == 1 ? 0 : -1;
}

/* The median of `rounds` writer passes over `bytes`, the reader reading
 * after each (read=1) or not; -1 on failure. */
static double run(size_t bytes, int rounds, int read_it)
{
    int go[2] = {-1, -1}, back[2] = {-1, -1}, status = 0, k2;
    size_t n = bytes / sizeof(float), k;
    float *dst = aligned_alloc(4096, bytes), *src = aligned_alloc(4096, bytes);
    double *t = malloc((size_t)rounds * sizeof(double)), med = -1, sum = 0;
    pid_t me = getpid(), kid;
    char c = 'x';

    if (dst == NULL || src == NULL || t == NULL || pipe(go) != 0 || pipe(back) != 0) {
        fprintf(stderr, "line_pingpong: out of memory or pipes\n");
        goto out;
    }
    for (k = 0; k < n; k++) {
        dst[k] = 1.0f;
        src[k] = 0.5f;
    }
    kid = fork();
    if (kid < 0) {
        perror("line_pingpong: fork");
        goto out;
    }
    if (kid == 0) { /* the reader, on core 1 */
        char *copy = aligned_alloc(4096, bytes);
        int r;
        if (copy == NULL || pin(1) != 0)
            _exit(1);
        memset(copy, 0, bytes);
        for (r = 0; r < rounds; r++) {
            if (full_io(go[0], &c, 0) != 0)
                _exit(1);
            if (read_it) {
                struct iovec l = {copy, bytes}, rv = {dst, bytes};
                if (process_vm_readv(me, &l, 1, &rv, 1, 0) != (ssize_t)bytes)
                    _exit(2);
            }
            if (full_io(back[1], &c, 1) != 0)
                _exit(1);
        }
        _exit(0);
    }
    if (pin(0) != 0) {
        perror("line_pingpong: pinning to core 0");
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
        goto out;
    }
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (k = 0; k < n; k++)
            dst[k] += src[k];
        t[r] = now() - t0;
        if (full_io(go[1], &c, 1) != 0 || full_io(back[0], &c, 0) != 0)
            break;
    }
    if (waitpid(kid, &status, 0) != kid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "line_pingpong: the reader failed (%s)\n",
                WIFEXITED(status) && WEXITSTATUS(status) == 2
                    ? "process_vm_readv refused: ptrace scope?"
                    : "pinning to core 1, or a pipe");
        goto out;
    }
    qsort(t, (size_t)rounds, sizeof(double), cmp_double);
    med = t[rounds / 2];
    for (k = 0; k < n; k += 1024)
        sum += dst[k]; /* the passes have an observable result */
    if (sum < 0)
        printf("(%g)\n", sum);
out:
    for (k2 = 0; k2 < 2; k2++) {
        if (go[k2] >= 0)
            close(go[k2]);
        if (back[k2] >= 0)
            close(back[k2]);
    }
    free(dst);
    free(src);
    free(t);
    return med;
}

int main(int argc, char **argv)
{
    static const char *defaults[] = {"32768", "131072", "524288", "2097152"};
    const char **sizes = defaults;
    int nsizes = 4, rounds = 400, i;

    if (argc > 2 && !strcmp(argv[1], "-n")) {
        rounds = atoi(argv[2]);
        argc -= 2;
        argv += 2;
    }
    if (rounds < 3 || rounds > 1000000 || (argc > 1 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: line_pingpong [-n ROUNDS] [BYTES...]\n");
        return 1;
    }
    if (argc > 1) {
        sizes = (const char **)(argv + 1);
        nsizes = argc - 1;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "line_pingpong: needs 2 cores\n");
        return 1;
    }
    printf("# writer's pass dst += src (float32) on core 0, median of %d; a reader on core 1\n"
           "#      bytes   reader idle (us)   reader reads (us)   ratio\n",
           rounds);
    for (i = 0; i < nsizes; i++) {
        char *end;
        unsigned long b = strtoul(sizes[i], &end, 10);
        double idle, read_it;
        if (*end != '\0' || b < 4096 || b > (1ul << 30)) {
            fprintf(stderr, "line_pingpong: %s: bytes from 4096 to 1 GiB\n", sizes[i]);
            return 1;
        }
        idle = run(b, rounds, 0);
        read_it = run(b, rounds, 1);
        if (idle < 0 || read_it < 0)
            return 1;
        printf("%12lu %18.2f %19.2f %7.2f\n", b, idle * 1e6, read_it * 1e6, read_it / idle);
    }
    return 0;
}
