// The first instruction byte of an exported function as its library file holds it. Read from
// the file, not from memory: a recorder running beside the test (the capture tests attach to
// every copy of these libraries on the machine) replaces it in memory with a breakpoint.
#pragma once

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <cstdio>

// -1 when the function's library or its file cannot be read.
inline int FirstByteOnDisk(const void* fn) {
  Dl_info info{};
  if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return -1;
  struct Query {
    uintptr_t addr;
    long offset = -1;
  } q{reinterpret_cast<uintptr_t>(fn)};
  dl_iterate_phdr(
      [](dl_phdr_info* lib, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        for (int i = 0; i < lib->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = lib->dlpi_phdr[i];
          uintptr_t start = lib->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && q->addr >= start && q->addr < start + ph.p_filesz) {
            q->offset = static_cast<long>(ph.p_offset + (q->addr - start));
            return 1;
          }
        }
        return 0;
      },
      &q);
  if (q.offset < 0) return -1;
  FILE* f = std::fopen(info.dli_fname, "rb");
  if (f == nullptr) return -1;
  int byte = std::fseek(f, q.offset, SEEK_SET) == 0 ? std::fgetc(f) : -1;
  std::fclose(f);
  return byte;
}
