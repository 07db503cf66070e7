#include "recorder/rdma_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "recorder/log.h"
#include "rscore/clock.h"

namespace rs::rec {
namespace {

// The entries of a directory, sorted, without '.' and '..'; empty where it cannot be read.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// A sysfs attribute's first line, without its newline; "" where it cannot be read. Only a
// regular file (sysfs attributes are), opened without waiting and read up to 4 KiB (a page,
// what sysfs returns at most): a FIFO or an endless file planted in a --simulate-rdma-sysfs
// tree can neither stop the recorder's loop nor fill its memory.
std::string ReadLine(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return "";
  struct stat st;
  char buf[4096];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n <= 0) return "";
  std::string line(buf, static_cast<size_t>(n));
  line = line.substr(0, line.find('\n'));
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

// hw_counters also holds 'lifespan': how long (ms) the driver keeps a reading, no counter.
bool IsCounterFile(const std::string& dir, const std::string& name) {
  return !(dir == "hw_counters" && name == "lifespan");
}

std::string Key(const RdmaPort& p, const std::string& dir, const std::string& name) {
  return p.device + "/" + std::to_string(p.port) + "/" + dir + "/" + name;
}

}  // namespace

std::optional<int64_t> ReadCounterFile(const std::string& path) {
  const std::string line = ReadLine(path);
  if (line.empty() || !std::all_of(line.begin(), line.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  errno = 0;
  const unsigned long long v = std::strtoull(line.c_str(), nullptr, 10);
  // SQLite integers are signed: a 64-bit counter past 2^63 is not one we can store.
  if (errno != 0 || v > static_cast<unsigned long long>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::vector<RdmaPort> FindRdmaPorts(const std::string& sys_root) {
  std::vector<RdmaPort> out;
  const std::string base = sys_root + "/class/infiniband";
  for (const std::string& device : Entries(base)) {
    const std::string dev_dir = base + "/" + device;
    const std::string node_guid = ReadLine(dev_dir + "/node_guid");
    // IPoIB and some drivers list the device's interfaces under device/net.
    const std::vector<std::string> pci_netdevs = Entries(dev_dir + "/device/net");
    for (const std::string& port_name : Entries(dev_dir + "/ports")) {
      char* end = nullptr;
      const long port = std::strtol(port_name.c_str(), &end, 10);
      if (end == port_name.c_str() || *end != '\0' || port <= 0) continue;
      const std::string port_dir = dev_dir + "/ports/" + port_name;
      RdmaPort p;
      p.device = device;
      p.port = port;
      p.link_layer = ReadLine(port_dir + "/link_layer");
      p.state = ReadLine(port_dir + "/state");
      p.rate = ReadLine(port_dir + "/rate");
      p.gid = ReadLine(port_dir + "/gids/0");
      p.node_guid = node_guid;
      p.netdev = ReadLine(port_dir + "/gid_attrs/ndevs/0");  // RoCE: GID 0's interface
      if (p.netdev.empty() && pci_netdevs.size() == 1) p.netdev = pci_netdevs.front();
      for (const char* dir : {"counters", "hw_counters"}) {
        for (const std::string& name : Entries(port_dir + "/" + dir)) {
          if (IsCounterFile(dir, name)) p.counters.emplace_back(dir, name);
        }
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

rs::Result<void> RdmaProbe::Start(RecorderContext& ctx) {
  sys_root_ = ctx.sys_root;
  ports_ = FindRdmaPorts(sys_root_);
  if (ports_.empty()) {
    note_ = "no RDMA device under " + sys_root_ + "/class/infiniband";
    return rs::Ok();
  }
  ASSIGN_OR_RETURN(rs::Statement st,
                   PrepareInsert(*ctx.db, "rdma_ports",
                                 "node, device, port, link_layer, netdev, gid, node_guid, rate, "
                                 "state"));
  auto text = [](const std::string& s) -> std::optional<std::string> {
    if (s.empty()) return std::nullopt;
    return s;
  };
  size_t counters = 0;
  for (const RdmaPort& p : ports_) {
    st.Bind(1, ctx.node).Bind(2, p.device).Bind(3, p.port).Bind(4, text(p.link_layer));
    st.Bind(5, text(p.netdev)).Bind(6, text(p.gid)).Bind(7, text(p.node_guid));
    st.Bind(8, text(p.rate)).Bind(9, text(p.state));
    RETURN_IF_ERROR(st.Run());
    counters += p.counters.size();
  }
  ASSIGN_OR_RETURN(insert_,
                   PrepareInsert(*ctx.db, "rdma_counters",
                                 "id, node, timestamp_ns, device, port, counter, dir, value, "
                                 "delta, since_ns"));
  LogInfo("rdma: %zu port(s), %zu counters read every %lld ms", ports_.size(), counters,
          static_cast<long long>(period_ns_ / 1'000'000));
  return Read(ctx, /*all=*/true);
}

void RdmaProbe::Tick(RecorderContext& ctx) {
  if (ports_.empty() || rs::MonotonicNowNs() - last_read_mono_ns_ < period_ns_) return;
  if (auto r = Read(ctx, /*all=*/false); !r.ok() && !ctx.writes_failed) {
    Log("rdma: %s", r.error().message().c_str());
  }
}

rs::Result<void> RdmaProbe::Finish(RecorderContext& ctx) {
  if (ports_.empty()) return rs::Ok();
  RETURN_IF_ERROR(Read(ctx, /*all=*/true));
  if (unreadable_ > 0) {
    note_ = std::to_string(unreadable_) + " reading(s) of a counter file gave no number";
  }
  return rs::Ok();
}

rs::Result<void> RdmaProbe::Read(RecorderContext& ctx, bool all) {
  const int64_t mono = rs::MonotonicNowNs();
  last_read_mono_ns_ = mono;
  const int64_t wall = ctx.clock->Convert(mono);
  rs::Statement& st = insert_;
  for (const RdmaPort& p : ports_) {
    const std::string port_dir =
        sys_root_ + "/class/infiniband/" + p.device + "/ports/" + std::to_string(p.port);
    for (const auto& [dir, name] : p.counters) {
      const std::optional<int64_t> value = ReadCounterFile(port_dir + "/" + dir + "/" + name);
      if (!value) {
        ++unreadable_;
        continue;
      }
      const std::string key = Key(p, dir, name);
      auto it = last_.find(key);
      std::optional<int64_t> delta, since;
      if (it != last_.end()) {
        if (it->second.value == *value && !all) {
          // Unchanged at this reading: an increase found later happened after it, so the
          // window a row states starts at the last reading, not the last row written (a
          // counter quiet for minutes would otherwise blame every collective of those minutes).
          it->second.wall_ns = wall;
          continue;
        }
        if (*value >= it->second.value) delta = *value - it->second.value;
        since = it->second.wall_ns;
      }
      st.Bind(1, static_cast<int64_t>(ctx.ids->Next())).Bind(2, ctx.node).Bind(3, wall);
      st.Bind(4, p.device).Bind(5, p.port).Bind(6, name).Bind(7, dir).Bind(8, *value);
      st.Bind(9, delta).Bind(10, since);
      RETURN_IF_ERROR(st.Run());
      ++rows_;
      last_[key] = Last{*value, wall};
    }
  }
  return rs::Ok();
}

}  // namespace rs::rec
