/* fatbin_list FILE: lists the GPU code embedded in an ELF object or shared
 * library, one line per image: "sass sm_80" for machine code, "ptx
 * compute_100" for PTX. test/gpu/check_fatbin.sh runs it always, and
 * cuobjdump too where the toolkit has one (pip-installed toolkits may not).
 *
 * nvcc puts its fat binaries in the section .nv_fatbin: a sequence of
 * containers (magic 0xba55ed50, header size, payload size), each holding
 * images that start with a header giving the kind (1 PTX, 2 ELF), the
 * header's own size, the payload size and, at byte 28, the architecture.
 * That layout is not documented, so every machine-code image is checked
 * against its own ELF header (the architecture is in e_flags, where LLVM's
 * BinaryFormat/ELF.h decodes it too: EF_CUDA_SM, EF_CUDA_SM_MASK), and anything
 * that does not parse is an error, never silently skipped.
 * Exit status: 0 listed, 1 malformed or no GPU code, 2 usage or I/O error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FATBIN_MAGIC 0xba55ed50u
#define IMAGE_PTX 1
#define IMAGE_ELF 2

static const char *prog = "fatbin_list";

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int malformed(const char *what, uint64_t at)
{
    fprintf(stderr, "%s: malformed fat binary: %s at section offset %llu\n", prog, what,
            (unsigned long long)at);
    return 1;
}

/* Checks a machine-code image's own ELF header against the container's
 * architecture. Images may be compressed; those have no ELF header to read. */
static int check_elf_image(const unsigned char *img, uint64_t size, uint32_t arch, uint64_t at)
{
    if (size < 64 || memcmp(img, "\177ELF", 4) != 0)
        return 0; /* compressed */
    /* e_ident[EI_ABIVERSION] 7 (before CUDA 13 / sm_100) keeps the SM in
     * e_flags' low byte; 8 moved it to bits 8-15. */
    uint32_t flags = rd32(img + 48);
    uint32_t elf_arch = img[8] == 7 ? flags & 0xffu : (flags >> 8) & 0xffu;
    if (elf_arch != arch) {
        fprintf(stderr, "%s: image at section offset %llu says sm_%u, its ELF header sm_%u\n",
                prog, (unsigned long long)at, arch, elf_arch);
        return 1;
    }
    return 0;
}

static int list_fatbins(const unsigned char *sec, uint64_t size)
{
    uint64_t off = 0;
    int images = 0;
    while (off + 16 <= size) {
        uint32_t magic = rd32(sec + off);
        if (magic == 0) { /* padding between containers */
            off += 4;
            continue;
        }
        if (magic != FATBIN_MAGIC)
            return malformed("bad container magic", off);
        uint16_t hdr = rd16(sec + off + 6);
        uint64_t payload = rd64(sec + off + 8);
        if (hdr < 16 || payload > size || off + hdr > size - payload)
            return malformed("container overruns the section", off);
        uint64_t p = off + hdr, end = off + hdr + payload;
        while (p < end) {
            if (end - p < 32)
                return malformed("truncated image header", p);
            uint16_t kind = rd16(sec + p);
            uint32_t ihdr = rd32(sec + p + 4);
            uint64_t isize = rd64(sec + p + 8);
            uint32_t arch = rd32(sec + p + 28);
            if (ihdr < 32 || ihdr > end - p || isize > end - p - ihdr)
                return malformed("image overruns its container", p);
            if (kind == IMAGE_ELF) {
                if (check_elf_image(sec + p + ihdr, isize, arch, p))
                    return 1;
                printf("sass sm_%u\n", arch);
            } else if (kind == IMAGE_PTX) {
                printf("ptx compute_%u\n", arch);
            } else {
                printf("kind%u sm_%u\n", kind, arch);
            }
            images++;
            p += ihdr + isize;
        }
        off = end;
    }
    if (images == 0) {
        fprintf(stderr, "%s: .nv_fatbin holds no GPU code\n", prog);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s ELF-FILE\n", prog);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (cap - len < 65536) {
            cap = cap ? 2 * cap : 1 << 20;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "%s: out of memory\n", prog);
                return 2;
            }
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);

    int rc = 1;
    /* ELF64, little-endian: what nvcc produces on the hosts we build for. */
    if (len < 64 || memcmp(buf, "\177ELF", 4) != 0 || buf[4] != 2 || buf[5] != 1) {
        fprintf(stderr, "%s: %s is not a little-endian ELF64 file\n", prog, argv[1]);
        goto out;
    }
    uint64_t shoff = rd64(buf + 40);
    uint16_t shentsize = rd16(buf + 58), shnum = rd16(buf + 60), shstrndx = rd16(buf + 62);
    if (shentsize < 64 || shstrndx >= shnum || shoff > len ||
        (uint64_t)shnum * shentsize > len - shoff) {
        fprintf(stderr, "%s: %s: bad section header table\n", prog, argv[1]);
        goto out;
    }
    const unsigned char *strtab_sh = buf + shoff + (uint64_t)shstrndx * shentsize;
    uint64_t stroff = rd64(strtab_sh + 24), strsize = rd64(strtab_sh + 32);
    if (stroff > len || strsize > len - stroff) {
        fprintf(stderr, "%s: %s: bad section name table\n", prog, argv[1]);
        goto out;
    }
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = buf + shoff + (uint64_t)i * shentsize;
        uint32_t name = rd32(sh);
        static const char want[] = ".nv_fatbin";
        if (name >= strsize || strsize - name < sizeof want ||
            memcmp(buf + stroff + name, want, sizeof want) != 0)
            continue;
        uint64_t off = rd64(sh + 24), size = rd64(sh + 32);
        if (off > len || size > len - off) {
            fprintf(stderr, "%s: %s: .nv_fatbin lies outside the file\n", prog, argv[1]);
            goto out;
        }
        rc = list_fatbins(buf + off, size);
        goto out;
    }
    fprintf(stderr, "%s: %s has no .nv_fatbin section (no GPU code)\n", prog, argv[1]);
out:
    free(buf);
    return rc;
}
