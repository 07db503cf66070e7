#include "recorder/symbolize.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>

#include "rscore/schema.h"

// A function with a known name in this test binary (C linkage: no mangling).
extern "C" __attribute__((noinline, used)) int rankscope_symbolize_probe_target(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace rs::rec {
namespace {

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = 0;
  return buf;
}

TEST(ElfFile, FindsFunctionsAndMapsOffsetsBack) {
  auto elf = ElfFile::Load(SelfExe());
  ASSERT_TRUE(elf.ok()) << elf.error().message();
  auto off = elf->FunctionOffset("rankscope_symbolize_probe_target");
  ASSERT_TRUE(off);
  auto sym = elf->SymbolAtFileOffset(*off + 4);
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->first->name, "rankscope_symbolize_probe_target");
  EXPECT_EQ(sym->second, 4u);
  EXPECT_FALSE(elf->FunctionOffset("no_such_function_anywhere"));
  EXPECT_EQ(elf->build_id().size(), 40u);  // GNU build id: 20 bytes of SHA-1
}

TEST(ElfFile, ErrorsNameTheFile) {
  auto missing = ElfFile::Load("/nonexistent/libx.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/libx.so"), std::string::npos);
  auto not_elf = ElfFile::Load("/proc/self/status");
  ASSERT_FALSE(not_elf.ok());
  EXPECT_NE(not_elf.error().message().find("not an ELF"), std::string::npos);
}

TEST(ParseMaps, ReadsEveryField) {
  auto maps = ParseMaps(
      "7f1c2a000000-7f1c2a200000 r-xp 00021000 fd:01 1234567    /opt/venv/lib/libnccl.so.2\n"
      "7ffd1000-7ffd2000 rw-p 00000000 00:00 0                  [stack]\n"
      "55e0a0000000-55e0a0001000 r--p 00000000 00:00 0\n"
      "garbage line\n"
      "7f00-7f10 r-xp 00000000 08:02 99 /tmp/x/lib name with spaces.so (deleted)\n");
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(maps[0].start, 0x7f1c2a000000u);
  EXPECT_EQ(maps[0].end, 0x7f1c2a200000u);
  EXPECT_EQ(maps[0].offset, 0x21000u);
  EXPECT_EQ(maps[0].perms, "r-xp");
  EXPECT_EQ(maps[0].dev_major, 0xfdu);
  EXPECT_EQ(maps[0].dev_minor, 1u);
  EXPECT_EQ(maps[0].inode, 1234567u);
  EXPECT_EQ(maps[0].path, "/opt/venv/lib/libnccl.so.2");
  EXPECT_EQ(maps[1].path, "[stack]");
  EXPECT_EQ(maps[2].path, "");
  EXPECT_EQ(maps[3].path, "/tmp/x/lib name with spaces.so (deleted)");
}

TEST(CallerSymbolizer, SymbolizesAKnownFunctionOfThisProcess) {
  auto elf = ElfFile::Load(SelfExe());
  ASSERT_TRUE(elf.ok());
  uint64_t addr = reinterpret_cast<uint64_t>(&rankscope_symbolize_probe_target) + 2;
  CallerSymbolizer sym;
  std::string frames = sym.Frames(getpid(), addr);
  auto off = elf->FunctionOffset("rankscope_symbolize_probe_target");
  ASSERT_TRUE(off);
  EXPECT_EQ(frames, FormatFrame("rankscope_symbolize_probe_target", 2, SelfExe(), elf->build_id(),
                                *off + 2));
  EXPECT_TRUE(frames.starts_with("rankscope_symbolize_probe_target+0x2 (/")) << frames;
  EXPECT_EQ(sym.Frames(getpid(), 0), "");
  EXPECT_EQ(sym.Frames(getpid(), 0x10), "[unknown] (0x10)");
}

TEST(CallerSymbolizer, StacksAreDeduplicatedByContentHash) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kBundle).ok());
  CallerSymbolizer sym;
  uint64_t a = reinterpret_cast<uint64_t>(&rankscope_symbolize_probe_target) + 2;
  auto id1 = sym.StackFor(&*db, getpid(), a);
  auto id2 = sym.StackFor(&*db, getpid(), a);
  auto id3 = sym.StackFor(&*db, getpid(), a + 1);
  ASSERT_TRUE(id1 && id2 && id3);
  EXPECT_EQ(*id1, *id2);
  EXPECT_NE(*id1, *id3);
  EXPECT_FALSE(sym.StackFor(&*db, getpid(), 0));
  std::string frames = sym.Frames(getpid(), a);
  EXPECT_EQ(*id1, static_cast<int64_t>(XXH64(frames.data(), frames.size(), 0)));
  EXPECT_EQ(*db->QueryInt("SELECT COUNT(*) FROM stacks"), 2);
  auto text = db->QueryText("SELECT frames FROM stacks WHERE id = " + std::to_string(*id1));
  ASSERT_TRUE(text.ok() && *text);
  EXPECT_EQ(**text, frames);
  // A second symbolizer (another probe) writing the same stack does not fail.
  CallerSymbolizer other;
  EXPECT_EQ(other.StackFor(&*db, getpid(), a), id1);
  EXPECT_TRUE(other.write_status().ok());
  EXPECT_EQ(*db->QueryInt("SELECT COUNT(*) FROM stacks"), 2);
}

}  // namespace
}  // namespace rs::rec
