/*
 * families.c: the HIP target's tune-table entries for AMD GPU families, taken from AMD's
 * published figures (ISA reference guides and product specifications): wavefront size, LDS per
 * work group, compute units of the family's largest part. None has been measured here (there is
 * no AMD GPU), and every entry says so: "provenance": "heuristic". The wavefront size decides how
 * kernels are compiled; the others bound work-group shared memory and grid sizes until a device
 * reports its own.
 */
#include <stdio.h>
#include <string.h>

#include "hip.h"

static const hip_family families[] = {
    {"gfx90a", "CDNA2", "Instinct MI210 (104 CUs), MI250X (2 x 110 CUs)", 64, 65536, 110, "heuristic",
     "AMD CDNA 2 ISA reference guide; AMD Instinct MI200 series data sheets"},
    {"gfx940", "CDNA3", "Instinct MI300 (gfx940-gfx942; MI300X: 304 CUs)", 64, 65536, 304, "heuristic",
     "AMD CDNA 3 ISA reference guide; AMD Instinct MI300X data sheet"},
    {"gfx942", "CDNA3", "Instinct MI300X (304 CUs), MI300A (228 CUs)", 64, 65536, 304, "heuristic",
     "AMD CDNA 3 ISA reference guide; AMD Instinct MI300X data sheet"},
    {"gfx1030", "RDNA2", "Radeon RX 6800 (60 CUs), 6800 XT (72), 6900 XT (80)", 32, 65536, 80, "heuristic",
     "AMD RDNA 2 ISA reference guide (wave32 native; LDS 64 KiB per work group); Radeon RX 6900 XT specifications"},
    {"gfx1100", "RDNA3", "Radeon RX 7900 XTX (96 CUs)", 32, 65536, 96, "heuristic",
     "AMD RDNA 3 ISA reference guide; Radeon RX 7900 XTX specifications"},
};

const hip_family *hip_family_of(const char *arch) {
  for (size_t i = 0; i < sizeof families / sizeof *families; i++)
    if (strcmp(families[i].arch, arch) == 0) return &families[i];
  return NULL;
}

void hip_families_print(FILE *out) {
  fprintf(out, "  tune table (AMD's published figures, not measured here):\n");
  for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
    const hip_family *f = &families[i];
    fprintf(out,
            "    {\"arch\": \"%s\", \"family\": \"%s\", \"devices\": \"%s\", \"wavefront\": %d, \"lds_bytes\": %d, \"compute_units\": %d, "
            "\"provenance\": \"%s\", \"source\": \"%s\"}\n",
            f->arch, f->family, f->devices, f->wave, f->lds_bytes, f->cus, f->provenance, f->source);
  }
}
