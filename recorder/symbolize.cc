#include "recorder/symbolize.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rs::rec {
namespace {

constexpr uint32_t kNoteGnuBuildId = 3;  // NT_GNU_BUILD_ID

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}

// Owns an open fd + Elf*.
struct ElfHandle {
  int fd = -1;
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf) elf_end(elf);
    if (fd >= 0) close(fd);
  }
};

void ReadSymbols(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, std::vector<ElfFile::Symbol>& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || shdr.sh_entsize == 0) return;
  size_t n = shdr.sh_size / shdr.sh_entsize;
  for (size_t i = 0; i < n; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
    if (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC) {
      continue;
    }
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (!name || !*name) continue;
    std::string_view nv(name);
    if (auto at = nv.find('@'); at != std::string_view::npos) nv = nv.substr(0, at);
    out.push_back({sym.st_value, sym.st_size, std::string(nv)});
  }
}

}  // namespace

rs::Result<ElfFile> ElfFile::Load(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return rs::Error("libelf: version mismatch");
  ElfHandle h;
  h.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (h.fd < 0) return rs::Error(path + ": cannot open: " + std::strerror(errno));
  h.elf = elf_begin(h.fd, ELF_C_READ, nullptr);
  if (!h.elf || elf_kind(h.elf) != ELF_K_ELF) {
    return rs::Error(path + ": not an ELF file");
  }
  ElfFile f;
  size_t phnum = 0;
  if (elf_getphdrnum(h.elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(h.elf, static_cast<int>(i), &ph)) continue;
      if (ph.p_type == PT_LOAD) f.segments_.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
    }
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(h.elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    if (shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM) {
      ReadSymbols(h.elf, scn, shdr, f.symbols_);
    } else if (shdr.sh_type == SHT_NOTE && f.build_id_.empty()) {
      Elf_Data* data = elf_getdata(scn, nullptr);
      size_t off = 0, name_off = 0, desc_off = 0;
      GElf_Nhdr nh;
      while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        const char* base = static_cast<const char*>(data->d_buf);
        if (nh.n_type == kNoteGnuBuildId && nh.n_namesz == 4 &&
            std::memcmp(base + name_off, "GNU", 4) == 0) {
          f.build_id_ = Hex(reinterpret_cast<const unsigned char*>(base + desc_off), nh.n_descsz);
          break;
        }
      }
    }
  }
  std::sort(f.symbols_.begin(), f.symbols_.end(), [](const Symbol& a, const Symbol& b) {
    return a.addr != b.addr ? a.addr < b.addr : a.name < b.name;
  });
  for (const Symbol& s : f.symbols_) f.by_name_.emplace(s.name, s.addr);
  return f;
}

std::optional<uint64_t> ElfFile::VaddrToOffset(uint64_t vaddr) const {
  for (const Segment& s : segments_) {
    if (vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz) return vaddr - s.vaddr + s.offset;
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::OffsetToVaddr(uint64_t off) const {
  for (const Segment& s : segments_) {
    if (off >= s.offset && off < s.offset + s.filesz) return off - s.offset + s.vaddr;
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::FunctionOffset(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return VaddrToOffset(it->second);
}

std::optional<std::pair<const ElfFile::Symbol*, uint64_t>> ElfFile::SymbolAtFileOffset(
    uint64_t off) const {
  auto vaddr = OffsetToVaddr(off);
  if (!vaddr) return std::nullopt;
  // Last symbol starting at or below vaddr; prefer one whose size covers it.
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), *vaddr,
                             [](uint64_t v, const Symbol& s) { return v < s.addr; });
  while (it != symbols_.begin()) {
    --it;
    if (*vaddr < it->addr + std::max<uint64_t>(it->size, 1)) {
      // Among aliases at the same address take the first by name order (stable output).
      auto first = it;
      while (first != symbols_.begin() && std::prev(first)->addr == it->addr) --first;
      return std::make_pair(&*first, *vaddr - first->addr);
    }
    if (it->size != 0) break;  // a sized symbol ends below vaddr: nothing covers it
  }
  return std::nullopt;
}

std::vector<Mapping> ParseMaps(std::string_view text) {
  std::vector<Mapping> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string line(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    Mapping m;
    char perms[8] = {};
    unsigned long long start = 0, end = 0, offset = 0, inode = 0;
    unsigned maj = 0, min = 0;
    int path_pos = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &offset,
                    &maj, &min, &inode, &path_pos) < 7) {
      continue;
    }
    m.start = start;
    m.end = end;
    m.offset = offset;
    m.perms = perms;
    m.dev_major = maj;
    m.dev_minor = min;
    m.inode = inode;
    if (path_pos > 0 && static_cast<size_t>(path_pos) <= line.size())
      m.path = line.substr(path_pos);
    out.push_back(std::move(m));
  }
  return out;
}

