/* deny_cma [--writes] CMD [ARGS...]: runs CMD where process_vm_readv and
 * process_vm_writev fail with EPERM, as they do in a container whose
 * seccomp profile or ptrace policy forbids them (even for root, which a
 * dropped capability would not stop). run_mpi_tests.sh starts one rank
 * through it: that rank's probe fails at communicator creation, and every
 * rank must then agree to move long messages without single-copy reads.
 * --writes: only process_vm_writev fails, which the probe (a read) does
 * not see: the rank's split copies must fail over to its receivers.
 * The filter is inherited across exec (no_new_privs). Exits 77 (skip) if
 * the kernel has no seccomp filters. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
    int writes_only = argc > 1 && strcmp(argv[1], "--writes") == 0;
    if (writes_only) {
        argc--;
        argv++;
    }
#ifdef NATIVE_ARCH
    struct sock_filter f[] = {
        /* another ABI's calls have other numbers: let them be */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, writes_only ? __NR_process_vm_writev
                                                         : __NR_process_vm_readv, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
#endif
    if (argc < 2) {
        fprintf(stderr, "usage: deny_cma [--writes] CMD [ARGS...]\n");
        return 2;
    }
#ifdef NATIVE_ARCH
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        fprintf(stderr, "deny_cma: no seccomp filter here (%s)\n", strerror(errno));
        return 77;
    }
#else
    fprintf(stderr, "deny_cma: no filter for this architecture\n");
    return 77;
#endif
    execvp(argv[1], argv + 1);
    fprintf(stderr, "deny_cma: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
