/* What a split copy gains: one process copying S bytes out of another's
 * memory (process_vm_readv, as xcoll's single-copy reads do) against both
 * copying it at once, each claiming the next piece with an atomic add,
 * the owner writing its pieces into the reader with process_vm_writev (as
 * xcoll's split copies do, docs/PERFORMANCE.md "Split copies"). Prints
 * the medians of both and their ratio, per size.
 *
 * Usage: bench/split_copy [-n ROUNDS] [-p PIECE] [SIZE...]
 *   (default 1M 4M 16M; PIECE default: xcoll's, 512K from 1 MiB, 256K
 *   from 512 KiB, else the whole message). Sizes take K and M.
 * Needs 2 cores (both sides spin while they wait: one core would make
 * each wait a scheduler slice) and permission to read and write its own
 * child (ptrace scope). Exit status: 0, or 1 when something it needs is
 * refused or a copy came out wrong. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    _Atomic long round;    /* owner: round r starts (r > 0); reader: -r done */
    char pad0[120];
    _Atomic long ready;    /* reader: its buffer is published for round r */
    _Atomic long claim;
    char pad1[112];
    _Atomic long owner_done; /* bytes the owner wrote this round */
    char pad2[120];
    uint64_t dst;          /* the reader's buffer */
    double us[2];          /* the reader's medians: alone, split */
    int bad;
} ctl_t;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* Spins until *w == want, for at most 10 s; 0 if it came. */
static int wait_for(_Atomic long *w, long want)
{
    double t0 = now_us();
    for (unsigned i = 0; atomic_load(w) != want; i++)
        if ((i & 1023) == 0 && now_us() - t0 > 1e7)
            return -1;
    return 0;
}

static int copy(pid_t pid, void *local, uint64_t remote, size_t n, int write)
{
    struct iovec l = { local, n }, r = { (void *)(uintptr_t)remote, n };
    ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                        : process_vm_readv(pid, &l, 1, &r, 1, 0);
    return got == (ssize_t)n ? 0 : -1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return (size_t)v;
}

static size_t piece_for(size_t len, size_t forced)
{
    if (forced)
        return forced;
    return len >= ((size_t)1 << 20) ? 524288 : len >= 524288 ? 262144 : len;
}

/* The reader (the child): rounds alternate alone / split. */
static void reader(ctl_t *c, pid_t owner, const char *src, size_t len, size_t piece, int rounds)
{
    char *dst = aligned_alloc(4096, len);
    double *t[2];
    long npieces = (long)((len + piece - 1) / piece);
    t[0] = calloc((size_t)rounds, sizeof(double));
    t[1] = calloc((size_t)rounds, sizeof(double));
    if (dst == NULL || t[0] == NULL || t[1] == NULL) {
        c->bad = 1;
        _exit(1);
    }
    memset(dst, 0, len);
    c->dst = (uint64_t)(uintptr_t)dst;
    for (long r = 1; r <= 2L * rounds; r++) {
        int split = r % 2 == 0;
        long mine = 0;
        double t0;
        if (wait_for(&c->round, r) != 0)
            break;
        memset(dst, 0, len);
        t0 = now_us();
        atomic_store(&c->claim, 0);
        atomic_store(&c->owner_done, 0);
        atomic_store(&c->ready, split ? r : 0);
        for (;;) {
            long i = atomic_fetch_add(&c->claim, 1);
            size_t off = (size_t)i * piece, n;
            if (i >= npieces)
                break;
            n = len - off < piece ? len - off : piece;
            if (copy(owner, dst + off, (uint64_t)(uintptr_t)(src + off), n, 0) != 0) {
                perror("split_copy: process_vm_readv");
                c->bad = 1;
                _exit(1);
            }
            mine += (long)n;
        }
        while (mine + atomic_load(&c->owner_done) < (long)len)
            ;
        t[split][(r - 1) / 2] = now_us() - t0;
        if (memcmp(dst, src, len) != 0) /* src: the fork's copy, same bytes */
            c->bad = 1;
        atomic_store(&c->ready, 0);
        atomic_store(&c->round, -r);
    }
    for (int k = 0; k < 2; k++) {
        qsort(t[k], (size_t)rounds, sizeof(double), cmp);
        c->us[k] = t[k][rounds / 2];
    }
    _exit(0);
}

static int measure(ctl_t *c, size_t len, size_t piece, int rounds)
{
    char *src = aligned_alloc(4096, len);
    long npieces = (long)((len + piece - 1) / piece);
    pid_t child;
    int status, ok = 1;
    if (src == NULL)
        return -1;
    for (size_t i = 0; i < len; i++)
        src[i] = (char)(i * 7 + (i >> 12));
    memset(c, 0, sizeof(*c));
    child = fork();
    if (child == 0)
        reader(c, getppid(), src, len, piece, rounds);
    if (child < 0) {
        perror("split_copy: fork");
        free(src);
        return -1;
    }
    for (long r = 1; r <= 2L * rounds && ok; r++) {
        atomic_store(&c->round, r);
        if (r % 2 == 0) {
            /* split: help once the reader has published its buffer */
            ok = wait_for(&c->ready, r) == 0;
            for (long i; ok && (i = atomic_fetch_add(&c->claim, 1)) < npieces;) {
                size_t off = (size_t)i * piece, n = len - off < piece ? len - off : piece;
                if (copy(child, src + off, c->dst + off, n, 1) != 0) {
                    perror("split_copy: process_vm_writev");
                    c->bad = 1;
                    ok = 0;
                }
                atomic_fetch_add(&c->owner_done, (long)n);
            }
        }
        ok = ok && wait_for(&c->round, -r) == 0;
    }
    if (!ok)
        kill(child, SIGKILL);
    waitpid(child, &status, 0);
    free(src);
    return ok && !c->bad && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int rounds = 41, nsizes = 0;
    size_t forced = 0, sizes[32];
    ctl_t *c;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
            forced = parse_size(argv[++i]);
        else if (nsizes < 32 && parse_size(argv[i]) > 0)
            sizes[nsizes++] = parse_size(argv[i]);
        else {
            fprintf(stderr, "usage: split_copy [-n ROUNDS] [-p PIECE] [SIZE...]\n");
            return 1;
        }
    }
    if (rounds < 1)
        rounds = 1;
    if (nsizes == 0) {
        sizes[nsizes++] = (size_t)1 << 20;
        sizes[nsizes++] = (size_t)4 << 20;
        sizes[nsizes++] = (size_t)16 << 20;
    }
    c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED) {
        perror("split_copy: mmap");
        return 1;
    }
    printf("# %d rounds each, medians; alone: the reader copies it all; split: both copy\n",
           rounds);
    printf("%10s %8s %12s %12s %8s\n", "bytes", "piece", "alone us", "split us", "ratio");
    for (int k = 0; k < nsizes; k++) {
        size_t piece = piece_for(sizes[k], forced);
        if (measure(c, sizes[k], piece, rounds) != 0) {
            fprintf(stderr, "split_copy: the measurement of %zu bytes failed\n", sizes[k]);
            return 1;
        }
        printf("%10zu %8zu %12.1f %12.1f %8.2f\n", sizes[k], piece, c->us[0], c->us[1],
               c->us[0] / c->us[1]);
    }
    return 0;
}
