// Caller attribution for the uprobe call probes: ELF symbol tables (libelf), /proc/PID/maps
// parsing, and the deduplicated `stacks` table. A captured return address is turned into a
// frame 'symbol+0xoff (file@build_id+0xoff)' using the mapping of the process it came from;
// the frames text is keyed by its xxh64 (as a signed 64-bit integer), so identical stacks
// from any process or node share one row.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::rec {

// The function symbols and load segments of one ELF file.
class ElfFile {
 public:
  struct Symbol {
    uint64_t addr = 0;  // st_value (virtual address in the file's own layout)
    uint64_t size = 0;
    std::string name;  // without any '@version' suffix
  };
  struct Segment {  // PT_LOAD
    uint64_t vaddr = 0, offset = 0, filesz = 0;
  };

  // Reads .symtab and .dynsym (both, when present), PT_LOAD headers and the GNU build id.
  static rs::Result<ElfFile> Load(const std::string& path);

  const std::string& build_id() const { return build_id_; }  // lowercase hex; "" when absent
  // File offset of the function `name` (what a uprobe attaches to); nullopt when absent.
  std::optional<uint64_t> FunctionOffset(std::string_view name) const;
  // The function symbol covering the given file offset, and the offset into it.
  std::optional<std::pair<const Symbol*, uint64_t>> SymbolAtFileOffset(uint64_t off) const;
  bool HasSymbol(std::string_view name) const { return by_name_.count(std::string(name)) > 0; }

 private:
  std::optional<uint64_t> VaddrToOffset(uint64_t vaddr) const;
  std::optional<uint64_t> OffsetToVaddr(uint64_t off) const;

  std::vector<Symbol> symbols_;  // sorted by addr
  std::map<std::string, uint64_t> by_name_;
  std::vector<Segment> segments_;
  std::string build_id_;
};

// One line of /proc/PID/maps.
struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;  // 'r-xp'
  uint32_t dev_major = 0, dev_minor = 0;
  uint64_t inode = 0;
  std::string path;  // as the process sees it; may end in ' (deleted)'
};
std::vector<Mapping> ParseMaps(std::string_view text);
rs::Result<std::vector<Mapping>> ReadMaps(const std::string& proc_root, int pid);

// Formats one frame. `symbol` empty means unknown.
std::string FormatFrame(std::string_view symbol, uint64_t sym_off, std::string_view path,
                        std::string_view build_id, uint64_t file_off);
// xxh64 (seed 0) of the frames text, as stored in stacks.id.
int64_t StackId(std::string_view frames);

// Symbolizes return addresses per process and interns the resulting stacks. Mappings are
// read from <proc_root>/PID/maps when a process is first seen and again when an address
// falls outside every known mapping (a library dlopen'ed later). ELF files are read through
// <proc_root>/PID/root (container paths) once per path.
class CallerSymbolizer {
 public:
  explicit CallerSymbolizer(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}

  // The frames text for one return address in process `pid` ("" when the address is 0).
  std::string Frames(int pid, uint64_t addr);
  // Interns the stack of `addr` and returns its id; nullopt when addr is 0. The `stacks` row
  // is written to `db` the first time an id is seen (INSERT OR IGNORE).
  std::optional<int64_t> StackFor(rs::Db* db, int pid, uint64_t addr);
  // Drops cached mappings of an exited or exec'd process.
  void Forget(int pid);
  const rs::Result<void>& write_status() const { return write_status_; }

 private:
  const Mapping* FindMapping(int pid, uint64_t addr);
  const ElfFile* Elf(int pid, const Mapping& m);

  std::string proc_root_;
  std::unordered_map<int, std::vector<Mapping>> maps_;
  // By (dev major, dev minor, inode) of the mapped file; null = unreadable.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, std::unique_ptr<ElfFile>> elves_;
  std::map<std::pair<int, uint64_t>, std::optional<int64_t>> cache_;  // (pid, addr) -> stack id
  std::set<int64_t> written_;
  rs::Statement insert_;
  rs::Db* insert_db_ = nullptr;
  rs::Result<void> write_status_;
};

}  // namespace rs::rec