rs::Result<std::vector<Mapping>> ReadMaps(const std::string& proc_root, int pid) {
  std::string path = proc_root + "/" + std::to_string(pid) + "/maps";
  std::ifstream in(path);
  if (!in) return rs::Error(path + ": cannot read (process gone?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMaps(ss.str());
}

std::string FormatFrame(std::string_view symbol, uint64_t sym_off, std::string_view path,
                        std::string_view build_id, uint64_t file_off) {
  char off[64];
  std::string s = symbol.empty() ? std::string("[unknown]") : std::string(symbol);
  if (!symbol.empty()) {
    std::snprintf(off, sizeof(off), "+0x%" PRIx64, sym_off);
    s += off;
  }
  s += " (";
  s += path;
  if (!build_id.empty()) {
    s += "@";
    s += build_id;
  }
  std::snprintf(off, sizeof(off), "+0x%" PRIx64 ")", file_off);
  s += off;
  return s;
}

int64_t StackId(std::string_view frames) {
  return static_cast<int64_t>(XXH64(frames.data(), frames.size(), 0));
}

const Mapping* CallerSymbolizer::FindMapping(int pid, uint64_t addr) {
  auto find = [&](const std::vector<Mapping>& maps) -> const Mapping* {
    for (const Mapping& m : maps) {
      if (addr >= m.start && addr < m.end) return &m;
    }
    return nullptr;
  };
  auto it = maps_.find(pid);
  if (it != maps_.end()) {
    if (const Mapping* m = find(it->second)) return m;
  }
  auto fresh = ReadMaps(proc_root_, pid);
  if (!fresh.ok()) return nullptr;
  auto& slot = maps_[pid];
  slot = std::move(fresh.value());
  return find(slot);
}

const ElfFile* CallerSymbolizer::Elf(int pid, const Mapping& m) {
  auto key = std::make_tuple(m.dev_major, m.dev_minor, m.inode);
  auto it = elves_.find(key);
  if (it != elves_.end()) return it->second.get();
  std::unique_ptr<ElfFile> elf;
  auto loaded = ElfFile::Load(proc_root_ + "/" + std::to_string(pid) + "/root" + m.path);
  if (loaded.ok()) elf = std::make_unique<ElfFile>(std::move(loaded.value()));
  return elves_.emplace(key, std::move(elf)).first->second.get();
}

void CallerSymbolizer::Forget(int pid) {
  maps_.erase(pid);
  cache_.erase(cache_.lower_bound({pid, 0}), cache_.lower_bound({pid + 1, 0}));
}

std::string CallerSymbolizer::Frames(int pid, uint64_t addr) {
  if (addr == 0) return "";
  const Mapping* m = FindMapping(pid, addr);
  if (!m || m->path.empty() || m->path[0] != '/') {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "[unknown] (0x%" PRIx64 ")", addr);
    return buf;
  }
  uint64_t file_off = addr - m->start + m->offset;
  const ElfFile* elf = Elf(pid, *m);
  std::string_view sym;
  uint64_t sym_off = 0;
  if (elf) {
    if (auto s = elf->SymbolAtFileOffset(file_off)) {
      sym = s->first->name;
      sym_off = s->second;
    }
  }
  return FormatFrame(sym, sym_off, m->path, elf ? elf->build_id() : "", file_off);
}

std::optional<int64_t> CallerSymbolizer::StackFor(rs::Db* db, int pid, uint64_t addr) {
  if (addr == 0) return std::nullopt;
  auto key = std::make_pair(pid, addr);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::string frames = Frames(pid, addr);
  int64_t id = StackId(frames);
  if (db && !written_.count(id)) {
    if (insert_db_ != db) {
      auto st = db->Prepare("INSERT OR IGNORE INTO stacks(id, frames) VALUES (?, ?)");
      if (!st.ok()) {
        if (write_status_.ok()) write_status_ = st.error();
        return std::nullopt;
      }
      insert_ = std::move(st.value());
      insert_db_ = db;
    }
    auto r = insert_.Bind(1, id).Bind(2, frames).Run();
    if (!r.ok() && write_status_.ok()) write_status_ = r;
    written_.insert(id);
  }
  cache_[key] = id;
  return id;
}

}  // namespace rs::rec
