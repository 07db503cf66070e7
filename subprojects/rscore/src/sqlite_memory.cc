// SQLite's memory counted per thread (SqliteMemoryBudget): SQLite allocates through these
// wrappers of its default allocator, each block with a header naming the thread's counter it
// was charged to (null when no budget was active), so that a block freed on another thread or
// after its thread ended is still taken off the right counter.
#include <atomic>
#include <cstdint>

#include "rscore/sqlite.h"

namespace rs {
namespace {

struct ThreadMemory {
  std::atomic<int64_t> bytes{0};  // charged and not yet freed
  int64_t base = 0;               // `bytes` when the budget began
  int64_t limit = -1;             // -1: no budget active
  bool hit = false;
};

// Never freed: blocks charged to a thread's counter may outlive the thread (one small object
// per thread that ever had a budget).
thread_local ThreadMemory* t_memory = nullptr;

constexpr int kHeader = 16;  // keeps SQLite's 8-byte alignment
sqlite3_mem_methods g_base;

ThreadMemory*& Owner(void* block) { return *static_cast<ThreadMemory**>(block); }
int BlockSize(void* block) { return g_base.xSize(block) - kHeader; }

// The thread's counter if a budget is active and `more` bytes fit in it; null if no budget.
// False when they do not fit.
bool Admit(ThreadMemory** charged, int64_t more) {
  ThreadMemory* m = t_memory;
  *charged = m != nullptr && m->limit >= 0 ? m : nullptr;
  if (*charged == nullptr || more <= 0) return true;
  if (m->bytes.load(std::memory_order_relaxed) - m->base + more > m->limit) {
    m->hit = true;
    return false;
  }
  return true;
}

void* Malloc(int n) {
  ThreadMemory* charged = nullptr;
  if (!Admit(&charged, n)) return nullptr;
  void* block = g_base.xMalloc(n + kHeader);
  if (block == nullptr) return nullptr;
  Owner(block) = charged;
  if (charged != nullptr) charged->bytes.fetch_add(BlockSize(block), std::memory_order_relaxed);
  return static_cast<char*>(block) + kHeader;
}

void Free(void* p) {
  if (p == nullptr) return;
  void* block = static_cast<char*>(p) - kHeader;
  if (ThreadMemory* m = Owner(block))
    m->bytes.fetch_sub(BlockSize(block), std::memory_order_relaxed);
  g_base.xFree(block);
}

void* Realloc(void* p, int n) {
  if (p == nullptr) return Malloc(n);
  void* block = static_cast<char*>(p) - kHeader;
  const int old_size = BlockSize(block);
  ThreadMemory* charged = nullptr;
  if (!Admit(&charged, int64_t{n} - old_size)) return nullptr;  // the old block stays valid
  ThreadMemory* old_owner = Owner(block);
  void* grown = g_base.xRealloc(block, n + kHeader);
  if (grown == nullptr) return nullptr;
  if (old_owner != nullptr) old_owner->bytes.fetch_sub(old_size, std::memory_order_relaxed);
  if (charged == nullptr) charged = old_owner;
  Owner(grown) = charged;
  if (charged != nullptr) charged->bytes.fetch_add(BlockSize(grown), std::memory_order_relaxed);
  return static_cast<char*>(grown) + kHeader;
}

int Size(void* p) { return p == nullptr ? 0 : BlockSize(static_cast<char*>(p) - kHeader); }
int Roundup(int n) { return g_base.xRoundup(n); }
int Init(void*) { return g_base.xInit(g_base.pAppData); }
void Shutdown(void*) { g_base.xShutdown(g_base.pAppData); }

}  // namespace

Result<void> CountSqliteMemoryPerThread() {
  static sqlite3_mem_methods counted{Malloc, Free, Realloc, Size, Roundup, Init, Shutdown, nullptr};
  static bool chosen = false;
  if (chosen) return Ok();  // once: the wrappers must not wrap themselves
  sqlite3_mem_methods base{};
  if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &base) != SQLITE_OK) {
    return Error("SQLite's allocator cannot be read");
  }
  g_base = base;
  if (sqlite3_config(SQLITE_CONFIG_MALLOC, &counted) != SQLITE_OK) {
    return Error("SQLite is already initialized: its allocator must be chosen first");
  }
  chosen = true;
  return Ok();
}

SqliteMemoryBudget::SqliteMemoryBudget(int64_t max_bytes) : max_bytes_(max_bytes) {
  if (t_memory == nullptr) t_memory = new ThreadMemory;
  t_memory->base = t_memory->bytes.load(std::memory_order_relaxed);
  t_memory->hit = false;
  t_memory->limit = max_bytes;
}

SqliteMemoryBudget::~SqliteMemoryBudget() { t_memory->limit = -1; }

bool SqliteMemoryBudget::hit() const { return t_memory->hit; }

}  // namespace rs
